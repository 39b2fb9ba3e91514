/* SPDX-License-Identifier: MIT */
/*
 * test_ring.c - the placement core: contract vectors from an independent
 * implementation, the fast lookup against a naive reference, properties of
 * the ring (order, movement, balance, views, preference lists), every
 * kind of bad input, and the largest rings the limits allow.
 */
#include "arcs.h"
#include "hashring.h"
#include "ring.h"
#include "ring_build.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"
#include "hrt_vectors.h"
#include "hrt_rand.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Keys checked against the naive reference: a million normally, fewer
 * under the sanitizers, which slow these loops down twentyfold. */
#ifdef HR_SANITIZED
#define MILLION_KEYS 100000
#else
#define MILLION_KEYS 1000000
#endif

#define VECTORS HR_TEST_DATA_DIR "/vectors/placement.json"

/* ---- helpers -------------------------------------------------------------- */

/* n nodes "node-0".."node-<n-1>" at 127.0.0.1:11211, :11212, ... */
static hrt_nodes *nodeset_new(size_t n)
{
	return hrt_nodes_new(n, "node-%zu", "127.0.0.1:%zu", 11211);
}

static hr_ring *build(const hr_node *nodes, size_t n, unsigned vpw)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = vpw };

	return hrt_ring_build(nodes, n, &opts, 0);
}

static int build_err(const hr_node *nodes, size_t n, hr_error *err)
{
	hr_ring *ring = (hr_ring *)1;
	int rc;

	memset(err, 0, sizeof *err);
	rc = hr_ring_build(nodes, n, NULL, 0, &ring, err);
	ck_assert_ptr_null(ring);
	ck_assert_int_eq(err->code, rc);
	return rc;
}

/* ---- the naive reference -------------------------------------------------- */

struct npoint {
	uint64_t pos;
	size_t slot;	/* hr_ring_node() index, id order */
};

static int cmp_npoint(const void *a, const void *b)
{
	const struct npoint *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static bool naive_in_view(hr_state st, hr_view view)
{
	return view == HR_VIEW_WRITE ? st != HR_STATE_DRAINING
				     : st != HR_STATE_WARMING;
}

/* The points of a view recomputed from the contract, sorted by a plain
 * qsort: position, then id (slots are in id order). */
static struct npoint *naive_points(const hr_ring *ring, hr_view view,
				   size_t *count)
{
	size_t n = 0, cap = hr_ring_point_count(ring) + 1;
	struct npoint *p = malloc(cap * sizeof *p);
	char name[300];

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		if (i > 0)
			ck_assert_int_lt(strcmp(hr_ring_node(ring, i - 1)->id, nd->id), 0);
		if (!naive_in_view(nd->state, view))
			continue;
		for (unsigned k = 0; k < hr_ring_node_vnodes(ring, nd); k++) {
			int len = snprintf(name, sizeof name, "%s#%u", nd->id, k);

			p[n].pos = XXH3_64bits(name, (size_t)len);
			p[n].slot = i;
			n++;
		}
	}
	qsort(p, n, sizeof *p, cmp_npoint);
	*count = n;
	return p;
}

static size_t naive_find(const struct npoint *p, size_t n, uint64_t pos)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == n ? 0 : lo;
}

static const hr_node *naive_owner(const hr_ring *ring, const struct npoint *p,
				  size_t n, uint64_t pos)
{
	return n ? hr_ring_node(ring, p[naive_find(p, n, pos)].slot) : NULL;
}

/* The preference list rule, written straight from the text; `seen` marks
 * the nodes met so far (taken or skipped). */
static size_t naive_preflist(const hr_ring *ring, const struct npoint *p,
			     size_t n, uint64_t pos, const hr_node **out,
			     size_t r)
{
	size_t nn = hr_ring_node_count(ring), taken = 0, skipped = 0;
	const hr_node **skip = malloc((nn + 1) * sizeof *skip);
	bool *seen = calloc(nn + 1, sizeof *seen);
	size_t start;

	ck_assert(skip && seen);
	start = n ? naive_find(p, n, pos) : 0;
	for (size_t s = 0; s < n && taken < r && taken + skipped < nn; s++) {
		size_t slot = p[(start + s) % n].slot;
		const hr_node *nd = hr_ring_node(ring, slot);
		bool zone_used = false;

		if (seen[slot])
			continue;
		seen[slot] = true;
		for (size_t t = 0; t < taken; t++)
			if (strcmp(out[t]->zone, nd->zone) == 0)
				zone_used = true;
		if (zone_used)
			skip[skipped++] = nd;
		else
			out[taken++] = nd;
	}
	for (size_t s = 0; s < skipped && taken < r; s++)
		out[taken++] = skip[s];
	free(skip);
	free(seen);
	return taken;
}

/* Checks hr_ring_lookup against the reference on `keys` random keys, and
 * every point position and its neighbours through hr__ring_lookup_pos. */
static void check_against_naive(const hr_ring *ring, size_t keys, uint64_t seed)
{
	size_t nw, nr;
	struct npoint *w = naive_points(ring, HR_VIEW_WRITE, &nw);
	struct npoint *r = naive_points(ring, HR_VIEW_READ, &nr);
	uint64_t s = seed;

	ck_assert_uint_eq(nw, hr__ring_view_points(ring, HR_VIEW_WRITE));
	ck_assert_uint_eq(nr, hr__ring_view_points(ring, HR_VIEW_READ));
	for (size_t i = 0; i < keys; i++) {
		uint64_t k = splitmix64(&s);
		size_t len = 1 + (size_t)(k % 8);
		hr_lookup lk;
		uint64_t pos = XXH3_64bits(&k, len);
		int rc = hr_ring_lookup(ring, &k, len, &lk, NULL);

		EXPECT(rc == (nw || nr ? HR_OK : HR_EEMPTY));
		EXPECT(lk.node == naive_owner(ring, w, nw, pos));
		EXPECT(lk.read_node == naive_owner(ring, r, nr, pos));
	}
	for (size_t i = 0; i < nw + nr; i++) {
		uint64_t base = i < nw ? w[i].pos : r[i - nw].pos;
		uint64_t probes[3] = { base - 1, base, base + 1 };

		for (int j = 0; j < 3; j++) {
			hr_lookup lk;

			hr__ring_lookup_pos(ring, probes[j], &lk);
			EXPECT(lk.node == naive_owner(ring, w, nw, probes[j]));
			EXPECT(lk.read_node == naive_owner(ring, r, nr, probes[j]));
		}
	}
	for (int j = 0; j < 2; j++) {
		uint64_t pos = j ? UINT64_MAX : 0;
		hr_lookup lk;

		hr__ring_lookup_pos(ring, pos, &lk);
		EXPECT(lk.node == naive_owner(ring, w, nw, pos));
		EXPECT(lk.read_node == naive_owner(ring, r, nr, pos));
	}
	free(w);
	free(r);
}

static void check_preflists_against_naive(const hr_ring *ring, size_t keys,
					  uint64_t seed)
{
	for (int v = 0; v < 2; v++) {
		size_t n;
		struct npoint *p = naive_points(ring, (hr_view)v, &n);
		uint64_t s = seed;

		for (size_t i = 0; i < keys; i++) {
			uint64_t pos = splitmix64(&s);
			size_t r = 1 + (size_t)(pos % 6);
			const hr_node *got[8], *want[8];
			int k = hr__ring_preflist_pos(ring, pos, (hr_view)v, got, r);
			size_t wk = naive_preflist(ring, p, n, pos, want, r);

			EXPECT(k == (int)wk);
			for (size_t j = 0; j < wk; j++)
				EXPECT(got[j] == want[j]);
		}
		free(p);
	}
}

