/* SPDX-License-Identifier: MIT */
/*
 * test_diff.c - ring diffs: a position is inside a reported arc exactly
 * when its owner differs between the two rings (random keys and every arc
 * boundary), the arcs are ordered and maximal, the totals add up, and
 * empty rings, both placements and bad input behave.  `hashring diff`
 * itself is test_cli's.
 */
#include "hashring.h"
#include "diff.h"
#include "ring.h"
#include "hrt_check.h"
#include "hrt_rand.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64

/* Names live in a pool never reused, so ids stay unique and nodes keep
 * their strings when the array shifts. */
struct set {
	size_t n, next;
	hr_node nodes[MAXN];
	char ids[2 * MAXN][24], addrs[2 * MAXN][48];
};

static void set_init(struct set *s, size_t n, uint64_t *seed)
{
	s->n = s->next = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(s->ids[i], sizeof s->ids[i], "n%02zu", i);
		snprintf(s->addrs[i], sizeof s->addrs[i], "127.1.0.%zu:%u", i,
			 11211 + (unsigned)(splitmix64(seed) % 3));
		s->nodes[i] = (hr_node){ .id = s->ids[i], .addr = s->addrs[i],
					 .weight = 1 };
	}
}

static hr_ring *build(const struct set *s, hr_placement pl, unsigned vnodes)
{
	hr_ring_options o = { .size = sizeof o, .vnodes_per_weight = vnodes, .placement = pl };
	hr_error err = { 0 };
	hr_ring *r = NULL;

	ck_assert_msg(hr_ring_build(s->nodes, s->n, &o, 0, &r, &err) == HR_OK,
		      "%s", err.message);
	return r;
}

/* A change of membership: add, remove, reweight, warm or drain nodes. */
static void mutate(struct set *s, uint64_t *seed)
{
	uint64_t r = splitmix64(seed);

	switch (r % 5) {
	case 0:
		if (s->n < MAXN && s->next < 2 * MAXN) {
			size_t i = s->next++;

			snprintf(s->ids[i], sizeof s->ids[i], "x%02zu", i);
			snprintf(s->addrs[i], sizeof s->addrs[i], "127.2.0.%zu", i);
			s->nodes[s->n++] = (hr_node){ .id = s->ids[i], .addr = s->addrs[i],
						      .weight = 1 + (double)(r >> 40 & 3) };
		}
		break;
	case 1:
		if (s->n > 1) {
			size_t i = (r >> 8) % s->n;

			memmove(&s->nodes[i], &s->nodes[i + 1],
				(s->n - i - 1) * sizeof s->nodes[0]);
			s->n--;
		}
		break;
	case 2:
		s->nodes[(r >> 8) % s->n].weight = 1 + (double)(r >> 40 & 3);
		break;
	case 3:
		s->nodes[(r >> 8) % s->n].state = HR_STATE_WARMING;
		break;
	default:
		s->nodes[(r >> 8) % s->n].state = HR_STATE_DRAINING;
		break;
	}
}

static const hr_node *owner_at(const hr_ring *r, hr_view view, uint64_t pos)
{
	hr_lookup res = { 0 };

	if (!r)
		return NULL;
	hr__ring_lookup_pos(r, pos, &res);
	return view == HR_VIEW_WRITE ? res.node : res.read_node;
}

static bool same(const hr_node *a, const hr_node *b)
{
	return a && b ? strcmp(a->id, b->id) == 0 : a == b;
}

/* The arc holding `pos`, or NULL. */
static const hr_arc *arc_at(const hr_diff *d, uint64_t pos)
{
	const hr_arc *a = hr_diff_arcs(d);
	size_t lo = 0, hi = hr_diff_arc_count(d);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].start <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	a += lo - 1;
	return a->end == 0 || pos < a->end ? a : NULL;
}

/* Checks one position: in an arc exactly when the owners differ, and then
 * the arc names them. */
static void check_pos(const hr_diff *d, const hr_ring *a, const hr_ring *b,
		      hr_view view, uint64_t pos)
{
	const hr_node *oa = owner_at(a, view, pos), *ob = owner_at(b, view, pos);
	const hr_arc *arc = arc_at(d, pos);

	if (same(oa, ob)) {
		EXPECT(arc == NULL);
	} else {
		EXPECT(arc != NULL);
		EXPECT(same(arc->old_node, oa));
		EXPECT(same(arc->new_node, ob));
	}
}

