/* SPDX-License-Identifier: MIT */
/* test_hotkeys.c - hot keys: the Space-Saving sketch exact on few keys and
 * accurate on a Zipf stream against exact counts (top-10 recall, share
 * error, printed); a client's hot keys through its lookups, with their
 * owners; spreading a hot key's reads over its preference list while its
 * writes and every cold key's owners stay, on one thread and on several
 * beside a reader; the settings' and the call's bad input. */
#define _GNU_SOURCE
#include "client.h"
#include "publish.h"
#include "sketch.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "hrt_ring_fixture.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZIPF_KEYS 100000
#define ZIPF_S 1.0
#define TOP 10

/* Draws from Zipf(ZIPF_S) over ranks 0..ZIPF_KEYS-1 by inverting the
 * cumulative weights. */
typedef struct zipf {
	double *cdf;
	uint64_t seed;
} zipf;

static void zipf_init(zipf *z, uint64_t seed)
{
	double sum = 0;

	z->cdf = malloc(ZIPF_KEYS * sizeof *z->cdf);
	ck_assert_ptr_nonnull(z->cdf);
	for (size_t i = 0; i < ZIPF_KEYS; i++)
		z->cdf[i] = (sum += 1.0 / pow((double)(i + 1), ZIPF_S));
	for (size_t i = 0; i < ZIPF_KEYS; i++)
		z->cdf[i] /= sum;
	z->seed = seed;
}

