/* SPDX-License-Identifier: MIT */
/*
 * bench_clients.c - what many idle watching clients cost etcd, and how
 * long a put takes to reach the last of them (hashring-bench --clients).
 *
 * For each lever (an etcd setting plus client settings) one etcd 3.4 is
 * started on loopback with a 10-node prefix, and independent clients are
 * opened in this process up to each count asked for, one watch stream
 * each, as if every one ran in its own process.  After a settling pause
 * the quiet window measures etcd's CPU (utime + stime from /proc/<pid>/stat)
 * and resident memory, and this process's threads, sockets and memory per
 * client.  From --fanout-from clients (1,000 by default), puts spaced out
 * are timed from the put to the last client's on_change (same process,
 * monotonic clock), and, on the same etcd once the clients are closed, to
 * the last of as many bare watch streams on one thread (raw_fan.h): the
 * floor of what etcd's gateway can fan out here.
 *
 * With --share the same counts are opened with one hr_share and equal
 * settings, so they follow one watcher (one stream, whatever the count),
 * each lever then on a fresh etcd of its own; "--share both" runs each
 * lever independent, then shared.  A shared run has no floor: its etcd
 * fans out to one stream.
 */
#include "bench.h"
#include "bench_clients.h"
#include "bench_put.h"
#include "raw_fan.h"

#include "etcd_fixture.h"
#include "hashring.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PREFIX "/bench/many/"
#define NODES 10
/* A put that did not reach every client this long after it was made. */
#define FANOUT_TIMEOUT_NS (10000 * 1000000LL)
/* After the clients are open: their first probes and etcd's garbage
 * collection settle before the window starts. */
#define SETTLE_NS (3000 * 1000000LL)
#define MAX_MISSED_SHOWN 5

/* ---- the levers -------------------------------------------------------- */

typedef struct lever {
	const char *name;
	const char *what;
	unsigned progress_notify_ms;   /* etcd's flag; 0: its default (10 min) */
	int probe_jitter_pct;          /* the clients' */
	int probe_interval_ms, stale_warn_ms; /* the clients'; 0: defaults */
} lever;

static const lever LEVERS[] = {
	{ "unjittered", "etcd defaults; probes every 3 s, no jitter (as in 1.0)", 0, 0, 0, 0 },
	{ "baseline", "etcd defaults; probes after 2.4-3 s of silence (default jitter)", 0, 20, 0, 0 },
	{ "progress", "etcd --experimental-watch-progress-notify-interval=5s; default jitter",
	  5000, 20, 0, 0 },
	{ "progress20", "etcd's interval 20s; clients stale_warn_ms 30000", 20000, 20, 0, 30000 },
	/* Not a setting to run with: what the streams cost with nothing on
	 * them, the floor any lever can reach. */
	{ "silent", "no probes, no notifications (the floor; unsafe)", 0, 0, 600000, 1200000 },
};

static const lever *find_lever(const char *name)
{
	for (size_t i = 0; i < sizeof LEVERS / sizeof LEVERS[0]; i++)
		if (!strcmp(LEVERS[i].name, name))
			return &LEVERS[i];
	return NULL;
}

int hrb_clients_lever_known(const char *name)
{
	return find_lever(name) != NULL;
}

/* ---- /proc ---------------------------------------------------------------- */

/* A "Name:  value" line of /proc/<pid>/status ("self" for pid 0), or -1. */
static long proc_status_field(pid_t pid, const char *name)
{
	char path[64], line[256];
	size_t len = strlen(name);
	long v = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Open sockets of this process. */
static int count_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], target[64];
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t len;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof target - 1);
		if (len > 0) {
			target[len] = '\0';
			n += !strncmp(target, "socket:", 7);
		}
	}
	closedir(d);
	return n;
}

/* Bytes malloc has handed out and not had back: unlike the RSS, it does not
 * count what earlier levers freed and malloc kept. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void loadavg(double *one)
{
	FILE *f = fopen("/proc/loadavg", "r");

	*one = -1;
	if (f) {
		if (fscanf(f, "%lf", one) != 1)
			*one = -1;
		fclose(f);
	}
}

/* ---- the clients ------------------------------------------------------------ */

typedef struct fanout fanout;

