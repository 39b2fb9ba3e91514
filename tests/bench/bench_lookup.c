/* SPDX-License-Identifier: MIT */
/*
 * bench_lookup.c - lookup figures, side by side in one run:
 *
 *   api        hr_client_lookup(): hashing, the read side (the thread's
 *              held ring reference) and the copy-out, on a client whose
 *              ring is published through the client's own publisher (no
 *              etcd is reachable, so the watcher never publishes anything
 *              of its own);
 *   ring       hr_ring_lookup() on the same ring (hashing included);
 *   ketama     libmemcached's memcached_generate_hash() with
 *              MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED on as many servers;
 *   bsearch    hr_hash_key() then a textbook lower bound over a sorted
 *              array of the very same points (checked to agree);
 *   batch      hr_client_lookup_batch() and hr_ring_lookup_batch() on
 *              HRB_BATCH_KEYS keys per call (checked to agree with single
 *              lookups), and the raw batch at each pipeline distance of
 *              hrb_batch_distances, which is how the library's was chosen;
 *   uncounted  api and api batch again with lookup counting off on the same
 *              client and ring, beside them in each round: the cost of
 *              counting; then HRB_COUNT_ROUNDS short rounds of api counted
 *              and uncounted alone, side by side, for best and median
 *              (HRB_SAMPLE in the environment sets the client's
 *              hot_key_sample, to time the sampling too).
 *
 * The rings are of one placement (--placement; XXH3 by default): the
 * textbook search and libmemcached are measured beside XXH3 rings only,
 * and placements whose lookups cost more (ketama's MD5, rendezvous'
 * scores of every node) run fewer lookups per round.
 *
 * Keys are 16 random bytes taken in turn from a pool far larger than the
 * caches.  "Throughput" runs independent lookups; the "dependent chain"
 * picks each key from the previous answer, so it measures latency.
 * Each figure is the median of several rounds, the methods interleaved
 * within each round so that noise hits them alike.
 */
#define _GNU_SOURCE
#include "bench_lookup.h"
#include "bench_bsearch.h"

#include "client.h"
#include "hashring.h"
#include "publish.h"
#include "ring_batch.h"
#include "thread_cache.h"

#include <libmemcached/memcached.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define KEY_LEN 16
#define POOL_KEYS (1u << 21)		/* 32 MiB of keys */
#define ROUNDS 7
#define OPS_PER_ROUND 400000
#define CHECK_KEYS 100000
#define MC_SERVERS_MAX 100		/* libmemcached aborts above this */
#define THREAD_WINDOW_NS (300 * 1000000LL)
#define THREAD_ROUNDS 3
#define REPUBLISH_PERIOD_NS (10 * 1000000LL)	/* 100 per second */

/*
 * Single-thread figures are the thread's CPU time, not wall time: on a
 * small shared machine other processes take the CPU away in the middle of
 * a round, and wall time would charge that to whichever method ran.
 */
static int64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct keypool {
	unsigned char *keys;
	size_t mask;			/* POOL_KEYS - 1 */
};


/* ---- libmemcached ---------------------------------------------------------- */

static memcached_st *mc_create(int servers, double *build_ms)
{
	memcached_server_list_st list = NULL;
	memcached_return_t rc;
	memcached_st *mc = memcached_create(NULL);
	int64_t t0;

	if (!mc)
		return NULL;
	memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
	for (int i = 0; i < servers; i++) {
		char host[32];

		snprintf(host, sizeof host, "127.%d.%d.%d", i >> 16, (i >> 8) & 255,
			 i & 255);
		list = memcached_server_list_append_with_weight(list, host, 11211, 1,
								&rc);
		if (!list) {
			memcached_free(mc);
			return NULL;
		}
	}
	t0 = cpu_now_ns();
	rc = memcached_server_push(mc, list);
	if (build_ms)
		*build_ms = (double)(cpu_now_ns() - t0) / 1e6;
	memcached_server_list_free(list);
	if (rc != MEMCACHED_SUCCESS) {
		memcached_free(mc);
		return NULL;
	}
	return mc;
}

/* Whether libmemcached survives `servers` servers: tried in a child process
 * because it aborts.  Returns 0 if it works, else the signal or exit code. */
static int mc_try(int servers)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		memcached_st *mc;

		/* Its assertion message and backtrace are not ours to print. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(4);
		mc = mc_create(servers, NULL);

		if (mc)
			(void)memcached_generate_hash(mc, "probe-key-0123456", KEY_LEN);
		_exit(mc ? 0 : 3);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return WEXITSTATUS(status) ? 1000 + WEXITSTATUS(status) : 0;
}

/* ---- timed loops -------------------------------------------------------- */

/*
 * THRU runs `ops` independent lookups over the pool; DEP chains them: the
 * index of the next key moves by one or two depending on the answer, so a
 * lookup cannot start before the previous one ends.  Both give ns/op and
 * fold answers into a sink so nothing is optimised away.  Each first runs
 * WARM_OPS untimed lookups: the method measured before it evicted this
 * one's tables, and a service doing millions of lookups a second keeps
 * them warm (the keys stay cold: they come from the 32 MiB pool).
 */
#define WARM_OPS 50000

/* Rounds of fewer lookups than WARM_OPS warm up with as many. */
static size_t warm_ops(size_t ops)
{
	return ops < WARM_OPS ? ops : WARM_OPS;
}

#define TIMED_LOOPS(name, ctx_t, CALL, TOKEN)                                 \
	static __attribute__((unused)) double thru_##name(ctx_t ctx, const struct keypool *kp,       \
				  size_t ops, uint64_t *sink)                  \
	{                                                                     \
		int64_t t0 = 0;                                               \
		uint64_t s = 0;                                               \
		size_t warm = warm_ops(ops);                                  \
		for (size_t i = 0; i < warm + ops; i++) {                     \
			const unsigned char *key =                            \
				kp->keys + (i & kp->mask) * KEY_LEN;          \
			if (i == warm)                                        \
				t0 = cpu_now_ns();                            \
			CALL;                                                 \
			s += (TOKEN);                                         \
		}                                                             \
		*sink += s;                                                   \
		return (double)(cpu_now_ns() - t0) / (double)ops;            \
	}                                                                     \
	static __attribute__((unused)) double dep_##name(ctx_t ctx, const struct keypool *kp,        \
				 size_t ops, uint64_t *sink)                   \
	{                                                                     \
		int64_t t0 = 0;                                               \
		size_t at = 0, warm = warm_ops(ops);                          \
		for (size_t i = 0; i < warm + ops; i++) {                     \
			const unsigned char *key = kp->keys + at * KEY_LEN;   \
			if (i == warm)                                        \
				t0 = cpu_now_ns();                            \
			CALL;                                                 \
			at = (at + 1 + ((TOKEN) & 1)) & kp->mask;             \
		}                                                             \
		*sink += at;                                                  \
		return (double)(cpu_now_ns() - t0) / (double)ops;            \
	}

