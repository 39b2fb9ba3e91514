/* SPDX-License-Identifier: MIT */
/*
 * cmd_sim_compare.c - `hashring sim --compare`: the alternatives to a ring
 * with many vnodes, measured on one membership and one key set.
 *
 * Each row is a placement described by how it is built over a list of
 * nodes and how it looks a key up: the library's placements through
 * hr_ring_build() and hr_ring_lookup(), and two that keep no ring, hash %
 * N and jump hash, over numbered buckets (simulation only: the library
 * ships neither).  For every row: the heaviest and the lightest node's
 * keys over the mean, the share of keys that change owner when node N
 * joins and when one node leaves (beside the ideal), the lookup time, the
 * build time and the bytes of memory.  docs/hashring.1 defines each
 * column.  A new placement is one more line in `rows` below.
 */
#include "cli.h"
#include "cli_svg.h"
#include "ring_inspect.h" /* hr__ring_bytes() */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "sim"

#define LOOKUP_ROUNDS 5 /* over the whole key set; the median is shown */
#define BUILD_ROUNDS 5

/* ---- the placements without a ring --------------------------------------------- */

/* hash % N: perfect balance, and a new N moves nearly every key. */
static uint32_t modulo_bucket(uint64_t hash, uint32_t n)
{
	return (uint32_t)(hash % n);
}

/*
 * Jump consistent hash: J. Lamping and E. Veach, "A Fast, Minimal Memory,
 * Consistent Hash Algorithm" (2014), arXiv:1406.2294.  The key's hash
 * drives a linear congruential generator; each step jumps to the next
 * bucket count at which the key would move, and the last jump below n is
 * its bucket.  Buckets are numbered 0..n-1: only the last one can leave.
 */
static uint32_t jump_bucket(uint64_t hash, uint32_t n)
{
	int64_t b = -1, j = 0;

	while (j < (int64_t)n) {
		b = j;
		hash = hash * 2862933555777941757ull + 1;
		j = (int64_t)((double)(b + 1) *
			      ((double)(1ll << 31) / (double)((hash >> 33) + 1)));
	}
	return (uint32_t)b;
}

/* ---- rows ---------------------------------------------------------------------- */

/* The keys, one block of text: key i is text[off[i] .. off[i + 1]). */
struct cmp_keys {
	char *text;
	size_t *off;
	size_t n;
};

struct cmp_row;
struct cmp_ctx;

/* How a kind of row builds, answers, measures and frees a placement. */
struct cmp_ops {
	int (*build)(const struct cmp_row *row, const struct cmp_ctx *c,
		     const hr_node *nodes, size_t n, void **out, hr_error *err);
	/* The owner of one key: a node of the list it was built from (or
	 * the ring's copy of it). */
	const hr_node *(*lookup)(const void *built, const void *key, size_t len);
	/* Looks every key up as a caller would; the result only keeps the
	 * loop from being optimized away. */
	uintptr_t (*sweep)(const void *built, const struct cmp_keys *keys);
	size_t (*bytes)(const void *built);
	void (*release)(void *built);   /* accepts NULL */
};

struct cmp_row {
	const char *name;
	const struct cmp_ops *ops;
	hr_ring_options opts;                     /* ring rows */
	uint32_t (*bucket)(uint64_t hash, uint32_t n); /* bucket rows */
	/* Nodes are buckets 0..n-1: the last one leaves, not any. */
	int numbered;
};

/* The library's rings. */
static int ring_build(const struct cmp_row *row, const struct cmp_ctx *c,
		      const hr_node *nodes, size_t n, void **out, hr_error *err)
{
	(void)c;
	return hr_ring_build(nodes, n, &row->opts, 0, (hr_ring **)out, err);
}

static const hr_node *ring_lookup(const void *built, const void *key, size_t len)
{
	hr_lookup l;

	return hr_ring_lookup(built, key, len, &l, NULL) == 0 ? l.node : NULL;
}

