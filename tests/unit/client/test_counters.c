/* SPDX-License-Identifier: MIT */
/* test_counters.c - a client's per-node lookup counts: exact against the
 * answers the lookups returned, single and batch, on one thread and on
 * several while rings are swapped under them and a reader reads the counts
 * (each read never below the one before); a node that leaves keeps its
 * counts and continues from them when it comes back; counting off counts
 * nothing; bad input; 32-bit per-thread counts carried
 * into 64-bit totals, exact and never going down under a reader. */
#define _GNU_SOURCE
#include "client.h"
#include "counters.h"
#include "publish.h"
#include "thread_cache.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HR_SANITIZED
#define ROUNDS 3000
#else
#define ROUNDS 30000
#endif
#define THREADS 4
#define GENS 3
#define BATCH 16

/* Expected counts by id, as the answers said. */
typedef struct tally {
	struct { char id[32]; uint64_t n[2]; } e[64];
	size_t n;
} tally;

static void tally_add(tally *t, const char *id, int view, uint64_t k)
{
	size_t i;

	if (!id[0])
		return;
	for (i = 0; i < t->n && strcmp(t->e[i].id, id); i++)
		;
	if (i == t->n) {
		ck_assert_uint_lt(t->n, 64);
		snprintf(t->e[t->n].id, sizeof t->e[0].id, "%s", id);
		t->e[t->n].n[0] = t->e[t->n].n[1] = 0;
		t->n++;
	}
	t->e[i].n[view] += k;
}

static uint64_t tally_get(const tally *t, const char *id, int view)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->e[i].id, id))
			return t->e[i].n[view];
	return 0;
}

/* Every count of `c`, in id order; fails on an error. */
static hr_node_lookups *counts_of(hr_client *c, size_t *n)
{
	hr_node_lookups *out = calloc(128, sizeof *out);
	hr_error err = { 0 };
	int k = hr_client_lookup_counts(c, out, 128, n, &err);

	ck_assert_msg(k >= 0, "%s", err.message);
	ck_assert_uint_eq((size_t)k, *n);
	for (int i = 1; i < k; i++)
		ck_assert_int_lt(strcmp(out[i - 1].node, out[i].node), 0);
	return out;
}

/* The client's counts equal `want` for every id either has. */
static void expect_counts(hr_client *c, const tally *want)
{
	size_t n;
	hr_node_lookups *got = counts_of(c, &n);

	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got[i].write == tally_get(want, got[i].node, 0),
			      "%s write: %llu, want %llu", got[i].node,
			      (unsigned long long)got[i].write,
			      (unsigned long long)tally_get(want, got[i].node, 0));
		ck_assert_msg(got[i].read == tally_get(want, got[i].node, 1),
			      "%s read: %llu, want %llu", got[i].node,
			      (unsigned long long)got[i].read,
			      (unsigned long long)tally_get(want, got[i].node, 1));
	}
	for (size_t i = 0; i < want->n; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(got[j].node, want->e[i].id); j++)
			;
		ck_assert_msg(j < n, "%s not listed", want->e[i].id);
	}
	free(got);
}

/* One single lookup and one batch of BATCH keys from round `i`, tallied
 * as their answers say (the batch's numbers through its epoch's ring). */
