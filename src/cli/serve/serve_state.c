/*
 * serve_state.c - what `hashring serve` shows: the history of the rings a
 * client published, and /ring.json, which the page polls, with the
 * client's lookup rates and hot keys.
 *
 * The page draws the ring from the arcs of both views (cli_ring_arcs) and
 * marks the arcs a warming node takes over, or a draining one hands over:
 * where the write view's owner differs from the read view's.
 */
#include "serve.h"
#include "cli.h"
#include "cli_svg.h"
#include "clock.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Node pairs kept per history entry: the largest moves. */
#define MOVES_MAX 8

struct move {
	char *from, *to; /* ids; NULL: no owner (empty view) */
	double share;
};

struct entry {
	uint64_t revision, digest;
	int64_t time_ms; /* Unix time */
	size_t nodes;
	double moved_write, moved_read;
	struct move moves[MOVES_MAX];
	size_t nmoves;
};

struct serve_state {
	pthread_mutex_t lock;
	struct entry *entries; /* a circular buffer of history_max */
	size_t max, count, next;
	/* The "ring" member of /ring.json for the ring held here, made once
	 * per ring: O(points), some 70 ms for 100 nodes at 200 points,
	 * while the ring changes far less often than the page polls.  A lock
	 * of its own: the watcher's callback never waits for it. */
	pthread_mutex_t made_lock;
	hr_ring *made_for;
	char *made;
	size_t made_len;
	/* Lookup rates: the counts at `base_ms` (monotonic), and the rates
	 * between the sample before it and it, in the same id order. */
	pthread_mutex_t rate_lock;
	hr_node_lookups *base;
	size_t nbase;
	int64_t base_ms;
	struct node_rate *rates;
	size_t nrates;
	double interval_s; /* 0: no rate yet */
};

struct node_rate {
	char node[HR_ID_MAX + 1];
	double write, read;
};

/* Rates are measured over at least this long: a page polls once a
 * second, and several pages at once share the samples. */
#define RATE_INTERVAL_MS 1000
/* Hot keys listed, as /metrics lists them. */
#define HOT_KEYS_SHOWN 10

struct serve_state *serve_state_new(size_t history_max)
{
	struct serve_state *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->entries = calloc(history_max, sizeof *s->entries);
	if (!s->entries) {
		free(s);
		return NULL;
	}
	s->max = history_max;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->made_lock, NULL);
	pthread_mutex_init(&s->rate_lock, NULL);
	return s;
}

static void entry_clear(struct entry *e)
{
	for (size_t i = 0; i < e->nmoves; i++) {
		free(e->moves[i].from);
		free(e->moves[i].to);
	}
	memset(e, 0, sizeof *e);
}

void serve_state_free(struct serve_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->max; i++)
		entry_clear(&s->entries[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->made_lock);
	pthread_mutex_destroy(&s->rate_lock);
	free(s->base);
	free(s->rates);
	hr_ring_release(s->made_for);
	free(s->made);
	free(s->entries);
	free(s);
}

static int64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dup_id(const hr_node *n)
{
	return n ? strdup(n->id) : NULL;
}

static int by_share_desc(const void *a, const void *b)
{
	double x = ((const hr_arc_total *)a)->share, y = ((const hr_arc_total *)b)->share;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The largest moves of the write view between `old` and `ring`.  Without
 * memory the entry just has fewer moves: the history is a view. */
static void entry_moves(struct entry *e, const hr_ring *old, const hr_ring *ring)
{
	hr_diff *diff = NULL;
	hr_error err = { 0 };
	hr_arc_total *totals;
	size_t n;

	if (hr_ring_diff(old, ring, HR_VIEW_WRITE, &diff, &err))
		return;
	n = hr_diff_total_count(diff);
	totals = n ? malloc(n * sizeof *totals) : NULL;
	if (totals) {
		memcpy(totals, hr_diff_totals(diff), n * sizeof *totals);
		qsort(totals, n, sizeof *totals, by_share_desc);
		for (size_t i = 0; i < n && e->nmoves < MOVES_MAX; i++) {
			struct move *m = &e->moves[e->nmoves++];

			m->from = dup_id(totals[i].old_node);
			m->to = dup_id(totals[i].new_node);
			m->share = totals[i].share;
		}
	}
	free(totals);
	hr_diff_free(diff);
}

void serve_on_change(void *userdata, const hr_ring *old, const hr_ring *ring)
{
	struct serve_state *s = userdata;
	struct entry e = { 0 };

	e.revision = hr_ring_revision(ring);
	e.digest = hr_ring_digest(ring);
	e.time_ms = unix_ms();
	e.nodes = hr_ring_node_count(ring);
	e.moved_write = hr_ring_moved_share(old, ring, HR_VIEW_WRITE);
	e.moved_read = hr_ring_moved_share(old, ring, HR_VIEW_READ);
	entry_moves(&e, old, ring);

	pthread_mutex_lock(&s->lock);
	entry_clear(&s->entries[s->next]);
	s->entries[s->next] = e;
	s->next = (s->next + 1) % s->max;
	if (s->count < s->max)
		s->count++;
	pthread_mutex_unlock(&s->lock);
}

/* ---- arcs ------------------------------------------------------------------- */

static void write_view(FILE *out, const struct cli_arc *arcs, size_t n)
{
	int coarse = n > CLI_ARCS_DRAWN_MAX;

	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		/* A short arc joins the previous one once there are many (end
		 * 0 is 2^64: the difference is the length, mod 2^64). */
		if (coarse && i && arcs[i].end - arcs[i].start < CLI_ARC_MIN_LEN)
			continue;
		fprintf(out, "%s[%.7f,%" PRId64 "]", i ? "," : "", cli_arc_share(arcs[i].start),
			arcs[i].node == CLI_NO_NODE ? (int64_t)-1 : (int64_t)arcs[i].node);
	}
	fputc(']', out);
}