typedef struct bclient {
	hr_client *c;
	fanout *f;
	int index;
	uint64_t last_rev;       /* written by this client's watcher only
				    (atomic: the main thread reads it) */
} bclient;

/* The puts being timed, by revision: slot k is revision base + k.  A put
 * takes the next revision, or a later one when libcurl sent it twice
 * (a kept-alive connection found dead): slots are kept for those. */
struct fanout {
	int64_t base;            /* atomic; 0: nothing timed */
	int n;                   /* slots */
	int *reached;            /* atomic: clients whose ring has slot k */
	int64_t *last_ns;        /* atomic max: the last of them          */
	int coalesced;           /* atomic: publications covering several
				    puts (a replay after a reconnect) */
};

/* Receiver whose newest revision was *last_rev has `rev` at `now`. */
static void mark_reached(fanout *f, uint64_t *last_rev, uint64_t rev, int64_t now)
{
	int64_t base = __atomic_load_n(&f->base, __ATOMIC_ACQUIRE);
	uint64_t last = __atomic_load_n(last_rev, __ATOMIC_RELAXED);

	if (base && rev > last + 1 && (int64_t)last + 1 >= base)
		__atomic_add_fetch(&f->coalesced, 1, __ATOMIC_RELAXED);
	/* A ring at rev holds every put up to rev, even ones coalesced
	 * into one message. */
	for (uint64_t r = last + 1; base && r <= rev; r++) {
		int64_t k = (int64_t)r - base, seen;
		if (k < 0 || k >= f->n)
			continue;
		__atomic_add_fetch(&f->reached[k], 1, __ATOMIC_RELEASE);
		seen = __atomic_load_n(&f->last_ns[k], __ATOMIC_RELAXED);
		while (seen < now && !__atomic_compare_exchange_n(&f->last_ns[k], &seen, now, 1,
								   __ATOMIC_RELEASE,
								   __ATOMIC_RELAXED))
			;
	}
	if (rev > last)
		__atomic_store_n(last_rev, rev, __ATOMIC_RELAXED);
}

static void on_change(void *ud, const hr_ring *old_ring, const hr_ring *new_ring)
{
	bclient *bc = ud;

	(void)old_ring;
	mark_reached(bc->f, &bc->last_rev, hr_ring_revision(new_ring), hrb_now_ns());
}

/* Problems only, with the client's index: a stream that ended or a stale
 * warning is what a missed put needs explained.  NULL userdata: a shared
 * watcher's, which logs once for all its clients (they share only with
 * equal log userdata). */
static void log_problems(void *ud, hr_log_level level, const char *line)
{
	bclient *bc = ud;

	if (level > HR_LOG_WARN)
		return;
	if (bc)
		fprintf(stderr, "bench: client %d: %s\n", bc->index, line);
	else
		fprintf(stderr, "bench: shared watcher: %s\n", line);
}

typedef struct crun {
	const hrb_args *args;
	hrb_report *report;
	const lever *lv;
	hr_share *share;         /* NULL: independent clients */
	hrt_etcd_cluster *etcd;
	pid_t etcd_pid;
	hrb_putter pt;
	bclient *cl;
	int n_open;
	fanout f;
	int weights[NODES];
	uint64_t rng;
	uint64_t *raw_last;      /* each raw stream's newest revision   */
	int64_t rev;             /* etcd's newest, from the last write */
	long base_threads, base_rss_kb;
	size_t base_heap;
	int base_sockets;
} crun;

static const char *mode_name(int shared)
{
	return shared ? "shared" : "independent";
}

static int open_clients(crun *r, int upto)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_error err = { 0 };

	for (; r->n_open < upto; r->n_open++) {
		bclient *bc = &r->cl[r->n_open];

		hr_etcd_config_init(&etcd);
		hr_client_config_init(&cfg);
		etcd.endpoints = hrt_etcd_endpoints(r->etcd);
		etcd.prefix = PREFIX;
		etcd.log = log_problems;
		etcd.log_userdata = r->share ? NULL : bc;
		cfg.share = r->share;
		cfg.open_nonblocking = 1;
		cfg.probe_jitter_pct = r->lv->probe_jitter_pct;
		if (r->lv->probe_interval_ms)
			cfg.probe_interval_ms = r->lv->probe_interval_ms;
		if (r->lv->stale_warn_ms)
			cfg.stale_warn_ms = r->lv->stale_warn_ms;
		cfg.on_change = on_change;
		cfg.on_change_userdata = bc;
		bc->f = &r->f;
		bc->index = r->n_open;
		if (hr_client_open(&etcd, &cfg, &bc->c, &err)) {
			fprintf(stderr, "bench: client %d: hr_client_open: %s\n", r->n_open,
				err.message);
			return -1;
		}
	}
	for (int i = 0; i < upto; i++)
		if (hr_client_wait_synced(r->cl[i].c, 60000, &err)) {
			fprintf(stderr, "bench: client %d: no ring: %s\n", i, err.message);
			return -1;
		}
	return 0;
}