static void lookups(hr_client *c, hr_ring *const *rings, unsigned i, tally *t)
{
	char keys[BATCH][24];
	const void *ptrs[BATCH];
	size_t lens[BATCH];
	hr_batch_owner bo[BATCH];
	hr_epoch ep;
	hr_owner o;
	const hr_ring *ring = NULL;

	snprintf(keys[0], sizeof keys[0], "s%u", i);
	EXPECT(hr_client_lookup(c, keys[0], strlen(keys[0]), &o, NULL) == 0);
	tally_add(t, o.node, 0, 1);
	tally_add(t, o.read_node, 1, 1);
	for (int k = 0; k < BATCH; k++) {
		lens[k] = (size_t)snprintf(keys[k], sizeof keys[k], "b%u-%d", i, k);
		ptrs[k] = keys[k];
	}
	EXPECT(hr_client_lookup_batch(c, ptrs, lens, BATCH, bo, &ep, NULL) == 0);
	for (int g = 0; g < GENS; g++)
		if (hr_ring_revision(rings[g]) == ep.revision)
			ring = rings[g];
	EXPECT(ring != NULL);
	for (int k = 0; k < BATCH; k++) {
		if (bo[k].node != HR_NO_NODE)
			tally_add(t, hr_ring_node(ring, bo[k].node)->id, 0, 1);
		if (bo[k].read_node != HR_NO_NODE)
			tally_add(t, hr_ring_node(ring, bo[k].read_node)->id, 1, 1);
	}
}

START_TEST(exact_on_one_thread)
{
	hr_ring *rings[GENS];
	hr_client *c = hrt_offline_client("/counts/");
	tally want = { .n = 0 };
	hr_owner o;
	size_t n;
	hr_node_lookups *got;

	for (int g = 0; g < GENS; g++)
		rings[g] = hrt_ring_generation("g", (unsigned)g + 1, 50);
	/* Before any ring: nothing to count, nothing listed. */
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), HR_EEMPTY);
	got = counts_of(c, &n);
	ck_assert_uint_eq(n, 0);
	free(got);

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(rings[0]));
	/* The ring's nodes are listed before they are counted. */
	got = counts_of(c, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(got[0].node, "g1-a");
	ck_assert_uint_eq(got[0].write + got[0].read, 0);
	free(got);
	for (unsigned i = 0; i < 1000; i++)
		lookups(c, rings, i, &want);
	expect_counts(c, &want);
	/* b drains: never a write; c warms: never a read. */
	ck_assert_uint_eq(tally_get(&want, "g1-b", 0), 0);
	ck_assert_uint_eq(tally_get(&want, "g1-c", 1), 0);
	ck_assert_uint_gt(tally_get(&want, "g1-b", 1), 0);
	ck_assert_uint_gt(tally_get(&want, "g1-c", 0), 0);

	/* Another ring: its nodes join, the first ring's keep their counts. */
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(rings[1]));
	for (unsigned i = 0; i < 1000; i++)
		lookups(c, rings, i, &want);
	expect_counts(c, &want);
	got = counts_of(c, &n);
	ck_assert_uint_eq(n, 6);
	free(got);

	hr_client_close(c);
	for (int g = 0; g < GENS; g++)
		hr_ring_release(rings[g]);
}
END_TEST

typedef struct shared {
	hr_client *client;
	hr_ring *rings[GENS];
	atomic_int stop;
	atomic_int finished;	/* lookers done */
} shared;

typedef struct looker {
	pthread_t thread;
	shared *s;
	unsigned seed;
	tally t;
} looker;

static void *look_loop(void *p)
{
	looker *l = p;

	for (unsigned i = 0; i < ROUNDS; i++)
		lookups(l->s->client, l->s->rings, l->seed * ROUNDS + i, &l->t);
	atomic_fetch_add(&l->s->finished, 1);
	return NULL;
}

/* Reads the counts over and over: no count ever goes down. */
static void *read_loop(void *p)
{
	shared *s = p;
	tally last = { .n = 0 };
	unsigned reads = 0;

	while (!atomic_load(&s->stop) || reads < 2) {
		size_t n;
		hr_node_lookups *got = counts_of(s->client, &n);

		for (size_t i = 0; i < n; i++)
			for (int v = 0; v < 2; v++) {
				uint64_t was = tally_get(&last, got[i].node, v);
				uint64_t now = v ? got[i].read : got[i].write;

				EXPECT(now >= was);
				tally_add(&last, got[i].node, v, now - was);
			}
		free(got);
		reads++;
	}
	return NULL;
}

