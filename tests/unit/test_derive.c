/*
 * test_derive.c - a ring derived from the previous one (hr__ring_derive)
 * must be the ring a full build makes: random change sequences (adds,
 * removes, weight changes, state, addr and zone changes), with the real
 * point hash and with one that forces equal positions, compared on the
 * digest, the points, owners, preference lists and shares (one by one and
 * all at once).  Then the rings of a membership over the limits: which
 * records are left out, whatever the order they came in.
 */
#include "hashring.h"
#include "nodeset.h"
#include "ring.h"
#include "ring_build.h"
#include "ring_impl.h"
#include "ring_stream.h"
#include "ring_view.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"
#include "hrt_rand.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static size_t below(uint64_t *rng, size_t n)
{
	return (size_t)(splitmix64(rng) % n);
}

static uint64_t xxh3(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

/* Only 48 distinct positions: points of different nodes (and of one node)
 * share positions all the time, so the tie order is exercised. */
static uint64_t tie_hash(const void *buf, size_t len)
{
	return (XXH3_64bits(buf, len) % 48) * (UINT64_MAX / 48);
}

/* ---- a membership model -------------------------------------------------- */

#define UNIVERSE 40

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

static const double weights[] = {
	1, 2, 0.5, 1.5, 0.25, 3, 0.7, 1.005, 0.001, 0.125, 2.5, 0.33,
};

static double random_weight(uint64_t *rng)
{
	if (below(rng, 4) == 0)
		return 0.01 + (double)(splitmix64(rng) % 400000) / 100000.0;
	return weights[below(rng, sizeof weights / sizeof weights[0])];
}

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

static bool same_node(const hr_node *a, const hr_node *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a->id, b->id) == 0;
}

static void expect_same_at(const hr_ring *d, const hr_ring *f, uint64_t pos)
{
	hr_lookup ld, lf;
	int rd = hr__ring_lookup_pos(d, pos, &ld);
	int rf = hr__ring_lookup_pos(f, pos, &lf);

	EXPECT(rd == rf);
	EXPECT(same_node(ld.node, lf.node));
	EXPECT(same_node(ld.read_node, lf.read_node));
	EXPECT(ld.digest == lf.digest && ld.revision == lf.revision);
}

#define PREFLIST_MAX 128

static void expect_same_preflist(const hr_ring *d, const hr_ring *f,
				 uint64_t pos, size_t r)
{
	const hr_node *pd[PREFLIST_MAX], *pf[PREFLIST_MAX];

	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
		int nd = hr__ring_preflist_pos(d, pos, (hr_view)v, pd, r);
		int nf = hr__ring_preflist_pos(f, pos, (hr_view)v, pf, r);

		EXPECT(nd == nf);
		for (int i = 0; i < nd; i++)
			EXPECT(same_node(pd[i], pf[i]));
	}
}

/* Batches and bounded lookups of random keys: the same owners (batches
 * answer slots, and both rings number the same nodes alike); the same
 * tokens for a joiner. */
static void expect_same_batch_bounded(const hr_ring *d, const hr_ring *f,
				      uint64_t *rng)
{
	enum { KEYS = 300 };
	char keys[KEYS][24];
	const void *kp[KEYS];
	size_t lens[KEYS], n = hr_ring_node_count(f);
	hr_batch_owner od[KEYS], of[KEYS];
	uint64_t *loads = calloc(n + 1, sizeof *loads);
	int rd, rf;

	ck_assert_ptr_nonnull(loads);
	for (size_t i = 0; i < KEYS; i++) {
		lens[i] = (size_t)snprintf(keys[i], sizeof keys[i], "k%llu",
					   (unsigned long long)splitmix64(rng));
		kp[i] = keys[i];
	}
	rd = hr_ring_lookup_batch(d, kp, lens, KEYS, od, NULL);
	rf = hr_ring_lookup_batch(f, kp, lens, KEYS, of, NULL);
	EXPECT(rd == rf);
	for (size_t i = 0; rd == HR_OK && i < KEYS; i++)
		EXPECT(od[i].node == of[i].node && od[i].read_node == of[i].read_node);
	/* Loads that turn some owners away: the walk goes on clockwise. */
	for (size_t i = 0; i < n; i++)
		loads[i] = below(rng, 3) ? 0 : 1000;
	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
		for (size_t i = 0; i < KEYS; i++) {
			const hr_node *bd = NULL, *bf = NULL;

			rd = hr_ring_lookup_bounded(d, kp[i], lens[i], (hr_view)v, loads, 1.25, &bd);
			rf = hr_ring_lookup_bounded(f, kp[i], lens[i], (hr_view)v, loads, 1.25, &bf);
			EXPECT(rd == rf);
			EXPECT(same_node(bd, bf));
		}
	}
	free(loads);
	/* Tokens for a joiner, measured on the write view's arcs. */
	{
		hr_node joiner = { .id = "joiner", .addr = "127.0.0.1:1", .weight = 1 };
		uint64_t td[8], tf[8];

		rd = hr_tokens_allocate(d, &joiner, 8, td, NULL);
		rf = hr_tokens_allocate(f, &joiner, 8, tf, NULL);
		EXPECT(rd == rf);
		EXPECT(rd != HR_OK || memcmp(td, tf, sizeof td) == 0);
	}
}