TIMED_LOOPS(api, hr_client *, hr_owner out; hr_client_lookup(ctx, key, KEY_LEN, &out, NULL),
	    (unsigned char)out.node[6])
TIMED_LOOPS(ring, const hr_ring *, hr_lookup l; hr_ring_lookup(ctx, key, KEY_LEN, &l, NULL),
	    (uintptr_t)l.node >> 4)
TIMED_LOOPS(ring_id, const hr_ring *, hr_lookup l; hr_ring_lookup(ctx, key, KEY_LEN, &l, NULL),
	    (unsigned char)l.node->id[6])
TIMED_LOOPS(mc, const memcached_st *,
	    uint32_t srv = memcached_generate_hash(ctx, (const char *)key, KEY_LEN), srv)
TIMED_LOOPS(bs, const struct bs_ring *, uint32_t nd = bs_lookup(ctx, key, KEY_LEN), nd)
TIMED_LOOPS(pref, const hr_ring *,
	    const hr_node *pl[3];
	    int k = hr_ring_preflist(ctx, key, KEY_LEN, HR_VIEW_WRITE, pl, 3, NULL),
	    (uintptr_t)pl[k - 1] >> 4)

/* ---- batches ------------------------------------------------------------ */

const unsigned hrb_batch_distances[HRB_BATCH_DISTANCES] = { 0, 1, 2, 3, 4, 6, 8,
							     12, 16, 24 };

/* Who answers a batch: the client, or the raw ring at the library's
 * distance (dist < 0) or at `dist`. */
struct batch_ctx {
	hr_client *client;
	const hr_ring *ring;
	int dist;
};

/* thru_* for batches: the same keys in the same order, HRB_BATCH_KEYS per
 * call, ns per key.  Filling the pointer array is timed too: a caller has
 * to make it. */
static double thru_batch(const struct batch_ctx *b, const struct keypool *kp,
			 size_t ops, uint64_t *sink)
{
	const void *ptrs[HRB_BATCH_KEYS];
	size_t lens[HRB_BATCH_KEYS];
	hr_batch_owner out[HRB_BATCH_KEYS];
	size_t warm = warm_ops(ops) / HRB_BATCH_KEYS, calls = ops / HRB_BATCH_KEYS;
	int64_t t0 = 0;
	uint64_t s = 0;

	for (size_t k = 0; k < HRB_BATCH_KEYS; k++)
		lens[k] = KEY_LEN;
	for (size_t i = 0; i < warm + calls; i++) {
		if (i == warm)
			t0 = cpu_now_ns();
		for (size_t k = 0; k < HRB_BATCH_KEYS; k++)
			ptrs[k] = kp->keys + ((i * HRB_BATCH_KEYS + k) & kp->mask) * KEY_LEN;
		if (b->client)
			hr_client_lookup_batch(b->client, ptrs, lens, HRB_BATCH_KEYS, out,
					       NULL, NULL);
		else if (b->dist < 0)
			hr_ring_lookup_batch(b->ring, ptrs, lens, HRB_BATCH_KEYS, out, NULL);
		else
			hr__ring_lookup_batch_dist(b->ring, ptrs, lens, HRB_BATCH_KEYS, out,
						   (size_t)b->dist, NULL);
		for (size_t k = 0; k < HRB_BATCH_KEYS; k++)
			s += out[k].node;
	}
	*sink += s;
	return (double)(cpu_now_ns() - t0) / (double)(calls * HRB_BATCH_KEYS);
}

