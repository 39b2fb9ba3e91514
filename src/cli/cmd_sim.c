/*
 * cmd_sim.c - `hashring sim`: reproduces the seed articles' tables.
 *
 * N nodes "node-0".."node-<N-1>" and K keys "key-0".."key-<K-1>".  First the
 * share of keys that `hash % N` moves when N grows by one; then, for each
 * vnode count, the balance of the ring (heaviest and lightest node over the
 * mean, population standard deviation of keys/mean) and the share of keys
 * that move when node "node-<N>" joins, beside the ideal 1/(N+1).
 *
 * With xxh3 the ring is the library's own, so the figures are those of the
 * placement contract.  md5 and fnv1a exist to show why the hash matters:
 * for them this file builds a textbook sorted-array ring with the same point
 * names ("<id>#<i>"), as in the seed articles.
 */
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define CMD "sim"

#define NODES_DEFAULT 10
#define KEYS_DEFAULT 200000
#define KEYS_MAX 10000000ul /* keeps a run to seconds and memory to MBs */
#define VNODES_LIST_MAX 32
#define NAME_MAX_LEN 48     /* "node-<id>#<i>" and "key-<n>" fit easily */

enum sim_hash { SIM_XXH3, SIM_MD5, SIM_FNV1A };

static const char *const hash_names[] = { "xxh3", "md5", "fnv1a", NULL };

static const char description[] =
	"Places K keys (key-0, key-1, ...) on N nodes (node-0, ...) and prints\n"
	"the share of keys that hash % N moves when node N joins, then for each\n"
	"vnode count: the heaviest and the lightest node's keys over the mean,\n"
	"the population standard deviation of keys/mean, and the share of keys\n"
	"moved when node N joins the ring, beside the ideal 1/(N+1).\n"
	"xxh3 uses the library's ring (the placement contract); md5 (first 8\n"
	"bytes, big-endian) and fnv1a (64-bit) use a textbook ring with the\n"
	"same point names, to show how much the hash matters.";

struct sim_args {
	unsigned long nodes;
	unsigned long keys;
	unsigned long vnodes[VNODES_LIST_MAX];
	size_t nvnodes;
	enum sim_hash hash;
	int json;
};

struct sim_row {
	unsigned long vnodes;
	double max_mean;
	double min_mean;
	double stddev;
	double moved;
	double ideal_moved;
};

/* ---- hashes ---------------------------------------------------------------- */

struct hasher {
	enum sim_hash kind;
	EVP_MD *md5;
	EVP_MD_CTX *ctx;
};

static int hasher_init(struct hasher *h, enum sim_hash kind)
{
	memset(h, 0, sizeof *h);
	h->kind = kind;
	if (kind != SIM_MD5)
		return 0;
	h->md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	h->ctx = EVP_MD_CTX_new();
	return h->md5 && h->ctx ? 0 : -1;
}

static void hasher_free(struct hasher *h)
{
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md5);
}

static uint64_t fnv1a64(const char *s, size_t len)
{
	uint64_t x = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		x ^= (unsigned char)s[i];
		x *= 0x100000001b3ull;
	}
	return x;
}

static int hasher_hash(struct hasher *h, const char *s, size_t len,
		       uint64_t *out)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	uint64_t x = 0;

	switch (h->kind) {
	case SIM_XXH3:
		*out = hr_hash_key(s, len);
		return 0;
	case SIM_FNV1A:
		*out = fnv1a64(s, len);
		return 0;
	case SIM_MD5:
		if (!EVP_DigestInit_ex(h->ctx, h->md5, NULL) ||
		    !EVP_DigestUpdate(h->ctx, s, len) ||
		    !EVP_DigestFinal_ex(h->ctx, digest, &dlen) || dlen < 8)
			return -1;
		for (int i = 0; i < 8; i++)
			x = x << 8 | digest[i];
		*out = x;
		return 0;
	}
	return -1;
}

static size_t key_name(char *buf, unsigned long i)
{
	return (size_t)snprintf(buf, NAME_MAX_LEN, "key-%lu", i);
}

/* ---- the textbook ring (md5, fnv1a) --------------------------------------- */

struct tb_point {
	uint64_t pos;
	unsigned long node;
};

struct tb_ring {
	struct tb_point *points;
	size_t n;
};

static int tb_point_cmp(const void *pa, const void *pb)
{
	const struct tb_point *a = pa, *b = pb;
	char ida[NAME_MAX_LEN], idb[NAME_MAX_LEN];

	if (a->pos != b->pos)
		return a->pos < b->pos ? -1 : 1;
	/* Equal positions: by node id, bytewise, as the contract says. */
	snprintf(ida, sizeof ida, "node-%lu", a->node);
	snprintf(idb, sizeof idb, "node-%lu", b->node);
	return strcmp(ida, idb);
}

