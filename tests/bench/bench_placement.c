/* SPDX-License-Identifier: MIT */
/*
 * bench_placement.c - hashring-bench-placement: Maglev's, rendezvous' and
 * allocated tokens' figures beside the 200-vnode ring of the native
 * contract, in one run (docs/placement.md sections 14, 15 and 16 quote
 * them; the tokens rows' M is the tokens per node, joined one at a time).
 * For N equal nodes and each table size M:
 *   max/mean, min/mean   the nodes' shares of the write view, times N
 *   leave, join          keys moved when node N/2 leaves or a node joins,
 *                        as a multiple of the minimum (its own share)
 *   build                ms for one ring (this thread's CPU time, as below)
 *   api, raw             ns per hr_ring_lookup() of 16-byte keys ("key-" and 12 digits), and per
 *                        lookup of a hashed position (after the key hash:
 *                        for Maglev the table read alone)
 *
 *   hashring-bench-placement [N ...]    (default: 100 1000)
 *
 * With "rendezvous" first, the lookup costs of rendezvous (O(N) per key)
 * and of the 200-vnode ring side by side, at each N (default: 5 10 20 50
 * 100 200 1000), with the ring's max/mean share (rendezvous' is 1) and
 * rendezvous' moved keys on a leave and a join over the minimum.
 *   hashring-bench-placement rendezvous [N ...]
 */
#include "hashring.h"
#include "ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEYS (1u << 20)
#define REPS 5

static char keys[KEYS][24];
static size_t lens[KEYS];
static uint64_t hashes[KEYS];