/* The batch and single lookups must agree on every key. */
static int check_batch_agree(const hr_ring *ring, const struct keypool *kp)
{
	const void *ptrs[HRB_BATCH_KEYS];
	size_t lens[HRB_BATCH_KEYS];
	hr_batch_owner out[HRB_BATCH_KEYS];

	for (size_t i = 0; i < CHECK_KEYS; i += HRB_BATCH_KEYS) {
		for (size_t k = 0; k < HRB_BATCH_KEYS; k++) {
			ptrs[k] = kp->keys + (i + k) * KEY_LEN;
			lens[k] = KEY_LEN;
		}
		if (hr_ring_lookup_batch(ring, ptrs, lens, HRB_BATCH_KEYS, out, NULL))
			return -1;
		for (size_t k = 0; k < HRB_BATCH_KEYS; k++) {
			hr_lookup l;

			if (hr_ring_lookup(ring, ptrs[k], KEY_LEN, &l, NULL) ||
			    l.node != hr_ring_node(ring, out[k].node) ||
			    l.read_node != hr_ring_node(ring, out[k].read_node))
				return -1;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- two reader threads under republication ----------------------------- */

struct threads_ctx {
	hr_client *client;
	hr__publisher *pub;
	hr_ring *rings[2];		/* republished in turn */
	const struct keypool *kp;
	int stop_readers;
	int stop_writer;
	uint64_t swaps;
};

struct reader {
	struct threads_ctx *t;
	size_t start;
	uint64_t ops;
};

static void *reader_main(void *p)
{
	struct reader *rd = p;
	const struct keypool *kp = rd->t->kp;
	size_t at = rd->start;
	uint64_t ops = 0, sink = 0;
	hr_owner out;

	while (!__atomic_load_n(&rd->t->stop_readers, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 1024; i++) {
			hr_client_lookup(rd->t->client, kp->keys + at * KEY_LEN,
					 KEY_LEN, &out, NULL);
			sink += (unsigned char)out.node[6];
			at = (at + 1) & kp->mask;
		}
		ops += 1024;
	}
	rd->ops = ops + (sink & 1);
	return NULL;
}

static void *writer_main(void *p)
{
	struct threads_ctx *t = p;
	int64_t next = hrb_now_ns();

	while (!__atomic_load_n(&t->stop_writer, __ATOMIC_RELAXED)) {
		hr_ring *ring = t->rings[t->swaps & 1];

		/* The publisher takes one reference and later drops the one
		 * of the ring it replaces: ours stay. */
		hr__publish_swap(t->pub, hr_ring_retain(ring));
		t->swaps++;
		next += REPUBLISH_PERIOD_NS;
		hrb_sleep_ns(next - hrb_now_ns());
	}
	return NULL;
}

/* Lookups per second of `n` reader threads over one window. */
static double readers_rate(struct threads_ctx *t, int n)
{
	pthread_t th[2];
	struct reader rd[2];
	int64_t t0, t1;
	uint64_t ops = 0;

	__atomic_store_n(&t->stop_readers, 0, __ATOMIC_RELAXED);
	t0 = hrb_now_ns();
	for (int i = 0; i < n; i++) {
		rd[i] = (struct reader){ t, (size_t)i * (t->kp->mask / 2), 0 };
		pthread_create(&th[i], NULL, reader_main, &rd[i]);
	}
	hrb_sleep_ns(THREAD_WINDOW_NS);
	__atomic_store_n(&t->stop_readers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		ops += rd[i].ops;
	}
	t1 = hrb_now_ns();
	return (double)ops / ((double)(t1 - t0) / 1e9);
}

static double two_threads(hr_client *c, hr_ring *a, hr_ring *b,
			  const struct keypool *kp, double *republish_per_s)
{
	struct threads_ctx t = { c, hr__client_publisher(c), { a, b }, kp, 0, 0, 0 };
	double one[THREAD_ROUNDS], two[THREAD_ROUNDS];
	pthread_t w;
	int64_t t0 = hrb_now_ns();

	pthread_create(&w, NULL, writer_main, &t);
	for (int i = 0; i < THREAD_ROUNDS; i++) {
		one[i] = readers_rate(&t, 1);
		two[i] = readers_rate(&t, 2);
	}
	__atomic_store_n(&t.stop_writer, 1, __ATOMIC_RELAXED);
	pthread_join(w, NULL);
	*republish_per_s = (double)t.swaps / ((double)(hrb_now_ns() - t0) / 1e9);
	return median(two, THREAD_ROUNDS) / median(one, THREAD_ROUNDS);
}

/* ---- rings ---------------------------------------------------------------- */

/* The nodes of a ring, and the placement and vnodes they are placed with:
 * with HR_PLACEMENT_TOKENS, `vnodes` random tokens each. */
struct nodes {
	hr_node *v;
	char (*ids)[32];
	char (*addrs)[32];
	hr_placement placement;
	int vnodes;
	uint64_t *tokens;
};

static int nodes_make(struct nodes *ns, int n, hr_placement placement, int vnodes)
{
	uint64_t x = 0x2545f4914f6cdd1du;

	memset(ns, 0, sizeof *ns);
	ns->placement = placement;
	ns->vnodes = vnodes;
	ns->v = calloc((size_t)n, sizeof *ns->v);
	ns->ids = calloc((size_t)n, sizeof *ns->ids);
	ns->addrs = calloc((size_t)n, sizeof *ns->addrs);
	if (!ns->v || !ns->ids || !ns->addrs)
		return -1;
	for (int i = 0; i < n; i++) {
		snprintf(ns->ids[i], sizeof ns->ids[i], "cache-%04d", i);
		snprintf(ns->addrs[i], sizeof ns->addrs[i], "127.%d.%d.%d:11211",
			 i >> 16, (i >> 8) & 255, i & 255);
		ns->v[i] = (hr_node){ .id = ns->ids[i], .addr = ns->addrs[i], .weight = 1 };
	}
	if (placement != HR_PLACEMENT_TOKENS)
		return 0;
	ns->tokens = malloc((size_t)n * (size_t)vnodes * sizeof *ns->tokens);
	if (!ns->tokens)
		return -1;
	/* xorshift64: distinct tokens, spread like hashed points */
	for (size_t k = 0; k < (size_t)n * (size_t)vnodes; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ns->tokens[k] = x;
	}
	for (int i = 0; i < n; i++) {
		ns->v[i].tokens = ns->tokens + (size_t)i * (size_t)vnodes;
		ns->v[i].ntokens = (size_t)vnodes;
	}
	return 0;
}

static void nodes_free(struct nodes *ns)
{
	free(ns->v);
	free(ns->ids);
	free(ns->addrs);
	free(ns->tokens);
}

/* The ring of the first `n` nodes of `ns`, at `revision`; 0 or -1. */
static int ring_make(const struct nodes *ns, int n, uint64_t revision, hr_ring **out)
{
	hr_ring_options opts;

	hr_ring_options_init(&opts);
	opts.vnodes_per_weight = (unsigned)ns->vnodes;
	opts.placement = ns->placement;
	return hr_ring_build(ns->v, (size_t)n, &opts, revision, out, NULL) ? -1 : 0;
}

/* How many times an XXH3 ring's lookup one of `placement` costs, about:
 * its rounds run that many times fewer lookups. */
static size_t lookup_cost(hr_placement placement, int nodes)
{
	if (placement == HR_PLACEMENT_KETAMA)
		return 8;		/* MD5 of the key */
	if (placement == HR_PLACEMENT_RENDEZVOUS)
		return nodes > 2 ? (size_t)nodes : 2;	/* a score per node */
	return 1;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Median build time in ms; *bytes gets the heap one ring holds, malloc's
 * own overhead included. */
static double build_time(const struct nodes *ns, int n, int reps, size_t *bytes)
{
	double t[9];

	for (int i = 0; i < reps; i++) {
		size_t before = heap_in_use();
		hr_ring *ring = NULL;
		int64_t t0 = cpu_now_ns();

		if (ring_make(ns, n, 1, &ring))
			return -1;
		t[i] = (double)(cpu_now_ns() - t0) / 1e6;
		if (bytes)
			*bytes = heap_in_use() - before;
		hr_ring_release(ring);
	}
	return median(t, (size_t)reps);
}

/* The ring and the textbook search must agree on every key. */
static int check_agree(const hr_ring *ring, const struct bs_ring *bs,
		       const struct keypool *kp)
{
	for (size_t i = 0; i < CHECK_KEYS; i++) {
		const unsigned char *key = kp->keys + i * KEY_LEN;
		hr_lookup l;

		if (hr_ring_lookup(ring, key, KEY_LEN, &l, NULL) ||
		    l.node != hr_ring_node(ring, bs_lookup(bs, key, KEY_LEN)))
			return -1;
	}
	return 0;
}

static void quiet_log(void *ud, hr_log_level level, const char *line)
{
}

static hr_client *open_client(hrb_report *r)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_etcd_config_init(&etcd);
	hr_client_config_init(&cfg);
	/* Nothing listens on port 1: the watcher retries in the background
	 * and never publishes; the benchmark publishes instead. */
	etcd.endpoints = "127.0.0.1:1";
	etcd.prefix = "/bench/lookup/";
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 5000;
	if (getenv("HRB_SAMPLE"))
		cfg.hot_key_sample = (unsigned)atoi(getenv("HRB_SAMPLE"));
	etcd.log = quiet_log;
	if (hr_client_open(&etcd, &cfg, &c, &err)) {
		fprintf(stderr, "bench: hr_client_open: %s\n", err.message);
		return NULL;
	}
	return c;
}

/* Lookup counting on or off for this thread's next lookups on `c`: its
 * cached ring is dropped, so the next lookup takes the slow path, which
 * reads the setting (and finds this thread's counts again). */
static void counting(hr_client *c, bool on)
{
	hr__client_count_lookups(c, on);
	hr__thread_cache_forget(hr__client_publisher(c));
}

static double best(const double *v, size_t n)
{
	double b = v[0];

	for (size_t i = 1; i < n; i++)
		b = v[i] < b ? v[i] : b;
	return b;
}

/* hr_client_lookup() with counting on and off, next to each other in each
 * of many short rounds, in alternating order, so that a neighbour's load
 * falls on both alike: the figure docs/performance.md gives for counting. */
static void measure_counting(hrb_lookup_config *cf, hr_client *c,
			     const struct keypool *kp, size_t ops, uint64_t *sink)
{
	double on[HRB_COUNT_ROUNDS], off[HRB_COUNT_ROUNDS], d[HRB_COUNT_ROUNDS];

	for (int i = 0; i < HRB_COUNT_ROUNDS; i++) {
		for (int k = 0; k < 2; k++) {
			bool counted = (k == 0) == (i % 2 == 0);

			counting(c, counted);
			*(counted ? &on[i] : &off[i]) =
				thru_api(c, kp, ops / 2, sink);
		}
		d[i] = on[i] - off[i];
	}
	counting(c, true);
	cf->count_on_best_ns = best(on, HRB_COUNT_ROUNDS);
	cf->count_off_best_ns = best(off, HRB_COUNT_ROUNDS);
	cf->count_on_med_ns = median(on, HRB_COUNT_ROUNDS);
	cf->count_off_med_ns = median(off, HRB_COUNT_ROUNDS);
	cf->count_cost_med_ns = median(d, HRB_COUNT_ROUNDS);
}

static int measure_config(hrb_lookup_config *cf, hr_placement placement, hr_client *c,
			  const struct keypool *kp, hrb_report *r)
{
	size_t ops = OPS_PER_ROUND / lookup_cost(placement, cf->nodes);
	bool xxh3 = placement == HR_PLACEMENT_XXH3;
	double api[ROUNDS], ring[ROUNDS], mc[ROUNDS], bs[ROUNDS], pref[ROUNDS];
	double apid[ROUNDS], ringd[ROUNDS], mcd[ROUNDS], bsd[ROUNDS];
	double bapi[ROUNDS], bring[ROUNDS], bdist[HRB_BATCH_DISTANCES][ROUNDS];
	double apiu[ROUNDS], bapiu[ROUNDS];
	struct batch_ctx batch_api, batch_ring;
	memcached_st *mcs = NULL;
	struct bs_ring bsr = { 0 };
	struct nodes ns;
	hr_ring *a = NULL, *b = NULL;
	size_t bytes = 0;
	uint64_t sink = 0;
	int rc = -1;

	if (nodes_make(&ns, cf->nodes, placement, cf->vnodes))
		goto out;
	cf->build_ms = build_time(&ns, cf->nodes, cf->nodes > 100 ? 5 : 9, &bytes);
	if (ring_make(&ns, cf->nodes, 1, &a) || ring_make(&ns, cf->nodes, 2, &b))
		goto out;
	cf->points = hr_ring_point_count(a);
	cf->bytes_per_point = (double)bytes / (double)cf->points;
	/* The textbook search knows XXH3's points only. */
	if (xxh3 && bs_build(&bsr, a))
		goto out;
	if (xxh3 && check_agree(a, &bsr, kp)) {
		fprintf(stderr, "bench: ring and binary search disagree\n");
		goto out;
	}
	if (check_batch_agree(a, kp)) {
		fprintf(stderr, "bench: batch and single lookups disagree\n");
		goto out;
	}
	batch_api = (struct batch_ctx){ c, NULL, -1 };
	batch_ring = (struct batch_ctx){ NULL, a, -1 };
	if (xxh3 && cf->nodes <= MC_SERVERS_MAX)
		mcs = mc_create(cf->nodes, NULL);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(a));

	for (int i = 0; i < ROUNDS; i++) {
		/* Counted and uncounted in turn first: neither gains from
		 * its place in the round. */
		if (i & 1) {
			counting(c, false);
			apiu[i] = thru_api(c, kp, ops, &sink);
			counting(c, true);
		}
		api[i] = thru_api(c, kp, ops, &sink);
		if (!(i & 1)) {
			counting(c, false);
			apiu[i] = thru_api(c, kp, ops, &sink);
			counting(c, true);
		}
		ring[i] = thru_ring(a, kp, ops, &sink);
		if (i & 1) {
			counting(c, false);
			bapiu[i] = thru_batch(&batch_api, kp, ops, &sink);
			counting(c, true);
		}
		bapi[i] = thru_batch(&batch_api, kp, ops, &sink);
		if (!(i & 1)) {
			counting(c, false);
			bapiu[i] = thru_batch(&batch_api, kp, ops, &sink);
			counting(c, true);
		}
		bring[i] = thru_batch(&batch_ring, kp, ops, &sink);
		for (int d = 0; d < HRB_BATCH_DISTANCES; d++) {
			struct batch_ctx at = { NULL, a, (int)hrb_batch_distances[d] };

			bdist[d][i] = thru_batch(&at, kp, ops / 2, &sink);
		}
		bs[i] = xxh3 ? thru_bs(&bsr, kp, ops, &sink) : -1;
		pref[i] = thru_pref(a, kp, ops, &sink);
		apid[i] = dep_api(c, kp, ops, &sink);
		ringd[i] = dep_ring(a, kp, ops, &sink);
		bsd[i] = xxh3 ? dep_bs(&bsr, kp, ops, &sink) : -1;
		if (mcs) {
			mc[i] = thru_mc(mcs, kp, ops / 4, &sink);
			mcd[i] = dep_mc(mcs, kp, ops / 4, &sink);
		}
	}
	cf->api_ns = median(api, ROUNDS);
	cf->ring_ns = median(ring, ROUNDS);
	cf->batch_api_ns = median(bapi, ROUNDS);
	cf->batch_ring_ns = median(bring, ROUNDS);
	cf->api_uncounted_ns = median(apiu, ROUNDS);
	cf->batch_api_uncounted_ns = median(bapiu, ROUNDS);
	for (int d = 0; d < HRB_BATCH_DISTANCES; d++)
		cf->batch_dist_ns[d] = median(bdist[d], ROUNDS);
	cf->bsearch_ns = xxh3 ? median(bs, ROUNDS) : -1;
	cf->preflist3_ns = median(pref, ROUNDS);
	cf->api_dep_ns = median(apid, ROUNDS);
	cf->ring_dep_ns = median(ringd, ROUNDS);
	cf->bsearch_dep_ns = xxh3 ? median(bsd, ROUNDS) : -1;
	cf->libmemcached_ns = mcs ? median(mc, ROUNDS) : -1;
	cf->libmemcached_dep_ns = mcs ? median(mcd, ROUNDS) : -1;
	measure_counting(cf, c, kp, ops, &sink);
	cf->two_thread_speedup = two_threads(c, a, b, kp, &cf->republish_per_s);
	if (sink == 42)
		fprintf(stderr, " ");	/* keeps the answers alive */
	rc = 0;
out:
	if (mcs)
		memcached_free(mcs);
	bs_free(&bsr);
	hr_ring_release(a);
	hr_ring_release(b);
	nodes_free(&ns);
	return rc;
}

/* ---- the API against the raw ring, by placement --------------------------- */

static const hr_placement cmp_placements[HRB_CMP_PLACEMENTS] = {
	HR_PLACEMENT_XXH3, HR_PLACEMENT_TOKENS, HR_PLACEMENT_MAGLEV
};
static const int cmp_sizes[HRB_CMP_SIZES][2] = { { 100, 200 }, { 1000, 200 },
						 { 10000, 200 } };

/* What one comparison config measures on: its ring, and with XXH3 the
 * textbook search (n 0 otherwise) and libmemcached (NULL otherwise). */
struct cmp_ring {
	struct nodes ns;
	hr_ring *ring;
	struct bs_ring bs;
	memcached_st *mc;
};

static void cmp_ring_free(struct cmp_ring *cr)
{
	if (cr->mc)
		memcached_free(cr->mc);
	bs_free(&cr->bs);
	hr_ring_release(cr->ring);
	nodes_free(&cr->ns);
}

static int cmp_ring_make(struct cmp_ring *cr, hrb_cmp_config *cf, const struct keypool *kp)
{
	bool xxh3 = cf->placement == HR_PLACEMENT_XXH3;

	memset(cr, 0, sizeof *cr);
	if (nodes_make(&cr->ns, cf->nodes, cf->placement, cf->vnodes) ||
	    ring_make(&cr->ns, cf->nodes, 1, &cr->ring))
		return -1;
	cf->points = hr_ring_point_count(cr->ring);
	if (xxh3 && (bs_build(&cr->bs, cr->ring) || check_agree(cr->ring, &cr->bs, kp))) {
		fprintf(stderr, "bench: ring and binary search disagree\n");
		return -1;
	}
	if (xxh3 && cf->nodes <= MC_SERVERS_MAX && !(cr->mc = mc_create(cf->nodes, NULL)))
		return -1;
	return 0;
}

/* Run `run` of one config: HRB_CMP_ROUNDS rounds, the methods taking
 * turns in an order that moves on by one each round, so that none always
 * follows the same one (whose tables it would find in the cache). */
static void cmp_run(hrb_cmp_config *cf, const struct cmp_ring *cr, hr_client *c,
		    const struct keypool *kp, int run, uint64_t *sink)
{
	double api[HRB_CMP_ROUNDS], ring[HRB_CMP_ROUNDS], ring_id[HRB_CMP_ROUNDS];
	double bs[HRB_CMP_ROUNDS], mc[HRB_CMP_ROUNDS];

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(cr->ring));
	for (int i = 0; i < HRB_CMP_ROUNDS; i++) {
		for (int k = 0; k < 5; k++) {
			switch ((i + k) % 5) {
			case 0:
				api[i] = thru_api(c, kp, OPS_PER_ROUND, sink);
				break;
			case 1:
				ring[i] = thru_ring(cr->ring, kp, OPS_PER_ROUND, sink);
				break;
			case 2:
				ring_id[i] = thru_ring_id(cr->ring, kp, OPS_PER_ROUND, sink);
				break;
			case 3:
				bs[i] = cr->bs.n ? thru_bs(&cr->bs, kp, OPS_PER_ROUND, sink) : -1;
				break;
			default:
				mc[i] = cr->mc ? thru_mc(cr->mc, kp, OPS_PER_ROUND / 4, sink) : -1;
				break;
			}
		}
	}
	cf->api_ns[run] = median(api, HRB_CMP_ROUNDS);
	cf->ring_ns[run] = median(ring, HRB_CMP_ROUNDS);
	cf->ring_id_ns[run] = median(ring_id, HRB_CMP_ROUNDS);
	cf->bsearch_ns[run] = cr->bs.n ? median(bs, HRB_CMP_ROUNDS) : -1;
	cf->libmemcached_ns[run] = cr->mc ? median(mc, HRB_CMP_ROUNDS) : -1;
}

/* `runs` runs over every config, each run going through all of them in
 * turn: a noisy minute on the machine spoils one run of each, not every
 * run of one.  The rings are all built first and held throughout. */
static int measure_cmp(hrb_lookup_report *lr, hr_client *c, const struct keypool *kp,
		       int runs)
{
	static struct cmp_ring cr[HRB_CMP_CONFIGS];
	uint64_t sink = 0;
	int rc = -1, built = 0;

	lr->runs = runs;
	lr->n_cmp = HRB_CMP_CONFIGS;
	for (int p = 0; p < HRB_CMP_PLACEMENTS; p++) {
		for (int z = 0; z < HRB_CMP_SIZES; z++) {
			hrb_cmp_config *cf = &lr->cmp[p * HRB_CMP_SIZES + z];

			cf->placement = cmp_placements[p];
			cf->nodes = cmp_sizes[z][0];
			cf->vnodes = cmp_sizes[z][1];
			if (cmp_ring_make(&cr[built++], cf, kp))
				goto out;
		}
	}
	for (int run = 0; run < runs; run++)
		for (int i = 0; i < HRB_CMP_CONFIGS; i++)
			cmp_run(&lr->cmp[i], &cr[i], c, kp, run, &sink);
	if (sink == 42)
		fprintf(stderr, " ");	/* keeps the answers alive */
	rc = 0;
out:
	for (int i = 0; i < built; i++)
		cmp_ring_free(&cr[i]);
	return rc;
}

/* The sizes measured: HRB_LOOKUP_SIZES in the environment ("NODESxVNODES"
 * comma-separated, at most HRB_LOOKUP_CONFIGS_MAX: "10000x200,1000x200")
 * measures others than the defaults.  Returns how many. */
static size_t lookup_sizes(int out[][2], const int defaults[][2], size_t ndefaults)
{
	const char *s = getenv("HRB_LOOKUP_SIZES");
	size_t n = 0;

	while (s && *s && n < HRB_LOOKUP_CONFIGS_MAX) {
		char *end;
		long nodes = strtol(s, &end, 10), vnodes;

		if (end == s || *end != 'x')
			break;
		s = end + 1;
		vnodes = strtol(s, &end, 10);
		if (end == s || nodes < 1 || nodes > HR_NODES_MAX || vnodes < 1 ||
		    vnodes > 1000)
			break;
		out[n][0] = (int)nodes;
		out[n++][1] = (int)vnodes;
		s = *end == ',' ? end + 1 : end;
	}
	if (n)
		return n;
	for (size_t i = 0; i < ndefaults; i++) {
		out[i][0] = defaults[i][0];
		out[i][1] = defaults[i][1];
	}
	return ndefaults;
}

int hrb_measure_lookup(hrb_lookup_report *lr, hr_placement placement, int runs,
		       hrb_report *r)
{
	static const int defaults[][2] = { { 10, 200 }, { 100, 200 }, { 1000, 200 },
					   { 1000, 256 }, { 10000, 200 } };
	int sizes[HRB_LOOKUP_CONFIGS_MAX][2];
	size_t nsizes = lookup_sizes(sizes, defaults,
				     sizeof defaults / sizeof defaults[0]);
	struct keypool kp = { malloc((size_t)POOL_KEYS * KEY_LEN), POOL_KEYS - 1 };
	uint64_t x = 0x9e3779b97f4a7c15u;
	hr_client *c;
	memcached_st *mc;
	double t[9];
	int sig;

	memset(lr, 0, sizeof *lr);
	lr->placement = placement;
	if (!kp.keys)
		return -1;
	/* splitmix64: cheap, and every byte of every key is random */
	for (size_t i = 0; i < (size_t)POOL_KEYS * KEY_LEN / 8; i++) {
		uint64_t z = (x += 0x9e3779b97f4a7c15u);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
		z ^= z >> 31;
		memcpy(kp.keys + i * 8, &z, 8);
	}
	c = open_client(r);
	if (!c) {
		free(kp.keys);
		return -1;
	}
	for (size_t i = 0; i < nsizes; i++) {
		hrb_lookup_config *cf = &lr->cfg[lr->n];

		cf->nodes = sizes[i][0];
		cf->vnodes = sizes[i][1];
		if (measure_config(cf, placement, c, &kp, r)) {
			hr_client_close(c);
			free(kp.keys);
			return -1;
		}
		lr->n++;
	}
	if (measure_cmp(lr, c, &kp, runs)) {
		hr_client_close(c);
		free(kp.keys);
		return -1;
	}
	hr_client_close(c);
	free(kp.keys);

	for (int i = 0; i < 9; i++) {
		mc = mc_create(100, &t[i]);
		if (!mc)
			return -1;
		memcached_free(mc);
	}
	lr->libmemcached_build_ms_100 = median(t, 9);
	sig = mc_try(1000);
	if (sig)
		hrb_note(r, "libmemcached ketama cannot run with 1000 servers (%s %d in a "
			 "child process): its figures at 1000 nodes are null",
			 sig < 1000 ? "killed by signal" : "exit code",
			 sig < 1000 ? sig : sig - 1000);
	else
		hrb_note(r, "libmemcached ketama ran with 1000 servers in a child process, "
			 "but is only measured up to %d", MC_SERVERS_MAX);
	hrb_note(r, "libmemcached figures include its MD5 key hash (what "
		 "MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED selects); ours include XXH3");
	hrb_note(r, "preflist3_ns is hr_ring_preflist(R=3) on the raw ring; compare "
		 "with ring_ns");
	return 0;
}

/* ---- printing ----------------------------------------------------------- */

const char *hrb_placement_names[HRB_PLACEMENTS] = {
	[HR_PLACEMENT_XXH3] = "xxh3",
	[HR_PLACEMENT_KETAMA] = "ketama",
	[HR_PLACEMENT_MAGLEV] = "maglev",
	[HR_PLACEMENT_RENDEZVOUS] = "rendezvous",
	[HR_PLACEMENT_TOKENS] = "tokens",
};

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : -1;
}

