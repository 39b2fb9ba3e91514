/* SPDX-License-Identifier: MIT */
/*
 * serve_draw.c - what `hashring serve` draws of each ring, made once per
 * ring on a thread of its own: the HTTP thread only copies what is made,
 * so /lookup and /metrics never wait for a drawing, and every answer uses
 * the newest drawing made (the one before, while the next is drawn).
 *
 * A drawing is one walk over both views' points at once, in ring order:
 * O(points), no sort and no allocation per point, and stopped within a few
 * milliseconds when the server stops.  Each stretch between two points has
 * one owner in each view; the walk feeds the owners to the arcs of each
 * view (adjacent stretches of one owner are one arc), sums each node's
 * stretches into its share of each view (exactly as hr_ring_node_shares()
 * does, point by point), and feeds the stretches whose two owners differ
 * to the takeover (the arcs a warming node takes over, or a draining one
 * hands over).  The arcs and the takeover exist twice: in full for
 * /ring.json, as they always were, and for the page's circle, where an arc
 * shorter than a pixel cannot be seen: beyond PAGE_SLICES arcs the circle
 * is drawn in PAGE_SLICES slices, each of the owner of its middle, and
 * beyond PAGE_SLICES stretches taken over, one that starts less than a
 * slice after the one before joins it, so that the page draws about as
 * much whatever the size of the ring.  Then the orders /nodes.json pages
 * through: by load and by share.
 */
#define _GNU_SOURCE /* strcasestr */
#include "serve.h"
#include "cli.h"
#include "cli_svg.h"
#include "arc_sum.h" /* exact sums of arcs */
#include "ring_inspect.h" /* hr__ring_view_*(): the walk over the points */

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* The page's circle in slices of about a pixel of its ring (2^10 of them,
 * each 2^54 positions long). */
#define PAGE_SLICE_BITS 54
#define PAGE_SLICES (1u << (64 - PAGE_SLICE_BITS))
/* Zones listed in the overview, the most nodes first. */
#define ZONES_SHOWN 8
/* The walk looks whether the drawer stops every this many stretches. */
#define STOP_EVERY 65536

const char *const serve_sort_names[SERVE_SORT_COUNT] = {
	[SERVE_SORT_LOAD] = "load", [SERVE_SORT_SHARE] = "share",
	[SERVE_SORT_ID] = "id", [SERVE_SORT_LOOKUPS] = "lookups",
};

struct serve_drawing {
	unsigned refs;       /* counted references, atomic */
	hr_ring *ring;
	uint64_t seq;
	size_t n;
	double *shares;      /* write, read, fair write, fair read: n each */
	uint32_t *by_load;   /* node numbers, most loaded first */
	uint32_t *by_share;  /* largest write share first */
	char *overview, *full;
	size_t overview_len, full_len;
};

struct serve_drawer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int stop;            /* set under mu, read without it by the walk */
	hr_ring *pending;    /* the ring to draw next, and its number */
	uint64_t pending_seq;
	int drawing;
	struct serve_drawing *drawn; /* the newest made */
	struct serve_drawing *full;  /* the newest with its /ring.json member */
};

/* ---- arcs ------------------------------------------------------------------- */

struct arc_out {
	uint64_t start;
	uint32_t node; /* the ring's node number, CLI_NO_NODE for none */
};

/* The arcs of one view, from the stretches of the walk. */
struct arcs {
	uint64_t min_len;  /* thinned: a shorter arc joins the one before */
	size_t thin_over;  /* thinned once there are more arcs than this;
			      0: from the start */
	int thin;
	struct arc_out *a;
	size_t n, cap;
	int open;          /* the arc under way */
	uint64_t start;
	uint32_t node;
	int failed;        /* out of memory */
};

static void arcs_push(struct arcs *s, uint64_t start, uint32_t node)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct arc_out *a = realloc(s->a, cap * sizeof *a);

		if (!a) {
			s->failed = 1;
			return;
		}
		s->a = a;
		s->cap = cap;
	}
	s->a[s->n++] = (struct arc_out){ start, node };
}

/* Keeps, of the arcs so far (the last ending before `end`), the first and
 * those at least min_len long: what thinning from the start keeps. */
static void arcs_thin(struct arcs *s, uint64_t end)
{
	size_t k = 1;

	for (size_t i = 1; i < s->n; i++) {
		uint64_t e = i + 1 < s->n ? s->a[i + 1].start : end;

		if (e - s->a[i].start >= s->min_len)
			s->a[k++] = s->a[i];
	}
	if (s->n)
		s->n = k;
	s->thin = 1;
}