/* Exact share of a node from the reference points, as a fraction of 2^64. */
static double naive_share(const hr_ring *ring, const struct npoint *p, size_t n,
			  const hr_node *nd)
{
	unsigned __int128 sum = 0;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t prev = p[i ? i - 1 : n - 1].pos;

		if (hr_ring_node(ring, p[i].slot) == nd)
			sum += (uint64_t)(p[i].pos - prev);
	}
	if (p[0].pos == p[n - 1].pos)
		sum = hr_ring_node(ring, p[0].slot) == nd ? (unsigned __int128)1 << 64 : 0;
	return (double)sum / 18446744073709551616.0;
}

/* ---- contract vectors ------------------------------------------------------ */

static cJSON *load_vectors(void)
{
	return hrt_load_json(VECTORS);
}

static uint64_t hex64(const char *s)
{
	return strtoull(s, NULL, 16);
}

START_TEST(vectors_hashes)
{
	cJSON *doc = load_vectors(), *h;
	int count = 0;

	cJSON_ArrayForEach(h, cJSON_GetObjectItem(doc, "hashes")) {
		const char *in = cJSON_GetObjectItem(h, "input")->valuestring;

		ck_assert_uint_eq(hr_hash_key(in, strlen(in)),
				  hex64(cJSON_GetObjectItem(h, "hash")->valuestring));
		count++;
	}
	ck_assert_int_ge(count, 5);
	cJSON_Delete(doc);
}
END_TEST

START_TEST(vectors_sets)
{
	cJSON *doc = load_vectors(), *set;
	int r = cJSON_GetObjectItem(doc, "replicas")->valueint;
	int sets = 0;

	cJSON_ArrayForEach(set, cJSON_GetObjectItem(doc, "sets")) {
		hr_ring_options opts = {
			.size = sizeof opts,
			.vnodes_per_weight =
				(unsigned)cJSON_GetObjectItem(set, "vnodes_per_weight")->valuedouble,
		};
		hr_ring *ring = hrt_vectors_ring(set, &opts);

		hrt_vectors_check_set(set, ring, r, false);

		/* The same nodes given in reverse order: the same ring. */
		{
			size_t n = hr_ring_node_count(ring);
			hr_node *rev = malloc(n * sizeof *rev);
			hr_ring *again;

			for (size_t i = 0; i < n; i++)
				rev[i] = *hr_ring_node(ring, n - 1 - i);
			again = build(rev, n, opts.vnodes_per_weight);
			hrt_vectors_check_set(set, again, r, false);
			hr_ring_release(again);
			free(rev);
		}
		hr_ring_release(ring);
		sets++;
	}
	ck_assert_int_ge(sets, 6);
	cJSON_Delete(doc);
}
END_TEST

/* ---- fast lookup against the reference ------------------------------------ */

START_TEST(naive_equal_small)
{
	hrt_nodes *s = nodeset_new(10);
	hr_ring *ring = build(s->nodes, s->n, 200);

	check_against_naive(ring, MILLION_KEYS, 1);
	hr_ring_release(ring);

	/* one node, one point; two nodes, one point each */
	ring = build(s->nodes, 1, 1);
	ck_assert_uint_eq(hr_ring_point_count(ring), 1);
	check_against_naive(ring, MILLION_KEYS, 2);
	hr_ring_release(ring);
	ring = build(s->nodes, 2, 1);
	check_against_naive(ring, MILLION_KEYS, 3);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(naive_weighted_states)
{
	hrt_nodes *s = nodeset_new(100);
	uint64_t seed = 42;
	hr_ring *ring;

	hrt_nodes_zones(s, 3);
	for (size_t i = 0; i < s->n; i++) {
		s->nodes[i].weight = 0.2 + (double)(splitmix64(&seed) % 280) / 100;
		if (i % 10 == 3)
			s->nodes[i].state = HR_STATE_WARMING;
		if (i % 10 == 7)
			s->nodes[i].state = HR_STATE_DRAINING;
	}
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_ne(hr__ring_view_points(ring, HR_VIEW_WRITE), hr_ring_point_count(ring));
	check_against_naive(ring, MILLION_KEYS, 4);
	check_preflists_against_naive(ring, 100000, 5);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* More zones than the zone table starts with (ring_build.c grows it):
 * replicas still spread over distinct zones as the naive walk says. */
START_TEST(naive_many_zones)
{
	hrt_nodes *s = nodeset_new(300);
	hr_ring *ring;

	hrt_nodes_zones(s, 60);
	ring = build(s->nodes, s->n, 40);
	check_against_naive(ring, 200000, 8);
	check_preflists_against_naive(ring, 20000, 9);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(naive_many_nodes)
{
	hrt_nodes *s = nodeset_new(1000);
	hr_ring *ring;

	hrt_nodes_zones(s, 5);
	for (size_t i = 0; i < s->n; i += 97)
		s->nodes[i].state = HR_STATE_DRAINING;
	ring = build(s->nodes, s->n, 16);
	check_against_naive(ring, MILLION_KEYS, 6);
	check_preflists_against_naive(ring, 50000, 7);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(naive_two_zones)
{
	/* fewer zones than replicas, and the empty zone */
	hrt_nodes *s = nodeset_new(7);
	hr_ring *ring;

	hrt_nodes_zones(s, 1);
	s->nodes[2].state = HR_STATE_WARMING;
	ring = build(s->nodes, s->n, 50);
	check_against_naive(ring, MILLION_KEYS, 8);
	check_preflists_against_naive(ring, 200000, 9);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* ---- the tie rule ----------------------------------------------------------- */

static uint64_t const_hash(const void *name, size_t len)
{
	(void)name;
	(void)len;
	return 12345;
}

START_TEST(tie_rule)
{
	/* given in no particular order; "a" < "a0" < "ab" < "b" bytewise */
	hr_node nodes[] = {
		{ .id = "b", .addr = "127.0.0.1:1", .weight = 1 },
		{ .id = "ab", .addr = "127.0.0.1:2", .weight = 1 },
		{ .id = "a", .addr = "127.0.0.1:3", .weight = 1 },
		{ .id = "a0", .addr = "127.0.0.1:4", .weight = 1 },
	};
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 3 };
	const hr_node *pl[4];
	hr_ring *ring;
	hr_lookup lk;

	ck_assert_int_eq(hr__ring_build_hashed(nodes, 4, &opts, 0, hrt_tie_hash,
					       &ring, NULL), HR_OK);
	for (uint64_t pos = 0; pos < (5ULL << 40); pos += 1ULL << 38) {
		ck_assert_int_eq(hr__ring_lookup_pos(ring, pos, &lk), HR_OK);
		ck_assert_str_eq(lk.node->id, "a");
	}
	ck_assert_int_eq(hr__ring_preflist_pos(ring, 1ULL << 40, HR_VIEW_WRITE, pl, 4), 4);
	ck_assert_str_eq(pl[0]->id, "a");
	ck_assert_str_eq(pl[1]->id, "a0");
	ck_assert_str_eq(pl[2]->id, "ab");
	ck_assert_str_eq(pl[3]->id, "b");
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "a"), HR_VIEW_WRITE), 1.0);
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "a0"), HR_VIEW_WRITE), 0.0);
	hr_ring_release(ring);

	/* "a" draining: writes go to the next id, reads stay */
	nodes[2].state = HR_STATE_DRAINING;
	ck_assert_int_eq(hr__ring_build_hashed(nodes, 4, &opts, 0, hrt_tie_hash,
					       &ring, NULL), HR_OK);
	hr__ring_lookup_pos(ring, 7, &lk);
	ck_assert_str_eq(lk.node->id, "a0");
	ck_assert_str_eq(lk.read_node->id, "a");
	hr_ring_release(ring);
	nodes[2].state = HR_STATE_ACTIVE;

	/* every point at one position: the first id owns the whole circle */
	ck_assert_int_eq(hr__ring_build_hashed(nodes, 4, &opts, 0, const_hash,
					       &ring, NULL), HR_OK);
	hr__ring_lookup_pos(ring, 99999, &lk);
	ck_assert_str_eq(lk.node->id, "a");
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "a"), HR_VIEW_READ), 1.0);
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "b"), HR_VIEW_READ), 0.0);
	hr_ring_release(ring);

	ck_assert_int_eq(hr__ring_build_hashed(nodes, 4, &opts, 0, NULL, &ring, NULL),
			 HR_EINVAL);
}
END_TEST