static void print_ns(double v)
{
	if (v < 0)
		printf(" %8s", "-");
	else
		printf(" %8.1f", v);
}

/* ---- the comparison: per run figures, median and range -------------------- */

/* A figure over the runs: its median, lowest and highest; `ok` 0 when a
 * run did not measure it (negative, unless the figure is a difference,
 * which may be). */
struct spread {
	double med, lo, hi;
	int ok;
};

static struct spread spread_of(const double *v, int n, int signed_figure)
{
	double tmp[HRB_RUNS_MAX];
	struct spread s = { -1, -1, -1, 0 };

	for (int i = 0; i < n; i++)
		if (v[i] < 0 && !signed_figure)
			return s;
	s.ok = 1;
	memcpy(tmp, v, (size_t)n * sizeof *tmp);
	s.med = median(tmp, (size_t)n);
	s.lo = tmp[0];		/* median() sorted them */
	s.hi = tmp[n - 1];
	return s;
}

/* The derived figures, each run's own: api - ring (ns), bs/ring, bs/api,
 * ketama/api (x). */
enum { CMP_DIFF, CMP_BS_RING, CMP_BS_API, CMP_MC_API, CMP_DERIVED };

static void cmp_derived(const hrb_cmp_config *c, int runs, double out[CMP_DERIVED][HRB_RUNS_MAX])
{
	for (int i = 0; i < runs; i++) {
		out[CMP_DIFF][i] = c->api_ns[i] > 0 && c->ring_ns[i] > 0 ?
				   c->api_ns[i] - c->ring_ns[i] : -1;
		out[CMP_BS_RING][i] = ratio(c->bsearch_ns[i], c->ring_ns[i]);
		out[CMP_BS_API][i] = ratio(c->bsearch_ns[i], c->api_ns[i]);
		out[CMP_MC_API][i] = ratio(c->libmemcached_ns[i], c->api_ns[i]);
	}
}