/* The arc under way ends before `end` (0: 2^64, the end of the circle). */
static void arcs_close(struct arcs *s, uint64_t end)
{
	if (!s->open)
		return;
	s->open = 0;
	if (s->thin && s->n && end - s->start < s->min_len)
		return; /* joins the one before */
	arcs_push(s, s->start, s->node);
	if (!s->thin && s->thin_over && s->n > s->thin_over)
		arcs_thin(s, end);
}

/* The positions from `first` on belong to `node`. */
static void arcs_feed(struct arcs *s, uint64_t first, uint32_t node)
{
	if (s->open && s->node == node)
		return;
	arcs_close(s, first);
	s->open = 1;
	s->start = first;
	s->node = node;
}

/* The page's circle: the owner of each slice's middle, the slices of one
 * owner in a row one arc. */
struct slices {
	uint32_t owner[PAGE_SLICES];
	size_t k; /* slices whose owner is known */
};

/* The positions up to `last`, from where the slices stopped, belong to
 * `node`. */
static void slices_feed(struct slices *s, uint64_t last, uint32_t node)
{
	while (s->k < PAGE_SLICES &&
	       ((uint64_t)s->k << PAGE_SLICE_BITS) + (UINT64_C(1) << (PAGE_SLICE_BITS - 1)) <= last)
		s->owner[s->k++] = node;
}

/* The page's arcs: the view's own while they are few, else the slices. */
static void page_arcs(const struct slices *s, const struct arcs *full, struct arcs *out)
{
	if (!full->thin && full->n <= PAGE_SLICES) {
		for (size_t i = 0; i < full->n; i++)
			arcs_push(out, full->a[i].start, full->a[i].node);
		return;
	}
	for (size_t k = 0; k < PAGE_SLICES; k++)
		arcs_feed(out, (uint64_t)k << PAGE_SLICE_BITS, s->owner[k]);
	arcs_close(out, 0);
}

/* ---- the takeover --------------------------------------------------------------- */

struct take_out {
	uint64_t first, last;
	uint32_t read, write;
};

/* The stretches whose two owners differ, adjacent ones with the same
 * owners joined; with `gap`, also one that starts that close to the one
 * before (which keeps its owners): the page's, from the full ones. */
struct takes {
	uint64_t gap;
	struct take_out *t;
	size_t n, cap;
	int failed;
};

static void takes_feed(struct takes *s, uint64_t first, uint64_t last, uint32_t read,
		       uint32_t write)
{
	struct take_out *p = s->n ? &s->t[s->n - 1] : NULL;

	if (p && ((p->last + 1 == first && p->read == read && p->write == write) ||
		  (s->gap && first - p->last <= s->gap))) {
		p->last = last;
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct take_out *t = realloc(s->t, cap * sizeof *t);

		if (!t) {
			s->failed = 1;
			return;
		}
		s->t = t;
		s->cap = cap;
	}
	s->t[s->n++] = (struct take_out){ first, last, read, write };
}

/* ---- the walk ----------------------------------------------------------------- */

/* One view's points in ring order: a point owns the positions after the
 * one before it, up to its own.  A rendezvous ring, whose keys are not on
 * arcs, gives the ends of its arcs (cli_ring_arcs) instead. */
struct source {
	const hr_ring *ring;
	hr_view view;
	const struct cli_arc *arcs;
	size_t n;
};

/* Where the walk is in a view: the next point at or after it. */
struct cursor {
	const struct source *src;
	size_t i;          /* points passed */
	size_t at;         /* the point's name (hr__ring_view_find) */
	uint64_t pos;      /* UINT64_MAX past the last point */
	uint32_t node, wrap; /* wrap: the first point's, past the last */
};

static void cursor_load(struct cursor *c)
{
	const struct source *v = c->src;
	size_t slot;

	if (c->i == v->n) {
		c->pos = UINT64_MAX;
		c->node = c->wrap;
	} else if (v->arcs) {
		c->pos = v->arcs[c->i].end - 1;
		c->node = v->arcs[c->i].node;
	} else {
		hr__ring_view_point(v->ring, v->view, c->at, &c->pos, &slot);
		c->node = (uint32_t)slot;
	}
}

static void cursor_init(struct cursor *c, const struct source *src)
{
	c->src = src;
	c->i = 0;
	c->at = src->n && !src->arcs ? hr__ring_view_find(src->ring, src->view, 0) : 0;
	c->wrap = CLI_NO_NODE;
	cursor_load(c);
	c->wrap = c->node;
}

