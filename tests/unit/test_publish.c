/* test_publish.c - RCU publication under stress: one writer swaps rings as
 * fast as it can while reader threads look up through read sections, held
 * references and the per-thread cache, and every answer must come from one
 * whole ring (never a mix, never freed memory: run it under ASan and TSan).
 * Then the reclamation of rings that followers held. */
#include "publish.h"
#include "thread_cache.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READERS 3
#define SWAPS 3000

/* Ring `gen`: any answer tells which ring it came from. */
static hr_ring *make_ring(unsigned gen)
{
	return hrt_ring_generation("g", gen, 16);
}

struct shared {
	hr__publisher pub;
	int done;
	unsigned long reads[READERS];
	unsigned long mismatches;
};

struct reader_arg {
	struct shared *s;
	int index;
};

static int from_generation(const hr_node *n, uint64_t gen)
{
	char want[32];

	snprintf(want, sizeof want, "g%llu-", (unsigned long long)gen);
	return n && strncmp(n->id, want, strlen(want)) == 0;
}

/* One checked read of `ring` (revision `gen`). */
static unsigned long check_read(const hr_ring *ring, unsigned long i)
{
	uint64_t gen = hr_ring_revision(ring);
	unsigned long bad = 0;
	char key[32];
	hr_lookup l;

	snprintf(key, sizeof key, "key-%lu", i);
	if (hr_ring_lookup(ring, key, strlen(key), &l) != 0 ||
	    !from_generation(l.node, gen) || !from_generation(l.read_node, gen) ||
	    l.revision != gen)
		bad++;
	for (size_t n = 0; n < hr_ring_node_count(ring); n++)
		if (!from_generation(hr_ring_node(ring, n), gen))
			bad++;
	return bad;
}

/* Reads in turn through a read section, a held reference of its own and
 * the thread cache. */
static void *reader(void *p)
{
	struct reader_arg *a = p;
	struct shared *s = a->s;
	unsigned long reads = 0, bad = 0;
	uint64_t last_gen = 0, gen;
	hr_ring *held = NULL;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		const hr_ring *ring;

		switch (reads % 3) {
		case 0:
			ring = hr__publish_read_begin(&s->pub);
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			hr__publish_read_end(&s->pub);
			break;
		case 1:
			ring = hr__publish_follow(&s->pub, &held);
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			break;
		default:
			ring = hr__thread_cache_ring(&s->pub);
			if (!ring) {
				bad++;
				continue;
			}
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			break;
		}
		/* Rings only move forward for a reader, whichever way it
		 * reads. */
		if (gen < last_gen)
			bad++;
		last_gen = gen;

		if (reads % 64 == 0) {
			/* The long-hold path: a counted reference outlives
			 * the swaps that happen meanwhile. */
			hr_ring *hold = hr__publish_acquire(&s->pub);
			uint64_t g = hr_ring_revision(hold);
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
			if (!from_generation(hr_ring_node(hold, 0), g))
				bad++;
			hr_ring_release(hold);
		}
		reads++;
	}
	hr_ring_release(held);
	s->reads[a->index] = reads;
	__atomic_fetch_add(&s->mismatches, bad, __ATOMIC_RELAXED);
	/* The thread cache's reference goes as the thread exits. */
	return NULL;
}

START_TEST(swap_under_readers)
{
	struct shared s;
	struct reader_arg args[READERS];
	pthread_t th[READERS];
	unsigned long total = 0;

	memset(&s, 0, sizeof s);
	hr__publish_init(&s.pub, make_ring(1));
	for (int i = 0; i < READERS; i++) {
		args[i] = (struct reader_arg){ &s, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &args[i]), 0);
	}
	for (unsigned gen = 2; gen < SWAPS + 2; gen++)
		hr__publish_swap(&s.pub, make_ring(gen));
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		total += s.reads[i];
		ck_assert_uint_gt(s.reads[i], 0);
	}
	ck_assert_uint_eq(s.mismatches, 0);
	ck_assert_uint_eq(hr_ring_revision(hr__publish_read_begin(&s.pub)), SWAPS + 1);
	hr__publish_read_end(&s.pub);
	/* Every reader let go of its rings (the thread cache's at exit), so
	 * nothing is left to reclaim. */
	hr__publish_reclaim(&s.pub);
	ck_assert_uint_eq(s.pub.nretired, 0);
	hr__publish_destroy(&s.pub);
	fprintf(stderr, "publish stress: %d swaps, %lu checked reads\n", SWAPS, total);
}
END_TEST

START_TEST(acquire_outlives_destroy)
{
	hr__publisher pub;
	hr_ring *held;

	hr__publish_init(&pub, make_ring(7));
	held = hr__publish_acquire(&pub);
	hr__publish_swap(&pub, make_ring(8));
	hr__publish_destroy(&pub);
	/* The counted reference is still good after its ring was replaced
	 * and the publisher destroyed. */
	ck_assert_uint_eq(hr_ring_revision(held), 7);
	ck_assert_str_eq(hr_ring_node(held, 0)->id, "g7-a");
	hr_ring_release(held);
}
END_TEST

