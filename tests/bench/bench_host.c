/* SPDX-License-Identifier: MIT */
/*
 * bench_host.c - hashring-bench-host: the figures of host rings
 * (docs/performance.md, "Host rings"), offline: the test publishes the
 * rings an agent would.
 *
 *   lookups   hr_client_lookup() of a client attached to an agent's
 *             directory against an in-process client on the same ring,
 *             side by side in alternating rounds (vnodes at 100 and 1000
 *             nodes x 200, Maglev at 1000)
 *   write     hr_host_publish() of a ring of --nodes (default 100,000)
 *             nodes x 200, the file's size, and a reader's first map
 *             (open, checks, checksum)
 *   memory    each of --readers processes forked before attaching: its
 *             PSS before and after it attaches and looks up, against the
 *             RSS an in-process ring of the same size adds
 *   fan-out   --readers processes attached to a small ring, each looking
 *             up every 20 ms: the publish, and the lookup of each that
 *             first sees the new generation (it maps the snapshot): so a
 *             change is in use by every reader at its next lookup after
 *             the publish plus that lookup's time
 *
 *   hashring-bench-host [--nodes N] [--readers R] [--runs K]
 */
#define _GNU_SOURCE
#include "client.h"
#include "hashring.h"
#include "publish.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const hr_error *err)
{
	fprintf(stderr, "hashring-bench-host: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

static hr_ring *ring_of(int nodes, int vnodes, hr_placement placement, uint64_t revision)
{
	hr_node *n = calloc((size_t)nodes, sizeof *n);
	char (*ids)[24] = calloc((size_t)nodes, sizeof *ids);
	char (*addrs)[24] = calloc((size_t)nodes, sizeof *addrs);
	hr_ring_options o;
	hr_error err;
	hr_ring *r;

	if (!n || !ids || !addrs)
		die("calloc", NULL);
	for (int i = 0; i < nodes; i++) {
		snprintf(ids[i], sizeof ids[i], "node-%06d", i);
		snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", 10000 + i % 50000);
		n[i] = (hr_node){ .id = ids[i], .addr = addrs[i], .weight = 1 };
	}
	hr_ring_options_init(&o);
	o.placement = placement;
	o.vnodes_per_weight = (unsigned)vnodes;
	if (hr_ring_build(n, (size_t)nodes, &o, revision, &r, &err))
		die("hr_ring_build", &err);
	free(n);
	free(ids);
	free(addrs);
	return r;
}

/* 16-byte random keys, more than any cache holds. */
#define KEYS (1u << 21)
#define KEY_LEN 16
static unsigned char *keys;

static void make_keys(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	keys = malloc((size_t)KEYS * KEY_LEN);
	if (!keys)
		die("malloc", NULL);
	for (size_t i = 0; i < (size_t)KEYS * KEY_LEN / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(keys + 8 * i, &x, 8);
	}
}

/* ns per hr_client_lookup(), the caller reading the id, over `ops`. */
static double thru(hr_client *c, size_t ops, uint64_t *sink)
{
	int64_t t0 = 0;
	uint64_t s = 0;
	size_t warm = ops / 8;

	for (size_t i = 0; i < warm + ops; i++) {
		hr_owner o;

		if (i == warm)
			t0 = cpu_ns();
		hr_client_lookup(c, keys + (i % KEYS) * KEY_LEN, KEY_LEN, &o, NULL);
		s += (unsigned char)o.node[6];
	}
	*sink += s;
	return (double)(cpu_ns() - t0) / (double)ops;
}

static char dir[64];

static hr_host *host_open(void)
{
	hr_host *h = NULL;
	hr_error err;

	if (hr_host_open(dir, NULL, &h, &err))
		die("hr_host_open", &err);
	return h;
}

static hr_client *reader(void)
{
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err;

	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	if (hr_client_open(NULL, &cfg, &c, &err))
		die("hr_client_open(agent_dir)", &err);
	return c;
}

static hr_client *in_process(hr_ring *r)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err;

	hr_etcd_config_init(&etcd);
	etcd.endpoints = "127.0.0.1:1";	/* closed: nothing to watch */
	etcd.prefix = "/bench/";
	etcd.log_level = HR_LOG_ERROR;
	hr_client_config_init(&cfg);
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 60000;
	cfg.backoff_max_ms = 60000;
	if (hr_client_open(&etcd, &cfg, &c, &err))
		die("hr_client_open", &err);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(r));
	return c;
}