/* ---- properties ------------------------------------------------------------- */

START_TEST(order_independent)
{
	hrt_nodes *s = nodeset_new(40);
	uint64_t seed = 11;
	hr_ring *ref, *ring;

	hrt_nodes_zones(s, 4);
	for (size_t i = 0; i < s->n; i++) {
		s->nodes[i].weight = 0.5 + (double)(i % 4) / 2;
		s->nodes[i].state = (hr_state)(i % 3);
	}
	ref = build(s->nodes, s->n, 100);
	for (int round = 0; round < 8; round++) {
		/* Fisher-Yates shuffle of the input */
		for (size_t i = s->n - 1; i > 0; i--) {
			size_t j = (size_t)(splitmix64(&seed) % (i + 1));
			hr_node t = s->nodes[i];

			s->nodes[i] = s->nodes[j];
			s->nodes[j] = t;
		}
		ring = build(s->nodes, s->n, 100);
		ck_assert_uint_eq(hr_ring_digest(ring), hr_ring_digest(ref));
		for (size_t i = 0; i < s->n; i++)
			EXPECT(strcmp(hr_ring_node(ring, i)->id, hr_ring_node(ref, i)->id) == 0);
		for (int k = 0; k < 20000; k++) {
			uint64_t key = splitmix64(&seed);
			hr_lookup a, b;
			const hr_node *pa[3], *pb[3];

			hr_ring_lookup(ring, &key, sizeof key, &a, NULL);
			hr_ring_lookup(ref, &key, sizeof key, &b, NULL);
			EXPECT(strcmp(a.node->id, b.node->id) == 0);
			EXPECT(strcmp(a.read_node->id, b.read_node->id) == 0);
			EXPECT(hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_WRITE, pa, 3, NULL) == 3);
			EXPECT(hr_ring_preflist(ref, &key, sizeof key, HR_VIEW_WRITE, pb, 3, NULL) == 3);
			for (int j = 0; j < 3; j++)
				EXPECT(strcmp(pa[j]->id, pb[j]->id) == 0);
		}
		ck_assert_double_eq(hr_ring_moved_share(ring, ref, HR_VIEW_WRITE), 0);
		ck_assert_double_eq(hr_ring_moved_share(ring, ref, HR_VIEW_READ), 0);
		hr_ring_release(ring);
	}
	hr_ring_release(ref);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(digest_covers_membership)
{
	hrt_nodes *s = nodeset_new(5);
	hr_ring *ref = build(s->nodes, s->n, 0), *ring;
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 201 };
	uint64_t d = hr_ring_digest(ref);

	ck_assert_uint_eq(hr__ring_vnodes_per_weight(ref), HR_VNODES_PER_WEIGHT_DEFAULT);
	/* the revision is not membership */
	ck_assert_int_eq(hr_ring_build(s->nodes, s->n, NULL, 77, &ring, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_digest(ring), d);
	ck_assert_uint_eq(hr_ring_revision(ring), 77);
	hr_ring_release(ring);
	/* a zone of NULL is the empty zone */
	s->nodes[0].zone = "";
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_eq(hr_ring_digest(ring), d);
	hr_ring_release(ring);

	s->nodes[0].addr = "127.0.0.1:9";
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);
	s->nodes[0].addr = s->addrs[0];

	s->nodes[1].zone = "z";
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);
	s->nodes[1].zone = NULL;

	s->nodes[2].weight = 1.0000001;
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);
	s->nodes[2].weight = 1;

	s->nodes[3].state = HR_STATE_WARMING;
	ring = build(s->nodes, s->n, 200);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);
	s->nodes[3].state = HR_STATE_ACTIVE;

	ck_assert_int_eq(hr_ring_build(s->nodes, s->n, &opts, 0, &ring, NULL), HR_OK);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);

	ring = build(s->nodes, s->n - 1, 200);
	ck_assert_uint_ne(hr_ring_digest(ring), d);
	hr_ring_release(ring);
	hr_ring_release(ref);
	hrt_nodes_free(s);
}
END_TEST

/* Changes between two rings over sampled keys: every changed key must
 * involve node `id`; returns the share of keys that changed. */
static double moved_sample(const hr_ring *a, const hr_ring *b, const char *id,
			   bool to_id, size_t keys)
{
	size_t moved = 0;

	for (size_t i = 0; i < keys; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "key-%zu", i);
		hr_lookup la, lb;

		hr_ring_lookup(a, key, (size_t)len, &la, NULL);
		hr_ring_lookup(b, key, (size_t)len, &lb, NULL);
		if (strcmp(la.node->id, lb.node->id) == 0)
			continue;
		moved++;
		EXPECT(strcmp(to_id ? lb.node->id : la.node->id, id) == 0);
	}
	return (double)moved / (double)keys;
}

START_TEST(movement_minimal)
{
	hrt_nodes *s = nodeset_new(11);
	hr_ring *ten = build(s->nodes, 10, 200);
	hr_ring *eleven = build(s->nodes, 11, 200);
	const hr_node *added = hr_ring_find(eleven, "node-10");
	double share, moved;
	hr_ring *heavier;

	/* adding node-10: keys move only to it, about 1/11 of them */
	moved = moved_sample(ten, eleven, "node-10", true, 200000);
	share = hrt_node_share(eleven, added, HR_VIEW_WRITE);
	ck_assert_double_eq_tol(hr_ring_moved_share(ten, eleven, HR_VIEW_WRITE), share, 1e-12);
	ck_assert_double_eq_tol(moved, share, 0.01);
	ck_assert_double_ge(moved, 0.06);
	ck_assert_double_le(moved, 0.12);

	/* removing it again: keys move only from it */
	moved = moved_sample(eleven, ten, "node-10", false, 200000);
	ck_assert_double_eq_tol(moved, share, 0.01);
	ck_assert_double_eq_tol(hr_ring_moved_share(eleven, ten, HR_VIEW_READ), share, 1e-12);

	/* reweighting node-3 from 1 to 2: keys move only to node-3 */
	s->nodes[3].weight = 2;
	heavier = build(s->nodes, 10, 200);
	moved = moved_sample(ten, heavier, "node-3", true, 200000);
	share = hrt_node_share(heavier, hr_ring_find(heavier, "node-3"), HR_VIEW_WRITE) -
		hrt_node_share(ten, hr_ring_find(ten, "node-3"), HR_VIEW_WRITE);
	ck_assert_double_eq_tol(hr_ring_moved_share(ten, heavier, HR_VIEW_WRITE), share, 1e-12);
	ck_assert_double_eq_tol(moved, share, 0.01);
	ck_assert_double_ge(moved, 0.05);

	ck_assert_double_eq(hr_ring_moved_share(ten, ten, HR_VIEW_WRITE), 0);
	ck_assert_double_eq(hr_ring_moved_share(ten, NULL, HR_VIEW_WRITE), 1);
	ck_assert_double_eq(hr_ring_moved_share(NULL, ten, HR_VIEW_READ), 1);
	ck_assert_double_eq(hr_ring_moved_share(NULL, NULL, HR_VIEW_READ), 0);
	/* A bad view is HR_EINVAL, as for every call taking a view (hr_view),
	 * whatever the rings. */
	ck_assert_double_eq(hr_ring_moved_share(ten, eleven, (hr_view)7), HR_EINVAL);
	ck_assert_double_eq(hr_ring_moved_share(ten, ten, (hr_view)-1), HR_EINVAL);
	ck_assert_double_eq(hr_ring_moved_share(NULL, ten, (hr_view)2), HR_EINVAL);
	ck_assert_double_eq(hr_ring_moved_share(NULL, NULL, (hr_view)2), HR_EINVAL);
	hr_ring_release(heavier);
	hr_ring_release(ten);
	hr_ring_release(eleven);
	hrt_nodes_free(s);
}
END_TEST

