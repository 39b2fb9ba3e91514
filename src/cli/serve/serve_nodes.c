/* SPDX-License-Identifier: MIT */
/*
 * serve_nodes.c - the nodes of a drawing of `hashring serve` in order: the
 * orders made once per drawing (by load, by write share), and the pages of
 * /nodes.json made of them on the HTTP thread: the nodes a search and a
 * state match, in the order asked for (by lookups, sorted then, as the
 * rates change each second), each row with its lookups.
 */
#define _GNU_SOURCE /* strcasestr */
#include "serve_drawing.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const serve_sort_names[SERVE_SORT_COUNT] = {
	[SERVE_SORT_LOAD] = "load", [SERVE_SORT_SHARE] = "share",
	[SERVE_SORT_ID] = "id", [SERVE_SORT_LOOKUPS] = "lookups",
};

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

double serve_drawing_load(const struct serve_drawing *d, size_t i)
{
	double fair = d->shares[2 * d->n + i];

	return fair > 0 ? d->shares[i] / fair : -1;
}

int serve_drawing_orders(struct serve_drawing *d)
{
	struct keyed *k = malloc((d->n ? d->n : 1) * sizeof *k);

	d->by_load = malloc((d->n ? d->n : 1) * sizeof *d->by_load);
	d->by_share = malloc((d->n ? d->n : 1) * sizeof *d->by_share);
	if (!k || !d->by_load || !d->by_share) {
		free(k);
		return HR_ENOMEM;
	}
	for (size_t i = 0; i < d->n; i++)
		k[i] = (struct keyed){ serve_drawing_load(d, i), (uint32_t)i };
	sort_keyed(k, d->n, d->by_load);
	for (size_t i = 0; i < d->n; i++)
		k[i] = (struct keyed){ d->shares[i], (uint32_t)i };
	sort_keyed(k, d->n, d->by_share);
	free(k);
	return 0;
}

/* ---- /nodes.json --------------------------------------------------------------------- */

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
	/* A negative rate: none yet, which null says too. */
	fputs("\"write_per_s\":", out);
	serve_json_number(out, wps >= 0 ? wps : NAN, SERVE_DIGITS_RATE);
	fputs(",\"read_per_s\":", out);
	serve_json_number(out, wps >= 0 ? rps : NAN, SERVE_DIGITS_RATE);
	fputc('}', out);
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
		serve_drawing_node_json(out, d, pick[j]);
		fputs(",\"lookups\":", out);
		write_lookups(out, id, fn, userdata);
		fputc('}', out);
	}
	fputc(']', out);
	free(pick);
	return 0;
}
