/* SPDX-License-Identifier: MIT */
/*
 * bench.h - hashring-bench: what each measurement fills in, and the small
 * tools the measurements share (clocks, percentiles, per-thread CPU,
 * first-seen times per etcd revision).
 *
 * Every measurement is one function that fills its own struct inside an
 * hrb_report; bench_main.c only parses arguments, calls them and prints the
 * report (text or one JSON object).  A new figure is a new struct, a new
 * function and a few lines in the two printers.
 */
#ifndef HRB_BENCH_H
#define HRB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HRB_NOTES_MAX 16
#define HRB_NOTE_LEN 200

/* Put-to-visible latency, paired with the raw gateway watch latency of the
 * same puts (milliseconds). */
typedef struct hrb_propagation {
	int nodes;              /* node records under the prefix            */
	int puts;               /* puts asked for                           */
	int samples;            /* puts seen by both watchers in time       */
	int missed;             /* puts one of the two did not see in time  */
	double p50_ms, p99_ms;                 /* put -> reader sees ring   */
	double raw_p50_ms, raw_p99_ms;         /* put -> raw watch event    */
	double overhead_p50_ms, overhead_p99_ms; /* visible - raw, per put  */
	double overhead_max_ms;
	double put_p50_ms;      /* put -> its HTTP reply                    */
} hrb_propagation;

/* The watcher's cost while nothing changes. */
typedef struct hrb_idle {
	double seconds;                /* length of the quiet window        */
	double process_cpu_ms_per_s;   /* whole process (main thread sleeps) */
	double watcher_cpu_ms_per_s;   /* the library's own threads          */
	double watcher_wakeups_per_s;  /* their context switches             */
	int threads;                   /* how many library threads           */
} hrb_idle;

typedef struct hrb_report {
	int has_propagation;
	hrb_propagation propagation;
	int has_idle;
	hrb_idle idle;
	/* Things a reader of the figures must know (a peer that cannot run,
	 * a sample cut short...). */
	char notes[HRB_NOTES_MAX][HRB_NOTE_LEN];
	int n_notes;
} hrb_report;

/* hashring-bench --clients: how many counts and levers at most. */
#define HRB_CLIENT_COUNTS_MAX 8
#define HRB_LEVERS_MAX 6
/* hrb_args.share_modes: which ways the clients of --clients are opened. */
#define HRB_SHARE_OFF 1		/* independent: a watcher each (the default) */
#define HRB_SHARE_ON 2		/* one hr_share: one watcher for them all */

typedef struct hrb_args {
	int json;
	int lookups_only;	/* no etcd: skips propagation and idle */
	int placement;		/* an hr_placement: the lookups' rings */
	int runs;		/* of the API against the raw ring */
	int puts;
	int nodes;
	int idle_ms;
	/* --clients mode: only the many-clients figures. */
	int n_clients;
	int clients[HRB_CLIENT_COUNTS_MAX];	/* ascending */
	int clients_duration_s;
	int fanout_puts;
	int fanout_from;	/* the smallest count whose fan-out is timed */
	int n_levers;
	const char *levers[HRB_LEVERS_MAX];
	int share_modes;	/* HRB_SHARE_OFF and/or HRB_SHARE_ON */
	/* --big mode: only the big-ring figures, with this many nodes. */
	int big;
	int big_changes;	/* rounds of one-node changes (3 each) */
} hrb_args;

/* Starts etcd, fills it, measures propagation then the idle watcher, and
 * tears everything down.  Returns 0, or -1 after printing why. */
int hrb_measure_membership(const hrb_args *args, hrb_report *r);

/* Adds a note to the report (printf-style; truncated, dropped when full). */
void hrb_note(hrb_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- shared tools (bench_util.c) ---------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t hrb_now_ns(void);
/* Sleeps `ns` nanoseconds (restarting after signals). */
void hrb_sleep_ns(int64_t ns);
/* CPU time of the whole process (CLOCK_PROCESS_CPUTIME_ID), nanoseconds. */
int64_t hrb_process_cpu_ns(void);
/* utime + stime of process `pid` (/proc/PID/stat), nanoseconds, or -1. */
int64_t hrb_proc_cpu_ns(pid_t pid);

/* The p-quantile (0 < p <= 1, nearest rank) of v[0..n), which is sorted
 * in place.  0 when n is 0. */
double hrb_percentile(double *v, size_t n, double p);

/* The calling thread's kernel id. */
pid_t hrb_gettid(void);
/* Fills tids[0..max) with this process's threads; returns how many. */
int hrb_list_threads(pid_t *tids, int max);
/* CPU time (ns, from /proc schedstat) and context switches (voluntary plus
 * involuntary) of thread `tid`; 0 on success, -1 if unreadable. */
int hrb_thread_usage(pid_t tid, int64_t *cpu_ns, int64_t *switches);

/*
 * The first time each etcd revision in [base, base + n) was seen, written
 * by one thread and read by others (0 = not yet).  Revisions outside the
 * window are ignored.
 */
typedef struct hrb_revlog {
	int64_t base;
	size_t n;
	int64_t *t_ns;
} hrb_revlog;

int hrb_revlog_init(hrb_revlog *l, int64_t base, size_t n);
void hrb_revlog_free(hrb_revlog *l);
/* Records `t_ns` for `rev` unless it was already seen. */
void hrb_revlog_mark(hrb_revlog *l, int64_t rev, int64_t t_ns);
/* When `rev` was first seen, or 0. */
int64_t hrb_revlog_get(const hrb_revlog *l, int64_t rev);

/* A growing byte buffer (zero-initialised to start; free(p) to end), kept
 * NUL-terminated after the first append. */
typedef struct hrb_buf {
	char *p;
	size_t len, cap;
} hrb_buf;

/* Appends n bytes; -1 when that would pass `max` bytes or memory runs out. */
int hrb_buf_append(hrb_buf *b, const char *p, size_t n, size_t max);

/* Appends n bytes of a newline-delimited stream and calls fn for each
 * complete, non-empty line (without its newline), keeping the rest for the
 * next call; -1 as hrb_buf_append(). */
int hrb_buf_lines(hrb_buf *b, const char *p, size_t n, size_t max,
		  void (*fn)(void *ud, const char *line, size_t len), void *ud);

#endif
