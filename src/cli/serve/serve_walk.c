/* SPDX-License-Identifier: MIT */
/*
 * serve_walk.c - the walk over a ring's points that a drawing of `hashring
 * serve` is made of: one pass over both views' points at once, in ring
 * order: O(points), no sort and no allocation per point, and stopped within
 * a few milliseconds when the server stops.
 *
 * Each stretch between two points has one owner in each view; the walk
 * feeds the owners to the arcs of each view (adjacent stretches of one
 * owner are one arc), sums each node's stretches into its share of each
 * view (exactly as hr_ring_node_shares() does, point by point), and feeds
 * the stretches whose two owners differ to the takeover (the arcs a warming
 * node takes over, or a draining one hands over).  The arcs and the
 * takeover exist twice: in full for /ring.json, as they always were, and
 * for the page's circle, where an arc shorter than a pixel cannot be seen:
 * beyond PAGE_SLICES arcs the circle is drawn in PAGE_SLICES slices, each
 * of the owner of its middle, and beyond PAGE_SLICES stretches taken over,
 * one that starts less than a slice after the one before joins it, so that
 * the page draws about as much whatever the size of the ring.
 */
#include "serve_drawing.h"
#include "cli_svg.h"
#include "arc_sum.h" /* exact sums of arcs */
#include "ring_inspect.h" /* hr__ring_view_*(): the walk over the points */

#include <math.h>
#include <stdlib.h>

/* The page's circle in slices of about a pixel of its ring (2^10 of them,
 * each 2^54 positions long). */
#define PAGE_SLICE_BITS 54
#define PAGE_SLICES (1u << (64 - PAGE_SLICE_BITS))
/* The walk looks whether the drawer stops every this many stretches. */
#define STOP_EVERY 65536

/* ---- arcs ------------------------------------------------------------------- */

static void arcs_push(struct serve_arcs *s, uint64_t start, uint32_t node)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct serve_arc *a = realloc(s->a, cap * sizeof *a);

		if (!a) {
			s->failed = 1;
			return;
		}
		s->a = a;
		s->cap = cap;
	}
	s->a[s->n++] = (struct serve_arc){ start, node };
}

/* Keeps, of the arcs so far (the last ending before `end`), the first and
 * those at least min_len long: what thinning from the start keeps. */
static void arcs_thin(struct serve_arcs *s, uint64_t end)
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
static void arcs_close(struct serve_arcs *s, uint64_t end)
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
static void arcs_feed(struct serve_arcs *s, uint64_t first, uint32_t node)
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
static void page_arcs(const struct slices *s, const struct serve_arcs *full,
		      struct serve_arcs *out)
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

static void takes_feed(struct serve_takes *s, uint64_t first, uint64_t last, uint32_t read,
		       uint32_t write)
{
	struct serve_take *p = s->n ? &s->t[s->n - 1] : NULL;

	if (p && ((p->last + 1 == first && p->read == read && p->write == write) ||
		  (s->gap && first - p->last <= s->gap))) {
		p->last = last;
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct serve_take *t = realloc(s->t, cap * sizeof *t);

		if (!t) {
			s->failed = 1;
			return;
		}
		s->t = t;
		s->cap = cap;
	}
	s->t[s->n++] = (struct serve_take){ first, last, read, write };
}

/* ---- the walk ----------------------------------------------------------------- */

/* One view's points in ring order: a point owns the positions after the
 * one before it, up to its own.  A rendezvous ring, whose keys are not on
 * arcs, gives the ends of its arcs (cli_ring_arcs) instead. */