static void bench_lookups(int runs)
{
	static const struct { int nodes, vnodes; hr_placement p; const char *name; } cfgs[] = {
		{ 100, 200, HR_PLACEMENT_XXH3, "xxh3" },
		{ 1000, 200, HR_PLACEMENT_XXH3, "xxh3" },
		{ 1000, 200, HR_PLACEMENT_MAGLEV, "maglev" },
	};
	uint64_t sink = 0;

	printf("Lookups: hr_client_lookup() attached to an agent against in-process, same ring\n"
	       "(ns of thread CPU time per lookup, 16-byte random keys; median of %d rounds each)\n"
	       "  place   nodes x vn   in-process   attached   attached/in-process\n", runs);
	for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
		hr_ring *r = ring_of(cfgs[k].nodes, cfgs[k].vnodes, cfgs[k].p, 7);
		hr_host *h = host_open();
		hr_client *a, *b;
		double in[99], at[99], ratio[99];
		hr_error err;

		if (hr_host_publish(h, r, &err) < 0)
			die("hr_host_publish", &err);
		a = in_process(r);
		b = reader();
		for (int i = 0; i < runs; i++) {
			/* In turn, each first in every other round. */
			if (i % 2) {
				at[i] = thru(b, 1u << 21, &sink);
				in[i] = thru(a, 1u << 21, &sink);
			} else {
				in[i] = thru(a, 1u << 21, &sink);
				at[i] = thru(b, 1u << 21, &sink);
			}
			ratio[i] = at[i] / in[i];
		}
		printf("  %-7s %5d x %-4d %10.2f %10.2f   %.3fx\n", cfgs[k].name, cfgs[k].nodes,
		       cfgs[k].vnodes, median(in, runs), median(at, runs), median(ratio, runs));
		hr_client_close(a);
		hr_client_close(b);
		hr_host_close(h);
		hr_ring_release(r);
	}
	if (sink == 42)
		fputc(' ', stderr);
}

