/* SPDX-License-Identifier: MIT */
/*
 * test_nodeset.c - the rings of a membership over the limits: a watcher's
 * set (nodeset.c) can hold more than a ring may, and which records are
 * left out is decided by one rule, whatever the order they came in
 * (docs/placement.md); a ring derived from the set equals a full build.
 */
#include "hashring.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "nodeset.h"
#include "record.h"
#include "ring.h"
#include "same_ring.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A watcher's set can hold more than a ring may (records arrive one by one):
 * hr__nodeset_derive() leaves out, deterministically, what does not fit.
 * The limits are lowered here so that small rings exercise the rule.
 */

#define VPW 10			/* points per weight in these sets */

struct rec_spec {
	const char *id;
	double weight;
	int64_t create_revision;
};

/* What left_out was told: ids and messages, in call order. */
struct told {
	int n;
	char id[64][48];
	char msg[64][HR_ERROR_MSG_MAX];
};

static void tell(void *ud, const hr__member *m, const hr_error *why)
{
	struct told *t = ud;

	ck_assert_int_lt(t->n, 64);
	snprintf(t->id[t->n], sizeof t->id[t->n], "%s", m->rec.id);
	snprintf(t->msg[t->n], sizeof t->msg[t->n], "%s", why->message);
	t->n++;
}

static const char *told_msg(const struct told *t, const char *id)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->id[i], id) == 0)
			return t->msg[i];
	return NULL;
}

/* The rule of docs/placement.md written out once more, by the text: in
 * order of (create_revision, id), each record that still fits.  Fills
 * taken[] (indexed like specs). */
static void reference_admit(const struct rec_spec *specs, size_t n,
			    size_t max_nodes, size_t max_points, bool *taken)
{
	size_t order[64], nodes = 0, points = 0;

	ck_assert_uint_le(n, 64);
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0; j--) {
			const struct rec_spec *a = &specs[order[j - 1]], *b = &specs[order[j]];

			if (a->create_revision < b->create_revision ||
			    (a->create_revision == b->create_revision &&
			     strcmp(a->id, b->id) < 0))
				break;
			size_t t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct rec_spec *r = &specs[order[k]];
		double x = round(r->weight * VPW);
		size_t p = x < 1 ? 1 : (size_t)x;

		taken[order[k]] = nodes < max_nodes && points + p <= max_points;
		if (taken[order[k]]) {
			nodes++;
			points += p;
		}
	}
}

/* Random sets put in random orders: the ring of the reference rule
 * whatever the order, and the same records told left out. */
START_TEST(admission_ignores_arrival_order)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = VPW };
	uint64_t rng = 11;

	for (int round_ = 0; round_ < 300; round_++) {
		struct rec_spec specs[40];
		char ids[40][16];
		size_t n = 1 + below(&rng, 40);
		size_t max_nodes = 1 + below(&rng, 45), max_points = 5 + below(&rng, 400);
		hr__nodeset ref = { 0 };
		hr_ring *want = NULL;
		bool taken[40];

		for (size_t i = 0; i < n; i++) {
			snprintf(ids[i], sizeof ids[i], "r%zu", below(&rng, 1000) * 100 + i);
			/* Revisions repeat: a transaction creates keys at one. */
			specs[i] = (struct rec_spec){ ids[i], random_weight(&rng),
						      (int64_t)(1 + below(&rng, 30)) };
		}
		reference_admit(specs, n, max_nodes, max_points, taken);
		for (size_t i = 0; i < n; i++)
			if (taken[i])
				put_record(&ref, specs[i].id, specs[i].weight, specs[i].create_revision);
		ck_assert_int_eq(hr__nodeset_build(&ref, &opts, 5, &want, NULL), HR_OK);
		for (int order = 0; order < 4; order++) {
			hr__nodeset s = { .max_nodes = max_nodes, .max_points = max_points };
			struct told t = { 0 };
			hr_ring *got = NULL;
			size_t perm[40];

			for (size_t i = 0; i < n; i++)
				perm[i] = i;
			for (size_t i = n; i > 1; i--) {
				size_t j = below(&rng, i), x = perm[i - 1];

				perm[i - 1] = perm[j];
				perm[j] = x;
			}
			for (size_t i = 0; i < n; i++)
				put_record(&s, specs[perm[i]].id, specs[perm[i]].weight,
				    specs[perm[i]].create_revision);
			ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 5, tell, &t,
							    &got, NULL), HR_OK);
			EXPECT(hr_ring_digest(got) == hr_ring_digest(want));
			EXPECT(hr_ring_node_count(got) <= max_nodes);
			EXPECT(hr_ring_point_count(got) <= max_points);
			for (size_t i = 0; i < n; i++)
				EXPECT((told_msg(&t, specs[i].id) != NULL) == !taken[i]);
			hr_ring_release(got);
			hr__nodeset_clear(&s);
		}
		hr_ring_release(want);
		hr__nodeset_clear(&ref);
	}
}
END_TEST