static double now_s(void)
{
	struct timespec t;

	/* CPU time of this thread: other processes on the machine do not count. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* n equal nodes "node-<i>", i in [0, n] but `skip`; exits on failure. */
static hr_ring *make_ring(int n, int skip, hr_placement pl, uint64_t m,
			  double *build_ms)
{
	hr_node *nodes = calloc((size_t)n, sizeof *nodes);
	char (*ids)[24] = calloc((size_t)n, sizeof *ids);
	hr_ring_options o;
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	size_t k = 0;
	double t;

	if (!nodes || !ids)
		exit(1);
	for (int i = 0; i < n; i++) {
		if (i == skip)
			continue;
		snprintf(ids[k], sizeof ids[k], "node-%d", i);
		nodes[k] = (hr_node){ .id = ids[k], .addr = "127.0.0.1:11211", .weight = 1 };
		k++;
	}
	hr_ring_options_init(&o);
	o.placement = pl;
	o.maglev_size = m;
	t = now_s();
	if (hr_ring_build(nodes, k, &o, 0, &ring, &err)) {
		fprintf(stderr, "hashring-bench-placement: %s\n", err.message);
		exit(1);
	}
	if (build_ms)
		*build_ms = (now_s() - t) * 1e3;
	free(nodes);
	free(ids);	/* the ring keeps copies */
	return ring;
}

/* The best of REPS passes over `nkeys` keys, in ns per lookup. */
static double lookup_ns_of(const hr_ring *ring, int raw, size_t nkeys)
{
	double best = 1e30;
	uintptr_t sink = 0;

	for (int rep = 0; rep < REPS; rep++) {
		double t = now_s();
		hr_lookup lk;

		for (size_t i = 0; i < nkeys; i++) {
			if (raw)
				hr__ring_lookup_pos(ring, hashes[i], &lk);
			else
				hr_ring_lookup(ring, keys[i], lens[i], &lk, NULL);
			sink += (uintptr_t)lk.node;
		}
		t = (now_s() - t) / (double)nkeys * 1e9;
		if (t < best)
			best = t;
	}
	if (sink == 1)
		puts("");
	return best;
}

static double lookup_ns(const hr_ring *ring, int raw)
{
	return lookup_ns_of(ring, raw, KEYS);
}

/* Every node's write share (hr_ring_node_shares); exits without memory. */
static double *write_shares(const hr_ring *ring)
{
	size_t n = hr_ring_node_count(ring);
	double *s = malloc((n ? n : 1) * sizeof *s);

	if (!s)
		exit(1);
	hr_ring_node_shares(ring, HR_VIEW_WRITE, s, n);
	return s;
}

/* Rendezvous beside the 200-vnode ring: lookups of both at N nodes, over
 * fewer keys as N grows so that a row takes seconds, not minutes. */
static void rendezvous_row(int n)
{
	size_t nkeys = (size_t)(1u << 26) / (size_t)n;
	hr_ring *pts = make_ring(n, -1, HR_PLACEMENT_XXH3, 0, NULL);
	hr_ring *ring = make_ring(n, -1, HR_PLACEMENT_RENDEZVOUS, 0, NULL);
	hr_ring *fewer = make_ring(n, n / 2, HR_PLACEMENT_RENDEZVOUS, 0, NULL);
	hr_ring *more = make_ring(n + 1, -1, HR_PLACEMENT_RENDEZVOUS, 0, NULL);
	double build_ms, most = 0, *shares;

	hr_ring_release(make_ring(n, -1, HR_PLACEMENT_RENDEZVOUS, 0, &build_ms));
	/* The ring's largest share, times N; rendezvous' are all 1/N. */
	shares = write_shares(pts);
	for (int i = 0; i < n; i++)
		most = shares[i] > most ? shares[i] : most;
	free(shares);
	if (nkeys > KEYS)
		nkeys = KEYS;
	printf("%6d %9.3f %9.2f %9.2f %9.2f %9.2f %6.2f %6.2f %9.3f\n", n,
	       most * n, lookup_ns(pts, 0), lookup_ns(pts, 1),
	       lookup_ns_of(ring, 0, nkeys),
	       lookup_ns_of(ring, 1, nkeys),
	       hr_ring_moved_share(ring, fewer, HR_VIEW_WRITE) * n,
	       hr_ring_moved_share(ring, more, HR_VIEW_WRITE) * (n + 1), build_ms);
	hr_ring_release(pts);
	hr_ring_release(ring);
	hr_ring_release(fewer);
	hr_ring_release(more);
}

static int rendezvous_table(int argc, char **argv)
{
	static const int sizes[] = { 5, 10, 20, 50, 100, 200, 1000 };
	int count = argc > 2 ? argc - 2 : (int)(sizeof sizes / sizeof sizes[0]);

	printf("%6s %9s %9s %9s %9s %9s %6s %6s %9s\n", "nodes", "xxh3 max",
	       "xxh3 api", "xxh3 raw",
	       "rdv api", "rdv raw", "leave", "join", "build ms");
	for (int a = 0; a < count; a++) {
		int n = argc > 2 ? atoi(argv[a + 2]) : sizes[a];

		if (n < 2 || n >= HR_NODES_MAX) {
			fprintf(stderr, "hashring-bench-placement: bad node count\n");
			return 2;
		}
		rendezvous_row(n);
	}
	return 0;
}

static void row(const char *name, int n, hr_placement pl, uint64_t m)
{
	double build_ms, most = 0, least = 2, leave, join;
	hr_ring *ring = make_ring(n, -1, pl, m, &build_ms);
	hr_ring *fewer = make_ring(n, n / 2, pl, m, NULL);
	hr_ring *more = make_ring(n + 1, -1, pl, m, NULL);
	double *shares = write_shares(ring);

	for (int i = 0; i < n; i++) {
		most = shares[i] > most ? shares[i] : most;
		least = shares[i] < least ? shares[i] : least;
	}
	free(shares);
	leave = hr_ring_moved_share(ring, fewer, HR_VIEW_WRITE) * n;
	join = hr_ring_moved_share(ring, more, HR_VIEW_WRITE) * (n + 1);
	printf("%-10s %6d %9lu %8.4f %8.4f %6.2f %6.2f %9.2f %7.2f %7.2f\n", name, n,
	       (unsigned long)m, most * n, least * n, leave, join, build_ms,
	       lookup_ns(ring, 0), lookup_ns(ring, 1));
	hr_ring_release(ring);
	hr_ring_release(fewer);
	hr_ring_release(more);
}

/* n equal nodes joined one at a time with t allocated tokens each, then
 * without node `skip` (-1: none); exits on failure. */
static hr_ring *tokens_ring(int n, int skip, size_t t, double *build_ms)
{
	hr_node *nodes = calloc((size_t)n + 1, sizeof *nodes);
	char (*ids)[24] = calloc((size_t)n + 1, sizeof *ids);
	uint64_t *tok = calloc(((size_t)n + 1) * t, sizeof *tok);
	hr_ring_options o;
	hr_error err = { 0 };
	hr_ring *ring = NULL, *next = NULL;
	double tm = 0;

	if (!nodes || !ids || !tok)
		exit(1);
	hr_ring_options_init(&o);
	o.placement = HR_PLACEMENT_TOKENS;
	for (int i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "node-%d", i);
		nodes[i] = (hr_node){ .id = ids[i], .addr = "127.0.0.1:11211", .weight = 1 };
		if (hr_tokens_allocate(ring, &nodes[i], t, tok + (size_t)i * t, &err))
			goto fail;
		nodes[i].tokens = tok + (size_t)i * t;
		nodes[i].ntokens = t;
		tm = now_s();
		if (hr_ring_build(nodes, (size_t)i + 1, &o, 0, &next, &err))
			goto fail;
		tm = now_s() - tm;
		hr_ring_release(ring);
		ring = next;
	}
	if (skip >= 0) {
		memmove(nodes + skip, nodes + skip + 1, (size_t)(n - skip - 1) * sizeof *nodes);
		if (hr_ring_build(nodes, (size_t)n - 1, &o, 0, &next, &err))
			goto fail;
		hr_ring_release(ring);
		ring = next;
	}
	if (build_ms)
		*build_ms = tm * 1e3;
	free(nodes);
	free(ids);
	free(tok);
	return ring;
fail:
	fprintf(stderr, "hashring-bench-placement: %s\n", err.message);
	exit(1);
}

