/* SPDX-License-Identifier: MIT */
/*
 * serve_drawing_json.c - the JSON of a drawing of `hashring serve`, written
 * once per ring on the drawer's thread (serve_drawer.c) from what the walk
 * made (serve_walk.c): /overview.json's "ring", the ring as the page shows
 * it (counts, zones, the most and least loaded node, the arcs and the
 * takeover thinned for its circle), and /ring.json's, every node and the
 * arcs in full.  Also a node's row, which /nodes.json writes too.
 */
#include "serve_drawing.h"
#include "cli.h"
#include "cli_svg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Zones listed in the overview, the most nodes first. */
#define ZONES_SHOWN 8

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

/* The members of d->shares, in its order. */
static const char *const share_names[4] = { "share_write", "share_read", "fair_write",
					     "fair_read" };

void serve_drawing_node_json(FILE *out, const struct serve_drawing *d, size_t i)
{
	const hr_node *node = hr_ring_node(d->ring, i);
	size_t n = d->n;

	fputs("{\"id\":", out);
	json_str(out, node->id);
	fputs(",\"addr\":", out);
	json_str(out, node->addr);
	fputs(",\"zone\":", out);
	json_str(out, node->zone);
	fprintf(out, ",\"state\":\"%s\",\"hue\":%u,\"weight\":", hr_state_name(node->state),
		cli_node_hue(node->id));
	serve_json_number(out, node->weight, SERVE_DIGITS_EXACT);
	fprintf(out, ",\"vnodes\":%u", hr_ring_node_vnodes(d->ring, node));
	for (int k = 0; k < 4; k++) {
		fprintf(out, ",\"%s\":", share_names[k]);
		serve_json_number(out, d->shares[k * n + i], SERVE_DIGITS_SHARE);
	}
}

/* [start, node] pairs; `map`, if not NULL, numbers the nodes instead. */
static void write_arcs(FILE *out, const struct serve_arcs *s, const uint32_t *map)
{
	fputc('[', out);
	for (size_t i = 0; i < s->n; i++) {
		uint32_t node = s->a[i].node;

		fputs(i ? ",[" : "[", out);
		serve_json_number(out, cli_arc_share(s->a[i].start), SERVE_DIGITS_PLACE);
		fprintf(out, ",%" PRId64 "]", number(map && node != CLI_NO_NODE ? map[node] : node));
	}
	fputc(']', out);
}

static void write_takes(FILE *out, const struct serve_takes *s, const uint32_t *map)
{
	fputc('[', out);
	for (size_t i = 0; i < s->n; i++) {
		const struct serve_take *t = &s->t[i];
		uint32_t r = t->read, w = t->write;

		if (map) {
			r = r == CLI_NO_NODE ? r : map[r];
			w = w == CLI_NO_NODE ? w : map[w];
		}
		fputs(i ? ",[" : "[", out);
		serve_json_number(out, cli_arc_share(t->first), SERVE_DIGITS_PLACE);
		fputc(',', out);
		serve_json_number(out, end_share(t->last), SERVE_DIGITS_PLACE);
		fprintf(out, ",%" PRId64 ",%" PRId64 "]", number(r), number(w));
	}
	fputc(']', out);
}

void serve_drawing_full_json(FILE *out, const struct serve_drawing *d,
			     const struct serve_walk *w, const int *stop)
{
	fprintf(out, "\"ring\":{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\","
		"\"points\":%zu,\"nodes\":[",
		hr_ring_revision(d->ring), hr_ring_digest(d->ring), hr_ring_point_count(d->ring));
	for (size_t i = 0; i < d->n; i++) {
		if (i % 1024 == 0 && serve_stopping(stop))
			return; /* dropped */
		if (i)
			fputc(',', out);
		serve_drawing_node_json(out, d, i);
		fputc('}', out);
	}
	fputs("],\"arcs\":{\"write\":", out);
	write_arcs(out, &w->full[HR_VIEW_WRITE], NULL);
	fputs(",\"read\":", out);
	write_arcs(out, &w->full[HR_VIEW_READ], NULL);
	fprintf(out, ",\"coarse\":%s},\"takeover\":",
		w->full[HR_VIEW_WRITE].thin || w->full[HR_VIEW_READ].thin ? "true" : "false");
	write_takes(out, &w->full_take, NULL);
	fputs(",\"takeover_share\":", out);
	serve_json_number(out, w->takeover_share, SERVE_DIGITS_SHARE);
	fputc('}', out);
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

/* The owners of the page's arcs and takeover are numbered in "owners" (id
 * and hue), which is short however many nodes the ring has. */
int serve_drawing_overview_json(FILE *out, const struct serve_drawing *d,
				const struct serve_walk *w)
{
	size_t states[3] = { 0, 0, 0 }, owners = 0, in_view = 0;
	uint32_t *map = malloc((d->n ? d->n : 1) * sizeof *map);
	const struct serve_arcs *a[2] = { &w->page[HR_VIEW_WRITE], &w->page[HR_VIEW_READ] };

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

		fputs(",\"load\":{\"max\":", out);
		serve_json_number(out, serve_drawing_load(d, most), SERVE_DIGITS_SHARE);
		fputs(",\"max_node\":", out);
		json_str(out, hr_ring_node(d->ring, most)->id);
		fputs(",\"min\":", out);
		serve_json_number(out, serve_drawing_load(d, least), SERVE_DIGITS_SHARE);
		fputs(",\"min_node\":", out);
		json_str(out, hr_ring_node(d->ring, least)->id);
		fputc('}', out);
	} else {
		fputs(",\"load\":null", out);
	}
	fputs(",\"owners\":[", out);
	for (int v = 0; v < 2; v++)
		for (size_t i = 0; i < a[v]->n; i++)
			add_owner(out, d, a[v]->a[i].node, map, &owners);
	for (size_t i = 0; i < w->page_take.n; i++) {
		add_owner(out, d, w->page_take.t[i].read, map, &owners);
		add_owner(out, d, w->page_take.t[i].write, map, &owners);
	}
	fputs("],\"arcs\":{\"write\":", out);
	write_arcs(out, a[HR_VIEW_WRITE], map);
	fputs(",\"read\":", out);
	write_arcs(out, a[HR_VIEW_READ], map);
	fputs("},\"takeover\":", out);
	write_takes(out, &w->page_take, map);
	fputs(",\"takeover_share\":", out);
	serve_json_number(out, w->takeover_share, SERVE_DIGITS_SHARE);
	fputc('}', out);
	free(map);
	return 0;
}