static void check_diff(const hr_ring *a, const hr_ring *b, hr_view view,
		       uint64_t seed, size_t keys)
{
	hr_diff *d = NULL;
	const hr_arc *arcs;
	const hr_arc_total *t;
	size_t n, total_arcs = 0;
	double share = 0;

	ck_assert_int_eq(hr_diff_new(a, b, view, &d, NULL), HR_OK);
	n = hr_diff_arc_count(d);
	arcs = hr_diff_arcs(d);
	/* Ordered, disjoint, maximal. */
	for (size_t i = 0; i < n; i++) {
		EXPECT(!same(arcs[i].old_node, arcs[i].new_node));
		EXPECT(arcs[i].end == 0 || arcs[i].start < arcs[i].end);
		if (i) {
			EXPECT(arcs[i - 1].end != 0);
			EXPECT(arcs[i - 1].end <= arcs[i].start);
			EXPECT(arcs[i - 1].end < arcs[i].start ||
			       !same(arcs[i - 1].old_node, arcs[i].old_node) ||
			       !same(arcs[i - 1].new_node, arcs[i].new_node));
		}
		/* Boundaries: first and last position in, neighbours per
		 * their own owners. */
		check_pos(d, a, b, view, arcs[i].start);
		check_pos(d, a, b, view, arcs[i].end - 1);
		check_pos(d, a, b, view, arcs[i].start - 1);
		check_pos(d, a, b, view, arcs[i].end);
	}
	/* Every point of both rings and its neighbours. */
	for (int side = 0; side < 2; side++) {
		const hr_ring *r = side ? b : a;

		for (size_t i = 0; r && i < hr__ring_view_points(r, view); i++) {
			uint64_t pos;
			size_t node;

			hr__ring_view_point(r, view, i, &pos, &node);
			check_pos(d, a, b, view, pos);
			check_pos(d, a, b, view, pos + 1);
			check_pos(d, a, b, view, pos - 1);
		}
	}
	for (size_t k = 0; k < keys; k++)
		check_pos(d, a, b, view, splitmix64(&seed));
	check_pos(d, a, b, view, 0);
	check_pos(d, a, b, view, UINT64_MAX);

	/* Totals add up to the arcs and to the moved share. */
	t = hr_diff_totals(d);
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		size_t count = 0;

		for (size_t j = 0; j < n; j++)
			count += same(arcs[j].old_node, t[i].old_node) &&
				 same(arcs[j].new_node, t[i].new_node);
		EXPECT(count == t[i].arcs);
		EXPECT(t[i].share > 0 && t[i].share <= 1);
		total_arcs += t[i].arcs;
		share += t[i].share;
	}
	ck_assert_uint_eq(total_arcs, n);
	ck_assert_double_eq(hr__diff_moved_share(d), hr_ring_moved_share(a, b, view));
	ck_assert_double_eq_tol(share, hr__diff_moved_share(d), 1e-9);
	hr_diff_free(d);
}

START_TEST(test_random_changes)
{
	uint64_t seed = 1000 + (uint64_t)_i;
	hr_placement pl = _i % 2 ? HR_PLACEMENT_KETAMA : HR_PLACEMENT_XXH3;
	struct set s;
	hr_ring *old, *cur;

	set_init(&s, 2 + (size_t)(_i % 20), &seed);
	old = build(&s, pl, 1 + (unsigned)(_i % 3) * 20);
	for (int step = 0; step < 6; step++) {
		mutate(&s, &seed);
		cur = build(&s, pl, 1 + (unsigned)(_i % 3) * 20);
		check_diff(old, cur, HR_VIEW_WRITE, seed, 20000);
		check_diff(old, cur, HR_VIEW_READ, seed + 1, 20000);
		hr_ring_release(old);
		old = cur;
	}
	hr_ring_release(old);
}
END_TEST

/* Keys hashed as the rings hash them (MD5 in ketama mode). */
START_TEST(test_keys)
{
	uint64_t seed = 5;
	struct set s;

	for (int k = 0; k < 2; k++) {
		hr_placement pl = k ? HR_PLACEMENT_KETAMA : HR_PLACEMENT_XXH3;
		hr_ring *a, *b;
		hr_diff *d;
		size_t moved = 0;

		set_init(&s, 10, &seed);
		a = build(&s, pl, 0);
		s.n--;
		b = build(&s, pl, 0);
		ck_assert_int_eq(hr_diff_new(a, b, HR_VIEW_WRITE, &d, NULL), HR_OK);
		for (int i = 0; i < 50000; i++) {
			char key[32];
			hr_lookup la, lb;
			size_t len = (size_t)snprintf(key, sizeof key, "key-%d", i);

			hr_ring_lookup(a, key, len, &la, NULL);
			hr_ring_lookup(b, key, len, &lb, NULL);
			EXPECT((arc_at(d, hr__ring_key_pos(a, key, len)) != NULL) ==
			       !same(la.node, lb.node));
			moved += !same(la.node, lb.node);
		}
		/* Removing one of ten nodes moves about a tenth, all from it. */
		ck_assert(moved > 2500 && moved < 8000);
		ck_assert_uint_eq(hr_diff_total_count(d) >= 1, 1);
		for (size_t i = 0; i < hr_diff_total_count(d); i++)
			ck_assert_str_eq(hr_diff_totals(d)[i].old_node->id, s.ids[9]);
		hr_diff_free(d);
		hr_ring_release(a);
		hr_ring_release(b);
	}
}
END_TEST