/* "med [lo-hi]" (one run: the figure alone), or "-". */
static void print_spread(struct spread s, int runs, const char *unit)
{
	char buf[48];

	if (!s.ok)
		snprintf(buf, sizeof buf, "-");
	else if (runs == 1)
		snprintf(buf, sizeof buf, "%.1f%s", s.med, unit);
	else
		snprintf(buf, sizeof buf, "%.1f%s [%.1f-%.1f]", s.med, unit, s.lo, s.hi);
	printf(" %-19s", buf);
}

static void cmp_print_text(const hrb_lookup_report *lr)
{
	printf("API against the raw ring, 16-byte random keys (ns of thread CPU time per "
	       "lookup; a run's figure is the median of %d rounds; median [range] of %d "
	       "run%s)\n", HRB_CMP_ROUNDS, lr->runs, lr->runs == 1 ? "" : "s");
	printf("  %-7s %-11s %-19s %-19s %-19s %-19s %-19s %-19s %-19s %-19s\n", "place",
	       "nodes x vn", " api", " ring", " api-ring ns", " ring+id", " bsearch",
	       " bs/ring", " bs/api", " ketama");
	for (int i = 0; i < lr->n_cmp; i++) {
		const hrb_cmp_config *c = &lr->cmp[i];
		double d[CMP_DERIVED][HRB_RUNS_MAX];
		char label[24];

		cmp_derived(c, lr->runs, d);
		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-7s %-11s", c->placement == HR_PLACEMENT_TOKENS ? "tokens" :
		       hrb_placement_names[c->placement], label);
		print_spread(spread_of(c->api_ns, lr->runs, 0), lr->runs, "");
		print_spread(spread_of(c->ring_ns, lr->runs, 0), lr->runs, "");
		print_spread(spread_of(d[CMP_DIFF], lr->runs, 1), lr->runs, "");
		print_spread(spread_of(c->ring_id_ns, lr->runs, 0), lr->runs, "");
		print_spread(spread_of(c->bsearch_ns, lr->runs, 0), lr->runs, "");
		print_spread(spread_of(d[CMP_BS_RING], lr->runs, 0), lr->runs, "x");
		print_spread(spread_of(d[CMP_BS_API], lr->runs, 0), lr->runs, "x");
		print_spread(spread_of(c->libmemcached_ns, lr->runs, 0), lr->runs, "");
		printf("\n");
	}
	printf("  (vnodes: the xxh3 placement; bsearch and ketama with it only, ketama "
	       "up to %d servers; Maglev's table is its maglev_size)\n", MC_SERVERS_MAX);
}

