/* SPDX-License-Identifier: MIT */
/*
 * cmd_sim.c - `hashring sim`: reproduces the seed articles' tables on the
 * library's ring.
 *
 * N nodes "node-0".."node-<N-1>" and K keys "key-0".."key-<K-1>".  First the
 * share of keys that `hash % N` moves when N grows by one; then, for each
 * vnode count, the balance of the ring (heaviest and lightest node over the
 * mean, population standard deviation of keys/mean) and the share of keys
 * that move when node "node-<N>" joins, beside the ideal 1/(N+1).
 *
 * The ring is the library's own, so the figures are those of the placement
 * contract (XXH3).  The same tables with the seed articles' MD5 and FNV-1a
 * are a test tool's (tests/tools/sim_hashes.c): the product carries one
 * ring.  --compare, the alternatives side by side, is cmd_sim_compare.c's.
 */
#include "cli.h"
#include "cli_svg.h"
#include "sim_tokens.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CMD "sim"

#define NODES_DEFAULT 10
#define KEYS_DEFAULT 200000
#define KEYS_MAX 10000000ul /* keeps a run to seconds and memory to MBs */
#define KEYS_COMPARE_DEFAULT 1000000
#define VNODES_LIST_MAX 32

static const char description[] =
	"Places K keys (key-0, key-1, ...) on N nodes (node-0, ...) and prints\n"
	"the share of keys that hash % N moves when node N joins, then for each\n"
	"vnode count: the heaviest and the lightest node's keys over the mean,\n"
	"the population standard deviation of keys/mean, and the share of keys\n"
	"moved when node N joins the ring, beside the ideal 1/(N+1).\n"
	"The ring is the library's (the placement contract, XXH3).\n"
	"\n"
	"With --compare: the same nodes and keys on each placement (hash % N;\n"
	"rings of 1, 100, 200 and 500 vnodes; ketama; maglev; rendezvous; jump\n"
	"hash) and for each the heaviest and lightest node over the mean, the\n"
	"keys moved when node N joins and when one node leaves (beside the\n"
	"ideal), the lookup ns, build ms and bytes of memory.  hash % N and\n"
	"jump number their nodes: the last one leaves.\n"
	"\n"
	"With --placement tokens, N nodes join an empty ring one at a time, each\n"
	"with W x T tokens allocated against the ring it sees; prints each\n"
	"node's share over its fair share (largest, smallest), what a join moves\n"
	"beside the joiner's fair share, and the same after N/10 leave at\n"
	"random, one at a time: once with their arcs falling to the next\n"
	"points, once with their tokens handed to heirs.  docs: man hashring.";

struct sim_args {
	unsigned long nodes;
	unsigned long keys;
	unsigned long vnodes[VNODES_LIST_MAX];
	size_t nvnodes;
	int json;
	const char *svg;     /* --svg FILE, or NULL */
	int placement;       /* index in sim_placements */
	struct sim_tokens_args tok;
};

static const char *const sim_placements[] = { "xxh3", "tokens", NULL };

struct sim_row {
	unsigned long vnodes;
	double max_mean;
	double min_mean;
	double stddev;
	double moved;
	double ideal_moved;
};

static size_t key_name(char *buf, unsigned long i)
{
	return (size_t)snprintf(buf, CLI_SIM_NAME_MAX, "key-%lu", i);
}

/* ---- one row ---------------------------------------------------------------- */

/* Everything a row needs, prepared once per run. */
struct sim_ctx {
	const struct sim_args *args;
	char (*ids)[CLI_SIM_NAME_MAX];/* "node-0".."node-N" (N+1 of them) */
	unsigned long *count;     /* keys per node, before growth      */
};

/* Our own ids are "node-<i>"; turning one back into i is cheaper than any
 * pointer map and checks that the ring answered with one of ours. */
int cli_sim_node_index(const hr_node *node, unsigned long nodes, unsigned long *out)
{
	char *end;
	unsigned long i;

	if (!node || strncmp(node->id, "node-", 5) != 0)
		return -1;
	i = strtoul(node->id + 5, &end, 10);
	if (*end || i >= nodes)
		return -1;
	*out = i;
	return 0;
}