static size_t zipf_next(zipf *z)
{
	double u = (double)(splitmix64(&z->seed) >> 11) / 9007199254740992.0;
	size_t lo = 0, hi = ZIPF_KEYS - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int key_of(size_t rank, char *buf, size_t cap)
{
	return snprintf(buf, cap, "user:%zu", rank);
}

/* The rank a reported key names (keys are "user:<rank>"). */
static size_t rank_of(const unsigned char *key, size_t len)
{
	char buf[32];

	ck_assert_uint_lt(len, sizeof buf);
	memcpy(buf, key, len);
	buf[len] = '\0';
	return strtoul(buf + 5, NULL, 10);
}

static int by_count_desc(const void *a, const void *b)
{
	const hr__sketch_entry *x = a, *y = b;

	return (x->count < y->count) - (x->count > y->count);
}

START_TEST(sketch_exact_below_capacity)
{
	static hr__sketch s;

	hr__sketch_clear(&s);
	for (unsigned i = 0; i < 50; i++)
		for (unsigned k = 0; k <= i; k++) {
			char key[16];
			int len = snprintf(key, sizeof key, "k%u", i);

			hr__sketch_add(&s, 1000 + i, key, (size_t)len);
		}
	ck_assert_uint_eq(s.n, 50);
	ck_assert_uint_eq(s.total, 50 * 51 / 2);
	for (size_t j = 0; j < s.n; j++) {
		ck_assert_uint_eq(s.e[j].count, s.e[j].id - 1000 + 1);
		ck_assert_uint_eq(s.e[j].err, 0);
	}
}
END_TEST

/* Space-Saving's guarantees on a stream that keeps the sketch full: each
 * monitored count is within [true, true + err], the counts sum to the
 * stream's length, and the smallest count bounds any key left out. */
START_TEST(sketch_bounds_on_zipf)
{
	static hr__sketch s;
	static uint64_t exact[ZIPF_KEYS];
	zipf z;
	const size_t draws = 1000000;
	hr__sketch_entry top[HR__SKETCH_CAP];
	uint64_t sum = 0, minc = UINT64_MAX;
	size_t found = 0;
	double worst = 0;

	zipf_init(&z, 7);
	hr__sketch_clear(&s);
	memset(exact, 0, sizeof exact);
	for (size_t i = 0; i < draws; i++) {
		char key[32];
		size_t r = zipf_next(&z);
		int len = key_of(r, key, sizeof key);

		exact[r]++;
		hr__sketch_add(&s, r + 1, key, (size_t)len);
	}
	ck_assert_uint_eq(s.n, HR__SKETCH_CAP);
	for (size_t j = 0; j < s.n; j++) {
		const hr__sketch_entry *e = &s.e[j];
		uint64_t t = exact[e->id - 1];

		ck_assert_uint_ge(e->count, t);
		ck_assert_uint_le(e->count - e->err, t);
		ck_assert_uint_eq(rank_of(e->key, e->len), e->id - 1);
		sum += e->count;
		minc = e->count < minc ? e->count : minc;
	}
	ck_assert_uint_eq(sum, draws);
	/* Ranks sort by true count; the top 10 are found, within 1%. */
	memcpy(top, s.e, sizeof top);
	qsort(top, s.n, sizeof top[0], by_count_desc);
	for (size_t j = 0; j < TOP; j++) {
		double err = fabs((double)top[j].count - (double)exact[top[j].id - 1]) /
			     (double)exact[top[j].id - 1];

		found += top[j].id - 1 < TOP;
		worst = err > worst ? err : worst;
	}
	fprintf(stderr, "sketch, every key of %zu Zipf(%.1f) draws over %d keys: "
		"top-%d recall %zu/%d, worst count error %.2f%%, smallest counter %llu\n",
		draws, ZIPF_S, ZIPF_KEYS, TOP, found, TOP, 100 * worst,
		(unsigned long long)minc);
	ck_assert_uint_eq(found, TOP);
	ck_assert_double_lt(worst, 0.01);
	for (size_t r = 0; r < ZIPF_KEYS; r++)
		if (exact[r] > minc) {
			bool kept = false;

			for (size_t j = 0; j < s.n; j++)
				kept |= s.e[j].id == r + 1;
			ck_assert_msg(kept, "rank %zu (%llu > %llu) not monitored", r,
				      (unsigned long long)exact[r], (unsigned long long)minc);
		}
	free(z.cdf);
}
END_TEST

/* Ten nodes in three zones. */
static hr_ring *zoned_ring(void)
{
	hrt_nodes *s = hrt_nodes_new(10, "n%zu", "127.0.0.%zu:11211", 1);
	hr_ring *ring;

	hrt_nodes_zones(s, 2);
	ring = hrt_ring_build(s->nodes, s->n, NULL, 1);
	hrt_nodes_free(s);
	return ring;
}

static hr_client *client_with(unsigned sample, double spread)
{
	hr_client_config cfg;

	hr_client_config_init(&cfg);
	cfg.hot_key_sample = sample;
	cfg.hot_key_spread = spread;
	return hrt_offline_client_with("/hot/", &cfg);
}

/* The client's lookups of a Zipf stream, then its top 10 against the
 * exact counts: recall, share error, owners as the ring says.  Sampling
 * 1 in 16 is checked; the default, 1 in 1024, is printed (about 2000
 * samples here: a figure, not a bound). */
static void hot_keys_on_zipf(unsigned sample, bool check)
{
	static uint64_t exact[ZIPF_KEYS];
	hr_client *c = client_with(sample, 0);
	hr_ring *ring = zoned_ring();
	const size_t draws = 2000000;
	hr_hot_key hot[TOP];
	hr_error err = { 0 };
	size_t found = 0;
	double worst = 0;
	zipf z;
	int k;

	zipf_init(&z, 11);
	memset(exact, 0, sizeof exact);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	ck_assert_int_eq(hr_client_hot_keys(c, hot, TOP, &err), 0);
	for (size_t i = 0; i < draws; i++) {
		char key[32];
		size_t r = zipf_next(&z);
		int len = key_of(r, key, sizeof key);
		hr_owner o;

		exact[r]++;
		ck_assert_int_eq(hr_client_lookup(c, key, (size_t)len, &o, NULL), 0);
	}
	k = hr_client_hot_keys(c, hot, TOP, &err);
	ck_assert_msg(k == TOP, "%d: %s", k, err.message);
	for (int j = 0; j < k; j++) {
		size_t r = rank_of(hot[j].key, hot[j].len);
		double share = (double)exact[r] / (double)draws;
		double e = fabs(hot[j].share - share) / share;
		hr_lookup l;

		found += r < TOP;
		if (r < TOP)
			worst = e > worst ? e : worst;
		ck_assert_double_gt(hot[j].rate, 0);
		ck_assert(!hot[j].spread);
		if (j)
			ck_assert_double_le(hot[j].rate, hot[j - 1].rate);
		ck_assert_int_eq(hr_ring_lookup(ring, hot[j].key, hot[j].len, &l, NULL), 0);
		ck_assert_str_eq(hot[j].node, l.node->id);
		ck_assert_str_eq(hot[j].read_node, l.read_node->id);
	}
	fprintf(stderr, "client, %zu Zipf(%.1f) lookups sampled 1 in %u: top-%d recall "
		"%zu/%d, worst share error of the true top %d found %.1f%% "
		"(top share %.4f, exact %.4f)\n", draws, ZIPF_S, sample, TOP, found, TOP,
		TOP, 100 * worst, hot[0].share, (double)exact[0] / (double)draws);
	if (check) {
		ck_assert_uint_ge(found, 8);
		ck_assert_double_lt(worst, 0.25);
	}
	hr_client_close(c);
	hr_ring_release(ring);
	free(z.cdf);
}

START_TEST(client_hot_keys_on_zipf)
{
	hot_keys_on_zipf(16, true);
	hot_keys_on_zipf(1024, false);
}
END_TEST

/* One key at 10% of the lookups, the rest cold and distinct: once the hot
 * keys are chosen, its reads go to its three preference-list nodes in
 * turn (none takes more than half), its writes to its owner; every cold
 * key keeps its owners; the read counts follow the reads. */
START_TEST(spread_a_hot_key)
{
	hr_client *c = client_with(16, 0.05);
	hr_ring *ring = zoned_ring();
	const hr_node *pref[3];
	hr_hot_key hot[4];
	hr_lookup hl;
	hr_error err = { 0 };
	size_t reads[10] = { 0 }, hot_n = 0, total = 0;
	uint64_t read_sum = 0, write_sum = 0;
	hr_node_lookups counts[16];
	size_t ncounts;
	int k;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	ck_assert_int_eq(hr_ring_lookup(ring, "hot", 3, &hl, NULL), 0);
	ck_assert_int_eq(hr_ring_preflist(ring, "hot", 3, HR_VIEW_READ, pref, 3, NULL), 3);
	for (int phase = 0; phase < 2; phase++) {
		for (unsigned i = 0; i < 200000; i++) {
			char key[24];
			int len = i % 10 ? snprintf(key, sizeof key, "cold-%d-%u", phase, i) :
					   snprintf(key, sizeof key, "hot");
			hr_owner o;
			hr_lookup l;

			ck_assert_int_eq(hr_client_lookup(c, key, (size_t)len, &o, NULL), 0);
			total++;
			ck_assert_int_eq(hr_ring_lookup(ring, key, (size_t)len, &l, NULL), 0);
			/* Writes never move. */
			ck_assert_str_eq(o.node, l.node->id);
			if (i % 10) {
				ck_assert_str_eq(o.read_node, l.read_node->id);
				continue;
			}
			if (phase == 0)
				continue;
			hot_n++;
			for (int n = 0; n < 10; n++)
				if (!strcmp(o.read_node, hr_ring_node(ring, (size_t)n)->id))
					reads[n]++;
		}
		/* The hot keys are chosen (also every 1024 samples). */
		k = hr_client_hot_keys(c, hot, 4, &err);
		ck_assert_msg(k >= 1, "%d: %s", k, err.message);
		ck_assert_int_eq(hot[0].len, 3);
		ck_assert_int_eq(memcmp(hot[0].key, "hot", 3), 0);
		ck_assert_int_eq(hot[0].spread, 1);
		ck_assert_double_gt(hot[0].share, 0.07);
		ck_assert_double_lt(hot[0].share, 0.13);
		for (int j = 1; j < k; j++)
			ck_assert_int_eq(hot[j].spread, 0);
	}
	for (int n = 0; n < 10; n++) {
		const char *id = hr_ring_node(ring, (size_t)n)->id;
		bool in_pref = !strcmp(id, pref[0]->id) || !strcmp(id, pref[1]->id) ||
			       !strcmp(id, pref[2]->id);

		if (!in_pref)
			ck_assert_uint_eq(reads[n], 0);
		else
			ck_assert_uint_gt(reads[n], hot_n / 5);
		ck_assert_uint_le(reads[n], hot_n / 2);
		if (reads[n])
			fprintf(stderr, "spread: %s took %.1f%% of the hot key's reads\n", id,
				100.0 * (double)reads[n] / (double)hot_n);
	}
	/* Every lookup is counted once per view, wherever its read went. */
	k = hr_client_lookup_counts(c, counts, 16, &ncounts, &err);
	ck_assert_int_eq(k, 10);
	for (int j = 0; j < k; j++) {
		read_sum += counts[j].read;
		write_sum += counts[j].write;
	}
	ck_assert_uint_eq(read_sum, total);
	ck_assert_uint_eq(write_sum, total);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* Threads look up a hot key and cold ones, with spreading, while another
 * reads the hot keys and the counts (the refreshes run on both sides):
 * writes never move, and every lookup is counted once per view. */
typedef struct spreader {
	pthread_t thread;
	hr_client *client;
	const hr_ring *ring;
	unsigned seed;
	unsigned long bad;
} spreader;

#ifdef HR_SANITIZED
#define THREAD_LOOKUPS 20000
#else
#define THREAD_LOOKUPS 200000
#endif

static void *spread_loop(void *p)
{
	spreader *sp = p;

	for (unsigned i = 0; i < THREAD_LOOKUPS; i++) {
		char key[32];
		int len = i % 10 ? snprintf(key, sizeof key, "cold-%u-%u", sp->seed, i) :
				   snprintf(key, sizeof key, "hot");
		hr_owner o;
		hr_lookup l;

		sp->bad += hr_client_lookup(sp->client, key, (size_t)len, &o, NULL) != 0;
		sp->bad += hr_ring_lookup(sp->ring, key, (size_t)len, &l, NULL) != 0;
		sp->bad += strcmp(o.node, l.node->id) != 0;
		if (i % 10)
			sp->bad += strcmp(o.read_node, l.read_node->id) != 0;
	}
	return NULL;
}

static void *hot_reader(void *p)
{
	spreader *sp = p;
	hr_hot_key hot[8];
	hr_node_lookups counts[16];

	while (!__atomic_load_n(&sp->seed, __ATOMIC_ACQUIRE)) {
		sp->bad += hr_client_hot_keys(sp->client, hot, 8, NULL) < 0;
		sp->bad += hr_client_lookup_counts(sp->client, counts, 16, NULL, NULL) != 10;
	}
	return NULL;
}

START_TEST(spread_across_threads)
{
	hr_client *c = client_with(16, 0.05);
	hr_ring *ring = zoned_ring();
	spreader sp[4], rd = { .seed = 0 };
	hr_node_lookups counts[16];
	uint64_t reads = 0, writes = 0;
	int k;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	rd.client = c;
	ck_assert_int_eq(pthread_create(&rd.thread, NULL, hot_reader, &rd), 0);
	for (int t = 0; t < 4; t++) {
		sp[t] = (spreader){ .client = c, .ring = ring, .seed = (unsigned)t + 1 };
		ck_assert_int_eq(pthread_create(&sp[t].thread, NULL, spread_loop, &sp[t]), 0);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(sp[t].thread, NULL);
		ck_assert_uint_eq(sp[t].bad, 0);
	}
	__atomic_store_n(&rd.seed, 1, __ATOMIC_RELEASE);
	pthread_join(rd.thread, NULL);
	ck_assert_uint_eq(rd.bad, 0);
	k = hr_client_lookup_counts(c, counts, 16, NULL, NULL);
	ck_assert_int_eq(k, 10);
	for (int j = 0; j < k; j++) {
		reads += counts[j].read;
		writes += counts[j].write;
	}
	ck_assert_uint_eq(reads, 4 * THREAD_LOOKUPS);
	ck_assert_uint_eq(writes, 4 * THREAD_LOOKUPS);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* Without spreading, the hot key's reads stay with its owner. */
START_TEST(no_spread_by_default)
{
	hr_client *c = client_with(16, 0);
	hr_ring *ring = zoned_ring();
	hr_hot_key hot[1];
	hr_lookup hl;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	ck_assert_int_eq(hr_ring_lookup(ring, "hot", 3, &hl, NULL), 0);
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < 50000; i++) {
			hr_owner o;

			ck_assert_int_eq(hr_client_lookup(c, "hot", 3, &o, NULL), 0);
			ck_assert_str_eq(o.read_node, hl.read_node->id);
		}
		ck_assert_int_eq(hr_client_hot_keys(c, hot, 1, NULL), 1);
		ck_assert_int_eq(hot[0].spread, 0);
	}
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* A long key is reported by its first HR_HOT_KEY_MAX bytes and its
 * length; an older program's smaller struct gets only its fields. */
START_TEST(long_keys_and_small_structs)
{
	hr_client *c = client_with(1, 0);
	hr_ring *ring = zoned_ring();
	char key[200];
	hr_hot_key hot[2];
	hr_error err;

	memset(key, 'x', sizeof key);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	for (int i = 0; i < 100; i++) {
		hr_owner o;

		ck_assert_int_eq(hr_client_lookup(c, key, sizeof key, &o, NULL), 0);
	}
	ck_assert_int_eq(hr_client_hot_keys(c, hot, 2, &err), 1);
	ck_assert_uint_eq(hot[0].len, sizeof key);
	ck_assert_int_eq(memcmp(hot[0].key, key, HR_HOT_KEY_MAX), 0);
	ck_assert_double_eq(hot[0].share, 1.0);
	ck_assert_str_ne(hot[0].node, "");
	/* Only key and len fit: the rest of the caller's memory stays. */
	memset(hot, 0x5a, sizeof hot);
	ck_assert_int_eq(hr_client_hot_keys_size(c, hot, 2,
						 offsetof(hr_hot_key, len) + sizeof(size_t),
						 &err), 1);
	ck_assert_uint_eq(hot[0].len, sizeof key);
	ck_assert_uint_eq(((unsigned char *)&hot[0].rate)[0], 0x5a);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

START_TEST(bad_input)
{
	hr_client *c = client_with(0, 0);
	hr_hot_key hot[1];
	hr_error err;
	hr_client_config cfg;
	hr_etcd_config etcd;
	hr_client *bad = NULL;
	hr_owner o;

	ck_assert_int_eq(hr_client_hot_keys(NULL, hot, 1, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "NULL client"));
	ck_assert_int_eq(hr_client_hot_keys_size(c, NULL, 1, sizeof hot[0], &err), HR_EINVAL);
	ck_assert_int_eq(hr_client_hot_keys_size(c, hot, 1, 0, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "size 0"));
	ck_assert_int_eq(hr_client_hot_keys_size(c, NULL, 0, sizeof hot[0], &err), 0);
	/* Sampling off: no hot keys, however often a key is looked up. */
	hr__publish_swap(hr__client_publisher(c), zoned_ring());
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert_int_eq(hr_client_hot_keys(c, hot, 1, &err), 0);
	hr_client_close(c);

	hr_etcd_config_init(&etcd);
	etcd.endpoints = "127.0.0.1:1";
	etcd.prefix = "/hot/";
	hr_client_config_init(&cfg);
	ck_assert_uint_eq(cfg.hot_key_sample, 1024);
	ck_assert_uint_eq(cfg.hot_key_replicas, 3);
	ck_assert_double_eq(cfg.hot_key_spread, 0);
	cfg.open_nonblocking = 1;
	cfg.hot_key_sample = 100;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &bad, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "hot_key_sample"));
	ck_assert_ptr_nonnull(strstr(err.message, "100"));
	cfg.hot_key_sample = 1024;
	cfg.hot_key_replicas = 1;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &bad, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "hot_key_replicas"));
	cfg.hot_key_replicas = 3;
	cfg.hot_key_spread = 1.5;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &bad, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "hot_key_spread"));
	cfg.hot_key_spread = NAN;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &bad, &err), HR_EINVAL);
	cfg.hot_key_spread = 0.1;
	cfg.hot_key_sample = 0;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &bad, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "needs hot_key_sample"));
	ck_assert_ptr_null(bad);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hotkeys");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sketch_exact_below_capacity);
	tcase_add_test(tc, sketch_bounds_on_zipf);
	tcase_add_test(tc, client_hot_keys_on_zipf);
	tcase_add_test(tc, spread_a_hot_key);
	tcase_add_test(tc, spread_across_threads);
	tcase_add_test(tc, no_spread_by_default);
	tcase_add_test(tc, long_keys_and_small_structs);
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