static void close_clients(crun *r)
{
	for (int i = 0; i < r->n_open; i++)
		hr_client_close(r->cl[i].c);
	r->n_open = 0;
}

static int rand_between(crun *r, int lo, int hi)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return lo + (int)(r->rng % (uint64_t)(hi - lo + 1));
}

static int64_t flip_node(crun *r, int i, int64_t *t0)
{
	char key[128], value[256];

	r->weights[i] = r->weights[i] == 1 ? 2 : 1;
	hrb_node_key(key, sizeof key, PREFIX, i);
	hrb_node_value(value, sizeof value, i, r->weights[i]);
	return hrb_put(&r->pt, key, value, t0);
}

/* The quiet window at the current count. */
static void measure_idle(crun *r, hrb_clients_point *pt)
{
	int64_t t0, t1, c0, c1, p0, p1;
	int n = r->n_open;

	/* New clients learn etcd's progress interval from its first
	 * notification: until then they probe. */
	hrb_sleep_ns(SETTLE_NS + (int64_t)r->lv->progress_notify_ms * 1100000);
	loadavg(&pt->load1_before);
	t0 = hrb_now_ns();
	c0 = hrb_proc_cpu_ns(r->etcd_pid);
	p0 = hrb_process_cpu_ns();
	hrb_sleep_ns((int64_t)r->args->clients_duration_s * 1000000000LL);
	c1 = hrb_proc_cpu_ns(r->etcd_pid);
	p1 = hrb_process_cpu_ns();
	t1 = hrb_now_ns();
	loadavg(&pt->load1_after);

	pt->seconds = (double)(t1 - t0) / 1e9;
	pt->etcd_cpu_pct = c0 >= 0 && c1 >= 0 ? 100.0 * (double)(c1 - c0) / (double)(t1 - t0) : -1;
	pt->etcd_rss_mb = (double)proc_status_field(r->etcd_pid, "VmRSS") / 1024.0;
	pt->client_cpu_pct = 100.0 * (double)(p1 - p0) / (double)(t1 - t0);
	pt->threads = proc_status_field(0, "Threads");
	pt->sockets = count_sockets();
	pt->rss_kb = (double)proc_status_field(0, "VmRSS");
	pt->heap_kb = (double)heap_in_use() / 1024.0;
	pt->threads_per_client = (double)(pt->threads - r->base_threads) / n;
	pt->sockets_per_client = (double)(pt->sockets - r->base_sockets) / n;
	pt->rss_kb_per_client = (pt->rss_kb - (double)r->base_rss_kb) / n;
	pt->heap_kb_per_client = (pt->heap_kb - (double)r->base_heap / 1024.0) / n;
	pt->watcher_clients_min = UINT64_MAX;
	for (int i = 0; i < n; i++) {
		hr_client_status st;
		if (hr_client_status_get(r->cl[i].c, &st, NULL))
			continue;
		pt->reconnects += st.reconnects;
		pt->resyncs += st.resyncs;
		pt->unconfirmed += st.unconfirmed_ms > 0;
		if (st.watcher_clients < pt->watcher_clients_min)
			pt->watcher_clients_min = st.watcher_clients;
		if (st.watcher_clients > pt->watcher_clients_max)
			pt->watcher_clients_max = st.watcher_clients;
	}
	if (pt->watcher_clients_min == UINT64_MAX)
		pt->watcher_clients_min = 0;
	/* Equal settings, one share: every client on the one watcher. */
	{
		uint64_t want = r->share ? (uint64_t)n : 1;
		if (pt->watcher_clients_min != want || pt->watcher_clients_max != want)
			hrb_note(r->report, "clients: %s, %s, %d clients: watcher_clients"
				 " %llu..%llu, not %llu", r->lv->name, mode_name(r->share != NULL),
				 n, (unsigned long long)pt->watcher_clients_min,
				 (unsigned long long)pt->watcher_clients_max,
				 (unsigned long long)want);
	}
}