static int build_ring(struct sim_ctx *c, unsigned long nodes,
			      unsigned long vnodes, hr_ring **out)
{
	hr_ring_options opts = { .size = sizeof opts,
				 .vnodes_per_weight = (unsigned)vnodes };
	hr_error err = { 0 };
	hr_node *list;
	int rc;

	list = calloc(nodes, sizeof *list);
	if (!list)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	for (unsigned long i = 0; i < nodes; i++) {
		list[i].id = c->ids[i];
		list[i].addr = c->ids[i];
		list[i].weight = 1;
		list[i].state = HR_STATE_ACTIVE;
	}
	rc = hr_ring_build(list, nodes, &opts, 0, out, &err);
	free(list);
	return rc < 0 ? cli_fail(CMD, rc, &err) : CLI_EXIT_OK;
}

/* Counts keys per node before growth and keys that change owner. */
static int place_keys(struct sim_ctx *c, unsigned long vnodes,
			 unsigned long *moved)
{
	unsigned long n = c->args->nodes;
	hr_ring *before = NULL, *after = NULL;
	char key[CLI_SIM_NAME_MAX];
	int rc;

	rc = build_ring(c, n, vnodes, &before);
	if (rc == CLI_EXIT_OK)
		rc = build_ring(c, n + 1, vnodes, &after);
	for (unsigned long i = 0; rc == CLI_EXIT_OK && i < c->args->keys; i++) {
		size_t len = key_name(key, i);
		hr_lookup a, b;
		unsigned long ia, ib;

		if (hr_ring_lookup(before, key, len, &a, NULL) < 0 ||
		    hr_ring_lookup(after, key, len, &b, NULL) < 0 ||
		    cli_sim_node_index(a.node, n, &ia) < 0 ||
		    cli_sim_node_index(b.node, n + 1, &ib) < 0) {
			cli_error(CMD, "the ring gave no valid owner for %s",
				  key);
			rc = CLI_EXIT_ERROR;
			break;
		}
		c->count[ia]++;
		*moved += ia != ib;
	}
	hr_ring_release(before);
	hr_ring_release(after);
	return rc;
}

static int run_row(struct sim_ctx *c, unsigned long vnodes,
		   struct sim_row *row)
{
	unsigned long n = c->args->nodes, moved = 0;
	unsigned long max, min;
	double mean, sum = 0;
	int rc;

	memset(c->count, 0, n * sizeof *c->count);
	rc = place_keys(c, vnodes, &moved);
	if (rc != CLI_EXIT_OK)
		return rc;

	mean = (double)c->args->keys / (double)n;
	max = min = c->count[0];
	for (unsigned long i = 0; i < n; i++) {
		double d = (double)c->count[i] / mean - 1.0;

		if (c->count[i] > max)
			max = c->count[i];
		if (c->count[i] < min)
			min = c->count[i];
		sum += d * d;
	}
	row->vnodes = vnodes;
	row->max_mean = (double)max / mean;
	row->min_mean = (double)min / mean;
	row->stddev = sqrt(sum / (double)n);
	row->moved = (double)moved / (double)c->args->keys;
	row->ideal_moved = 1.0 / (double)(n + 1);
	return CLI_EXIT_OK;
}

/* ---- the run ---------------------------------------------------------------- */

/* Share of keys whose `hash % N` differs from `hash % (N+1)`. */
static double modulo_moved(const struct sim_args *a)
{
	unsigned long moved = 0;
	char key[CLI_SIM_NAME_MAX];

	for (unsigned long i = 0; i < a->keys; i++) {
		uint64_t h = hr_hash_key(key, key_name(key, i));

		moved += h % a->nodes != h % (a->nodes + 1);
	}
	return (double)moved / (double)a->keys;
}

static void print_json(const struct sim_args *a, double modulo,
		       const struct sim_row *rows)
{
	FILE *out = cli_out();

	fprintf(out, "{\"nodes\":%lu,\"keys\":%lu,\"hash\":\"xxh3\",\"modulo_moved\":%.6g,\"rows\":[",
		a->nodes, a->keys, modulo);
	for (size_t i = 0; i < a->nvnodes; i++) {
		const struct sim_row *r = &rows[i];

		fprintf(out, "%s{\"vnodes\":%lu,\"max_mean\":%.6g,\"min_mean\":%.6g,"
			"\"stddev\":%.6g,\"moved\":%.6g,\"ideal_moved\":%.6g}",
			i ? "," : "", r->vnodes, r->max_mean, r->min_mean,
			r->stddev, r->moved, r->ideal_moved);
	}
	fputs("]}\n", out);
}

