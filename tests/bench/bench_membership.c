/* SPDX-License-Identifier: MIT */
/*
 * bench_membership.c - membership figures against a real etcd on loopback:
 * how long a put takes to become a ring a reader thread sees, beside the
 * raw gateway watch latency of the same put, and what the watcher costs
 * while nothing changes.
 *
 * For each put, t0 is taken just before the HTTP request leaves; the raw
 * watch notes when libcurl hands it the event, and a reader thread spinning
 * on hr_client_lookup() notes when the ring's revision first becomes
 * the put's.  The overhead is visible - raw for the same put, so etcd's own
 * commit and delivery time cancels out.
 */
#include "bench.h"
#include "bench_put.h"
#include "raw_watch.h"

#include "etcd_fixture.h"
#include "hashring.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "/bench/nodes/"
/* Puts before the measured ones: they warm both streams and connections. */
#define WARMUP_PUTS 5
/* A put nobody saw after this long counts as missed. */
#define SEEN_TIMEOUT_NS (2000 * 1000000LL)
/* The puts stop here even if not all were made: the run stays bounded. */
#define PUT_PHASE_MAX_NS (25000 * 1000000LL)
#define MAX_LIB_THREADS 16

/* ---- the reader thread ---------------------------------------------------- */

typedef struct reader {
	hr_client *client;
	hrb_revlog *log;
	pthread_t thread;
	int stop;
} reader;

/* A lookup-path reader: look a key up, note the revision of the ring that
 * answered, again and again.  The first pass that sees a new revision stamps
 * it. */
static void *reader_main(void *arg)
{
	reader *rd = arg;
	uint64_t last = 0;

	while (!__atomic_load_n(&rd->stop, __ATOMIC_RELAXED)) {
		hr_owner o;
		uint64_t rev = hr_client_lookup(rd->client, "k", 1, &o, NULL) == 0 ? o.revision : 0;

		if (rev != last) {
			hrb_revlog_mark(rd->log, (int64_t)rev, hrb_now_ns());
			last = rev;
		}
		/* On a two-core machine a reader that never yields takes a
		 * core from the watcher it is timing (and from etcd). */
		sched_yield();
	}
	return NULL;
}

/* ---- the measurement ------------------------------------------------------ */

/* Quiet log sink: the level stays the default (info) so the watcher does the
 * same work as with the default config; only problems are shown. */
static void log_problems(void *ud, hr_log_level level, const char *line)
{
	if (level <= HR_LOG_WARN)
		fprintf(stderr, "bench: library: %s\n", line);
}

typedef struct run {
	const hrb_args *args;
	hrb_report *report;
	hrt_etcd_cluster *etcd;
	hrb_putter pt;
	hr_client *client;
	hrb_revlog raw_log, seen_log;
	hrb_raw_watch *raw;
	reader rd;
	int reader_started;
	int *weights;
	pid_t lib_tids[MAX_LIB_THREADS];
	int n_lib_tids;
	uint64_t rng;
} run;

static int rand_between(run *r, int lo, int hi)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return lo + (int)(r->rng % (uint64_t)(hi - lo + 1));
}

/* Flips node i's weight between 1 and 2: every put changes the ring. */
static int64_t flip_node(run *r, int i, int64_t *t0)
{
	char key[128], value[256];

	r->weights[i] = r->weights[i] == 1 ? 2 : 1;
	hrb_node_key(key, sizeof key, PREFIX, i);
	hrb_node_value(value, sizeof value, i, r->weights[i]);
	return hrb_put(&r->pt, key, value, t0);
}

static int both_seen(run *r, int64_t rev)
{
	return hrb_revlog_get(&r->raw_log, rev) && hrb_revlog_get(&r->seen_log, rev);
}

/* Waits (bounded) until both watchers saw `rev`. */
static int wait_seen(run *r, int64_t rev, int64_t since)
{
	while (!both_seen(r, rev)) {
		if (hrb_now_ns() - since > SEEN_TIMEOUT_NS)
			return -1;
		hrb_sleep_ns(100000);
	}
	return 0;
}