static uintptr_t ring_sweep(const void *built, const struct cmp_keys *k)
{
	uintptr_t sum = 0;
	hr_lookup l;

	for (size_t i = 0; i < k->n; i++) {
		hr_ring_lookup(built, k->text + k->off[i], k->off[i + 1] - k->off[i], &l, NULL);
		sum += (uintptr_t)l.node;
	}
	return sum;
}

static size_t ring_bytes(const void *built)
{
	return hr__ring_bytes(built);
}

static void ring_release(void *built)
{
	hr_ring_release(built);
}

static const struct cmp_ops ring_ops = { ring_build, ring_lookup, ring_sweep, ring_bytes,
					 ring_release };

/* Allocated tokens: a ring like the others once its nodes' tokens are
 * known (struct cmp_ctx's table, allocated one join at a time). */
static int tokens_build(const struct cmp_row *row, const struct cmp_ctx *c,
			const hr_node *nodes, size_t n, void **out, hr_error *err);

static const struct cmp_ops tokens_ops = { tokens_build, ring_lookup, ring_sweep, ring_bytes,
					   ring_release };

/* Numbered buckets: what they keep is the array from bucket to node (the
 * nodes themselves are the caller's). */
struct buckets {
	uint32_t (*bucket)(uint64_t hash, uint32_t n);
	uint32_t n;
	const hr_node *node[];
};

static int buckets_build(const struct cmp_row *row, const struct cmp_ctx *c,
			 const hr_node *nodes, size_t n, void **out, hr_error *err)
{
	struct buckets *b = malloc(sizeof *b + n * sizeof b->node[0]);

	(void)c;
	(void)err;
	if (!b)
		return HR_ENOMEM;
	b->bucket = row->bucket;
	b->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		b->node[i] = &nodes[i];
	*out = b;
	return HR_OK;
}

static const hr_node *buckets_lookup(const void *built, const void *key, size_t len)
{
	const struct buckets *b = built;

	return b->node[b->bucket(hr_hash_key(key, len), b->n)];
}

static uintptr_t buckets_sweep(const void *built, const struct cmp_keys *k)
{
	const struct buckets *b = built;
	uintptr_t sum = 0;

	for (size_t i = 0; i < k->n; i++) {
		uint64_t h = hr_hash_key(k->text + k->off[i], k->off[i + 1] - k->off[i]);

		sum += (uintptr_t)b->node[b->bucket(h, b->n)];
	}
	return sum;
}

static size_t buckets_bytes(const void *built)
{
	const struct buckets *b = built;

	return sizeof *b + b->n * sizeof b->node[0];
}

static const struct cmp_ops buckets_ops = { buckets_build, buckets_lookup, buckets_sweep,
					    buckets_bytes, free };

#define RING_ROW(row_name, pl, vnodes)                                              \
	{ .name = row_name, .ops = &ring_ops,                                       \
	  .opts = { .size = sizeof(hr_ring_options), .placement = pl,               \
		    .vnodes_per_weight = vnodes } }
#define TOKENS_ROW(row_name)                                                        \
	{ .name = row_name, .ops = &tokens_ops,                                     \
	  .opts = { .size = sizeof(hr_ring_options), .placement = HR_PLACEMENT_TOKENS } }
#define BUCKET_ROW(row_name, fn) \
	{ .name = row_name, .ops = &buckets_ops, .bucket = fn, .numbered = 1 }

/* The rows, in the order printed.  Ketama's points come from its weights
 * (160 per node at equal weights, a few fewer where libmemcached's float32
 * arithmetic rounds down), Maglev's from its default table; tokens-16's
 * nodes joined one at a time with HR_TOKENS_DEFAULT (16) tokens each. */
static const struct cmp_row rows[] = {
	BUCKET_ROW("modulo", modulo_bucket),
	RING_ROW("ring-1", HR_PLACEMENT_XXH3, 1),
	RING_ROW("ring-100", HR_PLACEMENT_XXH3, 100),
	RING_ROW("ring-200", HR_PLACEMENT_XXH3, 200),
	RING_ROW("ring-500", HR_PLACEMENT_XXH3, 500),
	TOKENS_ROW("tokens-16"),
	RING_ROW("ketama", HR_PLACEMENT_KETAMA, 0),
	RING_ROW("maglev", HR_PLACEMENT_MAGLEV, 0),
	RING_ROW("rendezvous", HR_PLACEMENT_RENDEZVOUS, 0),
	BUCKET_ROW("jump", jump_bucket),
};
#define NROWS (sizeof rows / sizeof rows[0])