static void print_table(const struct sim_args *a, double modulo,
			const struct sim_row *rows)
{
	FILE *out = cli_out();

	fprintf(out, "%lu keys on %lu nodes, hash xxh3 (the library's ring)\n\n", a->keys,
		a->nodes);
	fprintf(out, "hash %% N, %lu -> %lu nodes: %.1f%% of keys move (ideal %.1f%%)\n\n",
		a->nodes, a->nodes + 1, modulo * 100.0,
		100.0 / (double)(a->nodes + 1));
	fprintf(out, "Ring, node-%lu joins:\n", a->nodes);
	fprintf(out, "%8s  %9s  %9s  %8s  %8s  %8s\n", "vnodes", "max/mean",
		"min/mean", "stddev", "moved", "ideal");
	for (size_t i = 0; i < a->nvnodes; i++) {
		const struct sim_row *r = &rows[i];

		fprintf(out, "%8lu  %8.2fx  %8.2fx  %7.1f%%  %7.1f%%  %7.1f%%\n",
			r->vnodes, r->max_mean, r->min_mean, r->stddev * 100.0,
			r->moved * 100.0, r->ideal_moved * 100.0);
	}
}

static int write_svg(const struct sim_args *a, double modulo, const struct sim_row *rows)
{
	struct cli_sim_point points[VNODES_LIST_MAX];
	FILE *f = cli_svg_open(CMD, a->svg);

	if (!f)
		return CLI_EXIT_ERROR;
	for (size_t i = 0; i < a->nvnodes; i++)
		points[i] = (struct cli_sim_point){ rows[i].vnodes, rows[i].max_mean,
						    rows[i].min_mean, rows[i].moved,
						    rows[i].ideal_moved };
	cli_svg_sim(f, a->nodes, a->keys, modulo, points, a->nvnodes);
	return cli_svg_close(CMD, a->svg, f);
}

static int sim_run(const struct sim_args *a)
{
	struct sim_ctx c = { .args = a };
	struct sim_row rows[VNODES_LIST_MAX];
	int rc = CLI_EXIT_OK;
	double modulo;

	c.ids = calloc(a->nodes + 1, sizeof *c.ids);
	c.count = calloc(a->nodes, sizeof *c.count);
	if (!c.ids || !c.count) {
		rc = cli_fail(CMD, HR_ENOMEM, NULL);
		goto out;
	}
	for (unsigned long i = 0; i <= a->nodes; i++)
		snprintf(c.ids[i], sizeof c.ids[i], "node-%lu", i);

	for (size_t i = 0; rc == CLI_EXIT_OK && i < a->nvnodes; i++)
		rc = run_row(&c, a->vnodes[i], &rows[i]);
	if (rc != CLI_EXIT_OK)
		goto out;

	modulo = modulo_moved(a);
	if (a->json)
		print_json(a, modulo, rows);
	else
		print_table(a, modulo, rows);
	if (a->svg)
		rc = write_svg(a, modulo, rows);
out:
	free(c.ids);
	free(c.count);
	return rc;
}

/* ---- tokens ------------------------------------------------------------------- */

static int sim_tokens_main(struct sim_args *a)
{
	if (a->svg)
		return cli_usage(CMD, "--svg plots vnode counts: not with --placement tokens");
	if ((unsigned long long)a->nodes * a->tok.tokens * (a->tok.weighted ? 4 : 1) >
	    HR_POINTS_MAX)
		return cli_usage(CMD, "--tokens %lu: %lu nodes make more than the ring's %u points",
				 a->tok.tokens, a->nodes, HR_POINTS_MAX);
	a->tok.nodes = a->nodes;
	a->tok.json = a->json;
	return sim_tokens_run(CMD, &a->tok);
}

/* ---- options ------------------------------------------------------------------ */