void hrb_lookup_print_text(const hrb_lookup_report *lr)
{
	if (lr->runs)
		cmp_print_text(lr);
	printf("Lookups, 16-byte random keys, %s placement (ns of thread CPU time per "
	       "lookup; median of %d rounds)\n", hrb_placement_names[lr->placement], ROUNDS);
	printf("  %-11s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "nodes x vn",
	       "api", "ring", "ketama", "bsearch", "pref R=3", "api dep",
	       "ring dep", "ket dep", "bs dep");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s", label);
		print_ns(c->api_ns);
		print_ns(c->ring_ns);
		print_ns(c->libmemcached_ns);
		print_ns(c->bsearch_ns);
		print_ns(c->preflist3_ns);
		print_ns(c->api_dep_ns);
		print_ns(c->ring_dep_ns);
		print_ns(c->libmemcached_dep_ns);
		print_ns(c->bsearch_dep_ns);
		printf("\n");
	}
	printf("Ratios (higher is better for us; same run)\n");
	printf("  %-11s %10s %10s %10s %10s %10s %10s\n", "nodes x vn",
	       "ketama/api", "bs/api", "bs/ring", "pref/ring", "2thr/1thr",
	       "dep bs/api");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];
		double v[6] = { ratio(c->libmemcached_ns, c->api_ns),
				ratio(c->bsearch_ns, c->api_ns),
				ratio(c->bsearch_ns, c->ring_ns),
				ratio(c->preflist3_ns, c->ring_ns),
				c->two_thread_speedup,
				ratio(c->bsearch_dep_ns, c->api_dep_ns) };

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s", label);
		for (int k = 0; k < 6; k++) {
			if (v[k] < 0)
				printf(" %10s", "-");
			else
				printf(" %9.2fx", v[k]);
		}
		printf("\n");
	}
	printf("Batch lookups, %d keys per call (ns per key, same rounds; x: single "
	       "over batch, higher is better)\n", HRB_BATCH_KEYS);
	printf("  %-11s %8s %8s %8s %8s %8s %8s\n", "nodes x vn", "api", "api batch",
	       "x", "ring", "rng batch", "x");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s", label);
		print_ns(c->api_ns);
		print_ns(c->batch_api_ns);
		printf(" %7.2fx", ratio(c->api_ns, c->batch_api_ns));
		print_ns(c->ring_ns);
		print_ns(c->batch_ring_ns);
		printf(" %7.2fx\n", ratio(c->ring_ns, c->batch_ring_ns));
	}
	printf("Lookup counting (ns per lookup or key, same rounds; +: the cost of "
	       "counting)\n");
	printf("  %-11s %8s %8s %8s %9s %9s %8s\n", "nodes x vn", "api", "uncounted",
	       "+", "api batch", "uncounted", "+");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s", label);
		print_ns(c->api_ns);
		print_ns(c->api_uncounted_ns);
		printf(" %+8.2f", c->api_ns - c->api_uncounted_ns);
		printf(" %9.1f %9.1f", c->batch_api_ns, c->batch_api_uncounted_ns);
		printf(" %+8.2f\n", c->batch_api_ns - c->batch_api_uncounted_ns);
	}
	printf("Lookup counting, %d rounds of its own (hr_client_lookup ns: best, median; "
	       "cost: median of the rounds' differences)\n", HRB_COUNT_ROUNDS);
	printf("  %-11s %8s %8s %8s %8s %8s %8s\n", "nodes x vn", "on best", "off best",
	       "+best", "on med", "off med", "+med");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s %8.2f %8.2f %+8.2f %8.2f %8.2f %+8.2f\n", label,
		       c->count_on_best_ns, c->count_off_best_ns,
		       c->count_on_best_ns - c->count_off_best_ns, c->count_on_med_ns,
		       c->count_off_med_ns, c->count_cost_med_ns);
	}
	printf("Raw batch by pipeline distance (ns per key)\n  %-11s", "nodes x vn");
	for (int d = 0; d < HRB_BATCH_DISTANCES; d++)
		printf(" %6u", hrb_batch_distances[d]);
	printf("\n");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];
		char label[24];

		snprintf(label, sizeof label, "%d x %d", c->nodes, c->vnodes);
		printf("  %-11s", label);
		for (int d = 0; d < HRB_BATCH_DISTANCES; d++)
			printf(" %6.1f", c->batch_dist_ns[d]);
		printf("\n");
	}
	printf("Build (thread CPU time) and memory\n");
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];

		printf("  %5d x %-4d %8zu points  build %7.3f ms  %5.2f bytes/point"
		       "  (republished %.0f/s during the thread test)\n",
		       c->nodes, c->vnodes, c->points, c->build_ms, c->bytes_per_point,
		       c->republish_per_s);
	}
	printf("  libmemcached continuum, 100 servers: %.3f ms\n",
	       lr->libmemcached_build_ms_100);
}

