/* SPDX-License-Identifier: MIT */
/*
 * test_bounded.c - bounded-load lookups: with c = 1.25 and a skewed key
 * stream no node goes over its bound; below capacity the answers are the
 * plain ring's; the in-flight counter stays exact with many threads
 * acquiring and releasing at once (run it under TSan too); bad input.
 */
#include "hashring.h"
#include "hrt_check.h"
#include "hrt_rand.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODES 10

static char ids[NODES][8], addrs[NODES][32];

static hr_ring *ring_of(const double *weights, hr_placement pl)
{
	hr_node nodes[NODES];
	hr_ring_options o = { .size = sizeof o, .placement = pl };
	hr_ring *r;

	for (int i = 0; i < NODES; i++) {
		snprintf(ids[i], sizeof ids[i], "n%d", i);
		snprintf(addrs[i], sizeof addrs[i], "127.3.0.%d:11211", i);
		nodes[i] = (hr_node){ .id = ids[i], .addr = addrs[i],
				      .weight = weights ? weights[i] : 1 };
	}
	ck_assert_int_eq(hr_ring_build(nodes, NODES, &o, 0, &r, NULL), HR_OK);
	return r;
}

/* A key of a Zipf-like stream: a few keys carry most of the traffic. */
static size_t skewed_key(char *buf, uint64_t *seed)
{
	double u = (double)(splitmix64(seed) >> 11) / 9007199254740992.0;
	unsigned rank = (unsigned)floor(pow(1000.0, u * u * u)); /* 1..1000 */

	return (size_t)snprintf(buf, 32, "hot-%u", rank);
}

static size_t slot_of(const hr_ring *r, const hr_node *node)
{
	for (size_t i = 0; i < hr_ring_node_count(r); i++)
		if (hr_ring_node(r, i) == node)
			return i;
	ck_abort_msg("node not in ring");
	return 0;
}

/* c = 1.25, skewed keys, weights equal or not: after every assignment each
 * node holds at most ceil(c * total * w / W). */
START_TEST(test_skew_bounded)
{
	static const double unequal[NODES] = { 1, 2, 1, 3, 1, 1, 2, 1, 1, 4 };
	const double c = 1.25;
	hr_ring *r = ring_of(_i ? unequal : NULL, _i == 2 ? HR_PLACEMENT_KETAMA :
							    HR_PLACEMENT_XXH3);
	uint64_t loads[NODES] = { 0 }, plain[NODES] = { 0 }, seed = 77, total = 0;
	double sum_w = 0;
	bool plain_over = false;

	for (int i = 0; i < NODES; i++)
		sum_w += hr_ring_node(r, (size_t)i)->weight;
	for (int k = 0; k < 50000; k++) {
		char key[32];
		size_t len = skewed_key(key, &seed);
		const hr_node *got;
		hr_lookup res;

		EXPECT(hr_ring_lookup_bounded(r, key, len, HR_VIEW_WRITE, loads, c,
					      &got, NULL) == HR_OK);
		loads[slot_of(r, got)]++;
		total++;
		hr_ring_lookup(r, key, len, &res, NULL);
		plain[slot_of(r, res.node)]++;
		for (int i = 0; i < NODES; i++) {
			double w = hr_ring_node(r, (size_t)i)->weight;

			EXPECT(loads[i] <= (uint64_t)ceil(c * (double)total * w / sum_w));
			if (k == 49999 && plain[i] > ceil(c * (double)total * w / sum_w))
				plain_over = true;
		}
	}
	/* The stream is skewed enough that the plain ring breaks the bound. */
	ck_assert(plain_over);
	hr_ring_release(r);
}
END_TEST

/* Below capacity (no skew to absorb), answers are the plain lookup's. */
START_TEST(test_no_skew_is_plain)
{
	hr_ring *r = ring_of(NULL, _i ? HR_PLACEMENT_KETAMA : HR_PLACEMENT_XXH3);
	uint64_t zero[NODES] = { 0 }, even[NODES], seed = 3;

	for (int i = 0; i < NODES; i++)
		even[i] = 1000 + splitmix64(&seed) % 200; /* all below 1.25 x mean */
	for (int k = 0; k < 20000; k++) {
		char key[32];
		size_t len = (size_t)snprintf(key, sizeof key, "k%d", k);
		const hr_node *a, *b;
		hr_lookup res;

		hr_ring_lookup(r, key, len, &res, NULL);
		EXPECT(hr_ring_lookup_bounded(r, key, len, HR_VIEW_WRITE, zero, 1.25, &a, NULL) == HR_OK);
		EXPECT(hr_ring_lookup_bounded(r, key, len, HR_VIEW_WRITE, even, 1.25, &b, NULL) == HR_OK);
		EXPECT(a == res.node && b == res.node);
		/* A uniform stream of distinct keys with a large factor. */
	}
	hr_ring_release(r);
}
END_TEST