/* Says which clients a put did not reach, and how they are. */
static void explain_missed(crun *r, int k, int64_t rev)
{
	int shown = 0;

	for (int i = 0; i < r->n_open && shown < MAX_MISSED_SHOWN; i++) {
		hr_client_status st;
		if (__atomic_load_n(&r->cl[i].last_rev, __ATOMIC_RELAXED) >= (uint64_t)rev ||
		    hr_client_status_get(r->cl[i].c, &st, NULL))
			continue;
		fprintf(stderr,
			"bench: put %d (revision %lld) missed client %d: ring revision %llu,"
			" confirmed %llu, unconfirmed_ms %lld, reconnects %llu, resyncs %llu\n",
			k, (long long)rev, i, (unsigned long long)st.revision,
			(unsigned long long)st.confirmed_revision, (long long)st.unconfirmed_ms,
			(unsigned long long)st.reconnects, (unsigned long long)st.resyncs);
		shown++;
	}
}

/* Times the puts to `n` receivers, which mark r->f. */
static void time_puts(crun *r, int n, hrb_fanout *out)
{
	int puts = r->args->fanout_puts;
	double *lat = calloc((size_t)puts, sizeof *lat);
	size_t got = 0;
	int64_t t0, rev, e0 = hrb_proc_cpu_ns(r->etcd_pid);
	int64_t p0 = hrb_process_cpu_ns();

	memset(out, 0, sizeof *out);
	r->f.n = 2 * puts + 16;
	r->f.reached = calloc((size_t)r->f.n, sizeof *r->f.reached);
	r->f.last_ns = calloc((size_t)r->f.n, sizeof *r->f.last_ns);
	if (!lat || !r->f.reached || !r->f.last_ns)
		goto out;
	/* Nothing else writes: the puts take consecutive revisions from the
	 * next one (set before the first put, whose event may well arrive
	 * before its reply). */
	__atomic_store_n(&r->f.base, r->rev + 1, __ATOMIC_RELEASE);
	for (int k = 0; k < puts; k++) {
		int64_t t_end, slot;
		rev = flip_node(r, k % NODES, &t0);
		if (rev < 0)
			break;
		r->rev = rev;
		slot = rev - r->f.base;
		if (slot < 0 || slot >= r->f.n) {
			hrb_note(r->report, "clients: put %d at revision %lld, outside the window",
				 k, (long long)rev);
			break;
		}
		t_end = t0 + FANOUT_TIMEOUT_NS;
		while (__atomic_load_n(&r->f.reached[slot], __ATOMIC_ACQUIRE) < n &&
		       hrb_now_ns() < t_end)
			hrb_sleep_ns(200000);
		out->puts++;
		if (__atomic_load_n(&r->f.reached[slot], __ATOMIC_ACQUIRE) < n) {
			out->missed++;
			if (r->n_open)
				explain_missed(r, k, rev);
			else
				fprintf(stderr, "bench: put %d (revision %lld) reached %d of %d"
					" raw streams\n", k, (long long)rev,
					__atomic_load_n(&r->f.reached[slot], __ATOMIC_ACQUIRE), n);
		} else {
			lat[got++] = (double)(__atomic_load_n(&r->f.last_ns[slot],
							      __ATOMIC_ACQUIRE) - t0) / 1e6;
		}
		/* Spaced out: the next put leaves 100-300 ms later. */
		hrb_sleep_ns(rand_between(r, 100, 300) * 1000000LL);
	}
	/* CPU per receiver per put, all of it: the idle rate is not taken
	 * off, as puts this close together leave no silence to probe (less
	 * the idle window's probes, etcd's share came out below zero).  On
	 * two cores, receivers x this bounds the fan-out from below. */
	if (out->puts > 0) {
		double deliveries = (double)out->puts * n;
		out->etcd_us_per_delivery =
			(double)(hrb_proc_cpu_ns(r->etcd_pid) - e0) / 1e3 / deliveries;
		out->client_us_per_delivery =
			(double)(hrb_process_cpu_ns() - p0) / 1e3 / deliveries;
	}
	out->coalesced = __atomic_exchange_n(&r->f.coalesced, 0, __ATOMIC_RELAXED);
	out->p50_ms = hrb_percentile(lat, got, 0.50);
	out->p99_ms = hrb_percentile(lat, got, 0.99);
	out->max_ms = hrb_percentile(lat, got, 1.0);
out:
	__atomic_store_n(&r->f.base, 0, __ATOMIC_RELEASE);
	free(lat);
	free(r->f.reached);
	free(r->f.last_ns);
	r->f.reached = NULL;
	r->f.last_ns = NULL;
	r->f.n = 0;
}