/* To the first point at or after position x. */
static void cursor_seek(struct cursor *c, uint64_t x)
{
	const struct source *v = c->src;

	while (c->i < v->n && c->pos < x) {
		if (++c->i < v->n && !v->arcs)
			c->at = hr__ring_view_next(v->ring, v->view, 0, c->at);
		cursor_load(c);
	}
}

/* What a walk makes. */
struct made {
	struct arcs full[2], page[2]; /* by view */
	struct slices slices[2];
	/* Each node's stretches summed, by view, modulo 2^64 (a node that owns
	 * the whole circle sums to 0); NULL: hr_ring_node_shares() instead
	 * (rendezvous, whose arcs are made of the shares). */
	uint64_t *sums[2];
	double *shares[2]; /* where the shares go: the drawing's */
	struct takes full_take, page_take;
	hr__arc_sum taken;
};

/* A view's shares from the walk's sums, as hr_ring_node_shares() rounds
 * them; when no sum is left (one node owns the circle), all of it to the
 * owner of the first point, `first`. */
static void shares_of(const uint64_t *sums, size_t n, uint32_t first, double *out)
{
	int any = 0;

	for (size_t i = 0; i < n; i++) {
		out[i] = ldexp((double)sums[i], -64);
		any = any || sums[i];
	}
	if (!any && first != CLI_NO_NODE)
		out[first] = 1.0;
}

static int stopping(struct serve_drawer *dr)
{
	return __atomic_load_n(&dr->stop, __ATOMIC_ACQUIRE);
}

/* Both views at once, stretch by stretch; one if they are one array (no
 * node warms or drains).  0, or -1 once the drawer stops. */
static int walk(struct serve_drawer *dr, const struct source src[2], int one, struct made *m)
{
	struct cursor w, r;
	uint64_t x = 0;

	cursor_init(&w, &src[HR_VIEW_WRITE]);
	cursor_init(&r, &src[HR_VIEW_READ]);
	for (size_t steps = 1;; steps++) {
		uint64_t e;

		if (one)
			r = w;
		e = w.pos < r.pos ? w.pos : r.pos;

		/* Positions x .. e: write owner w.node, read owner r.node. */
		if (m->sums[0] && w.node != CLI_NO_NODE)
			m->sums[HR_VIEW_WRITE][w.node] += e - x + 1;
		if (m->sums[0] && r.node != CLI_NO_NODE)
			m->sums[HR_VIEW_READ][r.node] += e - x + 1;
		arcs_feed(&m->full[HR_VIEW_WRITE], x, w.node);
		arcs_feed(&m->full[HR_VIEW_READ], x, r.node);
		slices_feed(&m->slices[HR_VIEW_WRITE], e, w.node);
		slices_feed(&m->slices[HR_VIEW_READ], e, r.node);
		if (w.node != r.node) {
			takes_feed(&m->full_take, x, e, r.node, w.node);
			hr__arc_add_span(&m->taken, x, e);
		}
		if (e == UINT64_MAX)
			break;
		x = e + 1;
		cursor_seek(&w, x);
		if (!one)
			cursor_seek(&r, x);
		if (steps % STOP_EVERY == 0 && stopping(dr))
			return -1;
	}
	for (int v = 0; v < 2; v++) {
		arcs_close(&m->full[v], 0);
		page_arcs(&m->slices[v], &m->full[v], &m->page[v]);
		if (m->sums[0])
			shares_of(m->sums[v], hr_ring_node_count(src[v].ring),
				  v == HR_VIEW_WRITE ? w.wrap : r.wrap, m->shares[v]);
	}
	if (m->full_take.n > PAGE_SLICES)
		m->page_take.gap = UINT64_C(1) << PAGE_SLICE_BITS;
	for (size_t i = 0; i < m->full_take.n; i++) {
		const struct take_out *t = &m->full_take.t[i];

		takes_feed(&m->page_take, t->first, t->last, t->read, t->write);
	}
	return 0;
}

static void made_free(struct made *m)
{
	if (!m)
		return;
	for (int v = 0; v < 2; v++) {
		free(m->full[v].a);
		free(m->page[v].a);
	}
	free(m->full_take.t);
	free(m->page_take.t);
	free(m->sums[0]);
	free(m);
}

/* ---- JSON ------------------------------------------------------------------------ */

static void json_str(FILE *out, const char *s)
{
	if (s)
		cli_json_string(out, s, strlen(s));
	else
		fputs("null", out);
}

static int64_t number(uint32_t node)
{
	return node == CLI_NO_NODE ? -1 : (int64_t)node;
}

static double end_share(uint64_t last)
{
	return last == UINT64_MAX ? 1.0 : cli_arc_share(last + 1);
}

