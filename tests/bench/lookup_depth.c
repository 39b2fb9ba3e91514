/* SPDX-License-Identifier: MIT */
/*
 * lookup_depth.c - hashring-lookup-depth NODES VNODES [ROUNDS]: the raw
 * ring lookup (hr_ring_lookup) against a textbook binary search over the
 * same points, at any size, and the ring's build time.  hashring-bench
 * --lookups-only stops at 1000 nodes; a ring of 10,000 x 200 (2 M points,
 * paged) is past the last-level cache, where what counts is how many
 * cache misses a lookup waits for one after the other.  Two loops per
 * search: independent keys (throughput), and a chain where each key
 * depends on the last answer (latency).  ns of thread CPU time per
 * lookup, one line per round.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_bsearch.h"
#include "hashring.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KEY_LEN 16
#define KEYS ((size_t)1 << 20)
#define OPS ((size_t)2000000)

static int64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct bs_ring bs;

static inline uintptr_t ring_token(const hr_ring *ring, const void *key)
{
	hr_lookup l;

	hr_ring_lookup(ring, key, KEY_LEN, &l, NULL);
	return (uintptr_t)l.node >> 4;
}

/* ns per lookup: `dep` chains each key on the last answer. */
#define TIMED(CALL, dep) ({						\
		int64_t t0_ = cpu_now_ns();				\
		size_t at_ = 0;						\
		for (size_t i_ = 0; i_ < OPS; i_++) {			\
			const unsigned char *key =			\
				keys + ((dep) ? at_ : i_ & (KEYS - 1)) * KEY_LEN; \
			at_ = (at_ + 1 + ((CALL) & 1)) & (KEYS - 1);	\
		}							\
		sink += at_;						\
		(double)(cpu_now_ns() - t0_) / (double)OPS;		\
	})

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0, vn = argc > 2 ? atoi(argv[2]) : 0;
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	char (*ids)[32], (*addrs)[32];
	unsigned char *keys;
	hr_ring_options opts;
	uint64_t x = 0x2545f4914f6cdd1du, sink = 0;
	hr_node *v;
	hr_ring *ring;
	int64_t t0;
	double build_ms;

	if (n < 1 || vn < 1 || rounds < 1) {
		fprintf(stderr, "usage: hashring-lookup-depth NODES VNODES [ROUNDS]\n");
		return 2;
	}
	v = calloc((size_t)n, sizeof *v);
	ids = calloc((size_t)n, sizeof *ids);
	addrs = calloc((size_t)n, sizeof *addrs);
	keys = malloc(KEYS * KEY_LEN);
	if (!v || !ids || !addrs || !keys)
		return 1;
	for (int i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "cache-%04d", i);
		snprintf(addrs[i], sizeof addrs[i], "127.0.%d.%d:11211", (i >> 8) & 255, i & 255);
		v[i] = (hr_node){ .id = ids[i], .addr = addrs[i], .weight = 1 };
	}
	for (size_t i = 0; i < KEYS * KEY_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		keys[i] = (unsigned char)x;
	}
	hr_ring_options_init(&opts);
	opts.vnodes_per_weight = (unsigned)vn;
	t0 = cpu_now_ns();
	if (hr_ring_build(v, (size_t)n, &opts, 1, &ring, NULL))
		return 1;
	build_ms = (double)(cpu_now_ns() - t0) / 1e6;
	if (bs_build(&bs, ring))
		return 1;
	for (size_t i = 0; i < 100000; i++) {
		hr_lookup l;

		hr_ring_lookup(ring, keys + i * KEY_LEN, KEY_LEN, &l, NULL);
		if (l.node != hr_ring_node(ring, bs_lookup(&bs, keys + i * KEY_LEN, KEY_LEN))) {
			fprintf(stderr, "the ring and the binary search disagree\n");
			return 1;
		}
	}
	for (int r = 0; r < rounds; r++) {
		double ring_ns = TIMED(ring_token(ring, key), 0);
		double ring_dep = TIMED(ring_token(ring, key), 1);
		double bs_ns = TIMED(bs_lookup(&bs, key, KEY_LEN), 0);
		double bs_dep = TIMED(bs_lookup(&bs, key, KEY_LEN), 1);

		printf("%d x %d  build %.1f ms  ring %.1f bsearch %.1f (%.2fx)  "
		       "dep: ring %.1f bsearch %.1f (%.2fx)\n", n, vn, build_ms,
		       ring_ns, bs_ns, bs_ns / ring_ns, ring_dep, bs_dep, bs_dep / ring_dep);
	}
	hr_ring_release(ring);
	return sink == 42 ? 3 : 0;	/* keeps the loops */
}
