/* SPDX-License-Identifier: MIT */
/*
 * test_derive.c - a ring derived from the previous one (hr__ring_derive)
 * must be the ring a full build makes: random change sequences (adds,
 * removes, weight changes, state, addr and zone changes), with the real
 * point hash and with one that forces equal positions, compared on the
 * digest, the points, owners, preference lists and shares (one by one and
 * all at once).  (Which records a membership over the limits admits:
 * test_nodeset.c.)
 */
#include "hashring.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "hrt_ring_fixture.h"
#include "nodeset.h"
#include "ring.h"
#include "ring_build.h"
#include "ring_impl.h"
#include "ring_stream.h"
#include "same_ring.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Only 48 distinct positions: points of different nodes (and of one node)
 * share positions all the time, so the tie order is exercised. */
static uint64_t tie_hash(const void *buf, size_t len)
{
	return (XXH3_64bits(buf, len) % 48) * (UINT64_MAX / 48);
}

/* ---- a membership model -------------------------------------------------- */

struct member {
	bool present;
	char id[48];
	char addr[24];
	char zone[8];
	double weight;
	hr_state state;
};

struct model {
	struct member m[UNIVERSE];
	size_t universe;	/* ids in use: 0 .. universe - 1 */
	hr_node nodes[UNIVERSE];
	size_t n;
};

static void member_randomize(struct member *mb, uint64_t *rng)
{
	snprintf(mb->addr, sizeof mb->addr, "127.0.0.1:%u",
		 (unsigned)(1000 + below(rng, 60000)));
	snprintf(mb->zone, sizeof mb->zone, "%s",
		 below(rng, 4) == 0 ? "" : (const char *[]){ "z1", "z2", "z3" }[below(rng, 3)]);
	mb->weight = random_weight(rng);
	mb->state = (hr_state)below(rng, 3);
	if (below(rng, 2))
		mb->state = HR_STATE_ACTIVE;
}

static void model_init(struct model *md, size_t universe)
{
	memset(md, 0, sizeof *md);
	md->universe = universe;
	/* Ids that are prefixes of each other and contain '#' test the
	 * bytewise order and the point names. */
	for (size_t i = 0; i < universe; i++) {
		if (i % 5 == 4)
			snprintf(md->m[i].id, sizeof md->m[i].id, "n%zu#%zu", i / 2, i);
		else
			snprintf(md->m[i].id, sizeof md->m[i].id, "n%zu", i);
	}
}

/* The present members as an input array, in a random order. */
static void model_nodes(struct model *md, uint64_t *rng)
{
	md->n = 0;
	for (size_t i = 0; i < md->universe; i++) {
		const struct member *mb = &md->m[i];

		if (!mb->present)
			continue;
		md->nodes[md->n++] = (hr_node){ .id = mb->id, .addr = mb->addr,
						.zone = mb->zone, .weight = mb->weight,
						.state = mb->state };
	}
	for (size_t i = md->n; i > 1; i--) {
		size_t j = below(rng, i);
		hr_node t = md->nodes[i - 1];

		md->nodes[i - 1] = md->nodes[j];
		md->nodes[j] = t;
	}
}

/* One random change to one member. */
static void model_change(struct model *md, uint64_t *rng)
{
	struct member *mb = &md->m[below(rng, md->universe)];

	if (!mb->present) {
		member_randomize(mb, rng);
		mb->present = true;
		return;
	}
	switch (below(rng, 6)) {
	case 0:
		mb->present = false;
		break;
	case 1:
		/* Growing by whole units adds vnodes only; shrinking drops. */
		mb->weight = below(rng, 2) ? mb->weight + 1 : random_weight(rng);
		break;
	case 2:
		mb->state = (hr_state)((mb->state + 1 + below(rng, 2)) % 3);
		break;
	case 3:
		snprintf(mb->addr, sizeof mb->addr, "127.0.0.1:%u",
			 (unsigned)(1000 + below(rng, 60000)));
		break;
	case 4:
		snprintf(mb->zone, sizeof mb->zone, "z%u", (unsigned)below(rng, 5));
		break;
	default:
		member_randomize(mb, rng);
		break;
	}
}