/* THREADS threads look up while rings 1, 2, 3 are published in turn, over
 * and over, and a reader reads the counts: once all are done, every
 * node's count is the sum of what the threads' answers said. */
START_TEST(exact_across_threads_and_swaps)
{
	shared s = { .client = hrt_offline_client("/counts/") };
	looker l[THREADS];
	pthread_t reader;
	tally want = { .n = 0 };
	unsigned swaps = 0;

	for (int g = 0; g < GENS; g++)
		s.rings[g] = hrt_ring_generation("t", (unsigned)g + 1, 50);
	hr__publish_swap(hr__client_publisher(s.client), hr_ring_retain(s.rings[0]));
	ck_assert_int_eq(pthread_create(&reader, NULL, read_loop, &s), 0);
	for (int k = 0; k < THREADS; k++) {
		l[k] = (looker){ .s = &s, .seed = (unsigned)k };
		ck_assert_int_eq(pthread_create(&l[k].thread, NULL, look_loop, &l[k]), 0);
	}
	while (atomic_load(&s.finished) < THREADS)
		hr__publish_swap(hr__client_publisher(s.client),
				 hr_ring_retain(s.rings[++swaps % GENS]));
	for (int k = 0; k < THREADS; k++) {
		pthread_join(l[k].thread, NULL);
		for (size_t i = 0; i < l[k].t.n; i++)
			for (int v = 0; v < 2; v++)
				tally_add(&want, l[k].t.e[i].id, v, l[k].t.e[i].n[v]);
	}
	atomic_store(&s.stop, 1);
	pthread_join(reader, NULL);
	expect_counts(s.client, &want);
	ck_assert_uint_gt(swaps, 10);
	hr_client_close(s.client);
	for (int g = 0; g < GENS; g++)
		hr_ring_release(s.rings[g]);
}
END_TEST

/* Ring of n0..n9 without node `gone` (-1: all ten). */
static hr_ring *ten_but(int gone, uint64_t rev)
{
	hrt_nodes *s = hrt_nodes_new(10, "n%zu", "127.0.0.%zu:11211", 1);
	hr_node nodes[10];
	size_t k = 0;
	hr_ring *ring;

	for (int i = 0; i < 10; i++)
		if (i != gone)
			nodes[k++] = s->nodes[i];
	ring = hrt_ring_build(nodes, k, NULL, rev);
	hrt_nodes_free(s);
	return ring;
}

static uint64_t count_of(hr_client *c, const char *id)
{
	size_t n;
	hr_node_lookups *got = counts_of(c, &n);
	uint64_t w = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(got[i].node, id)) {
			ck_assert_uint_eq(got[i].write, got[i].read);
			w = got[i].write;
		}
	free(got);
	return w;
}

static void look(hr_client *c, int n, unsigned base)
{
	for (int i = 0; i < n; i++) {
		hr_owner o;
		char key[16];

		snprintf(key, sizeof key, "%u", base + (unsigned)i);
		ck_assert_int_eq(hr_client_lookup(c, key, strlen(key), &o, NULL), 0);
	}
}

/* n3 leaves and comes back: listed all along, its count still while it
 * is away, and growing again from where it was. */
START_TEST(a_node_leaves_and_comes_back)
{
	hr_client *c = hrt_offline_client("/counts/");
	hr_ring *all = ten_but(-1, 1), *without = ten_but(3, 2), *back = ten_but(-1, 3);
	uint64_t before, away, after;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(all));
	look(c, 5000, 0);
	before = count_of(c, "n3");
	ck_assert_uint_gt(before, 0);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(without));
	look(c, 5000, 5000);
	away = count_of(c, "n3");
	ck_assert_uint_eq(away, before);
	ck_assert_uint_eq(count_of(c, "n0") + count_of(c, "n1") + count_of(c, "n2") +
			  count_of(c, "n4") + count_of(c, "n5") + count_of(c, "n6") +
			  count_of(c, "n7") + count_of(c, "n8") + count_of(c, "n9") + away,
			  10000);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(back));
	look(c, 5000, 10000);
	after = count_of(c, "n3");
	ck_assert_uint_gt(after, away);
	hr_client_close(c);
	hr_ring_release(all);
	hr_ring_release(without);
	hr_ring_release(back);
}
END_TEST