/* A node at capacity hands its keys to the next node clockwise. */
START_TEST(test_walks_past_full)
{
	hr_ring *r = ring_of(NULL, HR_PLACEMENT_XXH3);
	uint64_t loads[NODES] = { 0 };
	const hr_node *got, *pref[2];

	for (int k = 0; k < 2000; k++) {
		char key[32];
		size_t len = (size_t)snprintf(key, sizeof key, "w%d", k);
		size_t owner;

		ck_assert_int_eq(hr_ring_preflist(r, key, len, HR_VIEW_WRITE, pref, 2, NULL), 2);
		owner = slot_of(r, pref[0]);
		memset(loads, 0, sizeof loads);
		loads[owner] = 10; /* cap = ceil(1.25 * 11 / 10) = 2 */
		ck_assert_int_eq(hr_ring_lookup_bounded(r, key, len, HR_VIEW_WRITE,
							loads, 1.25, &got, NULL), HR_OK);
		EXPECT(got == pref[1]);
	}
	hr_ring_release(r);
}
END_TEST

START_TEST(test_bad_input)
{
	hr_ring *r = ring_of(NULL, HR_PLACEMENT_XXH3), *empty;
	uint64_t loads[NODES] = { 0 };
	const hr_node *got;
	hr_inflight *f = (hr_inflight *)1;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_ring_lookup_bounded(NULL, "k", 1, HR_VIEW_WRITE, loads, 1.25, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, HR_VIEW_WRITE, NULL, 1.25, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "bounded lookup: loads is NULL");
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, HR_VIEW_WRITE, loads, 0.99, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "balance factor 0.99: must be a finite number >= 1");
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, HR_VIEW_WRITE, loads, NAN, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, HR_VIEW_WRITE, loads, INFINITY, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, (hr_view)5, loads, 1.25, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_bounded(r, NULL, 1, HR_VIEW_WRITE, loads, 1.25, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_bounded(r, "k", 1, HR_VIEW_WRITE, loads, 1.25, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_build(NULL, 0, NULL, 0, &empty, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_lookup_bounded(empty, "k", 1, HR_VIEW_WRITE, loads, 1.25, &got, &err), HR_EEMPTY);
	ck_assert_int_eq(err.code, HR_EEMPTY);

	ck_assert_int_eq(hr_inflight_new(0.5, 0, &f, &err), HR_EINVAL);
	ck_assert_ptr_null(f);
	ck_assert(strstr(err.message, "0.5"));
	ck_assert_int_eq(hr_inflight_new(1.25, HR_NODES_MAX + 1, &f, &err), HR_ELIMIT);
	ck_assert_int_eq(hr_inflight_new(1.25, 0, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_inflight_new(1.25, 4, &f, &err), HR_OK);
	ck_assert_int_eq(hr_inflight_acquire(f, empty, "k", 1, HR_VIEW_WRITE, &got, NULL), HR_EEMPTY);
	ck_assert_int_eq(hr_inflight_acquire(f, NULL, "k", 1, HR_VIEW_WRITE, &got, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_inflight_release(f, "n1", &err), HR_ENOTFOUND);
	ck_assert_str_eq(err.message, "inflight release: no request in flight on \"n1\"");
	ck_assert_int_eq(hr_inflight_release(f, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_inflight_release(NULL, "n1", NULL), HR_EINVAL);
	/* Ten distinct ids do not fit a counter made for four. */
	int rc = HR_OK;
	for (int k = 0; k < 1000 && rc == HR_OK; k++) {
		char key[16];

		snprintf(key, sizeof key, "f%d", k);
		rc = hr_inflight_acquire(f, r, key, strlen(key), HR_VIEW_WRITE, &got, &err);
	}
	ck_assert_int_eq(rc, HR_ELIMIT);
	ck_assert_str_eq(err.message, "inflight acquire: more than max_ids (4) node ids");
	ck_assert_uint_eq(hr_inflight_load(NULL, "n1"), 0);
	ck_assert_uint_eq(hr_inflight_total(NULL), 0);
	hr_inflight_free(f);
	hr_inflight_free(NULL);
	hr_ring_release(empty);
	hr_ring_release(r);
}
END_TEST

/* Single thread: the counter follows the same bound as caller loads. */
START_TEST(test_inflight_bound)
{
	hr_ring *r = ring_of(NULL, HR_PLACEMENT_XXH3);
	hr_inflight *f;
	uint64_t seed = 8;

	ck_assert_int_eq(hr_inflight_new(1.25, 0, &f, NULL), HR_OK);
	for (int k = 0; k < 20000; k++) {
		char key[32];
		size_t len = skewed_key(key, &seed);
		const hr_node *got;
		uint64_t total;

		EXPECT(hr_inflight_acquire(f, r, key, len, HR_VIEW_WRITE, &got, NULL) == HR_OK);
		total = hr_inflight_total(f);
		EXPECT(total == (uint64_t)k + 1);
		EXPECT(hr_inflight_load(f, got->id) <=
		       (uint64_t)ceil(1.25 * (double)total / NODES));
	}
	for (int i = 0; i < NODES; i++) {
		uint64_t n = hr_inflight_load(f, ids[i]);

		for (uint64_t j = 0; j < n; j++)
			EXPECT(hr_inflight_release(f, ids[i], NULL) == HR_OK);
		ck_assert_int_eq(hr_inflight_release(f, ids[i], NULL), HR_ENOTFOUND);
	}
	ck_assert_uint_eq(hr_inflight_total(f), 0);
	hr_inflight_free(f);
	hr_ring_release(r);
}
END_TEST

/* Many threads acquire and release at once, switching rings midway. */
struct worker {
	hr_inflight *f;
	hr_ring *rings[2];
	uint64_t seed;
	uint64_t max_seen;
};

#define THREADS 4
#define HELD 8

static void *work(void *arg)
{
	struct worker *w = arg;
	char held[HELD][HR_ID_MAX + 1];
	int nheld = 0;

	for (int k = 0; k < 20000; k++) {
		char key[32];
		size_t len = skewed_key(key, &w->seed);
		const hr_node *got;
		hr_ring *r = w->rings[k >= 10000];

		if (nheld == HELD) {
			int i = (int)(splitmix64(&w->seed) % HELD);

			if (hr_inflight_release(w->f, held[i], NULL) != HR_OK)
				return (void *)"release failed";
			memcpy(held[i], held[--nheld], sizeof held[i]);
		}
		if (hr_inflight_acquire(w->f, r, key, len, HR_VIEW_WRITE, &got, NULL) != HR_OK)
			return (void *)"acquire failed";
		strcpy(held[nheld++], got->id);
		if (hr_inflight_load(w->f, got->id) > w->max_seen)
			w->max_seen = hr_inflight_load(w->f, got->id);
	}
	while (nheld)
		if (hr_inflight_release(w->f, held[--nheld], NULL) != HR_OK)
			return (void *)"release failed";
	return NULL;
}

START_TEST(test_inflight_threads)
{
	static const double w2[NODES] = { 2, 1, 1, 1, 1, 1, 1, 1, 1, 3 };
	struct worker w[THREADS];
	pthread_t t[THREADS];
	hr_inflight *f;
	hr_ring *r1 = ring_of(NULL, HR_PLACEMENT_XXH3);
	hr_ring *r2 = ring_of(w2, HR_PLACEMENT_XXH3);

	ck_assert_int_eq(hr_inflight_new(1.25, 64, &f, NULL), HR_OK);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ f, { r1, r2 }, 100 + (uint64_t)i, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *res;

		ck_assert_int_eq(pthread_join(t[i], &res), 0);
		ck_assert_msg(res == NULL, "%s", (const char *)res);
		/* At most THREADS * HELD in flight: the bound keeps any one
		 * node well under that. */
		ck_assert_uint_le(w[i].max_seen, THREADS * HELD);
	}
	ck_assert_uint_eq(hr_inflight_total(f), 0);
	for (int i = 0; i < NODES; i++)
		ck_assert_uint_eq(hr_inflight_load(f, ids[i]), 0);
	hr_inflight_free(f);
	hr_ring_release(r1);
	hr_ring_release(r2);
}
END_TEST

static Suite *bounded_suite(void)
{
	Suite *s = suite_create("bounded");
	TCase *tc = tcase_create("bounded");

	tcase_add_loop_test(tc, test_skew_bounded, 0, 3);
	tcase_add_loop_test(tc, test_no_skew_is_plain, 0, 2);
	tcase_add_test(tc, test_walks_past_full);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_inflight_bound);
	tcase_add_test(tc, test_inflight_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(bounded_suite());
}
