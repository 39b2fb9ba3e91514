/* SPDX-License-Identifier: MIT */
/*
 * test_rendezvous.c - weighted rendezvous placement (docs/placement.md
 * section 15): the vectors of the independent Python implementation
 * (scores to the bit, owners, preference lists, shares, digests), exact
 * shares on a million keys, minimal movement, the moved shares and diff
 * totals of the formulas against counted keys, views, bounded loads and
 * bad input.
 */
#include "hashring.h"
#include "rendezvous.h"
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

#define VECTORS HR_TEST_DATA_DIR "/vectors/rendezvous.json"
#define MANY 1000000	/* key hashes counted for the shares */
#define MOVES 250000	/* ... and for each pair of rings */

static hr_ring_options rdv_opts(void)
{
	hr_ring_options o;

	hr_ring_options_init(&o);
	o.placement = HR_PLACEMENT_RENDEZVOUS;
	return o;
}

static hr_ring *rdv_ring(const hr_node *nodes, size_t n)
{
	hr_ring_options o = rdv_opts();

	return hrt_ring_build(nodes, n, &o, 0);
}

/* The write owner's slot at key hash `pos` (SIZE_MAX: none). */
static size_t owner_slot(const hr_ring *ring, uint64_t pos, hr_view view)
{
	hr_lookup lk;
	const hr_node *nd;

	if (hr__ring_lookup_pos(ring, pos, &lk) != HR_OK)
		return SIZE_MAX;
	nd = view == HR_VIEW_WRITE ? lk.node : lk.read_node;
	for (size_t i = 0; nd && i < hr_ring_node_count(ring); i++)
		if (hr_ring_node(ring, i) == nd)
			return i;
	return SIZE_MAX;
}

static const char *owner_id(const hr_ring *ring, uint64_t pos, hr_view view)
{
	size_t slot = owner_slot(ring, pos, view);

	return slot == SIZE_MAX ? NULL : hr_ring_node(ring, slot)->id;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* |count - n p| within `k` standard deviations of a binomial. */
static void check_count(size_t count, size_t n, double p, double k,
			const char *what)
{
	double sd = sqrt((double)n * p * (1 - p));

	ck_assert_msg(fabs((double)count - (double)n * p) <= k * sd + 1,
		      "%s: %zu of %zu, expected %.1f (sd %.1f)", what, count, n,
		      (double)n * p, sd);
}

/* ---- vectors ------------------------------------------------------------------ */

START_TEST(vectors_scores)
{
	cJSON *doc = hrt_load_json(VECTORS), *c;
	int n = 0;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "scores")) {
		const char *id = cJSON_GetArrayItem(c, 0)->valuestring;
		double w = cJSON_GetArrayItem(c, 1)->valuedouble;
		const char *key = cJSON_GetArrayItem(c, 2)->valuestring;
		double h = strtod(cJSON_GetArrayItem(c, 3)->valuestring, NULL);
		double ln = strtod(cJSON_GetArrayItem(c, 4)->valuestring, NULL);
		double score = strtod(cJSON_GetArrayItem(c, 5)->valuestring, NULL);
		uint64_t idh = hr_hash_key(id, strlen(id));
		struct rdv_member m;

		ck_assert_msg(hr__rdv_ln(h) == ln, "ln(%a) = %a, not %a", h,
			      hr__rdv_ln(h), ln);
		for (int b = 0; b < 8; b++)
			m.id_hash[b] = (unsigned char)(idh >> (8 * b));
		m.weight = w;
		/* The boundary cases give h alone (empty id and key). */
		if (*id)
			ck_assert_msg(hr__rdv_score(&m, hr_hash_key(key, strlen(key))) == score,
				      "score of %s (weight %g) for \"%s\": %a, not %a",
				      id, w, key,
				      hr__rdv_score(&m, hr_hash_key(key, strlen(key))),
				      score);
		else
			ck_assert(-1.0 / hr__rdv_ln(h) == score);
		n++;
	}
	ck_assert_int_ge(n, 60);
	cJSON_Delete(doc);
}
END_TEST

