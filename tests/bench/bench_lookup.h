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

#define HRB_LOOKUP_CONFIGS_MAX 4
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

typedef struct hrb_lookup_report {
	hr_placement placement;	/* of every ring measured */
	int n;
	hrb_lookup_config cfg[HRB_LOOKUP_CONFIGS_MAX];
	double libmemcached_build_ms_100;	/* continuum of 100 servers */
} hrb_lookup_report;

/* Runs every lookup measurement on rings of `placement`; notes go to
 * `r`.  0, or -1 after printing why. */
int hrb_measure_lookup(hrb_lookup_report *lr, hr_placement placement, hrb_report *r);

/* The readable table with ratios, and the JSON members "configs" and
 * "libmemcached_build_ms" (no braces around them). */
void hrb_lookup_print_text(const hrb_lookup_report *lr);
void hrb_lookup_print_json(const hrb_lookup_report *lr);

#endif