static void on_raw_event(void *ud, int stream, int64_t rev, int64_t t_ns)
{
	crun *r = ud;

	mark_reached(&r->f, &r->raw_last[stream], (uint64_t)rev, t_ns);
}

/* The floor at `n` streams, on an etcd no client watches; 0 or -1. */
static int measure_raw(crun *r, int n, hrb_fanout *out)
{
	hrb_raw_fan *fan;

	memset(r->raw_last, 0, (size_t)n * sizeof *r->raw_last);
	fan = hrb_raw_fan_start(hrt_etcd_client_url(r->etcd, 0), PREFIX, r->rev + 1, n,
				on_raw_event, r);
	if (!fan || hrb_raw_fan_wait_created(fan, 60000)) {
		fprintf(stderr, "bench: %d raw streams did not all start\n", n);
		hrb_raw_fan_stop(fan);
		return -1;
	}
	time_puts(r, n, out);
	if (hrb_raw_fan_failed(fan))
		hrb_note(r->report, "clients: %d of %d raw streams failed", hrb_raw_fan_failed(fan), n);
	hrb_raw_fan_stop(fan);
	return 0;
}

static int run_lever(crun *r, int shared, hrb_clients_lever *out)
{
	const hrb_args *a = r->args;
	const char *mode = mode_name(shared);
	hrt_etcd_opts eo = { .start_timeout_ms = 15000,
			     .progress_notify_ms = r->lv->progress_notify_ms };
	hr_error err = { 0 };
	int64_t rev;
	int rc = -1;

	snprintf(out->name, sizeof out->name, "%s", r->lv->name);
	snprintf(out->what, sizeof out->what, "%s", r->lv->what);
	out->shared = shared;
	r->etcd = hrt_etcd_start(1, &eo);
	if (!r->etcd)
		return -1;
	r->etcd_pid = hrt_etcd_pid(r->etcd, 0);
	if (shared && hr_share_new(&r->share, &err)) {
		fprintf(stderr, "bench: hr_share_new: %s\n", err.message);
		goto out;
	}
	if (hrb_putter_init(&r->pt, hrt_etcd_client_url(r->etcd, 0)))
		goto out;
	for (int i = 0; i < NODES; i++)
		r->weights[i] = 1;
	rev = r->rev = hrb_load_nodes(&r->pt, PREFIX, NODES);
	if (rev < 0)
		goto out;
	/* Hand back what earlier runs freed, so that this run's clients
	 * fault their memory in again and show in the RSS. */
	malloc_trim(0);
	r->base_threads = proc_status_field(0, "Threads");
	r->base_sockets = count_sockets();
	r->base_rss_kb = proc_status_field(0, "VmRSS");
	r->base_heap = heap_in_use();
	out->before_threads = r->base_threads;
	out->before_sockets = r->base_sockets;
	out->before_rss_kb = (double)r->base_rss_kb;
	out->before_heap_kb = (double)r->base_heap / 1024.0;
	for (int i = 0; i < a->n_clients; i++) {
		hrb_clients_point *pt = &out->points[out->n_points];
		int64_t t0 = hrb_now_ns();

		memset(pt, 0, sizeof *pt);
		pt->clients = a->clients[i];
		if (open_clients(r, a->clients[i]))
			goto out;
		pt->open_s = (double)(hrb_now_ns() - t0) / 1e9;
		measure_idle(r, pt);
		if (pt->clients >= a->fanout_from && a->fanout_puts > 0) {
			time_puts(r, r->n_open, &pt->fanout);
			pt->has_fanout = pt->fanout.puts > 0;
		}
		out->n_points++;
		fprintf(stderr, "bench: %s: %d %s clients: etcd %.2f%% CPU, %.1f MB;"
			" %ld threads, %ld sockets, %.1f MB RSS here%s\n",
			r->lv->name, pt->clients, mode, pt->etcd_cpu_pct, pt->etcd_rss_mb,
			pt->threads, pt->sockets, pt->rss_kb / 1024.0,
			pt->fanout.missed ? " (missed puts)" : "");
	}
	/* The floor, with the clients gone: etcd alone fanning out to as
	 * many bare streams (after the idle figures, which it would skew).
	 * Shared clients are one stream: no floor of as many. */
	close_clients(r);
	for (int i = 0; i < out->n_points && !shared; i++) {
		hrb_clients_point *pt = &out->points[i];
		if (!pt->has_fanout)
			continue;
		if (measure_raw(r, pt->clients, &pt->raw))
			goto out;
		pt->has_raw = pt->raw.puts > 0;
		fprintf(stderr, "bench: %s: %d raw streams: p50 %.1f ms, p99 %.1f ms%s\n",
			r->lv->name, pt->clients, pt->raw.p50_ms, pt->raw.p99_ms,
			pt->raw.missed ? " (missed puts)" : "");
	}
	rc = 0;
out:
	close_clients(r);
	hr_share_free(r->share);
	r->share = NULL;
	hrb_putter_free(&r->pt);
	hrt_etcd_destroy(r->etcd);
	r->etcd = NULL;
	return rc;
}