struct take_ctx {
	FILE *out;
	int first;
};

static int64_t number(uint32_t node)
{
	return node == CLI_NO_NODE ? -1 : (int64_t)node;
}

/* One arc whose write owner differs from the read owner: [start, end,
 * read owner, write owner]. */
static void write_take(void *ud, double a, double b, uint32_t read_node, uint32_t write_node)
{
	struct take_ctx *t = ud;

	fprintf(t->out, "%s[%.7f,%.7f,%" PRId64 ",%" PRId64 "]", t->first ? "" : ",", a, b,
		number(read_node), number(write_node));
	t->first = 0;
}

/* ---- /ring.json ------------------------------------------------------------- */

static void json_str(FILE *out, const char *s)
{
	if (s)
		cli_json_string(out, s, strlen(s));
	else
		fputs("null", out);
}

/* shares: the write, then the read view's real shares, then their fair ones,
 * n each. */
static void write_nodes(FILE *out, const hr_ring *ring, const double *shares, size_t n)
{
	fputs("\"nodes\":[", out);
	for (size_t i = 0; i < n; i++) {
		const hr_node *node = hr_ring_node(ring, i);

		fputs(i ? ",{\"id\":" : "{\"id\":", out);
		json_str(out, node->id);
		fputs(",\"addr\":", out);
		json_str(out, node->addr);
		fputs(",\"zone\":", out);
		json_str(out, node->zone);
		fprintf(out, ",\"state\":\"%s\",\"hue\":%u,\"weight\":%.17g,\"vnodes\":%u,"
			"\"share_write\":%.6f,\"share_read\":%.6f,"
			"\"fair_write\":%.6f,\"fair_read\":%.6f}",
			hr_state_name(node->state), cli_node_hue(node->id), node->weight,
			hr_ring_node_vnodes(ring, node), shares[i], shares[n + i],
			shares[2 * n + i], shares[3 * n + i]);
	}
	fputc(']', out);
}

static int write_ring(FILE *out, const hr_ring *ring)
{
	size_t n = hr_ring_node_count(ring), nw, nr;
	double *shares = calloc(4 * (n ? n : 1), sizeof *shares);
	struct cli_arc *w = NULL, *r = NULL;
	struct take_ctx take = { out, 1 };
	int rc = HR_ENOMEM;
	double taken;

	if (!shares)
		goto out;
	nw = cli_ring_arcs(ring, HR_VIEW_WRITE, &w);
	nr = cli_ring_arcs(ring, HR_VIEW_READ, &r);
	if (!nw || !nr)
		goto out;
	hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, n);
	hr_ring_node_shares(ring, HR_VIEW_READ, shares + n, n);
	cli_fair_shares(ring, HR_VIEW_WRITE, shares + 2 * n, n);
	cli_fair_shares(ring, HR_VIEW_READ, shares + 3 * n, n);
	fprintf(out, "\"ring\":{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
		"\"points\":%zu,",
		hr_ring_revision(ring), hr_ring_digest(ring), hr_ring_point_count(ring));
	write_nodes(out, ring, shares, n);
	fputs(",\"arcs\":{\"write\":", out);
	write_view(out, w, nw);
	fputs(",\"read\":", out);
	write_view(out, r, nr);
	fprintf(out, ",\"coarse\":%s},\"takeover\":",
		nw > CLI_ARCS_DRAWN_MAX || nr > CLI_ARCS_DRAWN_MAX ? "true" : "false");
	fputc('[', out);
	taken = cli_takeover(w, nw, r, nr, write_take, &take);
	fputc(']', out);
	fprintf(out, ",\"takeover_share\":%.6f}", taken);
	rc = 0;