static void tokens_row(int n, size_t t)
{
	double build_ms, most = 0, least = 2, leave, join;
	hr_ring *ring = tokens_ring(n, -1, t, &build_ms);
	hr_ring *fewer = tokens_ring(n, n / 2, t, NULL);
	hr_ring *more = tokens_ring(n + 1, -1, t, NULL);
	double *shares = write_shares(ring);

	for (int i = 0; i < n; i++) {
		most = shares[i] > most ? shares[i] : most;
		least = shares[i] < least ? shares[i] : least;
	}
	free(shares);
	leave = hr_ring_moved_share(ring, fewer, HR_VIEW_WRITE) * n;
	join = hr_ring_moved_share(ring, more, HR_VIEW_WRITE) * (n + 1);
	printf("%-10s %6d %9zu %8.4f %8.4f %6.2f %6.2f %9.2f %7.2f %7.2f\n", "tokens", n,
	       t, most * n, least * n, leave, join, build_ms,
	       lookup_ns(ring, 0), lookup_ns(ring, 1));
	hr_ring_release(ring);
	hr_ring_release(fewer);
	hr_ring_release(more);
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[] = { 10007, 65537, 100003, 655357 };

	for (size_t i = 0; i < KEYS; i++) {
		lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "key-%012zu", i);
		hashes[i] = hr_hash_key(keys[i], lens[i]);
	}
	if (argc > 1 && strcmp(argv[1], "rendezvous") == 0)
		return rendezvous_table(argc, argv);
	printf("%-10s %6s %9s %8s %8s %6s %6s %9s %7s %7s\n", "placement", "nodes",
	       "M", "max/mean", "min/mean", "leave", "join", "build ms", "api ns",
	       "raw ns");
	for (int a = 1; a < (argc > 1 ? argc : 3); a++) {
		int n = argc > 1 ? atoi(argv[a]) : a == 1 ? 100 : 1000;

		if (n < 2 || n >= HR_NODES_MAX) {
			fprintf(stderr, "hashring-bench-placement: bad node count\n");
			return 2;
		}
		row("xxh3-200", n, HR_PLACEMENT_XXH3, 0);
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
			if (sizes[k] >= 10u * (uint64_t)n)
				row("maglev", n, HR_PLACEMENT_MAGLEV, sizes[k]);
		tokens_row(n, 16);
		tokens_row(n, 32);
	}
	return 0;
}