/* Per-client cost: the least-squares line through every count, carried
 * to `target` clients spread over `members` (the two largest counts alone
 * undershoot when the largest starves etcd of CPU). */
static void extrapolate(hrb_clients_lever *lv, int target, int members)
{
	double n = lv->n_points, sx = 0, sy = 0, sr = 0, sxx = 0, sxy = 0, sxr = 0, d;
	double per_cpu, per_rss, at = (double)target / members;

	if (lv->n_points < 2)
		return;
	for (int i = 0; i < lv->n_points; i++) {
		const hrb_clients_point *p = &lv->points[i];
		sx += p->clients;
		sy += p->etcd_cpu_pct;
		sr += p->etcd_rss_mb;
		sxx += (double)p->clients * p->clients;
		sxy += p->clients * p->etcd_cpu_pct;
		sxr += p->clients * p->etcd_rss_mb;
	}
	d = n * sxx - sx * sx;
	if (d <= 0)
		return;
	per_cpu = (n * sxy - sx * sy) / d;
	per_rss = (n * sxr - sx * sr) / d;
	lv->cpu_pct_per_1000 = per_cpu * 1000;
	lv->rss_kb_per_client = per_rss * 1024;
	lv->target = target;
	lv->members = members;
	lv->target_cpu_pct_per_member = (sy - per_cpu * sx) / n + per_cpu * at;
	lv->target_rss_mb_per_member = (sr - per_rss * sx) / n + per_rss * at;
	lv->has_extrapolation = 1;
}

int hrb_measure_clients(const hrb_args *args, hrb_report *report, hrb_clients_report *out)
{
	int max = 0;
	struct rlimit rl;
	crun r;
	int rc = 0;

	memset(out, 0, sizeof *out);
	for (int i = 0; i < args->n_clients; i++)
		if (args->clients[i] > max)
			max = args->clients[i];
	/* A client holds a few descriptors (the stream's and the probe's
	 * connections, the multi handle's wakeup pair); etcd, which inherits
	 * the limit, holds the other ends. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max * 6 + 256)
		hrb_note(report, "clients: RLIMIT_NOFILE is %llu; %d clients may need %d",
			 (unsigned long long)rl.rlim_cur, max, max * 6 + 256);
	loadavg(&out->load1_start);
	for (int run = 0; run < 2 * args->n_levers && rc == 0; run++) {
		int shared = run % 2;

		if (!(args->share_modes & (shared ? HRB_SHARE_ON : HRB_SHARE_OFF)))
			continue;
		memset(&r, 0, sizeof r);
		r.args = args;
		r.report = report;
		r.lv = find_lever(args->levers[run / 2]);
		r.rng = (uint64_t)hrb_now_ns() | 1;
		r.cl = calloc((size_t)max, sizeof *r.cl);
		r.raw_last = calloc((size_t)max, sizeof *r.raw_last);
		if (!r.cl || !r.raw_last || run_lever(&r, shared, &out->levers[out->n_levers]))
			rc = -1;
		else if (shared)
			/* One stream on one member whatever the count: no line
			 * to carry over members, only noise to fit. */
			out->n_levers++;
		else
			extrapolate(&out->levers[out->n_levers++], 10000, 3);
		free(r.cl);
		free(r.raw_last);
	}
	loadavg(&out->load1_end);
	return rc;
}