out:
	free(w);
	free(r);
	free(shares);
	return rc;
}

/* The ring's part, made again only for a new ring.  Only the HTTP thread
 * calls it, but the lock costs nothing and keeps that a detail. */
static int ring_part(struct serve_state *s, hr_ring *ring, FILE *out)
{
	int rc = 0;

	pthread_mutex_lock(&s->made_lock);
	if (ring != s->made_for) {
		char *made = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&made, &len);

		rc = f ? write_ring(f, ring) : HR_ENOMEM;
		if (f && fclose(f) && !rc)
			rc = HR_ENOMEM;
		if (rc) {
			free(made);
		} else {
			free(s->made);
			hr_ring_release(s->made_for);
			s->made = made;
			s->made_len = len;
			s->made_for = hr_ring_retain(ring);
		}
	}
	if (!rc)
		fwrite(s->made, 1, s->made_len, out);
	pthread_mutex_unlock(&s->made_lock);
	return rc;
}

static void write_history(FILE *out, struct serve_state *s)
{
	fputs("\"history\":[", out);
	pthread_mutex_lock(&s->lock);
	/* Newest first. */
	for (size_t k = 0; k < s->count; k++) {
		const struct entry *e = &s->entries[(s->next + s->max - 1 - k) % s->max];

		fprintf(out, "%s{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
			"\"time_ms\":%" PRId64 ",\"nodes\":%zu,\"moved_write\":%.6f,"
			"\"moved_read\":%.6f,\"moves\":[",
			k ? "," : "", e->revision, e->digest, e->time_ms, e->nodes,
			e->moved_write, e->moved_read);
		for (size_t i = 0; i < e->nmoves; i++) {
			fputs(i ? ",{\"from\":" : "{\"from\":", out);
			json_str(out, e->moves[i].from);
			fputs(",\"to\":", out);
			json_str(out, e->moves[i].to);
			fprintf(out, ",\"share\":%.6f}", e->moves[i].share);
		}
		fputs("]}", out);
	}
	pthread_mutex_unlock(&s->lock);
	fputc(']', out);
}

/* ---- lookups and hot keys ------------------------------------------------ */

/* The client's counts now, in id order; NULL (*n 0) without memory. */
static hr_node_lookups *counts_now(hr_client *client, size_t *n)
{
	hr_node_lookups *c = NULL;
	size_t total = 0, have = 0;
	hr_error err = { 0 };
	int got;

	/* Again with room for all if nodes came between the two calls. */
	for (int tries = 0; tries < 4; tries++) {
		got = hr_client_lookup_counts(client, c, have, &total, &err);
		if (got < 0 || (size_t)got == total)
			break;
		free(c);
		have = total + 8;
		c = malloc(have * sizeof *c);
		if (!c)
			break;
	}
	if (!c || got < 0) {
		free(c);
		*n = 0;
		return NULL;
	}
	*n = (size_t)got;
	return c;
}

/* Takes the counts `cur` as the new base once the base is old enough,
 * with the rates between the two.  Under rate_lock. */
static void rates_update(struct serve_state *s, const hr_node_lookups *cur, size_t n,
			 int64_t now)
{
	hr_node_lookups *base;
	struct node_rate *rates;
	double dt = (double)(now - s->base_ms) / 1000.0;
	size_t j = 0;

	if (s->base && now - s->base_ms < RATE_INTERVAL_MS)
		return;
	base = malloc((n ? n : 1) * sizeof *base);
	rates = calloc(n ? n : 1, sizeof *rates);
	if (!base || !rates) {
		free(base);
		free(rates);
		return; /* the old base stays: a longer interval next time */
	}
	if (n)
		memcpy(base, cur, n * sizeof *cur);
	/* Both in id order: one merge walk; a node new since the base
	 * counted from 0 there. */
	for (size_t i = 0; s->base && i < n; i++) {
		uint64_t w = 0, r = 0;

		while (j < s->nbase && strcmp(s->base[j].node, cur[i].node) < 0)
			j++;
		if (j < s->nbase && strcmp(s->base[j].node, cur[i].node) == 0) {
			w = s->base[j].write;
			r = s->base[j].read;
		}
		memcpy(rates[i].node, cur[i].node, sizeof rates[i].node);
		rates[i].write = (double)(cur[i].write - w) / dt;
		rates[i].read = (double)(cur[i].read - r) / dt;
	}
	if (s->base) {
		free(s->rates);
		s->rates = rates;
		s->nrates = n;
		s->interval_s = dt;
	} else {
		free(rates);
	}
	free(s->base);
	s->base = base;
	s->nbase = n;
	s->base_ms = now;
}