START_TEST(vectors_sets)
{
	cJSON *doc = hrt_load_json(VECTORS), *set;
	int r = cJSON_GetObjectItem(doc, "replicas")->valueint;
	int sets = 0;

	cJSON_ArrayForEach(set, cJSON_GetObjectItem(doc, "sets")) {
		hr_ring_options o = rdv_opts();
		const cJSON *item, *shares = cJSON_GetObjectItem(set, "share");
		hr_ring *ring = hrt_vectors_ring(set, &o);

		hrt_vectors_check_set(set, ring, r, true);
		/* hr_ring_node_shares() gives the vectors' shares. */
		for (int v = 0; v < 2; v++) {
			double all[64];
			size_t count = hr_ring_node_shares(ring, (hr_view)v, all, 64);

			cJSON_ArrayForEach(item, cJSON_GetObjectItem(shares, v ? "read" : "write")) {
				const hr_node *nd = hr_ring_find(ring, item->string);

				for (size_t i = 0; i < count; i++)
					if (hr_ring_node(ring, i) == nd)
						ck_assert(all[i] == item->valuedouble);
			}
		}
		hr_ring_release(ring);
		sets++;
	}
	ck_assert_int_ge(sets, 8);
	cJSON_Delete(doc);
}
END_TEST

/* ---- balance and movement --------------------------------------------------- */

static const double weights[10] = { 1, 2, 3, 0.5, 1, 1.5, 4, 0.25, 1, 2.75 };

static hrt_nodes *weighted(size_t n)
{
	hrt_nodes *s = hrt_nodes_new(n, "node-%zu", NULL, 0);

	for (size_t i = 0; i < n; i++)
		s->nodes[i].weight = weights[i % 10];
	return s;
}

START_TEST(shares_are_weights)
{
	hrt_nodes *s = weighted(10);
	hr_ring *ring = rdv_ring(s->nodes, s->n);
	size_t count[10] = { 0 };
	double share[10], w = 0;
	uint64_t seed = 1;

	for (size_t i = 0; i < 10; i++)
		w += weights[i];
	ck_assert_uint_eq(hr_ring_node_shares(ring, HR_VIEW_WRITE, share, 10), 10);
	for (size_t i = 0; i < MANY; i++)
		count[owner_slot(ring, splitmix64(&seed), HR_VIEW_WRITE)]++;
	for (size_t i = 0; i < 10; i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		/* w / W, exactly the double of the division. */
		ck_assert(share[i] == nd->weight / w);
		ck_assert(hrt_node_share(ring, nd, HR_VIEW_WRITE) == share[i]);
		check_count(count[i], MANY, share[i], 5, nd->id);
	}
	ck_assert_uint_eq(hr_ring_point_count(ring), 10);
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, hr_ring_node(ring, 3)), 1);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* The diff's totals as a table: share of (old id, new id). */
static double total_of(const hr_diff *d, const char *old_id, const char *new_id)
{
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		const hr_arc_total *t = &hr_diff_totals(d)[i];

		if (same(t->old_node ? t->old_node->id : NULL, old_id) &&
		    same(t->new_node ? t->new_node->id : NULL, new_id))
			return t->share;
	}
	return 0;
}

/*
 * Counts over many key hashes where the owners of `a` and `b` differ, and
 * checks: only pairs the diff names move, each pair's count and the total
 * within 5 standard deviations of the diff's share and the moved share,
 * and the totals sum to the moved share.
 */