/* ---- printing --------------------------------------------------------------- */

/* The rows of one lever, its runs (independent, shared or both) side by
 * side at each count. */
static void print_lever_text(const hrb_clients_lever *runs, int n_runs)
{
	int rows = 0;

	printf("  lever %s: %s\n", runs[0].name, runs[0].what);
	printf("  %8s %-6s %9s %9s %8s %7s %7s %7s %7s %8s %8s %9s %6s %9s %9s %7s %6s\n",
	       "clients", "mode", "etcd CPU%", "etcd MB", "our CPU%", "threads", "thr/cl",
	       "sockets", "sock/cl", "RSS MB", "rssKB/cl", "heapKB/cl", "load1", "fan p50",
	       "fan p99", "missed", "reconn");
	for (int j = 0; j < n_runs; j++)
		if (runs[j].n_points > rows)
			rows = runs[j].n_points;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < n_runs; j++) {
			const hrb_clients_point *p = &runs[j].points[i];
			if (i >= runs[j].n_points)
				continue;
			printf("  %8d %-6s %9.2f %9.1f %8.2f %7ld %7.3f %7ld %7.3f %8.1f %8.1f"
			       " %9.1f %6.2f", p->clients, runs[j].shared ? "shared" : "indep",
			       p->etcd_cpu_pct, p->etcd_rss_mb, p->client_cpu_pct, p->threads,
			       p->threads_per_client, p->sockets, p->sockets_per_client,
			       p->rss_kb / 1024.0, p->rss_kb_per_client, p->heap_kb_per_client,
			       p->load1_after);
			if (p->has_fanout)
				printf(" %9.1f %9.1f %3d/%-3d", p->fanout.p50_ms, p->fanout.p99_ms,
				       p->fanout.missed, p->fanout.puts);
			else
				printf(" %9s %9s %7s", "-", "-", "-");
			printf(" %6llu\n", (unsigned long long)p->reconnects);
		}
	for (int j = 0; j < n_runs; j++) {
		const hrb_clients_lever *lv = &runs[j];
		const char *shared = lv->shared ? " shared" : "";

		printf("  before the%s clients: %ld threads, %ld sockets, %.1f MB RSS,"
		       " %.1f MB heap\n", shared, lv->before_threads, lv->before_sockets,
		       lv->before_rss_kb / 1024.0, lv->before_heap_kb / 1024.0);
		for (int i = 0; i < lv->n_points; i++) {
			const hrb_clients_point *p = &lv->points[i];
			if (p->has_fanout)
				printf("  fan-out at %d%s clients: p50 %.1f ms, p99 %.1f ms, max %.1f ms;"
				       " CPU per client per put %.0f us on etcd, %.0f us here\n",
				       p->clients, shared, p->fanout.p50_ms, p->fanout.p99_ms,
				       p->fanout.max_ms, p->fanout.etcd_us_per_delivery,
				       p->fanout.client_us_per_delivery);
			if (p->has_raw)
				printf("  floor at %d bare streams: p50 %.1f ms, p99 %.1f ms, max %.1f ms,"
				       " missed %d/%d; CPU per stream per put %.0f us on etcd,"
				       " %.0f us here\n", p->clients, p->raw.p50_ms, p->raw.p99_ms,
				       p->raw.max_ms, p->raw.missed, p->raw.puts,
				       p->raw.etcd_us_per_delivery, p->raw.client_us_per_delivery);
		}
		if (lv->has_extrapolation)
			printf("  per 1,000%s clients: %.2f%% of a core and %.0f MB on etcd;"
			       " %d clients over %d members: %.1f%% of a core and %.0f MB"
			       " per member\n", shared, lv->cpu_pct_per_1000,
			       lv->rss_kb_per_client * 1000 / 1024, lv->target, lv->members,
			       lv->target_cpu_pct_per_member, lv->target_rss_mb_per_member);
	}
}

