/* SPDX-License-Identifier: MIT */
/*
 * test_maglev.c - Maglev placement (docs/placement.md section 14): the
 * vectors of the independent Python implementation, the table read
 * against the walk of the circle, balance, movement, the option's errors,
 * and the ring operations (diffs, bounded loads, shares) on tables.
 */
#include "hashring.h"
#include "ring.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"
#include "hrt_vectors.h"
#include "hrt_rand.h"

#include <check.h>
#include <math.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTORS HR_TEST_DATA_DIR "/vectors/maglev.json"

static hr_ring_options maglev_opts(uint64_t m)
{
	hr_ring_options o;

	hr_ring_options_init(&o);
	o.placement = HR_PLACEMENT_MAGLEV;
	o.maglev_size = m;
	return o;
}

static hr_ring *maglev_ring(const hr_node *nodes, size_t n, uint64_t m)
{
	hr_ring_options o = maglev_opts(m);

	return hrt_ring_build(nodes, n, &o, 0);
}

/* ---- vectors ------------------------------------------------------------------ */

static cJSON *load_vectors(void)
{
	return hrt_load_json(VECTORS);
}

START_TEST(vectors_sets)
{
	cJSON *doc = load_vectors(), *set;
	int r = cJSON_GetObjectItem(doc, "replicas")->valueint;
	int sets = 0;

	cJSON_ArrayForEach(set, cJSON_GetObjectItem(doc, "sets")) {
		hr_ring_options o = maglev_opts(
			(uint64_t)cJSON_GetObjectItem(set, "maglev_size")->valuedouble);
		hr_ring *ring = hrt_vectors_ring(set, &o);

		hrt_vectors_check_set(set, ring, r, true);
		hr_ring_release(ring);
		sets++;
	}
	ck_assert_int_ge(sets, 6);
	cJSON_Delete(doc);
}
END_TEST

/* ---- the table read against the circle ---------------------------------------- */

/* The owner by the contract's walk: the first point at or after pos. */
static size_t walk_owner(const hr_ring *ring, hr_view view, uint64_t pos)
{
	size_t n = hr__ring_view_points(ring, view), lo = 0, hi = n, node;
	uint64_t p;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		hr__ring_view_point(ring, view, mid, &p, &node);
		if (p < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	hr__ring_view_point(ring, view, lo == n ? 0 : lo, &p, &node);
	return node;
}

START_TEST(table_read_is_the_walk)
{
	static const uint64_t sizes[] = { 101, 1009, 65537, 655357 };
	hrt_nodes *s = hrt_nodes_new(40, "n%zu", NULL, 0);
	uint64_t seed = 7;

	s->nodes[3].state = HR_STATE_WARMING;
	s->nodes[5].state = HR_STATE_DRAINING;
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint64_t m = sizes[k];
#ifdef HR_SANITIZED
		if (m > 65537)
			continue;
#endif
		hr_ring *ring = maglev_ring(s->nodes, s->n, m);

		ck_assert_uint_eq(hr__ring_view_points(ring, HR_VIEW_WRITE), m);
		for (int t = 0; t < 20000; t++) {
			uint64_t pos;
			size_t j;
			hr_lookup lk;

			/* Around slot boundaries, where rounding would show. */
			if (t % 2) {
				uint64_t p;
				size_t node;

				j = splitmix64(&seed) % m;
				hr__ring_view_point(ring, HR_VIEW_WRITE, j, &p, &node);
				pos = p + (t % 4 == 1 ? 0 : 1);
			} else {
				pos = t < 4 ? (uint64_t)0 - (uint64_t)(t / 2) : splitmix64(&seed);
			}
			ck_assert_int_eq(hr__ring_lookup_pos(ring, pos, &lk), HR_OK);
			ck_assert_ptr_eq(lk.node, hr_ring_node(ring, walk_owner(ring, HR_VIEW_WRITE, pos)));
			ck_assert_ptr_eq(lk.read_node, hr_ring_node(ring, walk_owner(ring, HR_VIEW_READ, pos)));
		}
		hr_ring_release(ring);
	}
	hrt_nodes_free(s);
}
END_TEST

/* ---- balance and movement ------------------------------------------------------ */