/* Node i, without the closing brace (a caller may add members). */
static void write_node(FILE *out, const struct serve_drawing *d, size_t i)
{
	const hr_node *node = hr_ring_node(d->ring, i);
	size_t n = d->n;

	fputs("{\"id\":", out);
	json_str(out, node->id);
	fputs(",\"addr\":", out);
	json_str(out, node->addr);
	fputs(",\"zone\":", out);
	json_str(out, node->zone);
	fprintf(out, ",\"state\":\"%s\",\"hue\":%u,\"weight\":%.17g,\"vnodes\":%u,"
		"\"share_write\":%.6f,\"share_read\":%.6f,"
		"\"fair_write\":%.6f,\"fair_read\":%.6f",
		hr_state_name(node->state), cli_node_hue(node->id), node->weight,
		hr_ring_node_vnodes(d->ring, node), d->shares[i], d->shares[n + i],
		d->shares[2 * n + i], d->shares[3 * n + i]);
}

/* [start, node] pairs; `map`, if not NULL, numbers the nodes instead. */
static void write_arcs(FILE *out, const struct arcs *s, const uint32_t *map)
{
	fputc('[', out);
	for (size_t i = 0; i < s->n; i++) {
		uint32_t node = s->a[i].node;

		fprintf(out, "%s[%.7f,%" PRId64 "]", i ? "," : "", cli_arc_share(s->a[i].start),
			number(map && node != CLI_NO_NODE ? map[node] : node));
	}
	fputc(']', out);
}

static void write_takes(FILE *out, const struct takes *s, const uint32_t *map)
{
	fputc('[', out);
	for (size_t i = 0; i < s->n; i++) {
		const struct take_out *t = &s->t[i];
		uint32_t r = t->read, w = t->write;

		if (map) {
			r = r == CLI_NO_NODE ? r : map[r];
			w = w == CLI_NO_NODE ? w : map[w];
		}
		fprintf(out, "%s[%.7f,%.7f,%" PRId64 ",%" PRId64 "]", i ? "," : "",
			cli_arc_share(t->first), end_share(t->last), number(r), number(w));
	}
	fputc(']', out);
}

/* /ring.json's "ring": every node, and the arcs in full. */
static void write_full(FILE *out, struct serve_drawer *dr, const struct serve_drawing *d,
		       const struct made *m)
{
	fprintf(out, "\"ring\":{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
		"\"points\":%zu,\"nodes\":[",
		hr_ring_revision(d->ring), hr_ring_digest(d->ring), hr_ring_point_count(d->ring));
	for (size_t i = 0; i < d->n; i++) {
		if (i % 1024 == 0 && stopping(dr))
			return; /* dropped */
		if (i)
			fputc(',', out);
		write_node(out, d, i);
		fputc('}', out);
	}
	fputs("],\"arcs\":{\"write\":", out);
	write_arcs(out, &m->full[HR_VIEW_WRITE], NULL);
	fputs(",\"read\":", out);
	write_arcs(out, &m->full[HR_VIEW_READ], NULL);
	fprintf(out, ",\"coarse\":%s},\"takeover\":",
		m->full[HR_VIEW_WRITE].thin || m->full[HR_VIEW_READ].thin ? "true" : "false");
	write_takes(out, &m->full_take, NULL);
	fprintf(out, ",\"takeover_share\":%.6f}", hr__arc_share(&m->taken));
}

static int by_zone(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;

	return strcmp(x ? x : "", y ? y : "");
}

struct zone_count {
	const char *zone;
	size_t nodes;
};

static int by_nodes_desc(const void *a, const void *b)
{
	const struct zone_count *x = a, *y = b;

	return x->nodes < y->nodes ? 1 : x->nodes > y->nodes ? -1 : by_zone(&x->zone, &y->zone);
}

/* "zones": the ZONES_SHOWN zones with the most nodes, and how many more
 * there are.  Nothing without memory. */