static int setup(run *r)
{
	const hrb_args *a = r->args;
	hrt_etcd_opts eo = { .start_timeout_ms = 15000 };
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_error err = { 0 };
	pid_t self = hrb_gettid(), tids[MAX_LIB_THREADS + 8];
	int64_t rev = 0, t0;
	int n, rc;

	r->etcd = hrt_etcd_start(1, &eo);
	if (!r->etcd)
		return -1;
	if (hrb_putter_init(&r->pt, hrt_etcd_client_url(r->etcd, 0)))
		return -1;
	r->weights = calloc((size_t)a->nodes, sizeof *r->weights);
	if (!r->weights)
		return -1;
	for (int i = 0; i < a->nodes; i++)
		r->weights[i] = 1;
	rev = hrb_load_nodes(&r->pt, PREFIX, a->nodes);
	if (rev < 0)
		return -1;

	hr_etcd_config_init(&etcd);
	hr_client_config_init(&cfg);
	etcd.endpoints = hrt_etcd_endpoints(r->etcd);
	etcd.prefix = PREFIX;
	etcd.log = log_problems;
	rc = hr_client_open(&etcd, &cfg, &r->client, &err);
	if (rc) {
		fprintf(stderr, "bench: hr_client_open: %s\n", err.message);
		return -1;
	}
	/* Every thread but ours now is the library's (the watcher). */
	n = hrb_list_threads(tids, MAX_LIB_THREADS + 8);
	for (int i = 0; i < n && r->n_lib_tids < MAX_LIB_THREADS; i++)
		if (tids[i] != self)
			r->lib_tids[r->n_lib_tids++] = tids[i];

	if (hrb_revlog_init(&r->raw_log, rev + 1, (size_t)a->puts + WARMUP_PUTS + 16) ||
	    hrb_revlog_init(&r->seen_log, rev + 1, (size_t)a->puts + WARMUP_PUTS + 16))
		return -1;
	r->raw = hrb_raw_watch_start(hrt_etcd_client_url(r->etcd, 0), PREFIX, rev + 1,
				     &r->raw_log);
	if (!r->raw || hrb_raw_watch_wait_created(r->raw, 5000)) {
		fprintf(stderr, "bench: the raw watch did not start\n");
		return -1;
	}
	r->rd.client = r->client;
	r->rd.log = &r->seen_log;
	if (pthread_create(&r->rd.thread, NULL, reader_main, &r->rd)) {
		fprintf(stderr, "bench: cannot start the reader thread\n");
		return -1;
	}
	r->reader_started = 1;

	/* The client's stream may still be opening: warm both up first. */
	for (int i = 0; i < WARMUP_PUTS; i++) {
		rev = flip_node(r, i % a->nodes, &t0);
		if (rev < 0)
			return -1;
		if (wait_seen(r, rev, t0)) {
			fprintf(stderr, "bench: warm-up put at revision %lld not seen\n",
				(long long)rev);
			return -1;
		}
	}
	return 0;
}

static void stop_reader(run *r)
{
	if (!r->reader_started)
		return;
	__atomic_store_n(&r->rd.stop, 1, __ATOMIC_RELAXED);
	pthread_join(r->rd.thread, NULL);
	r->reader_started = 0;
}

static void teardown(run *r)
{
	stop_reader(r);
	hrb_raw_watch_stop(r->raw);
	hr_client_close(r->client);
	hrb_putter_free(&r->pt);
	hrt_etcd_destroy(r->etcd);
	hrb_revlog_free(&r->raw_log);
	hrb_revlog_free(&r->seen_log);
	free(r->weights);
}