/* Both shares at once, as the event=ring line takes them: one walk while
 * the views are one, each view's own once a node warms or drains. */
START_TEST(moved_shares_both_views)
{
	hrt_nodes *s = nodeset_new(10);
	hr_ring *ten = build(s->nodes, 10, 200), *heavier, *warming, *draining;
	double w, r;

	s->nodes[3].weight = 2;
	heavier = build(s->nodes, 10, 200);
	s->nodes[5].state = HR_STATE_WARMING;
	warming = build(s->nodes, 10, 200);
	s->nodes[5].state = HR_STATE_DRAINING;
	draining = build(s->nodes, 10, 200);

	hr__ring_moved_shares(ten, heavier, &w, &r);
	ck_assert_double_eq(w, hr_ring_moved_share(ten, heavier, HR_VIEW_WRITE));
	ck_assert_double_gt(w, 0.05);
	ck_assert_double_eq(r, w);
	/* warming node-5: in the write view only */
	hr__ring_moved_shares(heavier, warming, &w, &r);
	ck_assert_double_eq(w, 0);
	ck_assert_double_eq(r, hr_ring_moved_share(heavier, warming, HR_VIEW_READ));
	ck_assert_double_gt(r, 0.05);
	hr__ring_moved_shares(warming, draining, &w, &r);
	ck_assert_double_eq(w, hr_ring_moved_share(warming, draining, HR_VIEW_WRITE));
	ck_assert_double_eq(r, hr_ring_moved_share(warming, draining, HR_VIEW_READ));
	ck_assert_double_gt(w, 0.05);
	ck_assert_double_gt(r, 0.05);
	hr__ring_moved_shares(NULL, ten, &w, &r);
	ck_assert_double_eq(w, 1);
	ck_assert_double_eq(r, 1);
	hr__ring_moved_shares(NULL, NULL, &w, &r);
	ck_assert_double_eq(w, 0);
	ck_assert_double_eq(r, 0);
	hr_ring_release(ten);
	hr_ring_release(heavier);
	hr_ring_release(warming);
	hr_ring_release(draining);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(balance_200_vnodes)
{
	hrt_nodes *s = nodeset_new(10);
	hr_ring *ring = build(s->nodes, s->n, 200);
	size_t counts[10] = { 0 }, keys = 200000, max = 0, min = SIZE_MAX;
	double total = 0, smax = 0;
	size_t nw;
	struct npoint *p = naive_points(ring, HR_VIEW_WRITE, &nw);

	for (size_t i = 0; i < keys; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "key-%zu", i);
		hr_lookup lk;

		hr_ring_lookup(ring, key, (size_t)len, &lk, NULL);
		for (size_t j = 0; j < 10; j++)
			if (lk.node == hr_ring_node(ring, j))
				counts[j]++;
	}
	for (size_t i = 0; i < 10; i++) {
		const hr_node *nd = hr_ring_node(ring, i);
		double share = hrt_node_share(ring, nd, HR_VIEW_WRITE);

		ck_assert_double_eq(share, naive_share(ring, p, nw, nd));
		ck_assert_double_eq(share, hrt_node_share(ring, nd, HR_VIEW_READ));
		total += share;
		if (share > smax)
			smax = share;
		if (counts[i] > max)
			max = counts[i];
		if (counts[i] < min)
			min = counts[i];
	}
	ck_assert_double_eq_tol(total, 1.0, 1e-12);
	/* the seeds' range at 200 vnodes: max/mean about 1.1-1.2 */
	ck_assert_double_le((double)max / (keys / 10.0), 1.25);
	ck_assert_double_ge((double)max / (keys / 10.0), 1.02);
	ck_assert_double_ge((double)min / (keys / 10.0), 0.8);
	ck_assert_double_le(smax * 10, 1.25);
	free(p);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(shares_exact)
{
	hrt_nodes *s = nodeset_new(30);
	hr_ring *ring;

	hrt_nodes_zones(s, 2);
	for (size_t i = 0; i < s->n; i++) {
		s->nodes[i].weight = 0.25 * (double)(1 + i % 7);
		s->nodes[i].state = (hr_state)(i % 3);
	}
	ring = build(s->nodes, s->n, 100);
	for (int v = 0; v < 2; v++) {
		size_t n;
		struct npoint *p = naive_points(ring, (hr_view)v, &n);
		double total = 0;

		for (size_t i = 0; i < s->n; i++) {
			const hr_node *nd = hr_ring_node(ring, i);
			double share = hrt_node_share(ring, nd, (hr_view)v);

			ck_assert_double_eq(share, naive_share(ring, p, n, nd));
			if (!naive_in_view(nd->state, (hr_view)v))
				ck_assert_double_eq(share, 0);
			total += share;
		}
		ck_assert_double_eq_tol(total, 1.0, 1e-12);
		free(p);
	}
	/* A NULL ring has no node; too small an array is not written; a bad
	 * view is HR_EINVAL (hr_view), and nothing is written. */
	double shares[30] = { 7 };

	ck_assert_int_eq(hr_ring_node_shares(NULL, HR_VIEW_WRITE, shares, 30), 0);
	ck_assert_int_eq(hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, 29), 30);
	ck_assert_double_eq(shares[0], 7);
	ck_assert_int_eq(hr_ring_node_shares(ring, (hr_view)2, shares, 30), HR_EINVAL);
	ck_assert_int_eq(hr_ring_node_shares(ring, (hr_view)-1, shares, 30), HR_EINVAL);
	ck_assert_int_eq(hr_ring_node_shares(ring, (hr_view)2, NULL, 0), HR_EINVAL);
	ck_assert_int_eq(hr_ring_node_shares(NULL, (hr_view)2, shares, 30), HR_EINVAL);
	ck_assert_double_eq(shares[0], 7);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

static bool has_zone(const hr_node **l, size_t n, const char *zone)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i]->zone, zone) == 0)
			return true;
	return false;
}