static void write_zones(FILE *out, const struct serve_drawing *d)
{
	const char **z = malloc((d->n ? d->n : 1) * sizeof *z);
	struct zone_count *c = malloc((d->n ? d->n : 1) * sizeof *c);
	size_t k = 0;

	fputs("\"zones\":[", out);
	if (z && c) {
		for (size_t i = 0; i < d->n; i++)
			z[i] = hr_ring_node(d->ring, i)->zone;
		qsort(z, d->n, sizeof *z, by_zone);
		for (size_t i = 0; i < d->n; i++) {
			if (k && by_zone(&c[k - 1].zone, &z[i]) == 0)
				c[k - 1].nodes++;
			else
				c[k++] = (struct zone_count){ z[i], 1 };
		}
		qsort(c, k, sizeof *c, by_nodes_desc);
		for (size_t i = 0; i < k && i < ZONES_SHOWN; i++) {
			fputs(i ? ",{\"zone\":" : "{\"zone\":", out);
			json_str(out, c[i].zone && *c[i].zone ? c[i].zone : NULL);
			fprintf(out, ",\"nodes\":%zu}", c[i].nodes);
		}
	}
	fprintf(out, "],\"zones_more\":%zu", k > ZONES_SHOWN ? k - ZONES_SHOWN : 0);
	free(z);
	free(c);
}

/* A node's load: its write share over its fair share; -1 outside the
 * write view, which sorts it after every node in it. */
static double load_of(const struct serve_drawing *d, size_t i)
{
	double fair = d->shares[2 * d->n + i];

	return fair > 0 ? d->shares[i] / fair : -1;
}

/* Node `node` into "owners" unless it is there already (or none): its
 * number there in map[node]. */
static void add_owner(FILE *out, const struct serve_drawing *d, uint32_t node, uint32_t *map,
		      size_t *owners)
{
	const hr_node *o;

	if (node == CLI_NO_NODE || map[node] != CLI_NO_NODE)
		return;
	o = hr_ring_node(d->ring, node);
	map[node] = (uint32_t)*owners;
	fputs((*owners)++ ? ",{\"id\":" : "{\"id\":", out);
	json_str(out, o->id);
	fprintf(out, ",\"hue\":%u}", cli_node_hue(o->id));
}

/* /overview.json's "ring": counts, zones, the most and least loaded,
 * and the arcs and takeover thinned for the page, their owners numbered
 * in "owners" (id and hue). */
static int write_overview(FILE *out, const struct serve_drawing *d, const struct made *m)
{
	size_t states[3] = { 0, 0, 0 }, owners = 0, in_view = 0;
	uint32_t *map = malloc((d->n ? d->n : 1) * sizeof *map);
	const struct arcs *a[2] = { &m->page[HR_VIEW_WRITE], &m->page[HR_VIEW_READ] };

	if (!map)
		return HR_ENOMEM;
	for (size_t i = 0; i < d->n; i++) {
		states[hr_ring_node(d->ring, i)->state]++;
		in_view += d->shares[2 * d->n + i] > 0;
		map[i] = CLI_NO_NODE;
	}
	fprintf(out, "\"ring\":{\"seq\":%" PRIu64 ",\"revision\":%" PRIu64 ","
		"\"digest\":\"%016" PRIx64 "\",\"points\":%zu,\"nodes\":%zu,"
		"\"states\":{\"active\":%zu,\"warming\":%zu,\"draining\":%zu},",
		d->seq, hr_ring_revision(d->ring), hr_ring_digest(d->ring),
		hr_ring_point_count(d->ring), d->n, states[HR_STATE_ACTIVE],
		states[HR_STATE_WARMING], states[HR_STATE_DRAINING]);
	write_zones(out, d);
	/* by_load lists the nodes outside the write view last. */
	if (in_view) {
		size_t most = d->by_load[0], least = d->by_load[in_view - 1];

		fprintf(out, ",\"load\":{\"max\":%.4f,\"max_node\":", load_of(d, most));
		json_str(out, hr_ring_node(d->ring, most)->id);
		fprintf(out, ",\"min\":%.4f,\"min_node\":", load_of(d, least));
		json_str(out, hr_ring_node(d->ring, least)->id);
		fputc('}', out);
	} else {
		fputs(",\"load\":null", out);
	}
	fputs(",\"owners\":[", out);
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < a[v]->n; i++)
			add_owner(out, d, a[v]->a[i].node, map, &owners);
	for (size_t i = 0; i < m->page_take.n; i++) {
		add_owner(out, d, m->page_take.t[i].read, map, &owners);
		add_owner(out, d, m->page_take.t[i].write, map, &owners);
	}
	fputs("],\"arcs\":{\"write\":", out);
	write_arcs(out, a[HR_VIEW_WRITE], map);
	fputs(",\"read\":", out);
	write_arcs(out, a[HR_VIEW_READ], map);
	fputs("},\"takeover\":", out);
	write_takes(out, &m->page_take, map);
	fprintf(out, ",\"takeover_share\":%.6f}", hr__arc_share(&m->taken));
	free(map);
	return 0;
}

/* ---- orders ------------------------------------------------------------------------ */

struct keyed {
	double key;
	uint32_t i;
};