int cmd_sim(int argc, char **argv)
{
	static const unsigned long default_vnodes[] = { 1, 10, 100, 200, 500 };
	struct sim_args a = {
		.nodes = NODES_DEFAULT,
		.keys = KEYS_DEFAULT,
		.tok.tokens = HR_TOKENS_DEFAULT,
	};
	struct cli_uints vlist = { .items = a.vnodes, .max = VNODES_LIST_MAX };
	int compare = 0, keys_given = 0, vnodes_given = 0, seed_given = 0;
	unsigned long seed = 0;
	int rc;

	vlist.n = sizeof default_vnodes / sizeof default_vnodes[0];
	memcpy(a.vnodes, default_vnodes, sizeof default_vnodes);
	const struct cli_option options[] = {
		/* One more node joins, and the ring caps its nodes. */
		{ .name = "nodes", .arg = "N", .type = CLI_UINT, .dest = &a.nodes,
		  .min = 1, .max = HR_NODES_MAX - 1, .help = "nodes before growth" },
		{ .name = "keys", .arg = "K", .type = CLI_UINT, .dest = &a.keys,
		  .min = 1, .max = KEYS_MAX, .given = &keys_given, .help = "keys placed",
		  .dflt = "200000, for --compare 1000000" },
		{ .name = "vnodes", .arg = "LIST", .type = CLI_UINTS, .dest = &vlist,
		  .min = 1, .max = HR_POINTS_MAX, .given = &vnodes_given,
		  .help = "comma-separated vnode counts; (N + 1) x each must fit the "
			  "ring's 33554432 points" },
		{ .name = "compare", .type = CLI_FLAG, .dest = &compare,
		  .help = "compare placements on the same nodes and keys instead; "
			  "--nodes 2 to 10000" },
		{ .name = "seed", .arg = "S", .type = CLI_UINT, .dest = &seed,
		  .min = 0, .max = UINT32_MAX, .given = &seed_given,
		  .help = "with --compare: chooses the node that leaves, and unless 0 "
			  "the keys (key-S-0, key-S-1, ...)" },
		{ .name = "json", .type = CLI_FLAG, .dest = &a.json,
		  .help = "print one JSON object" },
		{ .name = "svg", .arg = "FILE", .type = CLI_STRING, .dest = &a.svg,
		  .flags = CLI_NONEMPTY,
		  .help = "also plot max/mean, min/mean and keys moved into FILE, as "
			  "SVG: by vnodes, or by placement for --compare" },
		{ .name = "placement", .arg = "NAME", .type = CLI_CHOICE,
		  .dest = &a.placement, .choices = sim_placements,
		  .help = "tokens: joins one at a time with allocated tokens" },
		{ .name = "tokens", .arg = "T", .type = CLI_UINT, .dest = &a.tok.tokens,
		  .min = 1, .max = HR_TOKENS_MAX,
		  .help = "tokens per unit of weight (tokens placement)" },
		{ .name = "weighted", .type = CLI_FLAG, .dest = &a.tok.weighted,
		  .help = "weights 1, 2, 3, 4 in turn (tokens placement)" },
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--nodes N] [--keys K] [--vnodes LIST | --compare [--seed S]] "
			 "[--json] [--svg FILE] [--placement tokens [--tokens T] [--weighted]]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		return rc;
	a.nvnodes = vlist.n;
	if (a.placement == 1 && compare)
		return cli_usage(CMD, "--compare has its own rows: not with --placement tokens");
	if (a.placement == 1)
		return sim_tokens_main(&a);

	if (compare) {
		struct cli_compare_args ca = {
			.nodes = a.nodes, .keys = keys_given ? a.keys : KEYS_COMPARE_DEFAULT,
			.seed = seed, .json = a.json, .svg = a.svg,
		};

		if (vnodes_given)
			return cli_usage(CMD, "--vnodes is for the vnode table; --compare has its own rows");
		rc = cli_sim_compare_check(&ca);
		return rc == CLI_EXIT_OK ? cli_sim_compare(&ca) : rc;
	}
	if (seed_given)
		return cli_usage(CMD, "--seed goes with --compare");

	/* The grown ring must fit under the library's cap on points. */
	for (size_t i = 0; i < a.nvnodes; i++) {
		unsigned long long points =
			(unsigned long long)(a.nodes + 1) * a.vnodes[i];

		if (points > HR_POINTS_MAX)
			return cli_usage(CMD,
					 "--vnodes %lu: %lu nodes (with the one that joins) make %llu points, over the ring's cap of %u",
					 a.vnodes[i], a.nodes + 1, points,
					 HR_POINTS_MAX);
	}
	return sim_run(&a);
}