/* Puts and deletes as etcd numbers them (a new key gets the revision of its
 * creation, a changed one keeps it): each ring derived from the last equals
 * a full build of the set, and a record is told left out once per stay. */
START_TEST(admission_derive_equals_full_build)
{
	uint64_t rng = 23;

	for (int seq = 0; seq < 60; seq++) {
		hr__nodeset s = { .max_nodes = 4 + below(&rng, 20),
				  .max_points = 50 + below(&rng, 300) };
		hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = VPW };
		int64_t crev[UNIVERSE] = { 0 }, rev = 1;
		bool out_before[UNIVERSE] = { false };
		hr_ring *prev = NULL;
		char ids[UNIVERSE][16];

		for (size_t i = 0; i < UNIVERSE; i++)
			snprintf(ids[i], sizeof ids[i], "m%zu", i);
		for (int step = 0; step < 40; step++) {
			struct told t = { 0 };
			hr_ring *d = NULL, *f = NULL;
			size_t k = below(&rng, UNIVERSE);

			rev++;
			if (crev[k] && below(&rng, 3) == 0) {
				hr__nodeset_remove(&s, ids[k]);
				crev[k] = 0;
			} else {
				if (!crev[k])
					crev[k] = rev;
				put_record(&s, ids[k], random_weight(&rng) * (below(&rng, 4) ? 1 : 20),
				    crev[k]);
				out_before[k] = false;	/* a new record */
			}
			ck_assert_int_eq(hr__nodeset_derive(&s, prev, &opts, (uint64_t)rev,
							    tell, &t, &d, NULL), HR_OK);
			ck_assert_int_eq(hr__nodeset_build(&s, &opts, (uint64_t)rev, &f,
							   NULL), HR_OK);
			expect_same(d, f, xxh3, &rng);
			for (size_t i = 0; i < s.n; i++) {
				const hr__member *m = &s.m[i];
				size_t idx = (size_t)atoi(m->rec.id + 1);

				EXPECT(m->left_out == (hr_ring_find(d, m->rec.id) == NULL));
				EXPECT((told_msg(&t, m->rec.id) != NULL) ==
				       (m->left_out && !out_before[idx]));
				out_before[idx] = m->left_out;
			}
			hr_ring_release(f);
			hr_ring_release(prev);
			prev = d;
		}
		hr_ring_release(prev);
		hr__nodeset_clear(&s);
	}
}
END_TEST

/* The case of the report: old nodes and one heavy node fit; a second heavy
 * node does not and is the one left out (not an older one), while a later
 * small node still gets in; when the first heavy node goes, the second
 * comes back.  A weight past the limit on its own is left out too. */