/* Off (the benchmark's "without"): lookups on rings moved to afterwards
 * count nothing; on again, they count. */
START_TEST(counting_off_and_on)
{
	hr_client *c = hrt_offline_client("/counts/");
	hr_ring *a = ten_but(-1, 1), *b = ten_but(-1, 2);

	hr__client_count_lookups(c, false);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(a));
	look(c, 100, 0);
	ck_assert_uint_eq(count_of(c, "n0"), 0);
	hr__client_count_lookups(c, true);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(b));
	look(c, 1000, 0);
	ck_assert_uint_gt(count_of(c, "n0"), 0);
	hr_client_close(c);
	hr_ring_release(a);
	hr_ring_release(b);
}
END_TEST

START_TEST(bad_input)
{
	hr_client *c = hrt_offline_client("/counts/");
	hr_ring *ring = ten_but(-1, 1);
	hr_node_lookups out[4];
	hr_error err = { 0 };
	size_t total = 99;

	ck_assert_int_eq(hr_client_lookup_counts(NULL, out, 4, &total, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup_counts: NULL client");
	ck_assert_uint_eq(total, 99);
	ck_assert_int_eq(hr_client_lookup_counts(c, NULL, 4, &total, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup_counts: out is NULL with n > 0");
	ck_assert_int_eq(hr_client_lookup_counts(NULL, NULL, 0, NULL, NULL), HR_EINVAL);

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	look(c, 100, 0);
	/* Sizing: n = 0 counts, a short array takes the first in id order. */
	ck_assert_int_eq(hr_client_lookup_counts(c, NULL, 0, &total, &err), 0);
	ck_assert_uint_eq(total, 10);
	memset(out, 0x55, sizeof out);
	ck_assert_int_eq(hr_client_lookup_counts(c, out, 2, &total, &err), 2);
	ck_assert_uint_eq(total, 10);
	ck_assert_str_eq(out[0].node, "n0");
	ck_assert_str_eq(out[1].node, "n1");
	/* Untouched beyond n. */
	ck_assert_int_eq(out[2].node[0], 0x55);
	ck_assert_int_eq(hr_client_lookup_counts(c, out, 4, NULL, NULL), 4);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/*
 * Brings every count of the calling thread's segment on `c`'s ring to
 * just below the carry (HR__COUNT_CARRY - 8), as that many lookups would
 * have, into *t; the lookups that follow carry it.  The thread writes its
 * own segment, as a lookup does.
 */
static void near_carry(hr_client *c, tally *t)
{
	hr_owner o;
	hr__count_seg *s;
	const uint32_t to = HR__COUNT_CARRY - 8;

	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	tally_add(t, o.node, 0, 1);
	tally_add(t, o.read_node, 1, 1);
	s = hr__thread_cache_counts();
	ck_assert_ptr_nonnull(s);
	for (size_t j = 0; j < s->nodes; j++) {
		const char *id = hr_ring_node(s->ring, j)->id;
		bool reads = s->flags & HR__SEG_READS;

		for (int v = 0; v < (reads ? 2 : 1); v++) {
			uint32_t *p = &s->cnt[2 * j + (size_t)v];
			int32_t lo = (int32_t)__atomic_load_n(p, __ATOMIC_RELAXED);

			if (lo >= (int32_t)to)
				continue;
			__atomic_store_n(p, to, __ATOMIC_RELAXED);
			tally_add(t, id, v, (uint64_t)((int64_t)to - lo));
			/* One view array: a write is a read too. */
			if (!reads)
				tally_add(t, id, 1, (uint64_t)((int64_t)to - lo));
		}
	}
}

/* Every count of the calling thread's segment is within the carry. */
static void carried(void)
{
	hr__count_seg *s = hr__thread_cache_counts();

	for (size_t i = 0; i < 2 * s->nodes; i++) {
		int32_t lo = (int32_t)s->cnt[i];

		ck_assert_msg(lo < (int32_t)HR__COUNT_CARRY && lo >= -(int32_t)HR__COUNT_CARRY,
			      "count %zu is %d", i, lo);
	}
}

/* Counts past 2^32 per node, single and batch, on one view array and on
 * two (a node warming, one draining): each time near the carry, the
 * lookups carry it, and the totals stay exact. */
START_TEST(counts_carry_past_32_bits)
{
	hr_client *c = hrt_offline_client("/counts/");
	hr_ring *rings[GENS] = { ten_but(-1, 1) };
	tally want = { .n = 0 };

	for (int g = 1; g < GENS; g++)
		rings[g] = hrt_ring_generation("c", (unsigned)g + 1, 50);
	for (int g = 0; g < GENS; g++) {
		hr__publish_swap(hr__client_publisher(c), hr_ring_retain(rings[g]));
		for (int round = 0; round < 6; round++) {
			near_carry(c, &want);
			for (unsigned i = 0; i < 400; i++)
				lookups(c, rings, i, &want);
			carried();
			expect_counts(c, &want);
		}
	}
	/* Six carries of 2^30 on each node of the first ring. */
	ck_assert_uint_gt(tally_get(&want, "n0", 0), 6 * (uint64_t)HR__COUNT_CARRY);
	hr_client_close(c);
	for (int g = 0; g < GENS; g++)
		hr_ring_release(rings[g]);
}
END_TEST

static void *carry_loop(void *p)
{
	looker *l = p;

	for (unsigned i = 0; i < ROUNDS / 10; i++) {
		if (i % 50 == 0)
			near_carry(l->s->client, &l->t);
		lookups(l->s->client, l->s->rings, l->seed * ROUNDS + i, &l->t);
	}
	atomic_fetch_add(&l->s->finished, 1);
	return NULL;
}

/* Threads carry their counts over and over while a reader reads them:
 * no read ever goes down, and the totals end exact. */
START_TEST(carries_under_a_reader)
{
	shared s = { .client = hrt_offline_client("/counts/") };
	looker l[THREADS];
	pthread_t reader;
	tally want = { .n = 0 };

	s.rings[0] = ten_but(-1, 1);
	for (int g = 1; g < GENS; g++)
		s.rings[g] = hrt_ring_generation("r", (unsigned)g + 1, 50);
	hr__publish_swap(hr__client_publisher(s.client), hr_ring_retain(s.rings[0]));
	ck_assert_int_eq(pthread_create(&reader, NULL, read_loop, &s), 0);
	for (int k = 0; k < THREADS; k++) {
		l[k] = (looker){ .s = &s, .seed = (unsigned)k };
		ck_assert_int_eq(pthread_create(&l[k].thread, NULL, carry_loop, &l[k]), 0);
	}
	for (int k = 0; k < THREADS; k++) {
		pthread_join(l[k].thread, NULL);
		for (size_t i = 0; i < l[k].t.n; i++)
			for (int v = 0; v < 2; v++)
				tally_add(&want, l[k].t.e[i].id, v, l[k].t.e[i].n[v]);
	}
	atomic_store(&s.stop, 1);
	pthread_join(reader, NULL);
	expect_counts(s.client, &want);
	hr_client_close(s.client);
	for (int g = 0; g < GENS; g++)
		hr_ring_release(s.rings[g]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("counters");
	TCase *tc = tcase_create("lookup counts");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, exact_on_one_thread);
	tcase_add_test(tc, exact_across_threads_and_swaps);
	tcase_add_test(tc, a_node_leaves_and_comes_back);
	tcase_add_test(tc, counting_off_and_on);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, counts_carry_past_32_bits);
	tcase_add_test(tc, carries_under_a_reader);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