START_TEST(preflist_rules)
{
	hrt_nodes *s = nodeset_new(12);
	hr_ring *ring;
	const hr_node *pl[16];
	uint64_t seed = 3;

	/* three named zones and the empty zone: 4 zones */
	hrt_nodes_zones(s, 3);
	ring = build(s->nodes, s->n, 100);
	for (int k = 0; k < 20000; k++) {
		uint64_t key = splitmix64(&seed);
		hr_lookup lk;
		int n;

		hr_ring_lookup(ring, &key, sizeof key, &lk, NULL);
		n = hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_WRITE, pl, 4, NULL);
		EXPECT(n == 4);
		EXPECT(pl[0] == lk.node);
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < i; j++) {
				EXPECT(pl[i] != pl[j]);
				EXPECT(strcmp(pl[i]->zone, pl[j]->zone) != 0);
			}
		EXPECT(has_zone(pl, 4, ""));
		/* more replicas than zones: every node distinct, zones first */
		n = hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_READ, pl, 6, NULL);
		EXPECT(n == 6);
		for (int i = 0; i < 6; i++)
			for (int j = 0; j < i; j++)
				EXPECT(pl[i] != pl[j]);
		for (int i = 1; i < 4; i++)
			EXPECT(!has_zone(pl, (size_t)i, pl[i]->zone));
		/* more replicas than nodes: all of them */
		EXPECT(hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_WRITE, pl, 16, NULL) == 12);
		EXPECT(hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_WRITE, pl, 0, NULL) == 0);
		EXPECT(hr_ring_preflist(ring, &key, sizeof key, HR_VIEW_WRITE, NULL, 0, NULL) == 0);
	}
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_WRITE, NULL, 3, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_preflist(ring, NULL, 1, HR_VIEW_WRITE, pl, 3, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_preflist(NULL, "k", 1, HR_VIEW_WRITE, pl, 3, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, (hr_view)5, pl, 3, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_preflist(ring, NULL, 0, HR_VIEW_WRITE, pl, 3, NULL), 3);
	hr_ring_release(ring);

	/* all zoneless: one zone, the walk order decides */
	for (size_t i = 0; i < s->n; i++)
		s->nodes[i].zone = NULL;
	ring = build(s->nodes, s->n, 100);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_WRITE, pl, 3, NULL), 3);
	ck_assert_ptr_ne(pl[0], pl[1]);
	ck_assert_ptr_ne(pl[1], pl[2]);
	ck_assert_ptr_ne(pl[0], pl[2]);
	check_preflists_against_naive(ring, 20000, 12);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(views_warming_draining)
{
	hrt_nodes *s = nodeset_new(9);
	hr_ring *base, *with, *ring;
	size_t differ = 0;

	base = build(s->nodes, 8, 200);		/* node-8 absent */
	with = build(s->nodes, 9, 200);		/* node-8 active */
	s->nodes[8].state = HR_STATE_WARMING;
	ring = build(s->nodes, 9, 200);
	ck_assert_uint_eq(hr__ring_view_nodes(ring, HR_VIEW_WRITE), 9);
	ck_assert_uint_eq(hr__ring_view_nodes(ring, HR_VIEW_READ), 8);
	ck_assert_uint_eq(hr__ring_view_points(ring, HR_VIEW_READ), 1600);
	ck_assert_double_eq(hrt_node_share(ring, hr_ring_find(ring, "node-8"), HR_VIEW_READ), 0);
	ck_assert_double_gt(hrt_node_share(ring, hr_ring_find(ring, "node-8"), HR_VIEW_WRITE), 0);
	for (int i = 0; i < 50000; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "k%d", i);
		hr_lookup a, b, c;

		hr_ring_lookup(ring, key, (size_t)len, &a, NULL);
		hr_ring_lookup(base, key, (size_t)len, &b, NULL);
		hr_ring_lookup(with, key, (size_t)len, &c, NULL);
		/* writes go where the node would own, reads stay put */
		EXPECT(strcmp(a.node->id, c.node->id) == 0);
		EXPECT(strcmp(a.read_node->id, b.node->id) == 0);
		EXPECT(strcmp(a.read_node->id, "node-8") != 0);
		if (a.node != a.read_node) {
			EXPECT(strcmp(a.node->id, "node-8") == 0);
			differ++;
		}
	}
	ck_assert_uint_gt(differ, 2000);
	ck_assert_double_eq_tol(hr_ring_moved_share(base, ring, HR_VIEW_WRITE),
				hr_ring_moved_share(base, with, HR_VIEW_WRITE), 1e-15);
	ck_assert_double_eq(hr_ring_moved_share(base, ring, HR_VIEW_READ), 0);
	hr_ring_release(ring);

	/* draining: the mirror image */
	s->nodes[8].state = HR_STATE_DRAINING;
	ring = build(s->nodes, 9, 200);
	for (int i = 0; i < 50000; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "k%d", i);
		hr_lookup a, b, c;

		hr_ring_lookup(ring, key, (size_t)len, &a, NULL);
		hr_ring_lookup(base, key, (size_t)len, &b, NULL);
		hr_ring_lookup(with, key, (size_t)len, &c, NULL);
		EXPECT(strcmp(a.node->id, b.node->id) == 0);
		EXPECT(strcmp(a.read_node->id, c.node->id) == 0);
	}
	hr_ring_release(ring);

	/* both kinds at once: neither view is the whole ring */
	s->nodes[0].state = HR_STATE_WARMING;
	ring = build(s->nodes, 9, 200);
	ck_assert_uint_eq(hr__ring_view_nodes(ring, HR_VIEW_WRITE), 8);
	ck_assert_uint_eq(hr__ring_view_nodes(ring, HR_VIEW_READ), 8);
	check_against_naive(ring, 100000, 13);
	hr_ring_release(ring);
	hr_ring_release(base);
	hr_ring_release(with);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(empty_ring_and_views)
{
	hrt_nodes *s = nodeset_new(3);
	hr_ring *ring;
	hr_lookup lk;
	const hr_node *pl[3];

	ring = build(NULL, 0, 200);
	ck_assert_uint_eq(hr_ring_node_count(ring), 0);
	ck_assert_uint_eq(hr_ring_point_count(ring), 0);
	memset(&lk, 0xff, sizeof lk);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_EEMPTY);
	ck_assert_ptr_null(lk.node);
	ck_assert_ptr_null(lk.read_node);
	ck_assert_int_eq(hr__ring_lookup_pos(ring, UINT64_MAX, &lk), HR_EEMPTY);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_WRITE, pl, 3, NULL), 0);
	ck_assert_ptr_null(hr_ring_node(ring, 0));
	ck_assert_ptr_null(hr_ring_find(ring, "node-0"));
	ck_assert_double_eq(hr_ring_moved_share(ring, NULL, HR_VIEW_WRITE), 0);
	hr_ring_release(ring);

	/* all warming: reads have no owner, writes do */
	for (size_t i = 0; i < 3; i++)
		s->nodes[i].state = HR_STATE_WARMING;
	ring = build(s->nodes, 3, 200);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_OK);
	ck_assert_ptr_nonnull(lk.node);
	ck_assert_ptr_null(lk.read_node);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_READ, pl, 3, NULL), 0);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_WRITE, pl, 3, NULL), 3);
	ck_assert_double_eq(hr_ring_moved_share(ring, NULL, HR_VIEW_READ), 0);
	ck_assert_double_eq(hr_ring_moved_share(ring, NULL, HR_VIEW_WRITE), 1);
	check_against_naive(ring, 10000, 14);
	hr_ring_release(ring);

	/* all draining: the other way round */
	for (size_t i = 0; i < 3; i++)
		s->nodes[i].state = HR_STATE_DRAINING;
	ring = build(s->nodes, 3, 200);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_OK);
	ck_assert_ptr_null(lk.node);
	ck_assert_ptr_nonnull(lk.read_node);
	check_against_naive(ring, 10000, 15);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(accessors_and_rounding)
{
	hr_node nodes[] = {
		{ .id = "w2.5", .addr = "127.0.0.1:1", .weight = 2.5 },
		{ .id = "w1.5", .addr = "127.0.0.1:2", .weight = 1.5 },
		{ .id = "w0.4", .addr = "127.0.0.1:3", .weight = 0.4 },
		{ .id = "w0.5", .addr = "127.0.0.1:4", .weight = 0.5 },
		{ .id = "w-tiny", .addr = "127.0.0.1:5", .weight = 1e-300 },
		{ .id = "w3.49", .addr = "127.0.0.1:6", .weight = 3.49, .zone = "z",
		  .state = HR_STATE_DRAINING },
	};
	unsigned want[] = { 3, 2, 1, 1, 1, 3 };
	hr_ring *ring = build(nodes, 6, 1);
	const hr_node *nd;
	hr_ring *other;

	ck_assert_uint_eq(hr_ring_node_count(ring), 6);
	ck_assert_uint_eq(hr_ring_point_count(ring), 11);
	for (size_t i = 0; i < 6; i++) {
		nd = hr_ring_find(ring, nodes[i].id);
		ck_assert_ptr_nonnull(nd);
		ck_assert_ptr_ne(nd->id, nodes[i].id);	/* copied */
		ck_assert_str_eq(nd->addr, nodes[i].addr);
		ck_assert_str_eq(nd->zone, nodes[i].zone ? nodes[i].zone : "");
		ck_assert_double_eq(nd->weight, nodes[i].weight);
		ck_assert_int_eq(nd->state, nodes[i].state);
		ck_assert_uint_eq(hr_ring_node_vnodes(ring, nd), want[i]);
		ck_assert_uint_eq(hr_ring_node_vnodes(ring, &nodes[i]), 0);
	}
	ck_assert_str_eq(hr_ring_node(ring, 0)->id, "w-tiny");
	ck_assert_str_eq(hr_ring_node(ring, 5)->id, "w3.49");
	ck_assert_ptr_null(hr_ring_node(ring, 6));
	ck_assert_ptr_null(hr_ring_find(ring, "w"));
	ck_assert_ptr_null(hr_ring_find(ring, NULL));
	ck_assert_ptr_null(hr_ring_find(NULL, "w0.4"));
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, NULL), 0);
	ck_assert_uint_eq(hr_ring_node_vnodes(NULL, hr_ring_node(ring, 0)), 0);
	/* a pointer into the middle of a node is not a node */
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, (const hr_node *)
					      ((const char *)hr_ring_node(ring, 1) + 8)), 0);
	other = build(nodes, 6, 1);
	ck_assert_uint_eq(hr_ring_node_vnodes(other, hr_ring_node(ring, 1)), 0);
	hr_ring_release(other);
	ck_assert_uint_eq(hr_ring_revision(NULL), 0);
	ck_assert_uint_eq(hr_ring_digest(NULL), 0);
	ck_assert_uint_eq(hr_ring_node_count(NULL), 0);
	ck_assert_uint_eq(hr_ring_point_count(NULL), 0);
	hr_ring_release(ring);
}
END_TEST