/* Slots are the quotas: within one of the exact weighted share. */
START_TEST(slots_follow_weights)
{
	hrt_nodes *s = hrt_nodes_new(100, "node-%zu", NULL, 0);
	double total = 0, most = 0;
	uint64_t m = 10007;	/* >= 100 N */
	hr_ring *ring;

	ring = maglev_ring(s->nodes, s->n, m);
	for (size_t i = 0; i < s->n; i++) {
		unsigned v = hr_ring_node_vnodes(ring, hr_ring_node(ring, i));

		ck_assert_uint_ge(v, m / s->n);
		ck_assert_uint_le(v, m / s->n + 1);
		if (v > most)
			most = v;
	}
	ck_assert_double_le(most / ((double)m / (double)s->n), 1.01);
	hr_ring_release(ring);

	for (size_t i = 0; i < s->n; i++)
		total += s->nodes[i].weight = 1 + (double)(i % 4);
	ring = maglev_ring(s->nodes, s->n, m);
	for (size_t i = 0; i < s->n; i++) {
		const hr_node *nd = hr_ring_find(ring, s->ids[i]);
		double fair = (double)m * nd->weight / total;
		unsigned v = hr_ring_node_vnodes(ring, nd);

		ck_assert_double_lt(fabs((double)v - fair), 1.0);
		/* A share is its slots' arcs: v / m to a few ulps. */
		ck_assert_double_eq_tol(hrt_node_share(ring, nd, HR_VIEW_WRITE),
					(double)v / (double)m, 1e-12);
	}
	ck_assert_uint_eq(hr_ring_point_count(ring), m);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* A leave moves the leaver's slots and a few more; a join moves about its
 * share.  The paper's bound is loose; these are sanity bounds. */
START_TEST(movement_near_minimal)
{
	hrt_nodes *s = hrt_nodes_new(101, "node-%zu", NULL, 0);
	hr_ring *all, *fewer;
	double moved, min;
	hr_diff *d;
	hr_error err = { 0 };

	all = maglev_ring(s->nodes, s->n, 65537);
	fewer = maglev_ring(s->nodes, s->n - 1, 65537);	/* node-100 leaves */
	min = hrt_node_share(all, hr_ring_find(all, "node-100"), HR_VIEW_WRITE);
	moved = hr_ring_moved_share(all, fewer, HR_VIEW_WRITE);
	ck_assert_double_ge(moved, min);
	ck_assert_double_le(moved, 2.0 * min);
	/* The diff agrees and every arc of the leaver is in it. */
	ck_assert_int_eq(hr_diff_new(all, fewer, HR_VIEW_WRITE, &d, &err), HR_OK);
	{
		double from_leaver = 0, sum = 0;

		for (size_t i = 0; i < hr_diff_total_count(d); i++) {
			const hr_arc_total *t = &hr_diff_totals(d)[i];

			sum += t->share;
			if (strcmp(t->old_node->id, "node-100") == 0)
				from_leaver += t->share;
		}
		ck_assert_double_eq_tol(sum, moved, 1e-12);
		ck_assert_double_eq_tol(from_leaver, min, 1e-12);
	}
	hr_diff_free(d);
	/* The join, the other way round. */
	ck_assert_double_le(hr_ring_moved_share(fewer, all, HR_VIEW_WRITE), 2.0 * min);
	hr_ring_release(all);
	hr_ring_release(fewer);
	hrt_nodes_free(s);
}
END_TEST

/* ---- the option ------------------------------------------------------------------ */

START_TEST(bad_sizes_are_refused)
{
	static const struct {
		uint64_t m;
		const char *msg;
	} cases[] = {
		{ 1, "maglev_size 1 is out of range: a prime from 101 to 16777213" },
		{ 97, "maglev_size 97 is out of range" },
		{ 100, "maglev_size 100 is out of range" },
		{ 65536, "maglev_size 65536 is not a prime" },
		{ 1000001, "maglev_size 1000001 is not a prime" },
		{ 16777216, "maglev_size 16777216 is out of range" },
		{ UINT64_MAX, "is out of range" },
	};
	hrt_nodes *s = hrt_nodes_new(3, "n%zu", NULL, 0);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		hr_ring_options o = maglev_opts(cases[i].m);
		hr_error err = { 0 };
		hr_ring *ring = (hr_ring *)1;

		ck_assert_int_eq(hr_ring_build(s->nodes, s->n, &o, 0, &ring, &err), HR_EINVAL);
		ck_assert_ptr_null(ring);
		ck_assert_msg(strstr(err.message, cases[i].msg), "%s", err.message);
		ck_assert_int_eq(hr_node_check(&s->nodes[0], &o, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, cases[i].msg), "%s", err.message);
	}
	/* Other placements do not read it. */
	{
		hr_ring_options o = maglev_opts(100);
		hr_ring *ring;

		o.placement = HR_PLACEMENT_XXH3;
		ring = hrt_ring_build(s->nodes, s->n, &o, 0);
		hr_ring_release(ring);
	}
	hrt_nodes_free(s);
}
END_TEST