void hrb_clients_print_text(const hrb_clients_report *c)
{
	printf("Many idle clients on one etcd (10-node prefix; load average %.2f at the"
	       " start, %.2f at the end)\n", c->load1_start, c->load1_end);
	/* The runs of one lever are next to each other. */
	for (int l = 0, n = 0; l < c->n_levers; l += n) {
		for (n = 1; l + n < c->n_levers &&
			    !strcmp(c->levers[l + n].name, c->levers[l].name); n++)
			;
		print_lever_text(&c->levers[l], n);
	}
}

static void print_fanout_json(const hrb_fanout *f)
{
	if (!f) {
		printf("null");
		return;
	}
	printf("{\"puts\":%d,\"missed\":%d,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,"
	       "\"coalesced\":%d,\"etcd_us_per_delivery\":%.1f,\"client_us_per_delivery\":%.1f}",
	       f->puts, f->missed, f->p50_ms, f->p99_ms, f->max_ms, f->coalesced,
	       f->etcd_us_per_delivery, f->client_us_per_delivery);
}

void hrb_clients_print_json(const hrb_clients_report *c)
{
	printf("{\"load1_start\":%.2f,\"load1_end\":%.2f,\"levers\":[", c->load1_start,
	       c->load1_end);
	for (int l = 0; l < c->n_levers; l++) {
		const hrb_clients_lever *lv = &c->levers[l];
		printf("%s{\"name\":\"%s\",\"mode\":\"%s\",\"before\":{\"threads\":%ld,"
		       "\"sockets\":%ld,\"rss_kb\":%.0f,\"heap_kb\":%.1f},\"points\":[",
		       l ? "," : "", lv->name, mode_name(lv->shared), lv->before_threads,
		       lv->before_sockets, lv->before_rss_kb, lv->before_heap_kb);
		for (int i = 0; i < lv->n_points; i++) {
			const hrb_clients_point *p = &lv->points[i];
			printf("%s{\"clients\":%d,\"open_s\":%.2f,\"seconds\":%.2f,"
			       "\"load1_before\":%.2f,\"load1_after\":%.2f,"
			       "\"etcd_cpu_pct\":%.3f,\"etcd_rss_mb\":%.1f,\"client_cpu_pct\":%.3f,"
			       "\"threads_per_client\":%.3f,\"sockets_per_client\":%.3f,"
			       "\"rss_kb_per_client\":%.1f,\"heap_kb_per_client\":%.1f,\"reconnects\":%llu,\"resyncs\":%llu,"
			       "\"unconfirmed\":%d,\"fanout\":",
			       i ? "," : "", p->clients, p->open_s, p->seconds, p->load1_before,
			       p->load1_after, p->etcd_cpu_pct, p->etcd_rss_mb, p->client_cpu_pct,
			       p->threads_per_client, p->sockets_per_client, p->rss_kb_per_client,
			       p->heap_kb_per_client, (unsigned long long)p->reconnects, (unsigned long long)p->resyncs,
			       p->unconfirmed);
			print_fanout_json(p->has_fanout ? &p->fanout : NULL);
			printf(",\"raw_fanout\":");
			print_fanout_json(p->has_raw ? &p->raw : NULL);
			printf(",\"mode\":\"%s\",\"threads\":%ld,\"sockets\":%ld,\"rss_kb\":%.0f,"
			       "\"heap_kb\":%.1f,\"watcher_clients_min\":%llu,"
			       "\"watcher_clients_max\":%llu}", mode_name(lv->shared), p->threads,
			       p->sockets, p->rss_kb, p->heap_kb,
			       (unsigned long long)p->watcher_clients_min,
			       (unsigned long long)p->watcher_clients_max);
		}
		printf("]");
		if (lv->has_extrapolation)
			printf(",\"cpu_pct_per_1000\":%.3f,\"rss_kb_per_client\":%.1f,"
			       "\"extrapolated\":{\"clients\":%d,\"members\":%d,"
			       "\"cpu_pct_per_member\":%.2f,\"rss_mb_per_member\":%.0f}",
			       lv->cpu_pct_per_1000, lv->rss_kb_per_client, lv->target,
			       lv->members, lv->target_cpu_pct_per_member,
			       lv->target_rss_mb_per_member);
		printf("}");
	}
	printf("]}");
}