static void measure_propagation(run *r)
{
	const hrb_args *a = r->args;
	hrb_propagation *p = &r->report->propagation;
	size_t cap = (size_t)a->puts;
	double *raw = calloc(cap, sizeof *raw), *vis = calloc(cap, sizeof *vis);
	double *over = calloc(cap, sizeof *over), *putlat = calloc(cap, sizeof *putlat);
	int64_t start = hrb_now_ns();
	size_t n = 0, np = 0;
	int done = 0;

	memset(p, 0, sizeof *p);
	p->nodes = a->nodes;
	p->puts = a->puts;
	if (!raw || !vis || !over || !putlat) {
		hrb_note(r->report, "propagation: out of memory");
		goto out;
	}
	for (; done < a->puts; done++) {
		int64_t t0, t_reply, rev, t_raw, t_vis;

		if (hrb_now_ns() - start > PUT_PHASE_MAX_NS) {
			hrb_note(r->report, "propagation: stopped after %d of %d puts (time limit)",
				 done, a->puts);
			break;
		}
		rev = flip_node(r, (WARMUP_PUTS + done) % a->nodes, &t0);
		t_reply = hrb_now_ns();
		if (rev < 0) {
			hrb_note(r->report, "propagation: put %d failed", done);
			break;
		}
		putlat[np++] = (double)(t_reply - t0) / 1e6;
		/* Spacing: the next put leaves 5-10 ms after this one, and
		 * only once this one was seen (or given up on). */
		hrb_sleep_ns(t0 + rand_between(r, 5000, 10000) * 1000LL - hrb_now_ns());
		if (wait_seen(r, rev, t0)) {
			p->missed++;
			continue;
		}
		t_raw = hrb_revlog_get(&r->raw_log, rev);
		t_vis = hrb_revlog_get(&r->seen_log, rev);
		raw[n] = (double)(t_raw - t0) / 1e6;
		vis[n] = (double)(t_vis - t0) / 1e6;
		over[n] = (double)(t_vis - t_raw) / 1e6;
		n++;
	}
	p->samples = (int)n;
	if (p->missed)
		hrb_note(r->report, "propagation: %d puts not seen by both watchers within 2 s",
			 p->missed);
	p->p50_ms = hrb_percentile(vis, n, 0.50);
	p->p99_ms = hrb_percentile(vis, n, 0.99);
	p->raw_p50_ms = hrb_percentile(raw, n, 0.50);
	p->raw_p99_ms = hrb_percentile(raw, n, 0.99);
	p->overhead_p50_ms = hrb_percentile(over, n, 0.50);
	p->overhead_p99_ms = hrb_percentile(over, n, 0.99);
	p->overhead_max_ms = hrb_percentile(over, n, 1.0);
	p->put_p50_ms = hrb_percentile(putlat, np, 0.50);
	r->report->has_propagation = n > 0;
out:
	free(raw);
	free(vis);
	free(over);
	free(putlat);
}

/* Sums CPU and context switches over the library's threads. */
static int lib_usage(run *r, int64_t *cpu, int64_t *sw)
{
	*cpu = *sw = 0;
	for (int i = 0; i < r->n_lib_tids; i++) {
		int64_t c, s;
		if (hrb_thread_usage(r->lib_tids[i], &c, &s))
			return -1;
		*cpu += c;
		*sw += s;
	}
	return 0;
}

static void measure_idle(run *r)
{
	hrb_idle *id = &r->report->idle;
	int64_t t0, t1, p0, p1, c0 = 0, c1 = 0, s0 = 0, s1 = 0;
	int per_thread;
	double secs;

	memset(id, 0, sizeof *id);
	/* Nothing but the library may run now. */
	stop_reader(r);
	hrb_raw_watch_stop(r->raw);
	r->raw = NULL;

	t0 = hrb_now_ns();
	p0 = hrb_process_cpu_ns();
	per_thread = r->n_lib_tids > 0 && lib_usage(r, &c0, &s0) == 0;
	hrb_sleep_ns((int64_t)r->args->idle_ms * 1000000);
	p1 = hrb_process_cpu_ns();
	per_thread = per_thread && lib_usage(r, &c1, &s1) == 0;
	t1 = hrb_now_ns();

	secs = (double)(t1 - t0) / 1e9;
	id->seconds = secs;
	id->process_cpu_ms_per_s = (double)(p1 - p0) / 1e6 / secs;
	id->threads = r->n_lib_tids;
	if (per_thread) {
		id->watcher_cpu_ms_per_s = (double)(c1 - c0) / 1e6 / secs;
		id->watcher_wakeups_per_s = (double)(s1 - s0) / secs;
	} else {
		id->watcher_cpu_ms_per_s = id->process_cpu_ms_per_s;
		id->watcher_wakeups_per_s = -1;
		hrb_note(r->report, "idle: per-thread figures unavailable; CPU is the process's");
	}
	r->report->has_idle = 1;
}

int hrb_measure_membership(const hrb_args *args, hrb_report *report)
{
	run r;
	int rc = -1;

	memset(&r, 0, sizeof r);
	r.args = args;
	r.report = report;
	r.rng = (uint64_t)hrb_now_ns() | 1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	if (setup(&r) == 0) {
		measure_propagation(&r);
		if (args->idle_ms > 0)
			measure_idle(&r);
		rc = 0;
	}
	teardown(&r);
	curl_global_cleanup();
	return rc;
}