static void json_num(const char *name, double v, int last)
{
	if (v < 0)
		printf("\"%s\":null", name);
	else
		printf("\"%s\":%.3f", name, v);
	if (!last)
		putchar(',');
}


static void json_spread(const char *name, const double *v, int runs, int signed_figure)
{
	struct spread s = spread_of(v, runs, signed_figure);

	if (!s.ok) {
		printf("\"%s\":null,", name);
		return;
	}
	printf("\"%s\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f,\"runs\":[", name, s.med,
	       s.lo, s.hi);
	for (int i = 0; i < runs; i++)
		printf("%s%.3f", i ? "," : "", v[i]);
	printf("]},");
}

/* "api_vs_ring": every run's figures and their median and range. */
static void cmp_print_json(const hrb_lookup_report *lr)
{
	printf(",\"api_vs_ring\":");
	if (!lr->runs) {
		printf("null");
		return;
	}
	printf("{\"runs\":%d,\"rounds\":%d,\"configs\":[", lr->runs, HRB_CMP_ROUNDS);
	for (int i = 0; i < lr->n_cmp; i++) {
		const hrb_cmp_config *c = &lr->cmp[i];
		double d[CMP_DERIVED][HRB_RUNS_MAX];

		cmp_derived(c, lr->runs, d);
		printf("%s{\"placement\":\"%s\",\"nodes\":%d,\"vnodes\":%d,\"points\":%zu,",
		       i ? "," : "", hrb_placement_names[c->placement], c->nodes, c->vnodes,
		       c->points);
		json_spread("api_ns", c->api_ns, lr->runs, 0);
		json_spread("ring_ns", c->ring_ns, lr->runs, 0);
		json_spread("api_minus_ring_ns", d[CMP_DIFF], lr->runs, 1);
		json_spread("ring_id_ns", c->ring_id_ns, lr->runs, 0);
		json_spread("bsearch_ns", c->bsearch_ns, lr->runs, 0);
		json_spread("libmemcached_ns", c->libmemcached_ns, lr->runs, 0);
		json_spread("bs_over_ring", d[CMP_BS_RING], lr->runs, 0);
		json_spread("bs_over_api", d[CMP_BS_API], lr->runs, 0);
		json_spread("libmemcached_over_api", d[CMP_MC_API], lr->runs, 0);
		printf("\"rounds\":%d}", HRB_CMP_ROUNDS);
	}
	printf("]}");
}