/* 0 is the default; an older program's options (without the field) too. */
START_TEST(default_size)
{
	hrt_nodes *s = hrt_nodes_new(5, "n%zu", NULL, 0);
	hr_ring_options o = maglev_opts(0);
	hr_ring *a = hrt_ring_build(s->nodes, s->n, &o, 0), *b;

	ck_assert_uint_eq(hr_ring_point_count(a), HR_MAGLEV_SIZE_DEFAULT);
	o.maglev_size = HR_MAGLEV_SIZE_DEFAULT;
	b = hrt_ring_build(s->nodes, s->n, &o, 0);
	ck_assert_uint_eq(hr_ring_digest(a), hr_ring_digest(b));
	hr_ring_release(b);
	o.maglev_size = 12345;	/* not read: the struct ends before it */
	o.size = offsetof(hr_ring_options, maglev_size);
	b = hrt_ring_build(s->nodes, s->n, &o, 0);
	ck_assert_uint_eq(hr_ring_digest(a), hr_ring_digest(b));
	hr_ring_release(b);
	hr_ring_release(a);
	hrt_nodes_free(s);
}
END_TEST

/* No two placements, nor two table sizes, share a digest. */
START_TEST(digests_differ)
{
	hrt_nodes *s = hrt_nodes_new(4, "n%zu", "127.0.0.1:%zu", 11211);
	hr_ring_options o = maglev_opts(0);
	uint64_t d[4];
	hr_ring *r;

	r = hrt_ring_build(s->nodes, s->n, &o, 0);
	d[0] = hr_ring_digest(r);
	hr_ring_release(r);
	o.maglev_size = 65521;
	r = hrt_ring_build(s->nodes, s->n, &o, 0);
	d[1] = hr_ring_digest(r);
	hr_ring_release(r);
	o.placement = HR_PLACEMENT_XXH3;
	r = hrt_ring_build(s->nodes, s->n, &o, 0);
	d[2] = hr_ring_digest(r);
	hr_ring_release(r);
	o.placement = HR_PLACEMENT_KETAMA;
	r = hrt_ring_build(s->nodes, s->n, &o, 0);
	d[3] = hr_ring_digest(r);
	hr_ring_release(r);
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			ck_assert_uint_ne(d[i], d[j]);
	hrt_nodes_free(s);
}
END_TEST

/* ---- views and the ring operations --------------------------------------------- */

/* A warming node takes writes only, a draining one reads only; input
 * order does not matter. */
