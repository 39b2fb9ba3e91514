/* test_publish.c - RCU publication under stress: one writer swaps rings as
 * fast as it can while reader threads look up, and every answer must come
 * from one whole ring (never a mix, never freed memory: run it under ASan
 * and TSan). */
#include "publish.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READERS 3
#define SWAPS 3000

/* Ring `gen` has three nodes named "g<gen>-a".."g<gen>-c" and revision gen,
 * so any answer tells which ring it came from. */
static hr_ring *make_ring(unsigned gen)
{
	char ids[3][32], addrs[3][32];
	hr_node nodes[3];
	hr_ring_options opts = { .vnodes_per_weight = 16 };
	hr_ring *ring = NULL;

	for (int i = 0; i < 3; i++) {
		snprintf(ids[i], sizeof ids[i], "g%u-%c", gen, 'a' + i);
		snprintf(addrs[i], sizeof addrs[i], "10.0.%u.%d:1", gen % 250, i);
		nodes[i] = (hr_node){ ids[i], addrs[i], "", 1.0,
				      i == 2 ? HR_STATE_WARMING : HR_STATE_ACTIVE };
	}
	ck_assert_int_eq(hr_ring_build(nodes, 3, &opts, gen, &ring, NULL), 0);
	return ring;
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

static void *reader(void *p)
{
	struct reader_arg *a = p;
	struct shared *s = a->s;
	unsigned long reads = 0, bad = 0;
	char key[32];
	uint64_t last_gen = 0;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		const hr_ring *ring = hr__publish_read_begin(&s->pub);
		uint64_t gen = hr_ring_revision(ring);
		hr_lookup l;

		snprintf(key, sizeof key, "key-%lu", reads);
		if (hr_ring_lookup(ring, key, strlen(key), &l) != 0 ||
		    !from_generation(l.node, gen) || !from_generation(l.read_node, gen) ||
		    l.revision != gen)
			bad++;
		for (size_t i = 0; i < hr_ring_node_count(ring); i++)
			if (!from_generation(hr_ring_node(ring, i), gen))
				bad++;
		/* Rings only move forward for a reader. */
		if (gen < last_gen)
			bad++;
		last_gen = gen;
		hr__publish_read_end(&s->pub);

		if (reads % 64 == 0) {
			/* The long-hold path: a counted reference outlives
			 * the swaps that happen meanwhile. */
			hr_ring *held = hr__publish_acquire(&s->pub);
			uint64_t g = hr_ring_revision(held);
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
			if (!from_generation(hr_ring_node(held, 0), g))
				bad++;
			hr_ring_release(held);
		}
		reads++;
	}
	s->reads[a->index] = reads;
	__atomic_fetch_add(&s->mismatches, bad, __ATOMIC_RELAXED);
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

int main(void)
{
	Suite *s = suite_create("publish");
	TCase *tc = tcase_create("rcu");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swap_under_readers);
	tcase_add_test(tc, acquire_outlives_destroy);
	tcase_add_test(tc, nested_sections);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