/* ---- measuring one row ------------------------------------------------------------ */

/* What a row measured. */
struct cmp_result {
	double max_mean, min_mean;
	double moved_add, moved_remove;
	unsigned long leaves;        /* the node that left */
	double lookup_ns, build_ms;
	size_t bytes;
};

/* Everything the rows share: the membership and the keys. */
struct cmp_ctx {
	const struct cli_compare_args *args;
	char (*ids)[CLI_SIM_NAME_MAX];   /* node-0 .. node-N                   */
	hr_node *all;                    /* node-0 .. node-N, the last joins   */
	hr_node *without;                /* node-0 .. node-N-1 but `leaves`    */
	unsigned long leaves;            /* the node that leaves any-node rows */
	struct cmp_keys keys;
	unsigned long *count;            /* keys per node, N                   */
	/* Node i's tokens, allocated joining node-0..node-(i-1): the N+1
	 * build is the N nodes and node N's join, the N-1 build the N nodes
	 * without the one that leaves. */
	uint64_t (*tokens)[HR_TOKENS_DEFAULT];
};

static int tokens_build(const struct cmp_row *row, const struct cmp_ctx *c,
			const hr_node *nodes, size_t n, void **out, hr_error *err)
{
	/* The nodes with their tokens: the other placements' nodes have
	 * none. */
	hr_node *with = malloc((n ? n : 1) * sizeof *with);
	int rc = with ? HR_OK : HR_ENOMEM;

	for (size_t i = 0; rc == HR_OK && i < n; i++) {
		unsigned long at;

		with[i] = nodes[i];
		if (cli_sim_node_index(&nodes[i], c->args->nodes + 1, &at) < 0) {
			rc = err->code = HR_EINVAL;
			snprintf(err->message, sizeof err->message, "node \"%s\" has no tokens",
				 nodes[i].id);
		} else {
			with[i].tokens = c->tokens[at];
			with[i].ntokens = HR_TOKENS_DEFAULT;
		}
	}
	if (rc == HR_OK)
		rc = hr_ring_build(with, n, &row->opts, 0, (hr_ring **)out, err);
	free(with);
	return rc;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_u64);
	return v[n / 2];
}