START_TEST(test_empty)
{
	uint64_t seed = 9;
	struct set s;
	hr_ring *r, *empty;
	hr_diff *d;

	set_init(&s, 3, &seed);
	r = build(&s, HR_PLACEMENT_XXH3, 10);
	ck_assert_int_eq(hr_ring_build(NULL, 0, NULL, 0, &empty, NULL), HR_OK);

	ck_assert_int_eq(hr_diff_new(NULL, NULL, HR_VIEW_WRITE, &d, NULL), HR_OK);
	ck_assert_uint_eq(hr_diff_arc_count(d), 0);
	ck_assert_ptr_null(hr_diff_arcs(d));
	ck_assert_ptr_null(hr_diff_totals(d));
	ck_assert_double_eq(hr__diff_moved_share(d), 0);
	hr_diff_free(d);

	ck_assert_int_eq(hr_diff_new(r, r, HR_VIEW_READ, &d, NULL), HR_OK);
	ck_assert_uint_eq(hr_diff_arc_count(d), 0);
	hr_diff_free(d);

	/* Everything moves from nobody to the nodes, and back. */
	for (int dir = 0; dir < 2; dir++) {
		ck_assert_int_eq(hr_diff_new(dir ? r : empty, dir ? NULL : r,
					     HR_VIEW_WRITE, &d, NULL), HR_OK);
		ck_assert_double_eq(hr__diff_moved_share(d), 1.0);
		ck_assert_uint_eq(hr_diff_arcs(d)[0].start, 0);
		ck_assert_uint_eq(hr_diff_arcs(d)[hr_diff_arc_count(d) - 1].end, 0);
		ck_assert_uint_eq(hr_diff_total_count(d), 3);
		for (size_t i = 0; i < hr_diff_arc_count(d); i++)
			ck_assert_ptr_null(dir ? hr_diff_arcs(d)[i].new_node :
						 hr_diff_arcs(d)[i].old_node);
		hr_diff_free(d);
	}
	check_diff(empty, r, HR_VIEW_READ, 3, 1000);
	hr_ring_release(r);
	hr_ring_release(empty);
}
END_TEST

/* The diff keeps its rings: arcs stay readable after the caller lets go. */
START_TEST(test_holds_rings)
{
	uint64_t seed = 11;
	struct set s;
	hr_ring *a, *b;
	hr_diff *d;

	set_init(&s, 5, &seed);
	a = build(&s, HR_PLACEMENT_XXH3, 50);
	s.nodes[0].state = HR_STATE_DRAINING;
	b = build(&s, HR_PLACEMENT_XXH3, 50);
	ck_assert_int_eq(hr_diff_new(a, b, HR_VIEW_WRITE, &d, NULL), HR_OK);
	hr_ring_release(a);
	hr_ring_release(b);
	ck_assert_uint_gt(hr_diff_arc_count(d), 0);
	for (size_t i = 0; i < hr_diff_arc_count(d); i++)
		ck_assert_str_eq(hr_diff_arcs(d)[i].old_node->id, "n00");
	hr_diff_free(d);
}
END_TEST

START_TEST(test_bad_input)
{
	hr_diff *d = (hr_diff *)1;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_diff_new(NULL, NULL, HR_VIEW_WRITE, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_diff_new(NULL, NULL, (hr_view)2, &d, &err), HR_EINVAL);
	ck_assert_ptr_null(d);
	ck_assert(strstr(err.message, "view"));
	ck_assert_uint_eq(hr_diff_arc_count(NULL), 0);
	ck_assert_uint_eq(hr_diff_total_count(NULL), 0);
	ck_assert_ptr_null(hr_diff_arcs(NULL));
	ck_assert_double_eq(hr__diff_moved_share(NULL), 0);
	hr_diff_free(NULL);
}
END_TEST

static Suite *diff_suite(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("diff");

	tcase_add_loop_test(tc, test_random_changes, 0, 24);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_holds_rings);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(diff_suite());
}
