/* SPDX-License-Identifier: MIT */
/* same_ring.c - every answer of two rings compared (same_ring.h). */
#include "same_ring.h"

#include "hrt_check.h"
#include "hrt_rand.h"
#include "record.h"
#include "ring.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

size_t below(uint64_t *rng, size_t n)
{
	return (size_t)(splitmix64(rng) % n);
}

uint64_t xxh3(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

static const double weights[] = {
	1, 2, 0.5, 1.5, 0.25, 3, 0.7, 1.005, 0.001, 0.125, 2.5, 0.33,
};

double random_weight(uint64_t *rng)
{
	if (below(rng, 4) == 0)
		return 0.01 + (double)(splitmix64(rng) % 400000) / 100000.0;
	return weights[below(rng, sizeof weights / sizeof weights[0])];
}

static bool same_node(const hr_node *a, const hr_node *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a->id, b->id) == 0;
}

void expect_same_at(const hr_ring *d, const hr_ring *f, uint64_t pos)
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

			rd = hr_ring_lookup_bounded(d, kp[i], lens[i], (hr_view)v, loads, 1.25, &bd, NULL);
			rf = hr_ring_lookup_bounded(f, kp[i], lens[i], (hr_view)v, loads, 1.25, &bf, NULL);
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

void expect_same(const hr_ring *d, const hr_ring *f,
			hr__point_hash_fn hash, uint64_t *rng)
{
	size_t n = hr_ring_node_count(f);
	char name[HR_ID_MAX + 16];	/* "id#k" of the longest id */

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
		EXPECT(hr_ring_node_shares(d, (hr_view)v, sd, n) == (int)n);
		EXPECT(hr_ring_node_shares(f, (hr_view)v, sf, n) == (int)n);
		for (size_t i = 0; i < n; i++)
			EXPECT(sd[i] == sf[i]);
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

void put_record(hr__nodeset *s, const char *id, double weight, int64_t crev)
{
	char value[96];
	hr__record rec;

	snprintf(value, sizeof value, "{\"addr\":\"127.0.0.1:%d\",\"weight\":%.17g}",
		 (int)(1 + crev % 60000), weight);
	ck_assert_int_eq(hr__record_parse(id, strlen(id), value, strlen(value), &rec,
					  NULL), HR_OK);
	ck_assert_int_eq(hr__nodeset_put(s, &rec, crev, crev), HR_OK);
}