/* d (derived) and f (full build) give the same answer to everything. */
static void expect_same(const hr_ring *d, const hr_ring *f,
			hr__point_hash_fn hash, uint64_t *rng)
{
	size_t n = hr_ring_node_count(f);
	char name[64];

	EXPECT(hr_ring_digest(d) == hr_ring_digest(f));
	EXPECT(hr_ring_point_count(d) == hr_ring_point_count(f));
	EXPECT(hr_ring_node_count(d) == n);
	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
		EXPECT(hr__ring_view_nodes(d, (hr_view)v) ==
		       hr__ring_view_nodes(f, (hr_view)v));
		EXPECT(hr__ring_view_points(d, (hr_view)v) ==
		       hr__ring_view_points(f, (hr_view)v));
	}
	for (size_t i = 0; i < n; i++) {
		const hr_node *a = hr_ring_node(d, i), *b = hr_ring_node(f, i);
		unsigned vn = hr_ring_node_vnodes(f, b);

		EXPECT(strcmp(a->id, b->id) == 0 && strcmp(a->addr, b->addr) == 0 &&
		       strcmp(a->zone, b->zone) == 0 && a->weight == b->weight &&
		       a->state == b->state);
		EXPECT(hr_ring_node_vnodes(d, a) == vn);
		EXPECT(hr_ring_node_share(d, a, HR_VIEW_WRITE) ==
		       hr_ring_node_share(f, b, HR_VIEW_WRITE));
		EXPECT(hr_ring_node_share(d, a, HR_VIEW_READ) ==
		       hr_ring_node_share(f, b, HR_VIEW_READ));
		/* Every point position and both neighbours. */
		for (unsigned k = 0; k < vn; k++) {
			int len = snprintf(name, sizeof name, "%s#%u", b->id, k);
			uint64_t pos = hash(name, (size_t)len);

			expect_same_at(d, f, pos - 1);
			expect_same_at(d, f, pos);
			expect_same_at(d, f, pos + 1);
		}
	}
	/* All shares at once: the same values, exactly. */
	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
		double *sd = calloc(n + 1, sizeof *sd), *sf = calloc(n + 1, sizeof *sf);

		ck_assert(sd && sf);
		EXPECT(hr_ring_node_shares(d, (hr_view)v, sd, n) == n);
		EXPECT(hr_ring_node_shares(f, (hr_view)v, sf, n) == n);
		for (size_t i = 0; i < n; i++)
			EXPECT(sd[i] == sf[i] &&
			       sf[i] == hr_ring_node_share(f, hr_ring_node(f, i), (hr_view)v));
		free(sd);
		free(sf);
	}
	for (int k = 0; k < 10000; k++)
		expect_same_at(d, f, splitmix64(rng));
	expect_same_at(d, f, 0);
	expect_same_at(d, f, UINT64_MAX);
	expect_same_batch_bounded(d, f, rng);
	for (int k = 0; k < 200; k++)
		expect_same_preflist(d, f, splitmix64(rng),
				     1 + below(rng, n < PREFLIST_MAX ? n + 1 : PREFLIST_MAX));
}

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

/* Pages (ring_pages.c) on small rings, where most pages are empty or hold
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
 * replaced leave (ring_pages.c): memory does not grow. */
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
static void put(hr__nodeset *s, const char *id, double weight, int64_t crev);

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

		put(&set, s->ids[k], 1, (int64_t)i + 1);
	}
	if (twist == REPLACED)
		put(&set, s->ids[7], 2, 7);
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
	ck_assert_int_eq(hr_ring_lookup(d, "k", 1, &(hr_lookup){ 0 }), HR_EEMPTY);
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

/* ---- admission: rings of a membership over the limits ------------------- */

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

static void put(hr__nodeset *s, const char *id, double weight, int64_t crev)
{
	char value[96];
	hr__record rec;

	snprintf(value, sizeof value, "{\"addr\":\"127.0.0.1:%d\",\"weight\":%.17g}",
		 (int)(1 + crev % 60000), weight);
	ck_assert_int_eq(hr__record_parse(id, strlen(id), value, strlen(value), &rec,
					  NULL), HR_OK);
	ck_assert_int_eq(hr__nodeset_put(s, &rec, crev, crev), HR_OK);
}

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
				put(&ref, specs[i].id, specs[i].weight, specs[i].create_revision);
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
				put(&s, specs[perm[i]].id, specs[perm[i]].weight,
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
				put(&s, ids[k], random_weight(&rng) * (below(&rng, 4) ? 1 : 20),
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

	put(&s, "good", 1, 2);
	put(&s, "good2", 1, 3);
	put(&s, "big1", heavy, 4);
	put(&s, "big2", heavy, 5);
	put(&s, "good3", 1, 6);
	put(&s, "huge", 1e300, 7);
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
	ck_assert_msg(strstr(msg, "node \"huge\": weight 1e+300 gives 1e+301 points at 10 per unit of weight, more than 33554432 points, a ring's limit"),
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

	put(&s, "a", 1, 2);
	put(&s, "b", 1.5, 3);
	put(&s, "c", 2, 4);
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
	tcase_add_test(tc, admission_ignores_arrival_order);
	tcase_add_test(tc, admission_derive_equals_full_build);
	tcase_add_test(tc, admission_keeps_the_oldest);
	tcase_add_test(tc, admission_ketama_weights);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(derive_suite());
}