void hrb_lookup_print_json(const hrb_lookup_report *lr)
{
	printf("\"placement\":\"%s\",\"configs\":[", hrb_placement_names[lr->placement]);
	for (int i = 0; i < lr->n; i++) {
		const hrb_lookup_config *c = &lr->cfg[i];

		printf("%s{\"nodes\":%d,\"vnodes\":%d,\"points\":%zu,", i ? "," : "",
		       c->nodes, c->vnodes, c->points);
		json_num("api_ns", c->api_ns, 0);
		json_num("ring_ns", c->ring_ns, 0);
		json_num("libmemcached_ns", c->libmemcached_ns, 0);
		json_num("bsearch_ns", c->bsearch_ns, 0);
		json_num("preflist3_ns", c->preflist3_ns, 0);
		json_num("two_thread_speedup", c->two_thread_speedup, 0);
		json_num("build_ms", c->build_ms, 0);
		json_num("bytes_per_point", c->bytes_per_point, 0);
		json_num("api_dep_ns", c->api_dep_ns, 0);
		json_num("ring_dep_ns", c->ring_dep_ns, 0);
		json_num("libmemcached_dep_ns", c->libmemcached_dep_ns, 0);
		json_num("bsearch_dep_ns", c->bsearch_dep_ns, 0);
		json_num("republish_per_s", c->republish_per_s, 0);
		json_num("batch_api_ns", c->batch_api_ns, 0);
		json_num("batch_ring_ns", c->batch_ring_ns, 0);
		json_num("api_uncounted_ns", c->api_uncounted_ns, 0);
		json_num("batch_api_uncounted_ns", c->batch_api_uncounted_ns, 0);
		json_num("count_on_best_ns", c->count_on_best_ns, 0);
		json_num("count_off_best_ns", c->count_off_best_ns, 0);
		json_num("count_on_med_ns", c->count_on_med_ns, 0);
		json_num("count_off_med_ns", c->count_off_med_ns, 0);
		json_num("count_cost_med_ns", c->count_cost_med_ns, 0);
		json_num("batch_api_speedup", ratio(c->api_ns, c->batch_api_ns), 0);
		json_num("batch_ring_speedup", ratio(c->ring_ns, c->batch_ring_ns), 0);
		printf("\"batch_dist_ns\":[");
		for (int d = 0; d < HRB_BATCH_DISTANCES; d++)
			printf("%s%.3f", d ? "," : "", c->batch_dist_ns[d]);
		printf("]}");
	}
	printf("],\"batch_keys\":%d,\"batch_distances\":[", HRB_BATCH_KEYS);
	for (int d = 0; d < HRB_BATCH_DISTANCES; d++)
		printf("%s%u", d ? "," : "", hrb_batch_distances[d]);
	printf("],\"libmemcached_build_ms\":{\"100\":%.3f}",
	       lr->libmemcached_build_ms_100);
	cmp_print_json(lr);
}
