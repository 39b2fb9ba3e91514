/* SPDX-License-Identifier: MIT */
/*
 * bench_big.h - hashring-bench --big N: a ring of N nodes (up to
 * HR_NODES_MAX) measured end to end against its own etcd on loopback.
 *
 * Every figure is a double; NAN means "not measured" (null in --json).
 */
#ifndef HRB_BENCH_BIG_H
#define HRB_BENCH_BIG_H

#include "bench.h"

/* One kind of one-node change, over `samples` changes. */
typedef struct hrb_big_change {
	int samples;              /* changes published and timed            */
	int missed;               /* changes not published within 10 s      */
	double build_p50_ms, build_max_ms;     /* derive + publish (event=ring
						  build_ms)                  */
	double visible_p50_ms, visible_max_ms; /* put sent -> ring published */
} hrb_big_change;

typedef struct hrb_big_report {
	int nodes, vnodes;
	double points;
	double load_ms;           /* setup: writing the records to etcd     */
	/* First sync: hr_client_open() to its return (the first ring
	 * published), beside the same paged range by a bare libcurl loop. */
	int page_size, pages;
	double open_ms;
	double raw_range_ms;      /* etcd's share: the pages, unparsed      */
	double hashring_ms;       /* open_ms - raw_range_ms                 */
	double list_ms, records_ms, build_ms; /* the event=synced split     */
	/* CPU time (ms) of etcd while it serves the bare range, and of etcd
	 * and of this process during the sync: on a small machine the two
	 * share the cores. */
	double raw_etcd_cpu_ms, sync_etcd_cpu_ms, sync_cpu_ms;
	/* One-node changes. */
	hrb_big_change add, weight, del;
	/* The CLI (wall time of the process, output to /dev/null). */
	double cli_nodes_ms;      /* hashring nodes on the prefix           */
	double cli_diff_ms;       /* hashring diff OLD NEW (members files)  */
	double diff_load_ms;      /* in process: both files parsed and built */
	double diff_ms;           /* in process: hr_diff_new, write view    */
	/* On the first of those rings (paged from 262,144 points on): ns per
	 * key of hr_ring_lookup() and of hr_ring_lookup_batch(). */
	double lookup_ns, lookup_batch_ns;
	/* Memory of this process (the watcher's), in MiB. */
	double rss_before_mb, rss_synced_mb;
	double rss_changes_mb;    /* 1 s after the last change              */
	double heap_synced_mb;    /* malloc'd bytes held after the first sync */
	double bytes_per_node;    /* heap held after the sync / nodes       */
	double ring_mb;           /* one ring of these nodes, built offline */
} hrb_big_report;

/* Runs the whole measurement with args->big nodes and args->big_changes
 * changes of each kind; 0, or -1 after printing why. */
int hrb_measure_big(const hrb_args *args, hrb_report *r, hrb_big_report *b);

void hrb_big_print_text(const hrb_big_report *b);
/* The object, without a name. */
void hrb_big_print_json(const hrb_big_report *b);

#endif