static int build(const struct cmp_ctx *c, const struct cmp_row *row, const hr_node *nodes,
		 size_t n, void **out)
{
	hr_error err = { 0 };
	int rc = row->ops->build(row, c, nodes, n, out, &err);

	if (rc < 0) {
		*out = NULL;
		cli_error(CMD, "%s: %s", row->name,
			  err.message[0] ? err.message : hr_strerror(rc));
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

/* The owner of key i as a node number below `nodes`, or -1 after an error
 * line. */
static long owner_of(const struct cmp_ctx *c, const struct cmp_row *row, const void *built,
		     size_t i, unsigned long nodes)
{
	const char *key = c->keys.text + c->keys.off[i];
	const hr_node *node = row->ops->lookup(built, key, c->keys.off[i + 1] - c->keys.off[i]);
	unsigned long n;

	if (cli_sim_node_index(node, nodes, &n) < 0) {
		cli_error(CMD, "%s: no valid owner for key %zu", row->name, i);
		return -1;
	}
	return (long)n;
}

/* How many keys change owner from `base` (the N nodes) to `other` (a build
 * over node-0..node-N, the last one joining, or over N - 1 of them); with
 * `first`, also the keys of each node of `base`. */
static int count_keys(struct cmp_ctx *c, const struct cmp_row *row, const void *base,
		      const void *other, int first, unsigned long *moved)
{
	unsigned long n = c->args->nodes;

	*moved = 0;
	for (size_t i = 0; i < c->keys.n; i++) {
		long a = owner_of(c, row, base, i, n), b = owner_of(c, row, other, i, n + 1);

		if (a < 0 || b < 0)
			return CLI_EXIT_ERROR;
		if (first)
			c->count[a]++;
		*moved += a != b;
	}
	return CLI_EXIT_OK;
}

static void balance(const struct cmp_ctx *c, struct cmp_result *r)
{
	unsigned long n = c->args->nodes, max = c->count[0], min = c->count[0];
	double mean = (double)c->keys.n / (double)n;

	for (unsigned long i = 1; i < n; i++) {
		max = c->count[i] > max ? c->count[i] : max;
		min = c->count[i] < min ? c->count[i] : min;
	}
	r->max_mean = (double)max / mean;
	r->min_mean = (double)min / mean;
}

static int run_row(struct cmp_ctx *c, const struct cmp_row *row, struct cmp_result *r)
{
	size_t n = c->args->nodes;
	void *base = NULL, *grown = NULL, *shrunk = NULL;
	uint64_t lookup[LOOKUP_ROUNDS], builds[BUILD_ROUNDS];
	unsigned long moved = 0;
	volatile uintptr_t sink = 0;
	int rc;

	memset(c->count, 0, n * sizeof *c->count);
	for (int k = 0; k < BUILD_ROUNDS; k++) {
		uint64_t t0;

		row->ops->release(base);
		base = NULL;
		t0 = thread_ns();
		if ((rc = build(c, row, c->all, n, &base)) != CLI_EXIT_OK)
			return rc;
		builds[k] = thread_ns() - t0;
	}
	r->build_ms = (double)median(builds, BUILD_ROUNDS) / 1e6;
	r->bytes = row->ops->bytes(base);

	/* Numbered buckets lose the last one; the others the chosen node. */
	r->leaves = row->numbered ? n - 1 : c->leaves;
	rc = build(c, row, c->all, n + 1, &grown);
	if (rc == CLI_EXIT_OK)
		rc = build(c, row, row->numbered ? c->all : c->without, n - 1, &shrunk);
	if (rc == CLI_EXIT_OK)
		rc = count_keys(c, row, base, grown, 1, &moved);
	r->moved_add = (double)moved / (double)c->keys.n;
	if (rc == CLI_EXIT_OK)
		rc = count_keys(c, row, base, shrunk, 0, &moved);
	r->moved_remove = (double)moved / (double)c->keys.n;
	balance(c, r);

	for (int k = 0; rc == CLI_EXIT_OK && k < LOOKUP_ROUNDS; k++) {
		uint64_t t0 = thread_ns();

		sink += row->ops->sweep(base, &c->keys);
		lookup[k] = thread_ns() - t0;
	}
	if (rc == CLI_EXIT_OK)
		r->lookup_ns = (double)median(lookup, LOOKUP_ROUNDS) / (double)c->keys.n;
	(void)sink;
	row->ops->release(base);
	row->ops->release(grown);
	row->ops->release(shrunk);
	return rc;
}

/* ---- output ------------------------------------------------------------------------- */

static double ideal_add(const struct cli_compare_args *a)
{
	return 1.0 / (double)(a->nodes + 1);
}

static double ideal_remove(const struct cli_compare_args *a)
{
	return 1.0 / (double)a->nodes;
}

static void print_json(const struct cmp_ctx *c, const struct cmp_result *res)
{
	const struct cli_compare_args *a = c->args;
	FILE *out = cli_out();

	fprintf(out, "{\"nodes\":%lu,\"keys\":%lu,\"seed\":%lu,\"hash\":\"xxh3\","
		"\"joins\":\"node-%lu\",\"ideal_moved_add\":%.6g,\"ideal_moved_remove\":%.6g,"
		"\"lookup_rounds\":%d,\"build_rounds\":%d,\"rows\":[",
		a->nodes, a->keys, a->seed, a->nodes, ideal_add(a), ideal_remove(a),
		LOOKUP_ROUNDS, BUILD_ROUNDS);
	for (size_t i = 0; i < NROWS; i++) {
		const struct cmp_result *r = &res[i];

		fprintf(out, "%s{\"name\":\"%s\",\"numbered\":%s,\"leaves\":\"node-%lu\","
			"\"max_mean\":%.6g,\"min_mean\":%.6g,"
			"\"moved_add\":%.6g,\"moved_add_ratio\":%.6g,"
			"\"moved_remove\":%.6g,\"moved_remove_ratio\":%.6g,"
			"\"lookup_ns\":%.4g,\"build_ms\":%.4g,\"bytes\":%zu}",
			i ? "," : "", rows[i].name, rows[i].numbered ? "true" : "false",
			r->leaves, r->max_mean, r->min_mean, r->moved_add,
			r->moved_add / ideal_add(a), r->moved_remove,
			r->moved_remove / ideal_remove(a), r->lookup_ns, r->build_ms, r->bytes);
	}
	fputs("]}\n", out);
}

static void print_table(const struct cmp_ctx *c, const struct cmp_result *res)
{
	const struct cli_compare_args *a = c->args;
	FILE *out = cli_out();

	fprintf(out, "%lu keys on %lu nodes, key hash xxh3; node-%lu joins, node-%lu leaves "
		"(* numbered buckets: node-%lu, the last, leaves)\n",
		a->keys, a->nodes, a->nodes, c->leaves, a->nodes - 1);
	fprintf(out, "ideal: %.2f%% of keys move on a join (1/(N+1)), %.2f%% on a leave (1/N); "
		"lookup and build: thread CPU time, median of %d and %d rounds\n\n",
		100 * ideal_add(a), 100 * ideal_remove(a), LOOKUP_ROUNDS, BUILD_ROUNDS);
	fprintf(out, "%-10s %9s %9s %11s %8s %11s %8s %10s %9s %10s\n", "placement", "max/mean",
		"min/mean", "join moved", "/ideal", "leave moved", "/ideal", "lookup ns",
		"build ms", "bytes");
	for (size_t i = 0; i < NROWS; i++) {
		const struct cmp_result *r = &res[i];
		char name[32];

		snprintf(name, sizeof name, "%s%s", rows[i].name, rows[i].numbered ? "*" : "");
		fprintf(out, "%-10s %8.3fx %8.3fx %10.2f%% %7.2fx %10.2f%% %7.2fx %10.1f %9.3f %10zu\n",
			name, r->max_mean, r->min_mean, 100 * r->moved_add,
			r->moved_add / ideal_add(a), 100 * r->moved_remove,
			r->moved_remove / ideal_remove(a), r->lookup_ns, r->build_ms, r->bytes);
	}
}

static int write_svg(const struct cmp_ctx *c, const struct cmp_result *res)
{
	const struct cli_compare_args *a = c->args;
	struct cli_compare_bar bars[NROWS];
	FILE *f = cli_svg_open(CMD, a->svg);

	if (!f)
		return CLI_EXIT_ERROR;
	for (size_t i = 0; i < NROWS; i++)
		bars[i] = (struct cli_compare_bar){ rows[i].name, res[i].max_mean, res[i].min_mean,
						    res[i].moved_add / ideal_add(a),
						    res[i].moved_remove / ideal_remove(a) };
	cli_svg_compare(f, a->nodes, a->keys, bars, NROWS);
	return cli_svg_close(CMD, a->svg, f);
}

/* ---- the run --------------------------------------------------------------------------- */

/* SplitMix64 (Steele, Lea and Flood, 2014): one seed, one well-mixed
 * number, to choose the node that leaves. */
static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* key-<i>, as `sim` places them, or with a seed key-<seed>-<i>. */
static size_t key_name(const struct cli_compare_args *a, char *buf, size_t room,
		       unsigned long i)
{
	return (size_t)(a->seed ? snprintf(buf, room, "key-%lu-%lu", a->seed, i)
				: snprintf(buf, room, "key-%lu", i));
}

static int make_keys(const struct cli_compare_args *a, struct cmp_keys *k)
{
	/* The last key is the longest. */
	size_t room = a->keys * key_name(a, NULL, 0, a->keys - 1) + 1, used = 0;

	k->n = a->keys;
	k->text = malloc(room);
	k->off = malloc((a->keys + 1) * sizeof *k->off);
	if (!k->text || !k->off)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	for (unsigned long i = 0; i < a->keys; i++) {
		k->off[i] = used;
		used += key_name(a, k->text + used, room - used, i);
	}
	k->off[a->keys] = used;
	return CLI_EXIT_OK;
}

static int make_nodes(struct cmp_ctx *c)
{
	unsigned long n = c->args->nodes;

	c->ids = calloc(n + 1, sizeof *c->ids);
	c->all = calloc(n + 1, sizeof *c->all);
	c->without = calloc(n, sizeof *c->without);
	c->count = calloc(n, sizeof *c->count);
	if (!c->ids || !c->all || !c->without || !c->count)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	for (unsigned long i = 0; i <= n; i++) {
		snprintf(c->ids[i], sizeof c->ids[i], "node-%lu", i);
		c->all[i] = (hr_node){ .id = c->ids[i], .addr = c->ids[i], .weight = 1,
				       .state = HR_STATE_ACTIVE };
	}
	c->leaves = (unsigned long)(splitmix64(c->args->seed) % n);
	for (unsigned long i = 0, j = 0; i < n; i++)
		if (i != c->leaves)
			c->without[j++] = c->all[i];
	return CLI_EXIT_OK;
}

/* Fills c->tokens: node-0 .. node-N join one at a time, each allocating
 * its tokens against the ring of those before it. */
static int allocate_tokens(struct cmp_ctx *c)
{
	size_t n = c->args->nodes + 1;
	hr_node *with = malloc(n * sizeof *with);
	hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_TOKENS };
	hr_error err = { 0 };
	int rc = HR_OK;

	c->tokens = malloc(n * sizeof *c->tokens);
	if (!with || !c->tokens)
		rc = HR_ENOMEM;
	for (size_t i = 0; rc == HR_OK && i < n; i++) {
		hr_ring *ring = NULL;

		if (i)
			rc = hr_ring_build(with, i, &o, 0, &ring, &err);
		if (rc == HR_OK)
			rc = hr_tokens_allocate(ring, &c->all[i], HR_TOKENS_DEFAULT,
						c->tokens[i], &err);
		hr_ring_release(ring);
		with[i] = c->all[i];
		with[i].tokens = c->tokens[i];
		with[i].ntokens = HR_TOKENS_DEFAULT;
	}
	free(with);
	return rc == HR_OK ? CLI_EXIT_OK : cli_fail(CMD, rc, &err);
}

int cli_sim_compare(const struct cli_compare_args *a)
{
	struct cmp_ctx c = { .args = a };
	struct cmp_result res[NROWS] = { 0 };
	int rc;

	rc = make_nodes(&c);
	if (rc == CLI_EXIT_OK)
		rc = make_keys(a, &c.keys);
	if (rc == CLI_EXIT_OK)
		rc = allocate_tokens(&c);
	for (size_t i = 0; rc == CLI_EXIT_OK && i < NROWS; i++)
		rc = run_row(&c, &rows[i], &res[i]);
	if (rc == CLI_EXIT_OK) {
		if (a->json)
			print_json(&c, res);
		else
			print_table(&c, res);
		if (a->svg)
			rc = write_svg(&c, res);
	}
	free(c.ids);
	free(c.all);
	free(c.without);
	free(c.count);
	free(c.tokens);
	free(c.keys.text);
	free(c.keys.off);
	return rc;
}

int cli_sim_compare_check(const struct cli_compare_args *a)
{
	if (a->nodes < 2)
		return cli_usage(CMD, "--compare needs --nodes 2 or more: one of them leaves");
	if (a->nodes > CLI_COMPARE_NODES_MAX)
		return cli_usage(CMD,
				 "--compare takes --nodes up to %u (the Maglev row's table of %u slots needs several per node)",
				 CLI_COMPARE_NODES_MAX, HR_MAGLEV_SIZE_DEFAULT);
	return CLI_EXIT_OK;
}