START_TEST(admission_keeps_the_oldest)
{
	hr__nodeset s = { .max_points = 1000 };
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = VPW };
	double heavy = 60;	/* 600 points: one fits, two do not */
	struct told t = { 0 };
	hr_ring *ring = NULL;
	const char *msg;

	put_record(&s, "good", 1, 2);
	put_record(&s, "good2", 1, 3);
	put_record(&s, "big1", heavy, 4);
	put_record(&s, "big2", heavy, 5);
	put_record(&s, "good3", 1, 6);
	put_record(&s, "huge", 1e290, 7);
	ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 7, tell, &t, &ring, NULL),
			 HR_OK);
	ck_assert_uint_eq(hr_ring_node_count(ring), 4);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "big1"));
	ck_assert_ptr_nonnull(hr_ring_find(ring, "good3"));
	ck_assert_ptr_null(hr_ring_find(ring, "big2"));
	ck_assert_ptr_null(hr_ring_find(ring, "huge"));
	ck_assert_int_eq(t.n, 2);
	msg = told_msg(&t, "big2");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "node \"big2\": left out") &&
		      strstr(msg, "its 600 points") && strstr(msg, "limit of 1000 points"),
		      "%s", msg);
	msg = told_msg(&t, "huge");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "node \"huge\": weight 1e+290 gives 1e+291 points at 10 per unit of weight, more than 33554432 points, a ring's limit"),
		      "%s", msg);

	/* Nothing new left out: nothing told. */
	hr__nodeset_remove(&s, "good2");
	t.n = 0;
	hr_ring_release(ring);
	ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 8, tell, &t, &ring, NULL),
			 HR_OK);
	ck_assert_int_eq(t.n, 0);
	ck_assert_ptr_null(hr_ring_find(ring, "big2"));

	/* Room again: the left-out record comes back by the same rule. */
	hr__nodeset_remove(&s, "big1");
	hr_ring_release(ring);
	ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 9, tell, &t, &ring, NULL),
			 HR_OK);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "big2"));
	ck_assert_uint_eq(hr_ring_node_count(ring), 3);
	hr_ring_release(ring);

	/* The node limit, by the same order. */
	s.max_nodes = 2;
	t.n = 0;
	ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 10, tell, &t, &ring, NULL),
			 HR_OK);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "good"));
	ck_assert_ptr_nonnull(hr_ring_find(ring, "big2"));
	ck_assert_ptr_null(hr_ring_find(ring, "good3"));
	msg = told_msg(&t, "good3");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "limit of 2 nodes"), "%s", msg);
	hr_ring_release(ring);
	hr__nodeset_clear(&s);
}
END_TEST

/* Ketama placement takes whole weights only: another record is left out,
 * not a reason for every build to fail. */
START_TEST(admission_ketama_weights)
{
	hr__nodeset s = { 0 };
	hr_ring_options opts = { .size = sizeof opts, .placement = HR_PLACEMENT_KETAMA };
	struct told t = { 0 };
	hr_ring *ring = NULL;
	const char *msg;

	put_record(&s, "a", 1, 2);
	put_record(&s, "b", 1.5, 3);
	put_record(&s, "c", 2, 4);
	ck_assert_int_eq(hr__nodeset_derive(&s, NULL, &opts, 4, tell, &t, &ring, NULL),
			 HR_OK);
	ck_assert_uint_eq(hr_ring_node_count(ring), 2);
	ck_assert_ptr_null(hr_ring_find(ring, "b"));
	msg = told_msg(&t, "b");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "ketama placement needs a whole weight"), "%s", msg);
	hr_ring_release(ring);
	hr__nodeset_clear(&s);
}
END_TEST

static Suite *nodeset_suite(void)
{
	Suite *s = suite_create("nodeset");
	TCase *tc = tcase_create("admission");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, admission_ignores_arrival_order);
	tcase_add_test(tc, admission_derive_equals_full_build);
	tcase_add_test(tc, admission_keeps_the_oldest);
	tcase_add_test(tc, admission_ketama_weights);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(nodeset_suite());
}