START_TEST(refcount)
{
	hrt_nodes *s = nodeset_new(3);
	hr_ring *ring = build(s->nodes, s->n, 10);
	hr_lookup lk;

	ck_assert_ptr_eq(hr_ring_retain(ring), ring);
	ck_assert_ptr_eq(hr_ring_retain(ring), ring);
	hr_ring_release(ring);
	hr_ring_release(ring);
	/* still held once: usable (the sanitizer build checks the frees) */
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, NULL), HR_OK);
	hr_ring_release(ring);
	ck_assert_ptr_null(hr_ring_retain(NULL));
	hr_ring_release(NULL);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(null_args)
{
	hrt_nodes *s = nodeset_new(2);
	hr_ring *ring = NULL;
	hr_lookup lk;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_ring_build(s->nodes, 2, NULL, 0, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(err.code, HR_EINVAL);
	ck_assert_int_eq(hr_ring_build(NULL, 2, NULL, 0, &ring, NULL), HR_EINVAL);
	ck_assert_ptr_null(ring);
	ring = build(s->nodes, 2, 200);
	ck_assert_int_eq(hr_ring_lookup(NULL, "k", 1, &lk, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, NULL, 1, &lk, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, NULL, 0, &lk, NULL), HR_OK);
	ck_assert_int_eq(hr__ring_lookup_pos(NULL, 0, &lk), HR_EINVAL);
	ck_assert_uint_eq(hr_hash_key(NULL, 0), hr_hash_key("", 0));
	ck_assert_uint_eq(hr__ring_view_nodes(ring, (hr_view)9), 0);
	ck_assert_ptr_null(hr_ring_node(NULL, 0));
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(node_index)
{
	hrt_nodes *s = nodeset_new(6);
	hr_ring *ring = build(s->nodes, s->n, 10), *other = build(s->nodes, s->n, 10);
	hr_error err = { 0 };
	hr_node copy;

	for (size_t i = 0; i < hr_ring_node_count(ring); i++)
		ck_assert_int_eq(hr_ring_node_index(ring, hr_ring_node(ring, i), NULL), (int)i);
	ck_assert_int_eq(hr_ring_node_index(ring, hr_ring_find(ring, s->nodes[3].id), NULL),
			 3);
	/* The same id in another ring, a copy, the caller's input: not this
	 * ring's nodes. */
	ck_assert_int_eq(hr_ring_node_index(ring, hr_ring_node(other, 2), &err), HR_ENOTFOUND);
	ck_assert_int_eq(err.code, HR_ENOTFOUND);
	ck_assert_str_eq(err.message, "node index: the node is not one of this ring's");
	copy = *hr_ring_node(ring, 1);
	ck_assert_int_eq(hr_ring_node_index(ring, &copy, NULL), HR_ENOTFOUND);
	ck_assert_int_eq(hr_ring_node_index(ring, &s->nodes[0], NULL), HR_ENOTFOUND);
	ck_assert_int_eq(hr_ring_node_index(ring, (const hr_node *)
					    ((const char *)hr_ring_node(ring, 1) + 8), NULL),
			 HR_ENOTFOUND);
	ck_assert_int_eq(hr_ring_node_index(NULL, hr_ring_node(ring, 0), &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "node index: ring is NULL");
	ck_assert_int_eq(hr_ring_node_index(ring, NULL, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "node index: node is NULL");
	hr_ring_release(other);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* Every call that can fail says why in its hr_error, and leaves it alone
 * on success. */
START_TEST(errors_have_messages)
{
	hrt_nodes *s = nodeset_new(3);
	hr_ring *ring = build(s->nodes, s->n, 10), *empty = build(NULL, 0, 10);
	hr_error err = { .code = 7, .message = "untouched" };
	const hr_node *out[2];
	hr_lookup lk;
	hr_state st;

	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &lk, &err), HR_OK);
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_READ, out, 2, &err), 2);
	ck_assert_int_eq(hr_state_parse("warming", &st, &err), HR_OK);
	ck_assert_int_eq(err.code, 7);
	ck_assert_str_eq(err.message, "untouched");

	ck_assert_int_eq(hr_ring_lookup(empty, "k", 1, &lk, &err), HR_EEMPTY);
	ck_assert_int_eq(err.code, HR_EEMPTY);
	ck_assert_str_eq(err.message, "no node in the ring");
	ck_assert_int_eq(hr_ring_lookup(NULL, "k", 1, &lk, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: ring is NULL");
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, NULL, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: out is NULL");
	ck_assert_int_eq(hr_ring_lookup(ring, NULL, 3, &lk, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: key is NULL with length 3");

	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, (hr_view)5, out, 2, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "preflist: bad view 5");
	ck_assert_int_eq(hr_ring_preflist(ring, "k", 1, HR_VIEW_READ, NULL, 2, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "preflist: out is NULL, r 2");
	ck_assert_int_eq(hr_ring_preflist(NULL, "k", 1, HR_VIEW_READ, out, 2, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "preflist: ring is NULL");

	ck_assert_int_eq(hr_state_parse("Active", &st, &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "unknown state \"Active\" (active, warming or draining)");
	ck_assert_int_eq(hr_state_parse(NULL, &st, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "state parse: name is NULL");
	hr_ring_release(empty);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(names_and_epochs)
{
	hr_state st = HR_STATE_DRAINING;

	ck_assert_str_eq(hr_state_name(HR_STATE_ACTIVE), "active");
	ck_assert_str_eq(hr_state_name(HR_STATE_WARMING), "warming");
	ck_assert_str_eq(hr_state_name(HR_STATE_DRAINING), "draining");
	ck_assert_ptr_null(hr_state_name((hr_state)3));
	ck_assert_ptr_null(hr_state_name((hr_state)-1));
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(hr_state_parse(hr_state_name((hr_state)i), &st, NULL), HR_OK);
		ck_assert_int_eq(st, i);
	}
	ck_assert_int_eq(hr_state_parse("Active", &st, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_state_parse("", &st, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_state_parse("active ", &st, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_state_parse(NULL, &st, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_state_parse("active", NULL, NULL), HR_EINVAL);

	ck_assert_int_eq(hr_epoch_compare(5, 1, 5, 1), HR_EPOCH_SAME);
	ck_assert_int_eq(hr_epoch_compare(4, 1, 5, 1), HR_EPOCH_LOCAL_STALE);
	ck_assert_int_eq(hr_epoch_compare(6, 1, 5, 2), HR_EPOCH_REMOTE_STALE);
	ck_assert_int_eq(hr_epoch_compare(5, 1, 5, 2), HR_EPOCH_CONFLICT);
	ck_assert_int_eq(hr_epoch_compare(0, 0, UINT64_MAX, 0), HR_EPOCH_LOCAL_STALE);
}
END_TEST

/* ---- bad input -------------------------------------------------------------- */

static void expect_bad(hr_node *nodes, size_t n, int code, const char *msg)
{
	hr_error err;
	int rc = build_err(nodes, n, &err);

	ck_assert_msg(rc == code, "expected %d, got %d (%s)", code, rc, err.message);
	ck_assert_msg(strstr(err.message, msg) != NULL,
		      "message \"%s\" lacks \"%s\"", err.message, msg);
}

START_TEST(bad_nodes)
{
	hrt_nodes *s = nodeset_new(3);
	char long_id[HR_ID_MAX + 2], long_addr[HR_ADDR_MAX + 2];
	hr_node *nd = &s->nodes[1];
	hr_error err;
	hr_ring *ring;

	memset(long_id, 'i', sizeof long_id - 1);
	long_id[sizeof long_id - 1] = '\0';
	memset(long_addr, 'a', sizeof long_addr - 1);
	long_addr[sizeof long_addr - 1] = '\0';

	nd->id = "";
	expect_bad(s->nodes, 3, HR_EINVAL, "node id is empty");
	nd->id = NULL;
	expect_bad(s->nodes, 3, HR_EINVAL, "node id is NULL");
	nd->id = long_id;
	expect_bad(s->nodes, 3, HR_ELIMIT, "id is longer than 255 bytes");
	long_id[HR_ID_MAX] = '\0';	/* exactly the limit: fine */
	ring = build(s->nodes, 3, 1);
	ck_assert_ptr_nonnull(hr_ring_find(ring, long_id));
	hr_ring_release(ring);
	nd->id = "a/b";
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"a/b\": id must not contain '/'");
	nd->id = "a b";
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"a b\": id must be printable");
	nd->id = "a\tb";
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"a\\x09b\"");
	nd->id = "caf\xc3\xa9";
	expect_bad(s->nodes, 3, HR_EINVAL, "byte 0xc3 at offset 3");
	nd->id = "a\x7f";
	expect_bad(s->nodes, 3, HR_EINVAL, "printable");
	nd->id = "node-0";
	expect_bad(s->nodes, 3, HR_EDUPLICATE, "node \"node-0\": duplicate node id");
	nd->id = s->ids[1];

	nd->weight = 0;
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"node-1\": weight must be a finite number > 0");
	nd->weight = -1;
	expect_bad(s->nodes, 3, HR_EINVAL, "weight");
	nd->weight = NAN;
	expect_bad(s->nodes, 3, HR_EINVAL, "weight");
	nd->weight = INFINITY;
	expect_bad(s->nodes, 3, HR_EINVAL, "weight");
	nd->weight = -INFINITY;
	expect_bad(s->nodes, 3, HR_EINVAL, "weight");
	nd->weight = 1e300;
	expect_bad(s->nodes, 3, HR_ELIMIT, "node \"node-1\": weight 1e+300 gives 2e+302 points at 200 per unit of weight, more than 33554432 points, a ring's limit");
	nd->weight = (double)HR_POINTS_MAX / 200 + 0.01;
	expect_bad(s->nodes, 3, HR_ELIMIT, "points");
	/* each node under the cap, the ring over it */
	nd->weight = (double)HR_POINTS_MAX / 200 * 0.6;
	s->nodes[2].weight = nd->weight;
	expect_bad(s->nodes, 3, HR_ELIMIT, "the ring would have more than 33554432 points");
	nd->weight = 1;
	s->nodes[2].weight = 1;

	nd->state = (hr_state)3;
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"node-1\": invalid state 3");
	nd->state = (hr_state)-1;
	expect_bad(s->nodes, 3, HR_EINVAL, "invalid state");
	nd->state = HR_STATE_ACTIVE;

	nd->addr = NULL;
	expect_bad(s->nodes, 3, HR_EINVAL, "node \"node-1\": addr is missing");
	nd->addr = "";
	expect_bad(s->nodes, 3, HR_EINVAL, "addr is empty");
	nd->addr = "127.0.0.1:1\n";
	expect_bad(s->nodes, 3, HR_EINVAL, "addr contains a control character");
	nd->addr = long_addr;
	expect_bad(s->nodes, 3, HR_ELIMIT, "addr is longer than 255 bytes");
	nd->addr = s->addrs[1];

	nd->zone = "eu\x01";
	expect_bad(s->nodes, 3, HR_EINVAL, "zone contains a control character");
	nd->zone = long_addr;
	expect_bad(s->nodes, 3, HR_ELIMIT, "zone is longer than 255 bytes");
	nd->zone = NULL;

	/* a valid set still builds after all that */
	ring = build(s->nodes, 3, 0);
	hr_ring_release(ring);

	/* too many nodes: refused before anything is read */
	ring = (hr_ring *)1;
	ck_assert_int_eq(hr_ring_build(s->nodes, HR_NODES_MAX + 1, NULL, 0, &ring, &err),
			 HR_ELIMIT);
	ck_assert_ptr_null(ring);
	ck_assert_ptr_nonnull(strstr(err.message, "100001 nodes"));
	/* a huge vnodes_per_weight is the same as a huge weight */
	{
		hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 4000000000u };

		ck_assert_int_eq(hr_ring_build(s->nodes, 3, &opts, 0, &ring, &err), HR_ELIMIT);
	}
	hrt_nodes_free(s);
}
END_TEST

/* hr_node_check() says of one node exactly what a ring build says. */
START_TEST(node_check_same_rules)
{
#define S sizeof(hr_ring_options)
	static const struct {
		hr_node node;
		hr_ring_options opts;
	} cases[] = {
		{ { "a", "127.0.0.1:1", "z", 1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a/b", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a", "", NULL, 1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a", "127.0.0.1:1", "z\x01", 1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a", "127.0.0.1:1", NULL, -1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a", "127.0.0.1:1", NULL, 1, (hr_state)7, NULL, 0 }, { .size = S } },
		{ { "a", "127.0.0.1:1", NULL, 167773, HR_STATE_ACTIVE, NULL, 0 }, { .size = S } },
		{ { "a", "127.0.0.1:1", NULL, 167773, HR_STATE_ACTIVE, NULL, 0 }, { .size = S, .vnodes_per_weight = 100, .placement = HR_PLACEMENT_XXH3 } },
		{ { "a", "127.0.0.1:1", NULL, 1.5, HR_STATE_ACTIVE, NULL, 0 }, { .size = S, .vnodes_per_weight = 0, .placement = HR_PLACEMENT_KETAMA } },
		{ { "a", "127.0.0.1:1", NULL, 2, HR_STATE_ACTIVE, NULL, 0 }, { .size = S, .vnodes_per_weight = 0, .placement = HR_PLACEMENT_KETAMA } },
		{ { "a", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 }, { .size = S, .vnodes_per_weight = 0, .placement = (hr_placement)9 } },
	};
#undef S

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		hr_error e1 = { 0 }, e2 = { 0 };
		hr_ring *ring = NULL;
		int built = hr_ring_build(&cases[i].node, 1, &cases[i].opts, 0, &ring, &e1);
		int checked = hr_node_check(&cases[i].node, &cases[i].opts, &e2);

		hr_ring_release(ring);
		ck_assert_msg(built == checked, "case %zu: build %d, check %d", i, built, checked);
		ck_assert_str_eq(e1.message, e2.message);
	}
	{
		hr_node heaviest = { .id = "h", .addr = "127.0.0.1:1",
				     .weight = (double)HR_POINTS_MAX };
		hr_ring_options one = { .size = sizeof one, .vnodes_per_weight = 1 };

		/* The heaviest legal node (a build of it takes seconds). */
		ck_assert_int_eq(hr_node_check(&heaviest, &one, NULL), 0);
		heaviest.weight += 1;
		ck_assert_int_eq(hr_node_check(&heaviest, &one, NULL), HR_ELIMIT);
	}
	ck_assert_int_eq(hr_node_check(NULL, NULL, NULL), HR_EINVAL);
}
END_TEST

/* ---- the limits ------------------------------------------------------------ */

/* The smallest positive weight still gets its one point. */
START_TEST(smallest_weight_one_point)
{
	hr_node node = { "light", "127.0.0.1:1", "", 5e-324, HR_STATE_ACTIVE, NULL, 0 };
	hr_ring *ring = build(&node, 1, 0);

	ck_assert_uint_eq(hr_ring_point_count(ring), 1);
	hr_ring_release(ring);
}
END_TEST

START_TEST(ring_of_100000_nodes)
{
	size_t n = HR_NODES_MAX + 1;
	hrt_nodes *s = nodeset_new(n);
	const hr_node *nodes = s->nodes;
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 2 };
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	hr_lookup l;

	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, &opts, 7, &ring, &err), 0);
	ck_assert_uint_eq(hr_ring_node_count(ring), HR_NODES_MAX);
	ck_assert_uint_eq(hr_ring_point_count(ring), 2 * HR_NODES_MAX);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &l, NULL), 0);
	ck_assert_ptr_eq(hr_ring_find(ring, l.node->id), l.node);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "node-99999"));
	hr_ring_release(ring);
	/* One more node is a clear limit error, not an allocation storm. */
	ring = NULL;
	ck_assert_int_eq(hr_ring_build(nodes, n, &opts, 7, &ring, &err), HR_ELIMIT);
	ck_assert_ptr_null(ring);
	hrt_assert_clean_message(err.message);
	/* Within the node limit, over the point limit. */
	opts.vnodes_per_weight = 400;
	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, &opts, 7, &ring, &err), HR_ELIMIT);
	ck_assert_ptr_null(ring);
	ck_assert_ptr_nonnull(strstr(err.message, "more than 33554432 points"));
	hrt_nodes_free(s);
}
END_TEST