START_TEST(views_and_order)
{
	hrt_nodes *s = hrt_nodes_new(6, "n%zu", NULL, 0);
	hr_node rev[6];
	hr_ring *a, *b;

	s->nodes[1].state = HR_STATE_WARMING;
	s->nodes[2].state = HR_STATE_DRAINING;
	a = maglev_ring(s->nodes, s->n, 1009);
	for (size_t i = 0; i < 6; i++)
		rev[i] = s->nodes[5 - i];
	b = maglev_ring(rev, 6, 1009);
	ck_assert_uint_eq(hr_ring_digest(a), hr_ring_digest(b));
	for (int k = 0; k < 5000; k++) {
		char key[16];
		hr_lookup la, lb;
		int len = snprintf(key, sizeof key, "k%d", k);

		ck_assert_int_eq(hr_ring_lookup(a, key, (size_t)len, &la, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_lookup(b, key, (size_t)len, &lb, NULL), HR_OK);
		ck_assert_str_eq(la.node->id, lb.node->id);
		ck_assert_str_eq(la.read_node->id, lb.read_node->id);
		ck_assert_str_ne(la.node->id, "n2");
		ck_assert_str_ne(la.read_node->id, "n1");
	}
	ck_assert_double_eq(hrt_node_share(a, hr_ring_find(a, "n1"), HR_VIEW_READ), 0);
	ck_assert_double_eq(hrt_node_share(a, hr_ring_find(a, "n2"), HR_VIEW_WRITE), 0);
	hr_ring_release(a);
	hr_ring_release(b);
	hrt_nodes_free(s);
}
END_TEST

/* Batch lookups walk the circle (view_scan); they answer as the table read. */
START_TEST(batch_agrees)
{
	enum { N = 4096 };
	hrt_nodes *s = hrt_nodes_new(30, "n%zu", NULL, 0);
	static char keys[N][16];
	static const void *kp[N];
	static size_t lens[N];
	static hr_batch_owner out[N];
	hr_ring *ring;
	hr_error err = { 0 };

	s->nodes[7].state = HR_STATE_WARMING;
	ring = maglev_ring(s->nodes, s->n, 65537);
	for (size_t i = 0; i < N; i++) {
		lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "b%zu", i);
		kp[i] = keys[i];
	}
	ck_assert_int_eq(hr_ring_lookup_batch(ring, kp, lens, N, out, &err), HR_OK);
	for (size_t i = 0; i < N; i++) {
		hr_lookup lk;

		ck_assert_int_eq(hr_ring_lookup(ring, keys[i], lens[i], &lk, NULL), HR_OK);
		ck_assert_ptr_eq(hr_ring_node(ring, out[i].node), lk.node);
		ck_assert_ptr_eq(hr_ring_node(ring, out[i].read_node), lk.read_node);
	}
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* More nodes than slots: some own none, every answer is one that does. */
START_TEST(more_nodes_than_slots)
{
	hrt_nodes *s = hrt_nodes_new(300, "n%zu", NULL, 0);
	hr_ring *ring = maglev_ring(s->nodes, s->n, 101);
	size_t owning = 0;

	for (size_t i = 0; i < s->n; i++)
		owning += hr_ring_node_vnodes(ring, hr_ring_node(ring, i)) > 0;
	ck_assert_uint_eq(owning, 101);
	for (int k = 0; k < 1000; k++) {
		char key[16];
		hr_lookup lk;
		int len = snprintf(key, sizeof key, "k%d", k);

		ck_assert_int_eq(hr_ring_lookup(ring, key, (size_t)len, &lk, NULL), HR_OK);
		ck_assert_uint_eq(hr_ring_node_vnodes(ring, lk.node), 1);
	}
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(empty_views)
{
	hrt_nodes *s = hrt_nodes_new(2, "n%zu", NULL, 0);
	hr_ring *ring = maglev_ring(NULL, 0, 101);
	const hr_node *pref[2];
	hr_lookup lk;

	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_EEMPTY);
	ck_assert_uint_eq(hr_ring_point_count(ring), 0);
	hr_ring_release(ring);
	s->nodes[0].state = s->nodes[1].state = HR_STATE_DRAINING;
	ring = maglev_ring(s->nodes, s->n, 101);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_OK);
	ck_assert_ptr_null(lk.node);
	ck_assert_ptr_nonnull(lk.read_node);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_WRITE, pref, 2, NULL), 0);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_READ, pref, 2, NULL), 2);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* Bounded loads walk the table past full nodes. */
START_TEST(bounded_loads)
{
	hrt_nodes *s = hrt_nodes_new(4, "n%zu", NULL, 0);
	hr_ring *ring = maglev_ring(s->nodes, s->n, 1009);
	uint64_t loads[4] = { 0, 0, 0, 0 };
	const hr_node *got, *pref[2];
	hr_lookup lk;

	ck_assert_int_eq(hr_ring_lookup(ring, "key", 3, &lk, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_lookup_bounded(ring, "key", 3, HR_VIEW_WRITE, loads,
						1.25, &got, NULL), HR_OK);
	ck_assert_ptr_eq(got, lk.node);
	/* The owner at capacity: the next distinct node of the walk. */
	for (size_t i = 0; i < 4; i++)
		loads[i] = hr_ring_node(ring, i) == lk.node ? 10 : 2;
	ck_assert_int_eq(hr_ring_preflist(ring, "key", 3, HR_VIEW_WRITE, pref, 2, NULL), 2);
	ck_assert_int_eq(hr_ring_lookup_bounded(ring, "key", 3, HR_VIEW_WRITE, loads,
						1.25, &got, NULL), HR_OK);
	ck_assert_ptr_eq(got, pref[1]);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("maglev");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vectors_sets);
	tcase_add_test(tc, table_read_is_the_walk);
	tcase_add_test(tc, slots_follow_weights);
	tcase_add_test(tc, movement_near_minimal);
	tcase_add_test(tc, bad_sizes_are_refused);
	tcase_add_test(tc, default_size);
	tcase_add_test(tc, digests_differ);
	tcase_add_test(tc, views_and_order);
	tcase_add_test(tc, batch_agrees);
	tcase_add_test(tc, more_nodes_than_slots);
	tcase_add_test(tc, empty_views);
	tcase_add_test(tc, bounded_loads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(suite());
}