/* ---- comparing two rings ------------------------------------------------- */

/* ---- moved share, by the definition ---------------------------------------- */

struct ref_point {
	uint64_t pos;
	const char *id;
};

static int cmp_ref_point(const void *x, const void *y)
{
	const struct ref_point *a = x, *b = y;

	if (a->pos != b->pos)
		return a->pos < b->pos ? -1 : 1;
	return strcmp(a->id, b->id);
}

static bool ref_in_view(hr_state state, hr_view view)
{
	return view == HR_VIEW_WRITE ? state != HR_STATE_DRAINING :
				       state != HR_STATE_WARMING;
}

/* The sorted points of one view, hashed from the names again. */
static struct ref_point *ref_points(const hr_ring *ring, hr_view view,
				    hr__point_hash_fn hash, size_t *n)
{
	struct ref_point *p = malloc((hr_ring_point_count(ring) + 1) * sizeof *p);
	char name[64];

	ck_assert_ptr_nonnull(p);
	*n = 0;
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		if (!ref_in_view(nd->state, view))
			continue;
		for (unsigned k = 0; k < hr_ring_node_vnodes(ring, nd); k++) {
			int len = snprintf(name, sizeof name, "%s#%u", nd->id, k);

			p[(*n)++] = (struct ref_point){ hash(name, (size_t)len), nd->id };
		}
	}
	qsort(p, *n, sizeof *p, cmp_ref_point);
	return p;
}

/* docs/placement.md section 6, interval by interval over the whole circle. */
static double ref_moved_share(const hr_ring *a, const hr_ring *b, hr_view view,
			      hr__point_hash_fn hash)
{
	size_t na, nb, ia = 0, ib = 0;
	struct ref_point *pa = ref_points(a, view, hash, &na);
	struct ref_point *pb = ref_points(b, view, hash, &nb);
	uint64_t x = 0, hi = 0, lo = 0;

	if (!na || !nb) {
		free(pa);
		free(pb);
		return na != nb && (!na || !nb) ? 1.0 : 0.0;
	}
	for (;;) {
		const char *oa = pa[ia < na ? ia : 0].id, *ob = pb[ib < nb ? ib : 0].id;
		uint64_t e = UINT64_MAX;

		if (ia < na && pa[ia].pos < e)
			e = pa[ia].pos;
		if (ib < nb && pb[ib].pos < e)
			e = pb[ib].pos;
		if (strcmp(oa, ob) != 0) {
			uint64_t len = e - x;

			lo += len;
			hi += lo < len;
			lo += 1;
			hi += lo < 1;
		}
		if (e == UINT64_MAX)
			break;
		x = e + 1;
		while (ia < na && pa[ia].pos < x)
			ia++;
		while (ib < nb && pb[ib].pos < x)
			ib++;
	}
	free(pa);
	free(pb);
	return hi ? 1.0 : ldexp((double)lo, -64);
}

static void expect_moved_share(const hr_ring *a, const hr_ring *b,
			       hr__point_hash_fn hash)
{
	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
		EXPECT(hr_ring_moved_share(a, b, (hr_view)v) ==
		       ref_moved_share(a, b, (hr_view)v, hash));
		EXPECT(hr_ring_moved_share(b, a, (hr_view)v) ==
		       hr_ring_moved_share(a, b, (hr_view)v));
	}
}

/* ---- tests --------------------------------------------------------------- */

/* Derives a chain of rings through random changes, its first ring laid
 * out as `chain` says; each must equal a full build of the same nodes laid
 * out as `reference` says.  Returns how many were derived, not rebuilt. */
