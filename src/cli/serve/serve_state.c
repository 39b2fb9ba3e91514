/* SPDX-License-Identifier: MIT */
/*
 * serve_state.c - what `hashring serve` shows: the history of the rings a
 * client published, each handed to the drawer (serve_draw.c), and the
 * JSON answers made of the newest drawing, the status and the client's
 * lookup rates and hot keys.
 *
 * The page polls /status.json, which is small, once a second, and fetches
 * /overview.json (the drawing and the history) only when another ring is
 * drawn, and /nodes.json when it shows other nodes or the rates changed:
 * an unchanged ring costs a page a few hundred bytes a second, whatever
 * its size.  /ring.json has it all, every node, for scripts.
 */
#include "serve.h"
#include "cli.h"
#include "clock.h"

#include <inttypes.h>
#include <math.h>
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
	uint64_t seq; /* the ring's number: 1 for the first seen */
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
	uint64_t seq;          /* rings seen */
	/* Each ring is drawn once, on the drawer's thread, and its part of
	 * /metrics made once, on the metrics' thread. */
	struct serve_drawer *drawer;
	struct serve_metrics *metrics;
	/* Lookup rates: the counts at `base_ms` (monotonic), and the rates
	 * between the sample before it and it, in the same id order. */
	pthread_mutex_t rate_lock;
	hr_node_lookups *base;
	size_t nbase;
	int64_t base_ms;
	struct node_rate *rates;
	size_t nrates;
	double interval_s; /* 0: no rate yet */
	uint64_t samples;  /* bases taken */
	/* The sums of the base's counts and of the rates. */
	uint64_t total_write, total_read;
	double total_write_per_s, total_read_per_s;
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

