/* SPDX-License-Identifier: MIT */
/*
 * bench_lookup.h - hashring-bench, the lookup side: our lookup through the
 * public client API and on a raw ring of one placement, beside libmemcached's ketama and a
 * plain binary search over the same points; batch lookups beside single
 * ones; preference lists, two reader threads under republication, build
 * times and bytes per point.
 */
#ifndef HRB_BENCH_LOOKUP_H
#define HRB_BENCH_LOOKUP_H

#include "bench.h"

#include "hashring.h"

#define HRB_LOOKUP_CONFIGS_MAX 5
#define HRB_BATCH_KEYS 128
#define HRB_BATCH_DISTANCES 10
#define HRB_COUNT_ROUNDS 41

/* The pipeline distances the batch is measured at (0: no overlap). */
extern const unsigned hrb_batch_distances[HRB_BATCH_DISTANCES];

/* One ring size.  A figure that could not be measured is negative. */
typedef struct hrb_lookup_config {
	int nodes, vnodes;
	size_t points;
	/* Random-key throughput, ns per lookup (independent lookups). */
	double api_ns, ring_ns, libmemcached_ns, bsearch_ns, preflist3_ns;
	/* Dependent chain: the next key depends on the previous answer. */
	double api_dep_ns, ring_dep_ns, libmemcached_dep_ns, bsearch_dep_ns;
	/* Batches of HRB_BATCH_KEYS keys, ns per key: hr_client_lookup_batch()
	 * and hr_ring_lookup_batch(), the pointer array filled in the loop. */
	double batch_api_ns, batch_ring_ns;
	/* The same two with lookup counting off (counters.h), same rounds. */
	double api_uncounted_ns, batch_api_uncounted_ns;
	/* hr_client_lookup() counted and not, HRB_COUNT_ROUNDS rounds of
	 * their own, side by side: best and median of each, and the median
	 * of the rounds' differences. */
	double count_on_best_ns, count_off_best_ns;
	double count_on_med_ns, count_off_med_ns, count_cost_med_ns;
	/* hr_ring_lookup_batch() at each distance of hrb_batch_distances. */
	double batch_dist_ns[HRB_BATCH_DISTANCES];
	/* Client API lookups of two threads over one, while a writer
	 * republishes the ring. */
	double two_thread_speedup;
	double republish_per_s;
	double build_ms;
	double bytes_per_point;
} hrb_lookup_config;

/* The placements, by hr_placement value, as --placement names them. */
#define HRB_PLACEMENTS 5
extern const char *hrb_placement_names[HRB_PLACEMENTS];

/*
 * The API against the raw ring, the figures: for each placement of
 * hrb_cmp_placements and each size of hrb_cmp_sizes, hr_client_lookup()
 * (counted, hot-key sampling at the client's default, the caller reading a
 * byte of the returned id), hr_ring_lookup() on the same ring, and with
 * XXH3 the textbook binary search and libmemcached (up to 100 servers),
 * interleaved in each round.  Each run gives each figure as the median of
 * HRB_CMP_ROUNDS rounds; the report gives every run's, for the median and
 * range over runs.
 */
#define HRB_CMP_PLACEMENTS 3
#define HRB_CMP_SIZES 3
#define HRB_CMP_CONFIGS (HRB_CMP_PLACEMENTS * HRB_CMP_SIZES)
#define HRB_CMP_ROUNDS 5
#define HRB_RUNS_MAX 99

typedef struct hrb_cmp_config {
	hr_placement placement;
	int nodes, vnodes;
	size_t points;
	/* ns per lookup, one per run; negative: not measured.  ring_id:
	 * hr_ring_lookup() with the caller reading the node's id, as the
	 * API's caller does. */
	double api_ns[HRB_RUNS_MAX], ring_ns[HRB_RUNS_MAX], ring_id_ns[HRB_RUNS_MAX];
	double bsearch_ns[HRB_RUNS_MAX], libmemcached_ns[HRB_RUNS_MAX];
} hrb_cmp_config;

typedef struct hrb_lookup_report {
	hr_placement placement;	/* of every ring measured */
	int n;
	hrb_lookup_config cfg[HRB_LOOKUP_CONFIGS_MAX];
	double libmemcached_build_ms_100;	/* continuum of 100 servers */
	int runs;		/* of the comparison; 0: not measured */
	int n_cmp;
	hrb_cmp_config cmp[HRB_CMP_CONFIGS];
} hrb_lookup_report;

/* Runs every lookup measurement on rings of `placement`, then `runs`
 * runs (1..HRB_RUNS_MAX) of the comparison; notes go to `r`.  0, or -1
 * after printing why. */
int hrb_measure_lookup(hrb_lookup_report *lr, hr_placement placement, int runs,
		       hrb_report *r);

/* The readable tables with ratios, and the JSON members "configs",
 * "libmemcached_build_ms" and "api_vs_ring" (no braces around them). */
void hrb_lookup_print_text(const hrb_lookup_report *lr);
void hrb_lookup_print_json(const hrb_lookup_report *lr);

#endif