static int tb_build(struct tb_ring *ring, struct hasher *h,
		    unsigned long nodes, unsigned long vnodes)
{
	char name[NAME_MAX_LEN];
	size_t k = 0;

	ring->n = (size_t)nodes * vnodes;
	ring->points = malloc(ring->n * sizeof *ring->points);
	if (!ring->points)
		return HR_ENOMEM;
	for (unsigned long node = 0; node < nodes; node++) {
		for (unsigned long i = 0; i < vnodes; i++) {
			size_t len = (size_t)snprintf(name, sizeof name,
						      "node-%lu#%lu", node, i);

			if (hasher_hash(h, name, len, &ring->points[k].pos) < 0)
				return HR_EINVAL;
			ring->points[k++].node = node;
		}
	}
	qsort(ring->points, ring->n, sizeof *ring->points, tb_point_cmp);
	return 0;
}

/* The node of the first point at or after `pos`, wrapping to the first. */
static unsigned long tb_owner(const struct tb_ring *ring, uint64_t pos)
{
	size_t lo = 0, hi = ring->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ring->points[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return ring->points[lo == ring->n ? 0 : lo].node;
}

/* ---- one row ---------------------------------------------------------------- */

/* Everything a row needs, prepared once per run. */
struct sim_ctx {
	const struct sim_args *args;
	struct hasher hasher;
	uint64_t *key_hash;       /* textbook rings only               */
	char (*ids)[NAME_MAX_LEN];/* "node-0".."node-N" (N+1 of them)  */
	unsigned long *count;     /* keys per node, before growth      */
};

/* Our own ids are "node-<i>"; turning one back into i is cheaper than any
 * pointer map and checks that the ring answered with one of ours. */
static int node_index(const hr_node *node, unsigned long nodes,
		      unsigned long *out)
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

static int build_library_ring(struct sim_ctx *c, unsigned long nodes,
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
static int place_library(struct sim_ctx *c, unsigned long vnodes,
			 unsigned long *moved)
{
	unsigned long n = c->args->nodes;
	hr_ring *before = NULL, *after = NULL;
	char key[NAME_MAX_LEN];
	int rc;

	rc = build_library_ring(c, n, vnodes, &before);
	if (rc == CLI_EXIT_OK)
		rc = build_library_ring(c, n + 1, vnodes, &after);
	for (unsigned long i = 0; rc == CLI_EXIT_OK && i < c->args->keys; i++) {
		size_t len = key_name(key, i);
		hr_lookup a, b;
		unsigned long ia, ib;

		if (hr_ring_lookup(before, key, len, &a) < 0 ||
		    hr_ring_lookup(after, key, len, &b) < 0 ||
		    node_index(a.node, n, &ia) < 0 ||
		    node_index(b.node, n + 1, &ib) < 0) {
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

static int place_textbook(struct sim_ctx *c, unsigned long vnodes,
			  unsigned long *moved)
{
	unsigned long n = c->args->nodes;
	struct tb_ring before = { 0 }, after = { 0 };
	int rc;

	rc = tb_build(&before, &c->hasher, n, vnodes);
	if (rc == 0)
		rc = tb_build(&after, &c->hasher, n + 1, vnodes);
	if (rc == 0) {
		for (unsigned long i = 0; i < c->args->keys; i++) {
			unsigned long ia = tb_owner(&before, c->key_hash[i]);
			unsigned long ib = tb_owner(&after, c->key_hash[i]);

			c->count[ia]++;
			*moved += ia != ib;
		}
	}
	free(before.points);
	free(after.points);
	if (rc == 0)
		return CLI_EXIT_OK;
	cli_error(CMD, "%s", rc == HR_ENOMEM ? hr_strerror(rc) :
		  "hashing failed in libcrypto");
	return CLI_EXIT_ERROR;
}

static int run_row(struct sim_ctx *c, unsigned long vnodes,
		   struct sim_row *row)
{
	unsigned long n = c->args->nodes, moved = 0;
	unsigned long max, min;
	double mean, sum = 0;
	int rc;

	memset(c->count, 0, n * sizeof *c->count);
	if (c->args->hash == SIM_XXH3)
		rc = place_library(c, vnodes, &moved);
	else
		rc = place_textbook(c, vnodes, &moved);
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

/* Share of keys whose `hash % N` differs from `hash % (N+1)`; also keeps
 * every key's hash for the textbook ring. */
static int modulo_moved(struct sim_ctx *c, double *out)
{
	unsigned long n = c->args->nodes, moved = 0;
	char key[NAME_MAX_LEN];

	for (unsigned long i = 0; i < c->args->keys; i++) {
		size_t len = key_name(key, i);
		uint64_t h;

		if (hasher_hash(&c->hasher, key, len, &h) < 0) {
			cli_error(CMD, "hashing failed in libcrypto");
			return CLI_EXIT_ERROR;
		}
		if (c->key_hash)
			c->key_hash[i] = h;
		moved += h % n != h % (n + 1);
	}
	*out = (double)moved / (double)c->args->keys;
	return CLI_EXIT_OK;
}

static void print_json(const struct sim_args *a, double modulo,
		       const struct sim_row *rows)
{
	FILE *out = cli_out();

	fprintf(out, "{\"nodes\":%lu,\"keys\":%lu,\"hash\":\"%s\",\"modulo_moved\":%.6g,\"rows\":[",
		a->nodes, a->keys, hash_names[a->hash], modulo);
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

	fprintf(out, "%lu keys on %lu nodes, hash %s%s\n\n", a->keys, a->nodes,
		hash_names[a->hash],
		a->hash == SIM_XXH3 ? " (the library's ring)" : " (textbook ring)");
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

static int sim_run(const struct sim_args *a)
{
	struct sim_ctx c = { .args = a };
	struct sim_row rows[VNODES_LIST_MAX];
	double modulo = 0;
	int rc = CLI_EXIT_ERROR;

	if (hasher_init(&c.hasher, a->hash) < 0) {
		cli_error(CMD, "MD5 is not available from libcrypto");
		goto out;
	}
	c.ids = calloc(a->nodes + 1, sizeof *c.ids);
	c.count = calloc(a->nodes, sizeof *c.count);
	if (a->hash != SIM_XXH3)
		c.key_hash = calloc(a->keys, sizeof *c.key_hash);
	if (!c.ids || !c.count || (a->hash != SIM_XXH3 && !c.key_hash)) {
		rc = cli_fail(CMD, HR_ENOMEM, NULL);
		goto out;
	}
	for (unsigned long i = 0; i <= a->nodes; i++)
		snprintf(c.ids[i], sizeof c.ids[i], "node-%lu", i);

	rc = modulo_moved(&c, &modulo);
	for (size_t i = 0; rc == CLI_EXIT_OK && i < a->nvnodes; i++)
		rc = run_row(&c, a->vnodes[i], &rows[i]);
	if (rc != CLI_EXIT_OK)
		goto out;

	if (a->json)
		print_json(a, modulo, rows);
	else
		print_table(a, modulo, rows);
out:
	free(c.key_hash);
	free(c.ids);
	free(c.count);
	hasher_free(&c.hasher);
	return rc;
}

/* ---- options ------------------------------------------------------------------ */

int cmd_sim(int argc, char **argv)
{
	static const unsigned long default_vnodes[] = { 1, 10, 100, 200, 500 };
	struct sim_args a = {
		.nodes = NODES_DEFAULT,
		.keys = KEYS_DEFAULT,
		.hash = SIM_XXH3,
	};
	struct cli_uints vlist = { .items = a.vnodes, .max = VNODES_LIST_MAX };
	int hash = SIM_XXH3, rc;

	vlist.n = sizeof default_vnodes / sizeof default_vnodes[0];
	memcpy(a.vnodes, default_vnodes, sizeof default_vnodes);
	const struct cli_option options[] = {
		/* One more node joins, and the ring caps its nodes. */
		{ .name = "nodes", .arg = "N", .type = CLI_UINT, .dest = &a.nodes,
		  .min = 1, .max = HR_NODES_MAX - 1, .help = "nodes before growth" },
		{ .name = "keys", .arg = "K", .type = CLI_UINT, .dest = &a.keys,
		  .min = 1, .max = KEYS_MAX, .help = "keys placed" },
		{ .name = "vnodes", .arg = "LIST", .type = CLI_UINTS, .dest = &vlist,
		  .min = 1, .max = HR_POINTS_MAX,
		  .help = "comma-separated vnode counts; (N + 1) x each must fit the "
			  "ring's 33554432 points" },
		{ .name = "hash", .arg = "NAME", .type = CLI_CHOICE, .dest = &hash,
		  .choices = hash_names,
		  .help = "xxh3 is the library's ring; md5 and fnv1a a textbook one" },
		{ .name = "json", .type = CLI_FLAG, .dest = &a.json,
		  .help = "print one JSON object" },
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--nodes N] [--keys K] [--vnodes LIST] [--hash xxh3|md5|fnv1a] [--json]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		return rc;
	a.hash = (enum sim_hash)hash;
	a.nvnodes = vlist.n;

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