struct source {
	const hr_ring *ring;
	hr_view view;
	struct cli_arc *arcs; /* malloc'd */
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

/* What the walk needs besides what it makes. */
struct scratch {
	struct source src[2];
	struct slices slices[2];
	/* Each node's stretches summed, by view, modulo 2^64 (a node that owns
	 * the whole circle sums to 0); NULL: hr_ring_node_shares() instead
	 * (rendezvous, whose arcs are made of the shares). */
	uint64_t *sums[2];
	double *shares[2]; /* where the shares go: the drawing's */
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

/* Both views at once, stretch by stretch; one if they are one array (no
 * node warms or drains).  0, or SERVE_WALK_STOPPED once *stop is set. */
static int walk(struct scratch *s, int one, const int *stop, struct serve_walk *m)
{
	struct cursor w, r;
	uint64_t x = 0;

	cursor_init(&w, &s->src[HR_VIEW_WRITE]);
	cursor_init(&r, &s->src[HR_VIEW_READ]);
	for (size_t steps = 1;; steps++) {
		uint64_t e;

		if (one)
			r = w;
		e = w.pos < r.pos ? w.pos : r.pos;

		/* Positions x .. e: write owner w.node, read owner r.node. */
		if (s->sums[0] && w.node != CLI_NO_NODE)
			s->sums[HR_VIEW_WRITE][w.node] += e - x + 1;
		if (s->sums[0] && r.node != CLI_NO_NODE)
			s->sums[HR_VIEW_READ][r.node] += e - x + 1;
		arcs_feed(&m->full[HR_VIEW_WRITE], x, w.node);
		arcs_feed(&m->full[HR_VIEW_READ], x, r.node);
		slices_feed(&s->slices[HR_VIEW_WRITE], e, w.node);
		slices_feed(&s->slices[HR_VIEW_READ], e, r.node);
		if (w.node != r.node) {
			takes_feed(&m->full_take, x, e, r.node, w.node);
			hr__arc_add_span(&s->taken, x, e);
		}
		if (e == UINT64_MAX)
			break;
		x = e + 1;
		cursor_seek(&w, x);
		if (!one)
			cursor_seek(&r, x);
		if (steps % STOP_EVERY == 0 && serve_stopping(stop))
			return SERVE_WALK_STOPPED;
	}
	for (int v = 0; v < 2; v++) {
		arcs_close(&m->full[v], 0);
		page_arcs(&s->slices[v], &m->full[v], &m->page[v]);
		if (s->sums[0])
			shares_of(s->sums[v], hr_ring_node_count(s->src[v].ring),
				  v == HR_VIEW_WRITE ? w.wrap : r.wrap, s->shares[v]);
	}
	if (m->full_take.n > PAGE_SLICES)
		m->page_take.gap = UINT64_C(1) << PAGE_SLICE_BITS;
	for (size_t i = 0; i < m->full_take.n; i++) {
		const struct serve_take *t = &m->full_take.t[i];

		takes_feed(&m->page_take, t->first, t->last, t->read, t->write);
	}
	m->takeover_share = hr__arc_share(&s->taken);
	return 0;
}

/* The walk's sources: the views' points, or a rendezvous ring's arcs. */
static int sources(const hr_ring *ring, struct source src[2])
{
	for (int v = 0; v < 2; v++) {
		src[v] = (struct source){ ring, (hr_view)v, NULL, 0 };
		if (hr__ring_rendezvous(ring)) {
			src[v].n = cli_ring_arcs(ring, (hr_view)v, &src[v].arcs);
			if (!src[v].n)
				return HR_ENOMEM;
		} else {
			src[v].n = hr__ring_view_points(ring, (hr_view)v);
		}
	}
	return 0;
}

void serve_walk_free(struct serve_walk *w)
{
	if (!w)
		return;
	for (int v = 0; v < 2; v++) {
		free(w->full[v].a);
		free(w->page[v].a);
	}
	free(w->full_take.t);
	free(w->page_take.t);
	free(w);
}

int serve_walk_ring(const hr_ring *ring, double *shares, const int *stop,
		    struct serve_walk **out)
{
	struct serve_walk *m = calloc(1, sizeof *m);
	struct scratch *s = calloc(1, sizeof *s);
	size_t n = hr_ring_node_count(ring);
	int rc = m && s ? 0 : HR_ENOMEM;

	if (!rc) {
		for (int v = 0; v < 2; v++) {
			m->full[v].min_len = CLI_ARC_MIN_LEN;
			m->full[v].thin_over = CLI_ARCS_DRAWN_MAX;
			s->shares[v] = shares + v * n;
		}
		if (hr__ring_rendezvous(ring)) {
			hr_ring_node_shares(ring, HR_VIEW_WRITE, s->shares[HR_VIEW_WRITE], n);
			hr_ring_node_shares(ring, HR_VIEW_READ, s->shares[HR_VIEW_READ], n);
		} else if ((s->sums[0] = calloc(2 * (n ? n : 1), sizeof *s->sums[0]))) {
			s->sums[1] = s->sums[0] + n;
		} else {
			rc = HR_ENOMEM;
		}
	}
	if (!rc)
		rc = sources(ring, s->src);
	if (!rc)
		rc = walk(s, hr__ring_views_shared(ring), stop, m);
	if (!rc && (m->full[0].failed || m->full[1].failed || m->page[0].failed ||
		    m->page[1].failed || m->full_take.failed || m->page_take.failed))
		rc = HR_ENOMEM;
	if (s) {
		free(s->src[0].arcs);
		free(s->src[1].arcs);
		free(s->sums[0]);
		free(s);
	}
	if (rc) {
		serve_walk_free(m);
		m = NULL;
	}
	*out = m;
	return rc;
}