START_TEST(nested_sections)
{
	hr__publisher pub;
	const hr_ring *outer, *inner;

	hr__publish_init(&pub, make_ring(3));
	outer = hr__publish_read_begin(&pub);
	inner = hr__publish_read_begin(&pub);
	ck_assert_ptr_eq(outer, inner);
	hr__publish_read_end(&pub);
	hr__publish_read_end(&pub);
	hr__publish_destroy(&pub);
}
END_TEST

START_TEST(retired_until_followers_move)
{
	hr__publisher pub;
	hr_ring *held = NULL;

	hr__publish_init(&pub, make_ring(1));
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&pub, &held)), 1);
	/* Held by a follower: retired, not freed. */
	hr__publish_swap(&pub, make_ring(2));
	ck_assert_uint_eq(pub.nretired, 1);
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 1);
	ck_assert_uint_eq(hr_ring_revision(held), 1);
	/* The follower moves on; the next reclaim frees ring 1. */
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&pub, &held)), 2);
	ck_assert_ptr_eq(hr__publish_follow(&pub, &held), held);
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 0);
	/* Ring 3 replaces ring 2 (held) then ring 4 replaces ring 3, which
	 * nobody holds: freed at once, ring 2 stays retired. */
	hr__publish_swap(&pub, make_ring(3));
	hr__publish_swap(&pub, make_ring(4));
	ck_assert_uint_eq(pub.nretired, 1);
	hr_ring_release(held);
	hr__publish_swap(&pub, make_ring(5));
	ck_assert_uint_eq(pub.nretired, 0);
	/* Destroy hands retired rings to their last holder. */
	held = NULL;
	hr__publish_follow(&pub, &held);
	hr__publish_swap(&pub, make_ring(6));
	ck_assert_uint_eq(pub.nretired, 1);
	hr__publish_destroy(&pub);
	ck_assert_uint_eq(hr_ring_revision(held), 5);
	hr_ring_release(held);
}
END_TEST

struct idle_arg {
	hr__publisher *pub;
	pthread_barrier_t looked, swapped;
	uint64_t seen;
};

static void *look_then_idle(void *p)
{
	struct idle_arg *a = p;
	const hr_ring *ring = hr__thread_cache_ring(a->pub);

	a->seen = ring ? hr_ring_revision(ring) : 0;
	pthread_barrier_wait(&a->looked);
	pthread_barrier_wait(&a->swapped);
	return NULL;
}

START_TEST(thread_cache_released_at_exit)
{
	hr__publisher pub;
	struct idle_arg a;
	pthread_t th;

	memset(&a, 0, sizeof a);
	a.pub = &pub;
	hr__publish_init(&pub, make_ring(1));
	pthread_barrier_init(&a.looked, NULL, 2);
	pthread_barrier_init(&a.swapped, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, look_then_idle, &a), 0);
	pthread_barrier_wait(&a.looked);
	ck_assert_uint_eq(a.seen, 1);
	/* The idle thread still holds ring 1. */
	hr__publish_swap(&pub, make_ring(2));
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 1);
	pthread_barrier_wait(&a.swapped);
	pthread_join(th, NULL);
	/* Its exit released it. */
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 0);
	pthread_barrier_destroy(&a.looked);
	pthread_barrier_destroy(&a.swapped);
	hr__publish_destroy(&pub);
}
END_TEST

/* More publishers than the cache has ways, on one thread: every answer
 * comes from the right publisher, evicted ways let their rings go, and
 * forgetting a publisher drops this thread's reference. */
START_TEST(thread_cache_ways)
{
	enum { PUBS = HR__THREAD_CACHE_WAYS + 2 };
	hr__publisher pubs[PUBS];
	unsigned long bad = 0;

	for (unsigned i = 0; i < PUBS; i++)
		hr__publish_init(&pubs[i], make_ring(100 * (i + 1)));
	for (unsigned round = 0; round < 50; round++) {
		for (unsigned i = 0; i < PUBS; i++) {
			/* A pattern that both hits and evicts. */
			unsigned k = round % 2 ? i : (i * 5) % PUBS;
			const hr_ring *ring = hr__thread_cache_ring(&pubs[k]);

			bad += !ring || hr_ring_revision(ring) / 100 != k + 1;
		}
		if (round % 10 == 9)
			for (unsigned i = 0; i < PUBS; i++)
				hr__publish_swap(&pubs[i],
						 make_ring(100 * (i + 1) + round));
	}
	ck_assert_uint_eq(bad, 0);
	for (unsigned i = 0; i < PUBS; i++) {
		int cached = 0;

		hr__thread_cache_forget(&pubs[i]);
		for (int w = 0; w < HR__THREAD_CACHE_WAYS; w++)
			cached += hr__thread_cache_tls.way[w].pub == &pubs[i];
		ck_assert_int_eq(cached, 0);
		hr__publish_reclaim(&pubs[i]);
		ck_assert_uint_eq(pubs[i].nretired, 0);
		hr__publish_destroy(&pubs[i]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("publish");
	TCase *tc = tcase_create("rcu");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swap_under_readers);
	tcase_add_test(tc, acquire_outlives_destroy);
	tcase_add_test(tc, nested_sections);
	tcase_add_test(tc, retired_until_followers_move);
	tcase_add_test(tc, thread_cache_released_at_exit);
	tcase_add_test(tc, thread_cache_ways);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