/* Largest key first; then by node number (id order). */
static int by_key_desc(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return (x->i > y->i) - (x->i < y->i);
}

/* The node numbers of k[0..n) in key order, into `out`. */
static void sort_keyed(struct keyed *k, size_t n, uint32_t *out)
{
	qsort(k, n, sizeof *k, by_key_desc);
	for (size_t i = 0; i < n; i++)
		out[i] = k[i].i;
}

static int make_orders(struct serve_drawing *d)
{
	struct keyed *k = malloc((d->n ? d->n : 1) * sizeof *k);

	d->by_load = malloc((d->n ? d->n : 1) * sizeof *d->by_load);
	d->by_share = malloc((d->n ? d->n : 1) * sizeof *d->by_share);
	if (!k || !d->by_load || !d->by_share) {
		free(k);
		return HR_ENOMEM;
	}
	for (size_t i = 0; i < d->n; i++)
		k[i] = (struct keyed){ load_of(d, i), (uint32_t)i };
	sort_keyed(k, d->n, d->by_load);
	for (size_t i = 0; i < d->n; i++)
		k[i] = (struct keyed){ d->shares[i], (uint32_t)i };
	sort_keyed(k, d->n, d->by_share);
	free(k);
	return 0;
}

/* ---- a drawing ------------------------------------------------------------------ */

static void drawing_free(struct serve_drawing *d)
{
	if (!d)
		return;
	hr_ring_release(d->ring);
	free(d->shares);
	free(d->by_load);
	free(d->by_share);
	free(d->overview);
	free(d->full);
	free(d);
}

/* `fn` into a new string; HR_ENOMEM if it or the stream failed. */
static int make_text(char **text, size_t *len, int (*fn)(FILE *, void *), void *arg)
{
	FILE *f = open_memstream(text, len);
	int rc;

	if (!f)
		return HR_ENOMEM;
	rc = fn(f, arg);
	if (fclose(f) && !rc)
		rc = HR_ENOMEM;
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

struct make_args {
	struct serve_drawer *dr;
	struct serve_drawing *d;
	const struct made *m;
};

static int overview_text(FILE *f, void *arg)
{
	struct make_args *a = arg;

	return write_overview(f, a->d, a->m);
}

static int full_text(FILE *f, void *arg)
{
	struct make_args *a = arg;

	write_full(f, a->dr, a->d, a->m);
	return stopping(a->dr) ? -1 : 0;
}

/* The walk's sources: the views' points, or a rendezvous ring's arcs. */
static int sources(const hr_ring *ring, struct source src[2], struct cli_arc *arcs[2])
{
	for (int v = 0; v < 2; v++) {
		src[v] = (struct source){ ring, (hr_view)v, NULL, 0 };
		arcs[v] = NULL;
		if (hr__ring_rendezvous(ring)) {
			src[v].n = cli_ring_arcs(ring, (hr_view)v, &arcs[v]);
			src[v].arcs = arcs[v];
			if (!src[v].n)
				return HR_ENOMEM;
		} else {
			src[v].n = hr__ring_view_points(ring, (hr_view)v);
		}
	}
	return 0;
}

static struct serve_drawing *drawing_new(hr_ring *ring, uint64_t seq)
{
	struct serve_drawing *d = calloc(1, sizeof *d);
	size_t n = hr_ring_node_count(ring);

	if (!d) {
		hr_ring_release(ring);
		return NULL;
	}
	d->refs = 1;
	d->ring = ring;
	d->seq = seq;
	d->n = n;
	d->shares = calloc(4 * (n ? n : 1), sizeof *d->shares);
	if (!d->shares) {
		drawing_free(d);
		return NULL;
	}
	cli_fair_shares(ring, HR_VIEW_WRITE, d->shares + 2 * n, n);
	cli_fair_shares(ring, HR_VIEW_READ, d->shares + 3 * n, n);
	return d;
}

void serve_drawing_release(struct serve_drawing *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0)
		drawing_free(d);
}

/* Publishes `d` as the newest drawing, or as the newest with its full
 * member. */
static void publish(struct serve_drawer *dr, struct serve_drawing **slot, struct serve_drawing *d)
{
	struct serve_drawing *old;

	__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&dr->mu);
	old = *slot;
	*slot = d;
	pthread_mutex_unlock(&dr->mu);
	serve_drawing_release(old);
}