struct serve_state *serve_state_new(size_t history_max, const hr_metrics_options *metrics)
{
	struct serve_state *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->entries = calloc(history_max, sizeof *s->entries);
	if (!s->entries) {
		free(s);
		return NULL;
	}
	s->drawer = serve_drawer_start();
	s->metrics = s->drawer ? serve_metrics_start(metrics) : NULL;
	if (!s->metrics) {
		serve_drawer_stop(s->drawer);
		free(s->entries);
		free(s);
		return NULL;
	}
	s->max = history_max;
	pthread_mutex_init(&s->lock, NULL);
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
	serve_drawer_stop(s->drawer);
	serve_metrics_stop(s->metrics);
	for (size_t i = 0; i < s->max; i++)
		entry_clear(&s->entries[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->rate_lock);
	free(s->base);
	free(s->rates);
	free(s->entries);
	free(s);
}

struct serve_metrics *serve_state_metrics(struct serve_state *s)
{
	return s->metrics;
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

/* From a ring without a node (the first ring seen), each node's write
 * share moved to it: the largest, from the shares, without a diff that
 * lists every arc of the ring.  Without memory, no moves. */
static void moves_from_none(struct entry *e, const hr_ring *ring)
{
	size_t n = hr_ring_node_count(ring), top[MOVES_MAX], k = 0;
	double *shares = malloc((n ? n : 1) * sizeof *shares);

	if (!shares)
		return;
	hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, n);
	/* The MOVES_MAX largest, largest first, in one pass. */
	for (size_t i = 0; i < n; i++) {
		size_t at = k;

		if (shares[i] <= 0)
			continue;
		while (at > 0 && shares[top[at - 1]] < shares[i])
			at--;
		if (at == MOVES_MAX)
			continue;
		if (k < MOVES_MAX)
			k++;
		memmove(&top[at + 1], &top[at], (k - 1 - at) * sizeof *top);
		top[at] = i;
	}
	for (size_t i = 0; i < k; i++) {
		struct move *m = &e->moves[e->nmoves++];

		m->from = NULL;
		m->to = dup_id(hr_ring_node(ring, top[i]));
		m->share = shares[top[i]];
	}
	free(shares);
}

/* The largest moves of the write view between `old` and `ring`.  Without
 * memory the entry just has fewer moves: the history is a view. */
static void entry_moves(struct entry *e, const hr_ring *old, const hr_ring *ring)
{
	hr_diff *diff = NULL;
	hr_error err = { 0 };
	hr_arc_total *totals;
	size_t n;

	if (!hr_ring_node_count(old)) {
		moves_from_none(e, ring);
		return;
	}
	if (hr_diff_new(old, ring, HR_VIEW_WRITE, &diff, &err))
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
	uint64_t seq;

	e.revision = hr_ring_revision(ring);
	e.digest = hr_ring_digest(ring);
	e.time_ms = unix_ms();
	e.nodes = hr_ring_node_count(ring);
	e.moved_write = hr_ring_moved_share(old, ring, HR_VIEW_WRITE);
	e.moved_read = hr_ring_moved_share(old, ring, HR_VIEW_READ);
	entry_moves(&e, old, ring);

	pthread_mutex_lock(&s->lock);
	seq = e.seq = ++s->seq;
	entry_clear(&s->entries[s->next]);
	s->entries[s->next] = e;
	s->next = (s->next + 1) % s->max;
	if (s->count < s->max)
		s->count++;
	pthread_mutex_unlock(&s->lock);
	serve_drawer_submit(s->drawer, ring, seq);
	serve_metrics_submit(s->metrics, ring);
}

/* ---- JSON ------------------------------------------------------------------- */

static void json_str(FILE *out, const char *s)
{
	if (s)
		cli_json_string(out, s, strlen(s));
	else
		fputs("null", out);
}

/* The rings up to the `seq`th, newest first: those of the drawing
 * served with them. */
static void write_history(FILE *out, struct serve_state *s, uint64_t seq)
{
	int first = 1;

	fputs("\"history\":[", out);
	pthread_mutex_lock(&s->lock);
	for (size_t k = 0; k < s->count; k++) {
		const struct entry *e = &s->entries[(s->next + s->max - 1 - k) % s->max];

		if (e->seq > seq)
			continue;
		fprintf(out, "%s{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
			"\"time_ms\":%" PRId64 ",\"nodes\":%zu,\"moved_write\":",
			first ? "" : ",", e->revision, e->digest, e->time_ms, e->nodes);
		serve_json_number(out, e->moved_write, SERVE_DIGITS_SHARE);
		fputs(",\"moved_read\":", out);
		serve_json_number(out, e->moved_read, SERVE_DIGITS_SHARE);
		fputs(",\"moves\":[", out);
		first = 0;
		for (size_t i = 0; i < e->nmoves; i++) {
			fputs(i ? ",{\"from\":" : "{\"from\":", out);
			json_str(out, e->moves[i].from);
			fputs(",\"to\":", out);
			json_str(out, e->moves[i].to);
			fputs(",\"share\":", out);
			serve_json_number(out, e->moves[i].share, SERVE_DIGITS_SHARE);
			fputc('}', out);
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
	s->samples++;
	s->total_write = s->total_read = 0;
	s->total_write_per_s = s->total_read_per_s = 0;
	for (size_t i = 0; i < n; i++) {
		s->total_write += base[i].write;
		s->total_read += base[i].read;
	}
	for (size_t i = 0; i < s->nrates; i++) {
		s->total_write_per_s += s->rates[i].write;
		s->total_read_per_s += s->rates[i].read;
	}
}

/* A new base once the last is RATE_INTERVAL_MS old: the counts are read
 * only then.  Under rate_lock. */
static void rates_tick(struct serve_state *s, hr_client *client)
{
	int64_t now = hr__now_ms();
	hr_node_lookups *cur;
	size_t n;

	if (s->base && now - s->base_ms < RATE_INTERVAL_MS)
		return;
	cur = counts_now(client, &n);
	rates_update(s, cur, n, now);
	free(cur);
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
	fputs("\"lookups\":{\"interval_s\":", out);
	serve_json_number(out, s->interval_s > 0 ? s->interval_s : NAN, SERVE_DIGITS_RATE);
	fputs(",\"nodes\":[", out);
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
		fputs("\"write_per_s\":", out);
		serve_json_number(out, r ? r->write : NAN, SERVE_DIGITS_RATE);
		fputs(",\"read_per_s\":", out);
		serve_json_number(out, r ? r->read : NAN, SERVE_DIGITS_RATE);
		fputc('}', out);
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
		fprintf(out, ",\"len\":%zu,\"rate\":", k->len);
		serve_json_number(out, k->rate, SERVE_DIGITS_RATE);
		fputs(",\"share\":", out);
		serve_json_number(out, k->share, SERVE_DIGITS_SHARE);
		fputs(",\"error\":", out);
		serve_json_number(out, k->error, SERVE_DIGITS_SHARE);
		fprintf(out, ",\"spread\":%s,\"node\":", k->spread ? "true" : "false");
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

	if (hr_client_status_get(client, &st, NULL))
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

/* The newest drawing (with its /ring.json member: `full`), or NULL after
 * the 503 answer saying the client's ring is not drawn yet. */
static struct serve_drawing *drawing_or_why(struct serve_state *s, hr_client *client,
					    int full, FILE *out)
{
	struct serve_drawing *d = serve_drawer_get(s->drawer, full);
	char why[128];
	hr_ring *ring;

	if (d)
		return d;
	ring = hr_client_ring(client);
	snprintf(why, sizeof why, "no ring yet: drawing the ring of revision %" PRIu64
		 " (%zu nodes)", hr_ring_revision(ring), hr_ring_node_count(ring));
	hr_ring_release(ring);
	serve_no_ring_json(client, why, out);
	return NULL;
}

int serve_ring_json(struct serve_state *s, hr_client *client, FILE *out)
{
	struct serve_drawing *d = drawing_or_why(s, client, 1, out);

	if (!d)
		return 503;
	write_head(out, client);
	serve_drawing_write_full(d, out);
	fputc(',', out);
	write_history(out, s, serve_drawing_seq(d));
	fputc(',', out);
	write_lookups(out, s, client);
	fputc(',', out);
	write_hot_keys(out, client);
	fputs("}\n", out);
	serve_drawing_release(d);
	return 200;
}

int serve_status_json(struct serve_state *s, hr_client *client, FILE *out)
{
	struct serve_drawing *d = drawing_or_why(s, client, 0, out);
	const hr_ring *ring;

	if (!d)
		return 503;
	ring = serve_drawing_ring(d);
	write_head(out, client);
	fprintf(out, "\"ring\":{\"seq\":%" PRIu64 ",\"revision\":%" PRIu64 ","
		"\"digest\":\"%016" PRIx64 "\",\"nodes\":%zu,\"points\":%zu,"
		"\"drawing\":%s},",
		serve_drawing_seq(d), hr_ring_revision(ring), hr_ring_digest(ring),
		hr_ring_node_count(ring), hr_ring_point_count(ring),
		serve_drawer_busy(s->drawer) ? "true" : "false");
	serve_drawing_release(d);
	pthread_mutex_lock(&s->rate_lock);
	rates_tick(s, client);
	fprintf(out, "\"lookups\":{\"sample\":%" PRIu64 ",\"nodes\":%zu,\"write\":%" PRIu64
		",\"read\":%" PRIu64 ",", s->samples, s->nbase, s->total_write, s->total_read);
	/* No interval yet: no rates, null. */
	fputs("\"interval_s\":", out);
	serve_json_number(out, s->interval_s > 0 ? s->interval_s : NAN, SERVE_DIGITS_RATE);
	fputs(",\"write_per_s\":", out);
	serve_json_number(out, s->interval_s > 0 ? s->total_write_per_s : NAN, SERVE_DIGITS_RATE);
	fputs(",\"read_per_s\":", out);
	serve_json_number(out, s->interval_s > 0 ? s->total_read_per_s : NAN, SERVE_DIGITS_RATE);
	fputs("},", out);
	pthread_mutex_unlock(&s->rate_lock);
	write_hot_keys(out, client);
	fputs("}\n", out);
	return 200;
}

int serve_overview_json(struct serve_state *s, hr_client *client, FILE *out)
{
	struct serve_drawing *d = drawing_or_why(s, client, 0, out);

	if (!d)
		return 503;
	write_head(out, client);
	serve_drawing_write_overview(d, out);
	fputc(',', out);
	write_history(out, s, serve_drawing_seq(d));
	fputs("}\n", out);
	serve_drawing_release(d);
	return 200;
}

static int by_node(const void *key, const void *elem)
{
	return strcmp(key, ((const hr_node_lookups *)elem)->node);
}

static int by_rate_node(const void *key, const void *elem)
{
	return strcmp(key, ((const struct node_rate *)elem)->node);
}

/* A serve_lookups_fn of the last sample: its counts, and the rates up to
 * it.  Under rate_lock. */
static int lookups_of(void *userdata, const char *id, uint64_t *write, uint64_t *read,
		      double *write_per_s, double *read_per_s)
{
	struct serve_state *s = userdata;
	const hr_node_lookups *c = bsearch(id, s->base, s->nbase, sizeof *s->base, by_node);
	const struct node_rate *r = s->rates ? bsearch(id, s->rates, s->nrates,
						       sizeof *s->rates, by_rate_node) : NULL;

	if (!c || (!c->write && !c->read))
		return 0;
	*write = c->write;
	*read = c->read;
	*write_per_s = r ? r->write : -1;
	*read_per_s = r ? r->read : -1;
	return 1;
}

int serve_nodes_json(struct serve_state *s, hr_client *client,
		     const struct serve_node_query *q, FILE *out)
{
	struct serve_drawing *d = drawing_or_why(s, client, 0, out);
	int rc;

	if (!d)
		return 503;
	write_head(out, client);
	pthread_mutex_lock(&s->rate_lock);
	rates_tick(s, client);
	rc = serve_drawing_write_nodes(d, q, lookups_of, s, out);
	pthread_mutex_unlock(&s->rate_lock);
	fputs("}\n", out);
	serve_drawing_release(d);
	return rc ? 500 : 200;
}