static int run_sequences(int sequences, hr__point_hash_fn hash, uint64_t seed,
			 hr__layout chain, hr__layout reference)
{
	static const unsigned vpws[] = { 1, 3, 10, 40, 200 };
	uint64_t rng = seed;
	int derived = 0;

	for (int s = 0; s < sequences; s++) {
		struct model md;
		hr_ring_options opts = { .size = sizeof opts,
					  .vnodes_per_weight = vpws[below(&rng, 5)] };
		hr_ring *prev = NULL, *d, *f;
		size_t start = below(&rng, 4) == 0 ? below(&rng, 2) : below(&rng, 20);
		int steps = 1 + (int)below(&rng, 6);

		if (opts.vnodes_per_weight == 200 && below(&rng, 4))
			opts.vnodes_per_weight = 20;
		model_init(&md, 8 + below(&rng, UNIVERSE - 8));
		for (size_t i = 0; i < start; i++)
			model_change(&md, &rng);
		model_nodes(&md, &rng);
		ck_assert_int_eq(hr__ring_build_layout(md.nodes, md.n, &opts, 1, hash, chain,
						       &prev, NULL), HR_OK);
		for (int step = 0; step < steps; step++) {
			int changes = 1 + (int)below(&rng, 3);
			uint64_t rev = (uint64_t)step + 2;

			/* Sometimes everything goes. */
			if (below(&rng, 40) == 0) {
				for (size_t i = 0; i < md.universe; i++)
					md.m[i].present = false;
			} else {
				for (int c = 0; c < changes; c++)
					model_change(&md, &rng);
			}
			model_nodes(&md, &rng);
			ck_assert_int_eq(hr__ring_derive(prev, md.nodes, md.n, &opts,
							 rev, &d, NULL), HR_OK);
			ck_assert_int_eq(hr__ring_build_layout(md.nodes, md.n, &opts, rev, hash,
							       reference, &f, NULL), HR_OK);
			/* A chain keeps its layout while it has points. */
			EXPECT(hr__ring_paged(d) ==
			       (chain == HR__LAYOUT_PAGED && hr_ring_point_count(d) > 0));
			expect_same(d, f, hash, &rng);
			for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++)
				EXPECT(hr_ring_moved_share(prev, d, (hr_view)v) ==
				       hr_ring_moved_share(prev, f, (hr_view)v));
			expect_moved_share(prev, d, hash);
			EXPECT(!hr__ring_derived(f));
			derived += hr__ring_derived(d);
			hr_ring_release(prev);
			hr_ring_release(f);
			prev = d;
		}
		hr_ring_release(prev);
	}
	return derived;
}

START_TEST(random_sequences)
{
	int derived = run_sequences(1500, xxh3, 42, HR__LAYOUT_AUTO, HR__LAYOUT_AUTO);

	/* Most single changes are small next to the ring. */
	printf("derive: %d of the random steps reused points\n", derived);
	ck_assert_int_gt(derived, 1500);
}
END_TEST

START_TEST(random_sequences_ties)
{
	int derived = run_sequences(800, tie_hash, 7, HR__LAYOUT_AUTO, HR__LAYOUT_AUTO);

	ck_assert_int_gt(derived, 800);
}
END_TEST

/* Pages (pages.h) on small rings, where most pages are empty or hold
 * a point or two, against flat arrays: the same answers to everything,
 * derived page by page through random changes. */
START_TEST(random_sequences_paged)
{
	int derived = run_sequences(500, xxh3, 43, HR__LAYOUT_PAGED, HR__LAYOUT_FLAT);

	ck_assert_int_gt(derived, 500);
}
END_TEST

/* The same with 48 positions for every point: crowded buckets and pages,
 * ties across pages' shared and rebuilt points, nearly every page empty. */
START_TEST(random_sequences_paged_ties)
{
	int derived = run_sequences(300, tie_hash, 44, HR__LAYOUT_PAGED, HR__LAYOUT_FLAT);

	ck_assert_int_gt(derived, 300);
}
END_TEST

/* The figure's case: 100 nodes of weight 1 at 200 vnodes, one node's
 * weight flipped between 1 and 2 and back, state and addr changes. */