static size_t check_moves(const hr_ring *a, const hr_ring *b, hr_view view,
			  const char *only_from, const char *only_to)
{
	double moved = hr_ring_moved_share(a, b, view), sum = 0;
	hr_diff *d;
	hr_error err = { 0 };
	size_t n = 0, k, pairs;
	uint64_t seed = 7;
	struct { const char *o, *n; size_t c; } seen[256];

	ck_assert_int_eq(hr_diff_new(a, b, view, &d, &err), HR_OK);
	ck_assert_uint_eq(hr_diff_arc_count(d), 0);
	ck_assert_ptr_null(hr_diff_arcs(d));
	pairs = hr_diff_total_count(d);
	ck_assert_uint_le(pairs, 256);
	for (k = 0; k < pairs; k++) {
		const hr_arc_total *t = &hr_diff_totals(d)[k];

		seen[k].o = t->old_node ? t->old_node->id : NULL;
		seen[k].n = t->new_node ? t->new_node->id : NULL;
		seen[k].c = 0;
		ck_assert(t->share > 0 && t->share <= 1);
		ck_assert_uint_eq(t->arcs, 0);
		sum += t->share;
		/* Sorted by old id, then new id, none first. */
		if (k) {
			const hr_arc_total *p = &hr_diff_totals(d)[k - 1];
			int c = !p->old_node || !t->old_node ?
				!t->old_node - !p->old_node :
				strcmp(p->old_node->id, t->old_node->id);

			ck_assert(c < 0 || (c == 0 && p->new_node &&
					    strcmp(p->new_node->id, t->new_node->id) < 0));
		}
	}
	ck_assert_double_eq_tol(sum, moved, 1e-12);
	for (size_t i = 0; i < MOVES; i++) {
		uint64_t pos = splitmix64(&seed);
		const char *x = owner_id(a, pos, view), *y = owner_id(b, pos, view);

		if (same(x, y))
			continue;
		n++;
		if (only_from)
			ck_assert_str_eq(x, only_from);
		if (only_to)
			ck_assert_str_eq(y, only_to);
		for (k = 0; k < pairs && !(same(seen[k].o, x) && same(seen[k].n, y)); k++)
			;
		ck_assert_msg(k < pairs, "a key moved from %s to %s, not in the diff",
			      x ? x : "none", y ? y : "none");
		seen[k].c++;
	}
	for (k = 0; k < pairs; k++)
		check_count(seen[k].c, MOVES, total_of(d, seen[k].o, seen[k].n), 5,
			    "a pair of the diff");
	check_count(n, MOVES, moved, 5, "moved keys");
	hr_diff_free(d);
	return n;
}

