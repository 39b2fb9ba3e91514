/* SPDX-License-Identifier: MIT */
/*
 * bench_clients.h - many idle watching clients on one etcd: its CPU and
 * memory per client, this process's threads, sockets and memory per
 * client, and the fan-out latency of a put to all of them, for each lever
 * asked for (hashring-bench --clients), with the clients independent or
 * sharing one watcher (--share), or both ways in turn.
 */
#ifndef HRB_BENCH_CLIENTS_H
#define HRB_BENCH_CLIENTS_H

#include "bench.h"

#include <stdint.h>

/* Puts timed from the put to the last receiver. */
typedef struct hrb_fanout {
	int puts;                    /* puts made                            */
	int missed;                  /* not on every receiver within 10 s    */
	int coalesced;               /* one publication for several puts     */
	double p50_ms, p99_ms, max_ms; /* put -> the last receiver            */
	/* CPU per receiver per put, all of it while the puts ran: etcd's,
	 * and this process's (the receivers') */
	double etcd_us_per_delivery, client_us_per_delivery;
} hrb_fanout;

/* One count of clients under one lever. */
typedef struct hrb_clients_point {
	int clients;
	double open_s;               /* opening them, to the last first ring */
	double seconds;              /* the quiet window                     */
	double load1_before, load1_after; /* /proc/loadavg around it         */
	double etcd_cpu_pct;         /* % of one core over the window        */
	double etcd_rss_mb;          /* after it                             */
	double client_cpu_pct;       /* this whole process, % of one core    */
	double threads_per_client, sockets_per_client, rss_kb_per_client;
	double heap_kb_per_client;   /* malloc's bytes in use                */
	/* This process's totals after the window; the per-client figures
	 * are these less the lever's before_* over the count. */
	long threads, sockets;
	double rss_kb, heap_kb;
	uint64_t reconnects, resyncs; /* summed over clients, since open     */
	int unconfirmed;             /* clients not current after the window */
	/* hr_client_status.watcher_clients over the clients: 1 and 1 when
	 * independent, the count twice when they share one watcher. */
	uint64_t watcher_clients_min, watcher_clients_max;
	/* The clients' fan-out, and the floor: as many bare watch streams
	 * on one thread (raw_fan.h), timed on the same etcd once the
	 * clients are closed. */
	int has_fanout, has_raw;
	hrb_fanout fanout, raw;
} hrb_clients_point;

/* One lever with the clients opened one way, on an etcd of its own. */
typedef struct hrb_clients_lever {
	char name[32];
	char what[128];
	int shared;                  /* opened with one hr_share             */
	/* This process before the first client of the run. */
	long before_threads, before_sockets;
	double before_rss_kb, before_heap_kb;
	int n_points;
	hrb_clients_point points[HRB_CLIENT_COUNTS_MAX];
	/* The least-squares line through every count. */
	int has_extrapolation;
	double cpu_pct_per_1000;     /* etcd CPU per 1,000 more clients      */
	double rss_kb_per_client;
	int target, members;         /* 10,000 clients over 3 members        */
	double target_cpu_pct_per_member, target_rss_mb_per_member;
} hrb_clients_lever;

typedef struct hrb_clients_report {
	double load1_start, load1_end;
	/* In the order run: each lever independent, then shared, as asked. */
	int n_levers;
	hrb_clients_lever levers[2 * HRB_LEVERS_MAX];
} hrb_clients_report;

/* Whether `name` is a lever hrb_measure_clients() knows. */
int hrb_clients_lever_known(const char *name);

/* Runs every lever of `args` in turn, each way asked for; 0, or -1 after
 * printing why. */
int hrb_measure_clients(const hrb_args *args, hrb_report *report,
			hrb_clients_report *out);

/* The report, readable or as the value of the JSON "clients" member. */
void hrb_clients_print_text(const hrb_clients_report *c);
void hrb_clients_print_json(const hrb_clients_report *c);

#endif