static void draw(struct serve_drawer *dr, hr_ring *ring, uint64_t seq)
{
	struct made *m = calloc(1, sizeof *m);
	struct source src[2];
	struct cli_arc *arcs[2] = { NULL, NULL };
	uint64_t revision = hr_ring_revision(ring);
	struct serve_drawing *d = drawing_new(ring, seq);
	struct make_args args = { dr, d, m };
	int rc = d && m ? 0 : HR_ENOMEM;

	if (!rc) {
		size_t n = hr_ring_node_count(ring);

		for (int v = 0; v < 2; v++) {
			m->full[v].min_len = CLI_ARC_MIN_LEN;
			m->full[v].thin_over = CLI_ARCS_DRAWN_MAX;
			m->shares[v] = d->shares + v * n;
		}
		if (hr__ring_rendezvous(ring)) {
			hr_ring_node_shares(ring, HR_VIEW_WRITE, m->shares[HR_VIEW_WRITE], n);
			hr_ring_node_shares(ring, HR_VIEW_READ, m->shares[HR_VIEW_READ], n);
		} else if ((m->sums[0] = calloc(2 * (n ? n : 1), sizeof *m->sums[0]))) {
			m->sums[1] = m->sums[0] + n;
		} else {
			rc = HR_ENOMEM;
		}
		if (!rc)
			rc = sources(ring, src, arcs);
	}
	if (!rc && walk(dr, src, hr__ring_views_shared(ring), m))
		rc = -1; /* stopping */
	if (!rc && (m->full[0].failed || m->full[1].failed || m->page[0].failed ||
		    m->page[1].failed || m->full_take.failed || m->page_take.failed))
		rc = HR_ENOMEM;
	if (!rc)
		rc = make_orders(d);
	if (!rc)
		rc = make_text(&d->overview, &d->overview_len, overview_text, &args);
	/* The page's first: /ring.json, every node, can wait. */
	if (!rc)
		publish(dr, &dr->drawn, d);
	if (!rc && make_text(&d->full, &d->full_len, full_text, &args) == 0)
		publish(dr, &dr->full, d);
	if (rc == HR_ENOMEM)
		cli_warn("serve", "out of memory drawing the ring of revision %" PRIu64
			 ": the page shows the one before", revision);
	made_free(m);
	free(arcs[0]);
	free(arcs[1]);
	serve_drawing_release(d);
}

static void *draw_thread(void *arg)
{
	struct serve_drawer *dr = arg;

	pthread_mutex_lock(&dr->mu);
	for (;;) {
		hr_ring *ring;
		uint64_t seq;

		while (!dr->stop && !dr->pending)
			pthread_cond_wait(&dr->cv, &dr->mu);
		if (dr->stop)
			break;
		ring = dr->pending;
		seq = dr->pending_seq;
		dr->pending = NULL;
		dr->drawing = 1;
		pthread_mutex_unlock(&dr->mu);
		draw(dr, ring, seq);
		pthread_mutex_lock(&dr->mu);
		dr->drawing = 0;
	}
	pthread_mutex_unlock(&dr->mu);
	return NULL;
}

/* ---- the drawer ------------------------------------------------------------------ */

struct serve_drawer *serve_drawer_start(void)
{
	struct serve_drawer *dr = calloc(1, sizeof *dr);
	sigset_t all, old;
	int rc;

	if (!dr)
		return NULL;
	pthread_mutex_init(&dr->mu, NULL);
	pthread_cond_init(&dr->cv, NULL);
	/* Signals are for the main thread's wait. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&dr->thread, NULL, draw_thread, dr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_mutex_destroy(&dr->mu);
		pthread_cond_destroy(&dr->cv);
		free(dr);
		return NULL;
	}
	return dr;
}

void serve_drawer_stop(struct serve_drawer *dr)
{
	if (!dr)
		return;
	pthread_mutex_lock(&dr->mu);
	__atomic_store_n(&dr->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&dr->cv);
	pthread_mutex_unlock(&dr->mu);
	pthread_join(dr->thread, NULL);
	hr_ring_release(dr->pending);
	serve_drawing_release(dr->drawn);
	serve_drawing_release(dr->full);
	pthread_mutex_destroy(&dr->mu);
	pthread_cond_destroy(&dr->cv);
	free(dr);
}

void serve_drawer_submit(struct serve_drawer *dr, const hr_ring *ring, uint64_t seq)
{
	/* A ring is immutable; only its reference count changes. */
	hr_ring *r = hr_ring_retain((hr_ring *)ring);

	pthread_mutex_lock(&dr->mu);
	hr_ring_release(dr->pending);
	dr->pending = r;
	dr->pending_seq = seq;
	pthread_cond_signal(&dr->cv);
	pthread_mutex_unlock(&dr->mu);
}

struct serve_drawing *serve_drawer_get(struct serve_drawer *dr, int full)
{
	struct serve_drawing *d;