START_TEST(weight_flips_100_nodes)
{
	hrt_nodes *s = hrt_nodes_new(100, "node-%05zu", "127.0.0.1:%zu", 20000);
	hr_node *nodes = s->nodes;
	hr_ring *prev, *d, *f;
	uint64_t rng = 5;

	for (int i = 0; i < 100; i++)
		nodes[i].zone = "z";
	ck_assert_int_eq(hr_ring_build(nodes, 100, NULL, 1, &prev, NULL), HR_OK);
	for (int step = 0; step < 30; step++) {
		hr_node *nd = &nodes[below(&rng, 100)];

		if (step % 3 == 2)
			nd->state = (hr_state)((nd->state + 1) % 3);
		else
			nd->weight = nd->weight == 1 ? 2 : 1;
		ck_assert_int_eq(hr__ring_derive(prev, nodes, 100, NULL,
						 (uint64_t)step + 2, &d, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_build(nodes, 100, NULL, (uint64_t)step + 2,
					       &f, NULL), HR_OK);
		ck_assert(hr__ring_derived(d));
		expect_same(d, f, xxh3, &rng);
		expect_moved_share(prev, d, xxh3);
		hr_ring_release(prev);
		hr_ring_release(f);
		prev = d;
	}
	hr_ring_release(prev);
	hrt_nodes_free(s);
}
END_TEST

/* Rings whose arrays take the huge-page allocation (HR__BIG_BLOCK and
 * more): built and derived as any other. */
START_TEST(big_blocks)
{
	size_t n = 2000;
	hrt_nodes *s = hrt_nodes_new(n, "node-%05zu", "127.0.0.1:%zu", 20000);
	hr_node *nodes = s->nodes;
	hr_ring *full, *derived, *f;
	struct ref_point *ref;
	size_t nref;
	uint64_t rng = 11;

	ck_assert_uint_ge(n * 200 * 16, HR__BIG_BLOCK);
	ck_assert_int_eq(hr_ring_build(nodes, n, NULL, 1, &full, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_point_count(full), n * 200);
	/* Placed in groups (ring_points.c), sorted as the names say: the
	 * owner at a point's position is its node. */
	ref = ref_points(full, HR_VIEW_WRITE, xxh3, &nref);
	ck_assert_uint_eq(nref, n * 200);
	for (size_t i = 0; i < nref; i += 7) {
		hr_lookup l;

		if (i && ref[i - 1].pos == ref[i].pos)
			continue;	/* a tie: the first id owns it */
		EXPECT(hr__ring_lookup_pos(full, ref[i].pos, &l) == HR_OK);
		EXPECT(strcmp(l.node->id, ref[i].id) == 0);
	}
	free(ref);
	/* Crowded positions: 48 of them hold every point, ties by id. */
	{
		hr_ring *ties;
		size_t owners = 0;

		ck_assert_int_eq(hr__ring_build_hashed(nodes, n, NULL, 1, tie_hash, &ties, NULL),
				 HR_OK);
		ref = ref_points(ties, HR_VIEW_WRITE, tie_hash, &nref);
		for (size_t i = 0; i < nref; i++) {
			hr_lookup l;

			if (i && ref[i - 1].pos == ref[i].pos)
				continue;
			EXPECT(hr__ring_lookup_pos(ties, ref[i].pos, &l) == HR_OK);
			EXPECT(strcmp(l.node->id, ref[i].id) == 0);
			owners++;
		}
		ck_assert_uint_eq(owners, 48);
		free(ref);
		hr_ring_release(ties);
	}
	nodes[7].weight = 2;
	ck_assert_int_eq(hr__ring_derive(full, nodes + 1, n - 1, NULL, 2, &derived, NULL),
			 HR_OK);
	ck_assert(hr__ring_derived(derived));
	ck_assert_int_eq(hr_ring_build(nodes + 1, n - 1, NULL, 2, &f, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_digest(derived), hr_ring_digest(f));
	for (int k = 0; k < 10000; k++)
		expect_same_at(derived, f, splitmix64(&rng));
	hr_ring_release(f);
	hr_ring_release(derived);
	hr_ring_release(full);
	hrt_nodes_free(s);
}
END_TEST

/* A big ring's one-node changes share every page their points do not
 * touch, and the pages they make take the regions the pages they
 * replaced leave (pages_derive.c): memory does not grow. */
START_TEST(pages_shared_and_recycled)
{
	size_t n = 2000;
	hrt_nodes *s = hrt_nodes_new(n, "node-%05zu", "127.0.0.1:%zu", 20000);
	hr_node *without = malloc((n - 1) * sizeof *without);
	hr_ring *prev, *d, *f;
	uint64_t rng = 3;

	/* Node 1000 comes and goes: every slot after its id moves. */
	ck_assert_ptr_nonnull(without);
	memcpy(without, s->nodes, 1000 * sizeof *without);
	memcpy(without + 1000, s->nodes + 1001, (n - 1001) * sizeof *without);
	ck_assert_int_eq(hr_ring_build(s->nodes, n, NULL, 1, &prev, NULL), HR_OK);
	ck_assert(hr__ring_paged(prev));
	for (int step = 0; step < 8; step++) {
		const hr_node *nodes = step % 2 ? s->nodes : without;
		size_t shared = 0, in_slab = 0, count = step % 2 ? n : n - 1;
		const struct view *a = &prev->all, *b;

		ck_assert_int_eq(hr__ring_derive(prev, nodes, count, NULL, (uint64_t)step + 2,
						 &d, NULL), HR_OK);
		ck_assert(hr__ring_derived(d) && hr__ring_paged(d));
		b = &d->all;
		ck_assert_uint_eq(a->npages, b->npages);
		for (size_t p = 0; p < b->npages; p++) {
			shared += a->pages[p] == b->pages[p];
			in_slab += b->pages[p]->slab != NULL;
		}
		/* The node's 200 points in 256 pages leave about 117 alone. */
		EXPECT(shared >= b->npages / 4 && shared < b->npages);
		/* Pages outside the slab are this change's only: the
		 * regions of the pages that the rings released below
		 * replaced take the next change's pages (all of them when
		 * the released ring's were in the slab: the second ring). */
		EXPECT(b->npages - in_slab <= b->npages - shared);
		if (step == 1)
			EXPECT(in_slab == b->npages);
		ck_assert_int_eq(hr_ring_build(nodes, count, NULL, (uint64_t)step + 2, &f, NULL),
				 HR_OK);
		ck_assert_uint_eq(hr_ring_digest(d), hr_ring_digest(f));
		for (int k = 0; k < 2000; k++)
			expect_same_at(d, f, splitmix64(&rng));
		hr_ring_release(f);
		hr_ring_release(prev);
		prev = d;
	}
	hr_ring_release(prev);
	free(without);
	hrt_nodes_free(s);
}
END_TEST

/*
 * A first sync's points placed while its nodes arrive (ring_stream.c): the
 * ring built from them answers as a full build does, and so does the ring
 * when the points cannot be used: a node replaced, removed or put out of
 * order, a count far from the one expected, positions that are not uniform
 * (groups outgrow their room).
 */

enum stream_twist { STRAIGHT, REPLACED, REMOVED, OUT_OF_ORDER, FEWER_EXPECTED, TIES };

static void stream_case(enum stream_twist twist, uint64_t *rng)
{
	size_t n = 1400;	/* 280,000 points: paged */
	hr__point_hash_fn hash = twist == TIES ? tie_hash : xxh3;
	hrt_nodes *s = hrt_nodes_new(n, "node-%05zu", "127.0.0.1:%zu", 20000);
	hr__nodeset set = { 0 };
	hr_ring *empty, *d, *f;
	char id[32];

	ck_assert_int_eq(hr__ring_build_hashed(NULL, 0, NULL, 0, hash, &empty, NULL), HR_OK);
	set.stream = hr__ring_stream_open(empty, NULL, twist == FEWER_EXPECTED ? n / 4 : n);
	ck_assert_ptr_nonnull(set.stream);
	for (size_t i = 0; i < n; i++) {
		/* Out of order: node 1000 comes last. */
		size_t k = twist == OUT_OF_ORDER ? (i < 1000 ? i : i == n - 1 ? 1000 : i + 1) : i;

		put_record(&set, s->ids[k], 1, (int64_t)i + 1);
	}
	if (twist == REPLACED)
		put_record(&set, s->ids[7], 2, 7);
	if (twist == REMOVED) {
		snprintf(id, sizeof id, "%s", s->ids[n - 1]);
		ck_assert_int_eq(hr__nodeset_remove(&set, id), 1);
	}
	ck_assert_int_eq(hr__nodeset_derive(&set, empty, NULL, 9, NULL, NULL, &d, NULL), HR_OK);
	ck_assert_ptr_null(set.stream);
	ck_assert(hr__ring_paged(d) && !hr__ring_derived(d));
	EXPECT(d->placed_ahead == (twist == STRAIGHT));
	{
		/* The reference: a flat full build of the same records. */
		hr_node *copy = malloc(set.n * sizeof *copy);

		ck_assert_ptr_nonnull(copy);
		for (size_t i = 0; i < set.n; i++)
			copy[i] = set.m[i].rec;
		ck_assert_int_eq(hr__ring_build_layout(copy, set.n, NULL, 9, hash,
						       HR__LAYOUT_FLAT, &f, NULL), HR_OK);
		free(copy);
	}
	ck_assert(!hr__ring_paged(f));
	expect_same(d, f, hash, rng);
	hr_ring_release(f);
	hr_ring_release(d);
	hr_ring_release(empty);
	hr__nodeset_clear(&set);
	hrt_nodes_free(s);
}

START_TEST(stream_first_sync)
{
	uint64_t rng = 41;

	stream_case((enum stream_twist)_i, &rng);
}
END_TEST

/* A stream that is freed unused, spoiled, handed a ring of other nodes or
 * given too few points gives nothing and leaves nothing behind (ASan). */
START_TEST(stream_unused)
{
	size_t n = 1500;
	hrt_nodes *s = hrt_nodes_new(n, "node-%05zu", "127.0.0.1:%zu", 20000);
	hr_ring *empty, *other;
	hr__ring_stream *st;

	ck_assert_int_eq(hr_ring_build(NULL, 0, NULL, 0, &empty, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_build(s->nodes, n - 1, NULL, 1, &other, NULL), HR_OK);
	/* Nothing to gain: a placement whose points depend on every node,
	 * or no previous ring to take the point hash from. */
	{
		hr_ring_options ketama = { .size = sizeof ketama,
					   .placement = HR_PLACEMENT_KETAMA };

		ck_assert_ptr_null(hr__ring_stream_open(empty, &ketama, n));
		ck_assert_ptr_null(hr__ring_stream_open(NULL, NULL, n));
		ck_assert_ptr_null(hr__ring_stream_open(empty, NULL, 0));
	}
	/* Too few points for pages: nothing placed. */
	st = hr__ring_stream_open(empty, NULL, 10);
	for (size_t i = 0; i < 10; i++)
		hr__ring_stream_add(st, &s->nodes[i]);
	ck_assert_ptr_null(hr__ring_stream_take(st, other));
	hr__ring_stream_free(st);
	hr__ring_stream_free(hr__ring_stream_open(empty, NULL, n));
	st = hr__ring_stream_open(empty, NULL, n);
	hr__ring_stream_spoil(st);
	for (size_t i = 0; i < n; i++)
		hr__ring_stream_add(st, &s->nodes[i]);
	ck_assert_ptr_null(hr__ring_stream_take(st, other));
	hr__ring_stream_free(st);
	st = hr__ring_stream_open(empty, NULL, n);
	for (size_t i = 0; i < n; i++)
		hr__ring_stream_add(st, &s->nodes[i]);
	/* One node fewer in the ring. */
	ck_assert_ptr_null(hr__ring_stream_take(st, other));
	ck_assert_ptr_null(hr__ring_stream_take(st, other));
	hr__ring_stream_free(st);
	/* Past the first 1,024 nodes the thread places: spoiled, then freed
	 * while it may still be placing. */
	st = hr__ring_stream_open(empty, NULL, n);
	for (size_t i = 0; i < 1200; i++)
		hr__ring_stream_add(st, &s->nodes[i]);
	hr__ring_stream_spoil(st);
	hr__ring_stream_add(st, &s->nodes[1200]);
	hr__ring_stream_free(st);
	st = hr__ring_stream_open(empty, NULL, n);
	for (size_t i = 0; i < 1200; i++)
		hr__ring_stream_add(st, &s->nodes[i]);
	hr__ring_stream_free(st);
	hr__ring_stream_spoil(NULL);
	hr__ring_stream_add(NULL, &s->nodes[0]);
	ck_assert_ptr_null(hr__ring_stream_take(NULL, other));
	hr__ring_stream_free(NULL);
	hr_ring_release(other);
	hr_ring_release(empty);
	hrt_nodes_free(s);
}
END_TEST

/* A ring derived from `prev` for nodes[0..n) at `revision`, which must be
 * derived and answer as a full build does at 10,000 positions. */
static hr_ring *derived_as_built(const hr_ring *prev, const hr_node *nodes,
				 size_t n, const hr_ring_options *opts,
				 uint64_t revision, uint64_t *rng)
{
	hr_ring *d, *f;

	ck_assert_int_eq(hr__ring_derive(prev, nodes, n, opts, revision, &d, NULL), HR_OK);
	ck_assert(hr__ring_derived(d));
	ck_assert_int_eq(hr_ring_build(nodes, n, opts, revision, &f, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_digest(d), hr_ring_digest(f));
	for (int k = 0; k < 10000; k++)
		expect_same_at(d, f, splitmix64(rng));
	hr_ring_release(f);
	return d;
}

/* More than 65536 nodes number points with four bytes instead of two:
 * crossing the line both ways, and a change on the wide side. */
START_TEST(wide_node_numbers)
{
	size_t n = UINT16_MAX + 2;
	hrt_nodes *s = hrt_nodes_new(n, "w%zu", NULL, 0);
	hr_node *nodes = s->nodes;
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 1 };
	hr_ring *small, *big;
	uint64_t rng = 9;

	ck_assert_int_eq(hr_ring_build(nodes, n - 1, &opts, 1, &small, NULL), HR_OK);
	big = derived_as_built(small, nodes, n, &opts, 2, &rng);
	/* Wide on both sides: one node grows. */
	nodes[5].weight = 3;
	hr_ring_release(derived_as_built(big, nodes, n, &opts, 3, &rng));
	nodes[5].weight = 1;
	/* Back to two bytes, from a ring with every node in both views. */
	nodes[0].state = HR_STATE_WARMING;
	nodes[1].state = HR_STATE_DRAINING;
	hr_ring_release(derived_as_built(big, nodes + 1, n - 1, &opts, 3, &rng));
	hr_ring_release(big);
	hr_ring_release(small);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(edges_and_fallbacks)
{
	hr_node nodes[] = {
		{ .id = "a", .addr = "127.0.0.1:1", .weight = 1 },
		{ .id = "b", .addr = "127.0.0.1:2", .weight = 1 },
		{ .id = "c", .addr = "127.0.0.1:3", .weight = 1 },
	};
	hr_ring_options o10 = { .size = sizeof o10, .vnodes_per_weight = 10 };
	hr_ring_options o20 = { .size = sizeof o20, .vnodes_per_weight = 20 };
	hr_ring *empty, *one, *two, *d, *f;
	hr_error err = { 0 };
	uint64_t rng = 3;

	/* No previous ring, or an empty one: a full build. */
	ck_assert_int_eq(hr__ring_derive(NULL, nodes, 1, &o10, 1, &one, NULL), HR_OK);
	ck_assert(!hr__ring_derived(one));
	ck_assert_int_eq(hr__ring_derive(NULL, NULL, 0, &o10, 1, &empty, NULL), HR_OK);
	ck_assert_int_eq(hr__ring_derive(empty, nodes, 1, &o10, 1, &d, NULL), HR_OK);
	ck_assert(!hr__ring_derived(d));
	expect_same(d, one, xxh3, &rng);
	hr_ring_release(d);

	/* Everything removed: derived, and empty. */
	ck_assert_int_eq(hr__ring_derive(one, NULL, 0, &o10, 1, &d, NULL), HR_OK);
	ck_assert(hr__ring_derived(d));
	ck_assert_uint_eq(hr_ring_digest(d), hr_ring_digest(empty));
	ck_assert_uint_eq(hr_ring_point_count(d), 0);
	ck_assert_int_eq(hr_ring_lookup(d, "k", 1, &(hr_lookup){ 0 }, NULL), HR_EEMPTY);
	hr_ring_release(d);

	/* Another vnodes_per_weight or a large change: a full build. */
	ck_assert_int_eq(hr_ring_build(nodes, 3, &o10, 1, &two, NULL), HR_OK);
	ck_assert_int_eq(hr__ring_derive(two, nodes, 3, &o20, 1, &d, NULL), HR_OK);
	ck_assert(!hr__ring_derived(d));
	ck_assert_int_eq(hr_ring_build(nodes, 3, &o20, 1, &f, NULL), HR_OK);
	expect_same(d, f, xxh3, &rng);
	hr_ring_release(f);
	hr_ring_release(d);
	ck_assert_int_eq(hr__ring_derive(one, nodes, 3, &o10, 1, &d, NULL), HR_OK);
	ck_assert(!hr__ring_derived(d));
	expect_same(d, two, xxh3, &rng);
	hr_ring_release(d);

	/* Bad input is refused as by a full build; the previous ring is
	 * untouched. */
	nodes[2].id = "a";
	ck_assert_int_eq(hr__ring_derive(two, nodes, 3, &o10, 1, &d, &err),
			 HR_EDUPLICATE);
	ck_assert_ptr_null(d);
	ck_assert_ptr_nonnull(strstr(err.message, "duplicate"));
	nodes[2].id = "c";
	nodes[1].weight = -1;
	ck_assert_int_eq(hr__ring_derive(two, nodes, 3, &o10, 1, &d, &err), HR_EINVAL);
	nodes[1].weight = 1;
	ck_assert_int_eq(hr__ring_derive(two, NULL, 2, &o10, 1, &d, &err), HR_EINVAL);
	ck_assert_int_eq(hr__ring_derive(two, nodes, 3, &o10, 1, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr__ring_derive(two, nodes, 3, &o10, 7, &d, NULL), HR_OK);
	ck_assert(hr__ring_derived(d));
	ck_assert_uint_eq(hr_ring_revision(d), 7);
	ck_assert_uint_eq(hr_ring_digest(d), hr_ring_digest(two));
	hr_ring_release(d);

	hr_ring_release(two);
	hr_ring_release(one);
	hr_ring_release(empty);
}
END_TEST

static Suite *derive_suite(void)
{
	Suite *s = suite_create("derive");
	TCase *tc = tcase_create("derive");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, random_sequences);
	tcase_add_test(tc, random_sequences_ties);
	tcase_add_test(tc, random_sequences_paged);
	tcase_add_test(tc, random_sequences_paged_ties);
	tcase_add_test(tc, weight_flips_100_nodes);
	tcase_add_test(tc, big_blocks);
	tcase_add_test(tc, pages_shared_and_recycled);
	tcase_add_loop_test(tc, stream_first_sync, STRAIGHT, TIES + 1);
	tcase_add_test(tc, stream_unused);
	tcase_add_test(tc, wide_node_numbers);
	tcase_add_test(tc, edges_and_fallbacks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(derive_suite());
}