/*
 * "lookups": every node counted (hr_client_lookup_counts), with its
 * counts and its rates per second over the last interval of at least
 * RATE_INTERVAL_MS between two requests (null before there is one).
 */
static void write_lookups(FILE *out, struct serve_state *s, hr_client *client)
{
	size_t n, k = 0;
	hr_node_lookups *cur = counts_now(client, &n);

	pthread_mutex_lock(&s->rate_lock);
	rates_update(s, cur, n, hr__now_ms());
	if (s->interval_s > 0)
		fprintf(out, "\"lookups\":{\"interval_s\":%.3f,\"nodes\":[", s->interval_s);
	else
		fputs("\"lookups\":{\"interval_s\":null,\"nodes\":[", out);
	for (size_t i = 0; i < n; i++) {
		const struct node_rate *r = NULL;

		/* The rates are of the base, in the same order. */
		while (k < s->nrates && strcmp(s->rates[k].node, cur[i].node) < 0)
			k++;
		if (k < s->nrates && strcmp(s->rates[k].node, cur[i].node) == 0)
			r = &s->rates[k];
		fputs(i ? ",{\"node\":" : "{\"node\":", out);
		json_str(out, cur[i].node);
		fprintf(out, ",\"write\":%" PRIu64 ",\"read\":%" PRIu64 ",", cur[i].write,
			cur[i].read);
		if (r)
			fprintf(out, "\"write_per_s\":%.3f,\"read_per_s\":%.3f}", r->write, r->read);
		else
			fputs("\"write_per_s\":null,\"read_per_s\":null}", out);
	}
	pthread_mutex_unlock(&s->rate_lock);
	fputs("]}", out);
	free(cur);
}

/* "hot_keys": the client's, most frequent first (hr_client_hot_keys). */
static void write_hot_keys(FILE *out, hr_client *client)
{
	hr_hot_key keys[HOT_KEYS_SHOWN];
	hr_error err = { 0 };
	int n = hr_client_hot_keys(client, keys, HOT_KEYS_SHOWN, &err);

	fputs("\"hot_keys\":[", out);
	for (int i = 0; i < n; i++) {
		const hr_hot_key *k = &keys[i];

		fputs(i ? ",{\"key\":" : "{\"key\":", out);
		cli_json_string(out, (const char *)k->key,
				k->len < HR_HOT_KEY_MAX ? k->len : HR_HOT_KEY_MAX);
		fprintf(out, ",\"len\":%zu,\"rate\":%.3f,\"share\":%.6f,\"error\":%.6f,"
			"\"spread\":%s,\"node\":", k->len, k->rate, k->share, k->error,
			k->spread ? "true" : "false");
		json_str(out, k->node[0] ? k->node : NULL);
		fputs(",\"read_node\":", out);
		json_str(out, k->read_node[0] ? k->read_node : NULL);
		fputc('}', out);
	}
	fputc(']', out);
}

/* The object's opening members: version, time_ms and status. */
static void write_head(FILE *out, hr_client *client)
{
	hr_client_status st;

	if (hr_client_status_get(client, &st))
		memset(&st, 0, sizeof st);
	fprintf(out, "{\"version\":\"%s\",\"time_ms\":%" PRId64 ",\"status\":{"
		"\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
		"\"confirmed_revision\":%" PRIu64 ",\"unconfirmed_ms\":%" PRId64 ","
		"\"rings_published\":%" PRIu64 ",\"resyncs\":%" PRIu64 ","
		"\"reconnects\":%" PRIu64 ",\"endpoint\":",
		hr_version(), unix_ms(), st.revision, st.digest, st.confirmed_revision,
		st.unconfirmed_ms, st.rings_published, st.resyncs, st.reconnects);
	json_str(out, st.endpoint);
	fputs("},", out);
}

void serve_no_ring_json(hr_client *client, const char *error, FILE *out)
{
	write_head(out, client);
	fputs("\"ring\":null,\"error\":", out);
	json_str(out, error);
	fputs("}\n", out);
}

int serve_ring_json(struct serve_state *s, hr_client *client, FILE *out)
{
	hr_ring *ring;
	int rc;

	write_head(out, client);
	ring = hr_client_acquire(client);
	rc = ring_part(s, ring, out);
	hr_ring_release(ring);
	if (rc)
		return rc;
	fputc(',', out);
	write_history(out, s);
	fputc(',', out);
	write_lookups(out, s, client);
	fputc(',', out);
	write_hot_keys(out, client);
	fputs("}\n", out);
	return 0;
}