	pthread_mutex_lock(&dr->mu);
	d = full ? dr->full : dr->drawn;
	if (d)
		__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&dr->mu);
	return d;
}

int serve_drawer_busy(struct serve_drawer *dr)
{
	int busy;

	pthread_mutex_lock(&dr->mu);
	busy = dr->pending || dr->drawing;
	pthread_mutex_unlock(&dr->mu);
	return busy;
}

/* ---- what the HTTP thread reads -------------------------------------------------- */

const hr_ring *serve_drawing_ring(const struct serve_drawing *d)
{
	return d->ring;
}

uint64_t serve_drawing_seq(const struct serve_drawing *d)
{
	return d->seq;
}

void serve_drawing_write_overview(const struct serve_drawing *d, FILE *out)
{
	fwrite(d->overview, 1, d->overview_len, out);
}

void serve_drawing_write_full(const struct serve_drawing *d, FILE *out)
{
	fwrite(d->full, 1, d->full_len, out);
}

static int node_matches(const struct serve_drawing *d, size_t i,
			const struct serve_node_query *q)
{
	const hr_node *n = hr_ring_node(d->ring, i);

	if (q->state >= 0 && (int)n->state != q->state)
		return 0;
	return !q->q[0] || strcasestr(n->id, q->q) || strcasestr(n->addr, q->q) ||
	       (n->zone && strcasestr(n->zone, q->q));
}

static void write_lookups(FILE *out, const char *id, serve_lookups_fn fn, void *userdata)
{
	uint64_t w, r;
	double wps, rps;

	if (!fn(userdata, id, &w, &r, &wps, &rps)) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"write\":%" PRIu64 ",\"read\":%" PRIu64 ",", w, r);
	if (wps >= 0)
		fprintf(out, "\"write_per_s\":%.3f,\"read_per_s\":%.3f}", wps, rps);
	else
		fputs("\"write_per_s\":null,\"read_per_s\":null}", out);
}

/* The matching nodes by lookups per second (a node never looked up, or
 * without a rate yet, after those with one). */
static int sort_by_lookups(const struct serve_drawing *d, uint32_t *pick, size_t n,
			   serve_lookups_fn fn, void *userdata)
{
	struct keyed *k = malloc((n ? n : 1) * sizeof *k);

	if (!k)
		return HR_ENOMEM;
	for (size_t j = 0; j < n; j++) {
		uint64_t w, r;
		double wps = -1, rps;

		if (!fn(userdata, hr_ring_node(d->ring, pick[j])->id, &w, &r, &wps, &rps))
			wps = -1;
		k[j] = (struct keyed){ wps, pick[j] };
	}
	sort_keyed(k, n, pick);
	free(k);
	return 0;
}

int serve_drawing_write_nodes(const struct serve_drawing *d, const struct serve_node_query *q,
			      serve_lookups_fn fn, void *userdata, FILE *out)
{
	const uint32_t *order = q->sort == SERVE_SORT_LOAD ? d->by_load :
				q->sort == SERVE_SORT_SHARE ? d->by_share : NULL;
	uint32_t *pick = malloc((d->n ? d->n : 1) * sizeof *pick);
	size_t matched = 0;

	if (!pick)
		return HR_ENOMEM;
	for (size_t j = 0; j < d->n; j++) {
		size_t i = order ? order[j] : j;

		if (node_matches(d, i, q))
			pick[matched++] = (uint32_t)i;
	}
	if (q->sort == SERVE_SORT_LOOKUPS && sort_by_lookups(d, pick, matched, fn, userdata)) {
		free(pick);
		return HR_ENOMEM;
	}
	fprintf(out, "\"ring\":{\"seq\":%" PRIu64 ",\"revision\":%" PRIu64 ","
		"\"digest\":\"%016" PRIx64 "\"},\"total\":%zu,\"matched\":%zu,"
		"\"offset\":%zu,\"limit\":%zu,\"sort\":\"%s\",\"rows\":[",
		d->seq, hr_ring_revision(d->ring), hr_ring_digest(d->ring), d->n, matched,
		q->offset, q->limit, serve_sort_names[q->sort]);
	for (size_t j = q->offset; j < matched && j - q->offset < q->limit; j++) {
		const char *id = hr_ring_node(d->ring, pick[j])->id;

		if (j > q->offset)
			fputc(',', out);
		write_node(out, d, pick[j]);
		fputs(",\"lookups\":", out);
		write_lookups(out, id, fn, userdata);
		fputc('}', out);
	}
	fputc(']', out);
	free(pick);
	return 0;
}