/* The largest ring the limits promise to hold: 100,000 nodes at the
 * default 200 points per weight, 20 M points (past 2^24, and four-byte
 * node numbers); every share at once in one pass; a one-node change
 * derived from it equal to a full build. */
START_TEST(ring_of_100000_nodes_default_vnodes)
{
	hrt_nodes *s = nodeset_new(HR_NODES_MAX + 1);
	const hr_node *nodes = s->nodes;
	double *shares = calloc(HR_NODES_MAX, sizeof *shares);
	hr_ring *ring = NULL, *full = NULL, *derived = NULL;
	hr_error err = { 0 };
	double sum = 0;

	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, NULL, 7, &ring, &err), 0);
	ck_assert_uint_eq(hr_ring_point_count(ring), 200u * HR_NODES_MAX);
	ck_assert_uint_gt(hr_ring_point_count(ring), 1u << 24);
	ck_assert_int_eq(hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, HR_NODES_MAX),
			 HR_NODES_MAX);
	for (size_t i = 0; i < HR_NODES_MAX; i++)
		sum += shares[i];
	ck_assert_double_eq_tol(sum, 1.0, 1e-9);
	/* node-0 leaves, node-100000 joins. */
	ck_assert_int_eq(hr__ring_derive(ring, nodes + 1, HR_NODES_MAX, NULL, 8,
					 &derived, &err), 0);
	ck_assert(hr__ring_derived(derived));
	ck_assert_int_eq(hr_ring_build(nodes + 1, HR_NODES_MAX, NULL, 8, &full, &err), 0);
	ck_assert_uint_eq(hr_ring_digest(derived), hr_ring_digest(full));
	ck_assert_double_eq(hr_ring_moved_share(derived, full, HR_VIEW_WRITE), 0);
	ck_assert_double_eq(hr_ring_moved_share(derived, full, HR_VIEW_READ), 0);
	hr_ring_release(full);
	hr_ring_release(derived);
	hr_ring_release(ring);
	free(shares);
	hrt_nodes_free(s);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, vectors_hashes);
	tcase_add_test(tc, vectors_sets);
	tcase_add_test(tc, tie_rule);
	suite_add_tcase(s, tc);

	tc = tcase_create("reference");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, naive_equal_small);
	tcase_add_test(tc, naive_weighted_states);
	tcase_add_test(tc, naive_many_nodes);
	tcase_add_test(tc, naive_many_zones);
	tcase_add_test(tc, naive_two_zones);
	suite_add_tcase(s, tc);

	tc = tcase_create("properties");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, order_independent);
	tcase_add_test(tc, digest_covers_membership);
	tcase_add_test(tc, movement_minimal);
	tcase_add_test(tc, moved_shares_both_views);
	tcase_add_test(tc, balance_200_vnodes);
	tcase_add_test(tc, shares_exact);
	tcase_add_test(tc, preflist_rules);
	tcase_add_test(tc, views_warming_draining);
	tcase_add_test(tc, empty_ring_and_views);
	suite_add_tcase(s, tc);

	tc = tcase_create("api");
	tcase_add_test(tc, accessors_and_rounding);
	tcase_add_test(tc, refcount);
	tcase_add_test(tc, null_args);
	tcase_add_test(tc, node_index);
	tcase_add_test(tc, errors_have_messages);
	tcase_add_test(tc, names_and_epochs);
	tcase_add_test(tc, bad_nodes);
	tcase_add_test(tc, node_check_same_rules);
	suite_add_tcase(s, tc);

	/* 20 M points built three times: 30 s alone under ASan, four times
	 * that beside the other suites on two cores. */
	tc = tcase_create("limits");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, smallest_weight_one_point);
	tcase_add_test(tc, ring_of_100000_nodes);
	tcase_add_test(tc, ring_of_100000_nodes_default_vnodes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(ring_suite());
}