START_TEST(join_moves_to_joiner_only)
{
	hrt_nodes *s = weighted(10);
	hr_ring *before = rdv_ring(s->nodes, 9), *after = rdv_ring(s->nodes, 10);
	double join = hrt_node_share(after, hr_ring_find(after, "node-9"),
					 HR_VIEW_WRITE);

	/* Exactly the joiner's share moves. */
	ck_assert_double_eq_tol(hr_ring_moved_share(before, after, HR_VIEW_WRITE),
				join, 1e-15);
	check_moves(before, after, HR_VIEW_WRITE, NULL, "node-9");
	/* A leave, the other way round: only the leaver's keys. */
	ck_assert_double_eq_tol(hr_ring_moved_share(after, before, HR_VIEW_WRITE),
				join, 1e-15);
	check_moves(after, before, HR_VIEW_WRITE, "node-9", NULL);
	hr_ring_release(before);
	hr_ring_release(after);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(weight_change_moves_to_and_from_it_only)
{
	hrt_nodes *s = weighted(10);
	hr_ring *before = rdv_ring(s->nodes, 10), *after;
	double w = 0, others;

	for (size_t i = 0; i < 10; i++)
		w += weights[i];
	others = w - weights[3];
	s->nodes[3].weight = 2;		/* node-3: 0.5 -> 2 */
	after = rdv_ring(s->nodes, 10);
	/* Growing, it takes w'/(O + w') - w/(O + w) and gives nothing. */
	ck_assert_double_eq_tol(hr_ring_moved_share(before, after, HR_VIEW_WRITE),
				2 / (others + 2) - 0.5 / (others + 0.5), 1e-15);
	check_moves(before, after, HR_VIEW_WRITE, NULL, "node-3");
	check_moves(after, before, HR_VIEW_WRITE, "node-3", NULL);
	hr_ring_release(before);
	hr_ring_release(after);
	hrt_nodes_free(s);
}
END_TEST

/* Several changes at once: the formulas against counted keys. */
START_TEST(any_change_matches_the_count)
{
	hrt_nodes *s = weighted(12);
	hr_ring *before = rdv_ring(s->nodes, 11), *after;

	s->nodes[0].weight = 5;		/* grows */
	s->nodes[2].weight = 0.75;	/* shrinks */
	s->nodes[6].weight = 4.5;	/* grows a little */
	/* node-10 leaves, node-11 joins */
	memcpy(&s->nodes[10], &s->nodes[11], sizeof s->nodes[10]);
	after = rdv_ring(s->nodes, 11);
	check_moves(before, after, HR_VIEW_WRITE, NULL, NULL);
	check_moves(after, before, HR_VIEW_WRITE, NULL, NULL);
	hr_ring_release(before);
	hr_ring_release(after);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(empty_and_null_rings)
{
	hrt_nodes *s = weighted(4);
	hr_ring *ring = rdv_ring(s->nodes, 4), *none = rdv_ring(NULL, 0);
	hr_diff *d;
	hr_error err = { 0 };
	hr_lookup lk;

	ck_assert_double_eq(hr_ring_moved_share(NULL, ring, HR_VIEW_WRITE), 1);
	ck_assert_double_eq(hr_ring_moved_share(ring, none, HR_VIEW_READ), 1);
	ck_assert_double_eq(hr_ring_moved_share(none, NULL, HR_VIEW_READ), 0);
	ck_assert_double_eq(hr_ring_moved_share(ring, ring, HR_VIEW_READ), 0);
	ck_assert_int_eq(hr_ring_lookup(none, "k", 1, &lk, NULL), HR_EEMPTY);
	ck_assert_int_eq(hr_diff_new(NULL, ring, HR_VIEW_WRITE, &d, &err), HR_OK);
	ck_assert_uint_eq(hr_diff_total_count(d), 4);
	for (size_t i = 0; i < 4; i++) {
		const hr_arc_total *t = &hr_diff_totals(d)[i];

		ck_assert_ptr_null(t->old_node);
		ck_assert(t->share == hrt_node_share(ring, t->new_node, HR_VIEW_WRITE));
	}
	hr_diff_free(d);
	ck_assert_int_eq(hr_diff_new(ring, ring, HR_VIEW_WRITE, &d, &err), HR_OK);
	ck_assert_uint_eq(hr_diff_total_count(d), 0);
	hr_diff_free(d);
	hr_ring_release(ring);
	hr_ring_release(none);
	hrt_nodes_free(s);
}
END_TEST

/* From a ring of another placement: counted on a sample, and consistent. */
START_TEST(mixed_placements)
{
	hrt_nodes *s = weighted(6);
	hr_ring *points = hrt_ring_build(s->nodes, 6, NULL, 0);
	hr_ring *ring = rdv_ring(s->nodes, 6);
	double moved = hr_ring_moved_share(points, ring, HR_VIEW_WRITE), sum = 0;
	hr_diff *d;
	hr_error err = { 0 };

	ck_assert(moved > 0.3 && moved < 1);
	ck_assert_int_eq(hr_diff_new(points, ring, HR_VIEW_WRITE, &d, &err), HR_OK);
	for (size_t i = 0; i < hr_diff_total_count(d); i++)
		sum += hr_diff_totals(d)[i].share;
	ck_assert(sum == moved);
	hr_diff_free(d);
	hr_ring_release(points);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* ---- views, lists, batches, bounded loads ----------------------------------------- */

START_TEST(views_follow_states)
{
	hrt_nodes *s = weighted(6);
	hr_ring *ring, *active;
	uint64_t seed = 3;
	int warm_w = 0, drain_r = 0;

	active = rdv_ring(s->nodes, 6);
	s->nodes[1].state = HR_STATE_WARMING;
	s->nodes[4].state = HR_STATE_DRAINING;
	ring = rdv_ring(s->nodes, 6);
	ck_assert(!hr__ring_views_shared(ring));
	ck_assert(hr__ring_views_shared(active));
	ck_assert(hr_ring_digest(ring) != hr_ring_digest(active));
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "node-1"),
					       HR_VIEW_READ), 0);
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "node-4"),
					       HR_VIEW_WRITE), 0);
	for (int i = 0; i < 20000; i++) {
		uint64_t pos = splitmix64(&seed);
		const char *w = owner_id(ring, pos, HR_VIEW_WRITE);
		const char *r = owner_id(ring, pos, HR_VIEW_READ);
		const char *all = owner_id(active, pos, HR_VIEW_WRITE);

		ck_assert_str_ne(w, "node-4");
		ck_assert_str_ne(r, "node-1");
		/* A view is the argmax over its own nodes: where the owner of
		 * all six is in a view, it owns there. */
		if (strcmp(all, "node-4"))
			ck_assert_str_eq(w, all);
		if (strcmp(all, "node-1"))
			ck_assert_str_eq(r, all);
		warm_w += strcmp(w, "node-1") == 0;
		drain_r += strcmp(r, "node-4") == 0;
	}
	ck_assert_int_gt(warm_w, 0);
	ck_assert_int_gt(drain_r, 0);
	hr_ring_release(ring);
	hr_ring_release(active);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(batch_agrees)
{
	hrt_nodes *s = weighted(9);
	hr_ring *rings[2];
	char buf[512][16];
	const void *keys[512];
	size_t lens[512];
	hr_batch_owner out[512];
	hr_error err = { 0 };

	rings[0] = rdv_ring(s->nodes, 9);
	s->nodes[2].state = HR_STATE_WARMING;
	s->nodes[5].state = HR_STATE_DRAINING;
	rings[1] = rdv_ring(s->nodes, 9);
	for (int i = 0; i < 512; i++) {
		lens[i] = (size_t)snprintf(buf[i], sizeof buf[i], "key-%d", i);
		keys[i] = buf[i];
	}
	for (int r = 0; r < 2; r++) {
		ck_assert_int_eq(hr_ring_lookup_batch(rings[r], keys, lens, 512, out, &err),
				 HR_OK);
		for (int i = 0; i < 512; i++) {
			hr_lookup lk;

			ck_assert_int_eq(hr_ring_lookup(rings[r], keys[i], lens[i], &lk, NULL), HR_OK);
			ck_assert_ptr_eq(hr_ring_node(rings[r], out[i].node), lk.node);
			ck_assert_ptr_eq(hr_ring_node(rings[r], out[i].read_node), lk.read_node);
		}
		hr_ring_release(rings[r]);
	}
	hrt_nodes_free(s);
}
END_TEST