/* A line of process `pid`'s smaps_rollup ("Pss", "Private_Dirty"...), kB. */
static long smaps_kb(pid_t pid, const char *field)
{
	char path[64], line[256], fmt[64];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/smaps_rollup", (long)pid);
	snprintf(fmt, sizeof fmt, "%s: %%ld kB", field);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, fmt, &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* Memory of `pid` no other process shares, kB. */
static long private_kb(pid_t pid)
{
	return smaps_kb(pid, "Private_Clean") + smaps_kb(pid, "Private_Dirty");
}

static long rss_kb(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void bench_big(int nodes, int readers)
{
	long rss0 = rss_kb(), rss1;
	hr_ring *r = ring_of(nodes, 200, HR_PLACEMENT_XXH3, 7);
	hr_host *h = host_open();
	int64_t t0, t1, t2;
	hr_client *c;
	hr_error err;
	int go[2], ready[2];
	pid_t *pids = calloc((size_t)readers, sizeof *pids);

	rss1 = rss_kb();
	t0 = now_ns();
	if (hr_host_publish(h, r, &err) < 0)
		die("hr_host_publish", &err);
	t1 = now_ns();
	c = reader();
	t2 = now_ns();
	printf("Snapshot of %d nodes x 200 (%zu points): write %.0f ms; a reader's first map"
	       " (open, checks, checksum) %.0f ms; the in-process ring's RSS %ld MB\n",
	       nodes, hr_ring_point_count(r), (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
	       (rss1 - rss0) / 1024);
	hr_client_close(c);
	/* Readers forked before attaching: what attaching adds to each. */
	if (pipe(go) || pipe(ready) || !pids)
		die("pipe", NULL);
	for (int i = 0; i < readers; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char x;
			hr_client *rc;
			hr_owner o;
			uint64_t s = 0;

			if (read(go[0], &x, 1) != 1)
				_exit(1);
			rc = reader();
			for (size_t k = 0; k < 100000; k++) {
				hr_client_lookup(rc, keys + (k % KEYS) * KEY_LEN, KEY_LEN, &o, NULL);
				s += (unsigned char)o.node[0];
			}
			if (write(ready[1], &x, 1) != 1)
				_exit(1);
			pause();
			_exit(s == 42);
		}
	}
	{
		long before = 0, after = 0, priv0 = 0, priv1 = 0;
		char x = 'x';

		/* The parent's own copy of the ring goes first: the
		 * children's PSS then shares nothing with it. */
		hr_ring_release(r);
		nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
		for (int i = 0; i < readers; i++) {
			before += smaps_kb(pids[i], "Pss");
			priv0 += private_kb(pids[i]);
		}
		for (int i = 0; i < readers; i++)
			if (write(go[1], &x, 1) != 1)
				die("write", NULL);
		for (int i = 0; i < readers; i++)
			if (read(ready[0], &x, 1) != 1)
				die("read", NULL);
		for (int i = 0; i < readers; i++) {
			after += smaps_kb(pids[i], "Pss");
			priv1 += private_kb(pids[i]);
		}
		printf("Memory: %d reader processes, each attached and 100,000 lookups, per reader"
		       " (mean): private +%.2f MB (what it holds alone), PSS +%.1f MB (its"
		       " 1/%d share of the snapshot included)\n", readers,
		       (double)(priv1 - priv0) / readers / 1024,
		       (double)(after - before) / readers / 1024, readers);
	}
	for (int i = 0; i < readers; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	free(pids);
	hr_host_close(h);
}

static void bench_fanout(int readers, int runs)
{
	hr_host *h = host_open();
	hr_ring *r = ring_of(100, 200, HR_PLACEMENT_XXH3, 7);
	/* Per reader: the duration of its lookup that moved to the newest
	 * ring, and that ring's revision; shared with the parent. */
	struct seen { int64_t ns; uint64_t revision; } *seen =
		mmap(NULL, (size_t)readers * sizeof *seen, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t *pids = calloc((size_t)readers, sizeof *pids);
	double pub[99], p50[99], p99[99], worst[99];
	hr_error err;

	if (seen == MAP_FAILED || !pids || hr_host_publish(h, r, &err) < 0)
		die("fan-out setup", &err);
	hr_ring_release(r);
	for (int i = 0; i < readers; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			hr_client *c = reader();
			uint64_t last = 0;

			for (;;) {
				int64_t t0 = now_ns(), t1;
				hr_owner o;

				hr_client_lookup(c, "k", 1, &o, NULL);
				t1 = now_ns();
				if (o.revision != last) {
					seen[i].ns = t1 - t0;
					__atomic_store_n(&seen[i].revision, o.revision,
							 __ATOMIC_RELEASE);
					last = o.revision;
				}
				nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
			}
		}
	}
	nanosleep(&(struct timespec){ 2, 0 }, NULL);
	for (int k = 0; k < runs; k++) {
		double *lat = calloc((size_t)readers, sizeof *lat);
		uint64_t rev = 1000 + (uint64_t)k;
		int64_t t0, t1;
		int done = 0;

		/* The same nodes at a new revision: a ring of the same size. */
		r = ring_of(100, 200, HR_PLACEMENT_XXH3, rev);
		t0 = now_ns();
		if (hr_host_publish(h, r, &err) < 0)
			die("hr_host_publish", &err);
		t1 = now_ns();
		while (done < readers && now_ns() - t0 < 20 * 1000000000ll) {
			done = 0;
			for (int i = 0; i < readers; i++)
				done += __atomic_load_n(&seen[i].revision, __ATOMIC_ACQUIRE) == rev;
			nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
		}
		for (int i = 0; i < readers; i++)
			lat[i] = (double)seen[i].ns / 1e6;
		qsort(lat, (size_t)readers, sizeof *lat, cmp_double);
		pub[k] = (double)(t1 - t0) / 1e6;
		p50[k] = lat[readers / 2];
		p99[k] = lat[readers >= 100 ? readers * 99 / 100 - 1 : readers - 1];
		worst[k] = lat[readers - 1];
		if (done < readers)
			fprintf(stderr, "hashring-bench-host: %d of %d readers moved\n", done,
				readers);
		free(lat);
		hr_ring_release(r);
	}
	printf("Fan-out to %d reader processes, 100 x 200: the publish %.2f ms; the lookup of"
	       " each reader that maps the new snapshot p50 %.2f ms, p99 %.2f ms, slowest %.2f ms"
	       " (medians of %d publishes): every reader uses the new ring at its next lookup"
	       " after the publish, within publish + that lookup\n", readers, median(pub, runs),
	       median(p50, runs), median(p99, runs), median(worst, runs), runs);
	for (int i = 0; i < readers; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	free(pids);
	munmap(seen, (size_t)readers * sizeof *seen);
	hr_host_close(h);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "hashring-bench-host: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "nodes", required_argument, NULL, 'n' },
		{ "readers", required_argument, NULL, 'r' },
		{ "runs", required_argument, NULL, 'k' },
		{ "only", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	int nodes = 100000, readers = 1000, runs = 7, opt;
	const char *only = NULL;

	while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (opt) {
		case 'n': nodes = atoi(optarg); break;
		case 'r': readers = atoi(optarg); break;
		case 'k': runs = atoi(optarg); break;
		case 'o': only = optarg; break;
		default:
			fprintf(stderr, "usage: hashring-bench-host [--nodes N] [--readers R]"
				" [--runs K] [--only lookups|big|fanout]\n");
			return 2;
		}
	}
	if (nodes < 1 || nodes > HR_NODES_MAX || readers < 1 || readers > 5000 || runs < 1 ||
	    runs > 99) {
		fprintf(stderr, "hashring-bench-host: --nodes 1..%d, --readers 1..5000, --runs 1..99\n",
			HR_NODES_MAX);
		return 2;
	}
	snprintf(dir, sizeof dir, "/dev/shm/hashring-bench-host-%ld", (long)getpid());
	atexit(cleanup);
	make_keys();
	if (!only || !strcmp(only, "lookups"))
		bench_lookups(runs);
	if (!only || !strcmp(only, "big"))
		bench_big(nodes, readers);
	if (!only || !strcmp(only, "fanout"))
		bench_fanout(readers, runs);
	return 0;
}