START_TEST(preflists_with_zones)
{
	hrt_nodes *s = weighted(20);
	hr_ring *ring;
	uint64_t seed = 11;

	hrt_nodes_zones(s, 3);		/* four zones, the empty one included */
	ring = rdv_ring(s->nodes, s->n);
	for (int i = 0; i < 5000; i++) {
		uint64_t pos = splitmix64(&seed);
		const hr_node *list[20], *ordered[20];
		int k = hr__ring_preflist_pos(ring, pos, HR_VIEW_WRITE, list, 6);
		int all = hr__ring_preflist_pos(ring, pos, HR_VIEW_WRITE, ordered, 20);

		ck_assert_int_eq(k, 6);
		ck_assert_int_eq(all, 20);
		ck_assert_str_eq(list[0]->id, owner_id(ring, pos, HR_VIEW_WRITE));
		/* The first four in four zones, each the best of its zone. */
		for (int a = 0; a < 4; a++)
			for (int b = a + 1; b < 4; b++)
				ck_assert_str_ne(list[a]->zone, list[b]->zone);
		for (int a = 0; a < 6; a++)
			for (int b = a + 1; b < 6; b++)
				ck_assert_ptr_ne(list[a], list[b]);
	}
	/* One zone: the list is the walk, the descending scores. */
	for (size_t i = 0; i < s->n; i++)
		s->nodes[i].zone = "";
	hr_ring_release(ring);
	ring = rdv_ring(s->nodes, s->n);
	for (int i = 0; i < 100; i++) {
		uint64_t pos = splitmix64(&seed);
		const hr_node *list[3];

		ck_assert_int_eq(hr__ring_preflist_pos(ring, pos, HR_VIEW_WRITE, list, 3), 3);
		/* Each next is the owner once those before it are gone. */
		for (int a = 1; a < 3; a++) {
			hr_node rest[20];
			size_t m = 0;
			hr_ring *fewer;

			for (size_t j = 0; j < s->n; j++) {
				bool gone = false;

				for (int b = 0; b < a; b++)
					gone = gone || strcmp(s->nodes[j].id, list[b]->id) == 0;
				if (!gone)
					rest[m++] = s->nodes[j];
			}
			fewer = rdv_ring(rest, m);
			ck_assert_str_eq(owner_id(fewer, pos, HR_VIEW_WRITE), list[a]->id);
			hr_ring_release(fewer);
		}
	}
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(bounded_loads)
{
	hrt_nodes *s = hrt_nodes_new(5, "n%zu", NULL, 0);
	hr_ring *ring = rdv_ring(s->nodes, s->n);
	uint64_t loads[5] = { 0 };
	const hr_node *got, *pref[3];
	hr_lookup lk;

	ck_assert_int_eq(hr_ring_lookup(ring, "key", 3, &lk, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_lookup_bounded(ring, "key", 3, HR_VIEW_WRITE, loads,
						1.25, &got, NULL), HR_OK);
	ck_assert_ptr_eq(got, lk.node);
	/* The owner at capacity: the next in the preference order. */
	ck_assert_int_eq(hr_ring_preflist(ring, "key", 3, HR_VIEW_WRITE, pref, 3, NULL), 3);
	for (size_t i = 0; i < 5; i++)
		loads[i] = hr_ring_node(ring, i) == pref[0] ? 10 : 2;
	ck_assert_int_eq(hr_ring_lookup_bounded(ring, "key", 3, HR_VIEW_WRITE, loads,
						1.25, &got, NULL), HR_OK);
	ck_assert_ptr_eq(got, pref[1]);
	/* The first two full: the third. */
	for (size_t i = 0; i < 5; i++)
		if (hr_ring_node(ring, i) == pref[1])
			loads[i] = 10;
	ck_assert_int_eq(hr_ring_lookup_bounded(ring, "key", 3, HR_VIEW_WRITE, loads,
						1.25, &got, NULL), HR_OK);
	ck_assert_ptr_eq(got, pref[2]);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* ---- input ------------------------------------------------------------------------- */

START_TEST(bad_weights_and_unused_options)
{
	hrt_nodes *s = hrt_nodes_new(3, "n%zu", NULL, 0);
	hr_ring_options o = rdv_opts(), other = rdv_opts();
	const double bad[] = { 0, -1, 1e-301, 1e291, INFINITY, NAN };
	hr_ring *ring = NULL, *r2;
	hr_error err = { 0 };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s->nodes[1].weight = bad[i];
		ck_assert_int_eq(hr_node_check(&s->nodes[1], &o, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "\"n1\""));
		ck_assert_int_eq(hr_ring_build(s->nodes, 3, &o, 0, &ring, &err), HR_EINVAL);
		ck_assert_ptr_null(ring);
	}
	/* The ends of the range are placed. */
	s->nodes[1].weight = 1e-300;
	s->nodes[2].weight = 1e290;
	ring = rdv_ring(s->nodes, 3);
	/* Options rendezvous does not use change nothing, not even the
	 * digest; a Maglev size that is not a prime is not looked at. */
	other.vnodes_per_weight = 7;
	other.maglev_size = 1000;
	ck_assert_int_eq(hr_ring_build(s->nodes, 3, &other, 0, &r2, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_digest(ring), hr_ring_digest(r2));
	hr_ring_release(r2);
	/* Another placement of the same nodes has another digest. */
	for (int p = HR_PLACEMENT_XXH3; p <= HR_PLACEMENT_TOKENS; p++) {
		hr_ring_options x;

		if (p == HR_PLACEMENT_RENDEZVOUS)
			continue;
		hr_ring_options_init(&x);
		x.placement = (hr_placement)p;
		s->nodes[1].weight = s->nodes[2].weight = 1;
		hr_ring_release(ring);
		ring = rdv_ring(s->nodes, 3);
		r2 = hrt_ring_build(s->nodes, 3, &x, 0);
		ck_assert(hr_ring_digest(ring) != hr_ring_digest(r2));
		hr_ring_release(r2);
	}
	o.placement = (hr_placement)99;
	ck_assert_int_eq(hr_ring_build(s->nodes, 3, &o, 0, &r2, &err), HR_EINVAL);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rendezvous");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vectors_scores);
	tcase_add_test(tc, vectors_sets);
	tcase_add_test(tc, shares_are_weights);
	tcase_add_test(tc, join_moves_to_joiner_only);
	tcase_add_test(tc, weight_change_moves_to_and_from_it_only);
	tcase_add_test(tc, any_change_matches_the_count);
	tcase_add_test(tc, empty_and_null_rings);
	tcase_add_test(tc, mixed_placements);
	tcase_add_test(tc, views_follow_states);
	tcase_add_test(tc, batch_agrees);
	tcase_add_test(tc, preflists_with_zones);
	tcase_add_test(tc, bounded_loads);
	tcase_add_test(tc, bad_weights_and_unused_options);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(suite());
}
