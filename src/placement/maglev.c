/* SPDX-License-Identifier: MIT */
/*
 * maglev.c - Maglev placement (docs/placement.md section 14).  Each view is
 * a table of M slots built from the view's nodes: a node's permutation of
 * the slots comes from two hashes of its id; nodes take slots in turns,
 * each its next free slot in its permutation, until the table is full.
 * Weights set how many slots a node takes (its quota, by largest
 * remainder) and how often its turn comes (evenly spread over the fill).
 *
 * Slot j is the point at ceil((j + 1) * 2^64 / M) - 1 on the circle, so a
 * key at XXH3_64bits(key) = h is in slot floor(h * M / 2^64): the owner by
 * "first point at or after" and the table read agree (a table view,
 * src/ring/view.h), and preference lists, shares, diffs and bounded loads
 * walk the table as they walk any view.  A lookup is the key hash and one
 * table read.
 */
#include "maglev.h"

#include "error.h"
#include "placement.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Seeds of the two hashes of a node's id. */
#define SEED_OFFSET 1
#define SEED_SKIP 2

/* What opens the digest: u32le(0), then these four ASCII bytes "magl",
 * above any node count ketama writes there, then u32le(M). */
#define DIGEST_WORD 0x6c67616du

static bool is_prime(uint64_t m)
{
	if (m < 2)
		return false;
	for (uint64_t d = 2; d * d <= m; d++)
		if (m % d == 0)
			return false;
	return true;
}

int hr__maglev_size_check(uint64_t m, hr_error *err)
{
	if (m < HR_MAGLEV_SIZE_MIN || m > HR_MAGLEV_SIZE_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "hr_ring_options: maglev_size %" PRIu64
				     " is out of range: a prime from %u to %u",
				     m, HR_MAGLEV_SIZE_MIN, HR_MAGLEV_SIZE_MAX);
	if (!is_prime(m))
		return hr__error_set(err, HR_EINVAL,
				     "hr_ring_options: maglev_size %" PRIu64
				     " is not a prime (65537 is, the default)", m);
	return HR_OK;
}

static size_t digest_opening(const hr__place_opts *o, unsigned char *out)
{
	hr__put_u32le(out, 0);
	hr__put_u32le(out + 4, DIGEST_WORD);
	hr__put_u32le(out + 8, (uint32_t)o->maglev_size);
	return 12;
}

/* Every valid node can be placed; the table decides the slots. */
static int node_points(const hr_node *node, unsigned vnodes_per_weight,
		       unsigned *points, hr_error *err)
{
	*points = 0;
	return HR_OK;
}

/* ---- quotas ---------------------------------------------------------------- */

struct member {
	uint32_t slot;		/* the node's index in the view's nodes */
	uint32_t quota;		/* table slots it takes */
	uint32_t taken;
	uint64_t next;		/* its permutation's next entry */
	uint64_t skip;
	double weight;		/* relative: the node's over the largest */
	double rem;		/* the fraction its quota's floor left */
};

/* Orders members by remainder, largest first, then id (slot) order. */
static int cmp_rem_desc(const void *a, const void *b)
{
	const struct member *x = *(const struct member *const *)a;
	const struct member *y = *(const struct member *const *)b;

	if (x->rem != y->rem)
		return x->rem > y->rem ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/*
 * Quotas by largest remainder: node i's exact share of the m slots is
 * q = (m * u) / W in double arithmetic (u its relative weight, W their sum
 * in id order, at most the node count: nothing overflows), its quota
 * floor(q), then the slots left go one each to the largest remainders
 * q - floor(q), ties in id order, round after round should rounding have
 * left more slots than nodes.  Should the floors exceed m (rounding
 * again), the smallest remainders, last in that order, give one back.
 */
static int set_quotas(struct member *mb, size_t n, uint64_t m, hr_error *err)
{
	struct member **order = malloc(n * sizeof *order);
	double total = 0;
	uint64_t sum = 0;

	if (!order)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		total += mb[i].weight;
	for (size_t i = 0; i < n; i++) {
		double q = ((double)m * mb[i].weight) / total;
		double f = floor(q);

		if (f > (double)m)
			f = (double)m;
		mb[i].quota = (uint32_t)f;
		mb[i].rem = q - f;
		sum += mb[i].quota;
		order[i] = &mb[i];
	}
	qsort(order, n, sizeof *order, cmp_rem_desc);
	for (size_t k = 0; sum < m; k = (k + 1) % n, sum++)
		order[k]->quota++;
	for (size_t k = n - 1; sum > m; k = k ? k - 1 : n - 1) {
		if (order[k]->quota) {
			order[k]->quota--;
			sum--;
		}
	}
	free(order);
	return HR_OK;
}

/* ---- the fill -------------------------------------------------------------- */

/*
 * Member a's next turn comes before member b's: the k-th turn (from 0) of
 * a node of relative weight u is at time (2k + 1) / u, compared as
 * (2k_a + 1) * u_b < (2k_b + 1) * u_a in double arithmetic; ties in id
 * order.  Times depend
 * on the node's own weight alone, so a node that joins or leaves does not
 * reorder the others' turns, and equal weights take turns round-robin in
 * id order, as in the paper.
 */
static bool turn_before(const struct member *a, const struct member *b)
{
	double ta = (double)(2 * (uint64_t)a->taken + 1) * b->weight;
	double tb = (double)(2 * (uint64_t)b->taken + 1) * a->weight;

	return ta < tb || (ta == tb && a->slot < b->slot);
}

static void sift_down(struct member **heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, best = i;

		if (l < n && turn_before(heap[l], heap[best]))
			best = l;
		if (l + 1 < n && turn_before(heap[l + 1], heap[best]))
			best = l + 1;
		if (best == i)
			return;
		struct member *t = heap[i];

		heap[i] = heap[best];
		heap[best] = t;
		i = best;
	}
}

/* (c + skip) mod m for c, skip < m, without a division. */
static inline uint64_t step(uint64_t c, uint64_t skip, uint64_t m)
{
	c += skip;
	return c >= m ? c - m : c;
}

/* Fills table[0 .. m) with the members' indices. */
static int fill_table(const hr__place_opts *o, const hr_node *const *nodes,
		      struct member *mb, size_t n, uint32_t *table, hr_error *err)
{
	uint64_t m = o->maglev_size;
	struct member **heap;
	double most = 0;
	size_t live = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (nodes[i]->weight > most)
			most = nodes[i]->weight;
	for (size_t i = 0; i < n; i++) {
		const char *id = nodes[i]->id;
		size_t len = strlen(id);
		uint64_t h1 = XXH3_64bits_withSeed(id, len, SEED_OFFSET);
		uint64_t h2 = XXH3_64bits_withSeed(id, len, SEED_SKIP);

		mb[i].slot = (uint32_t)i;
		mb[i].next = h1 % m;
		mb[i].skip = h2 % (m - 1) + 1;
		mb[i].taken = 0;
		mb[i].weight = nodes[i]->weight / most;
	}
	rc = set_quotas(mb, n, m, err);
	if (rc)
		return rc;
	heap = malloc(n * sizeof *heap);
	if (!heap)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (mb[i].quota)
			heap[live++] = &mb[i];
	for (size_t i = live / 2; i-- > 0;)
		sift_down(heap, live, i);
	for (uint64_t j = 0; j < m; j++)
		table[j] = UINT32_MAX;
	/* The quotas sum to m: when the heap empties the table is full. */
	while (live) {
		struct member *t = heap[0];

		/* m is prime and 0 < skip < m: the permutation reaches every
		 * slot, so a free one is found. */
		while (table[t->next] != UINT32_MAX)
			t->next = step(t->next, t->skip, m);
		table[t->next] = t->slot;
		t->next = step(t->next, t->skip, m);
		if (++t->taken == t->quota)
			heap[0] = heap[--live];
		sift_down(heap, live, 0);
	}
	free(heap);
	return HR_OK;
}

/* One view's table: its nodes' permutations in weighted turns. */
static int view_table(const hr__place_opts *o, const hr_node *const *nodes,
		      size_t n, uint32_t *table, hr_error *err)
{
	struct member *mb = malloc((n ? n : 1) * sizeof *mb);
	int rc;

	if (!mb)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = fill_table(o, nodes, mb, n, table, err);
	free(mb);
	return rc;
}

static int check(const hr__place_opts *o, hr_error *err)
{
	return hr__maglev_size_check(o->maglev_size, err);
}

const hr__placement hr__placement_maglev = {
	.name = "maglev",
	.kind = HR__PLACE_TABLE,
	.digest_opening = digest_opening,
	.node_points = node_points,
	.check = check,
	.view_table = view_table,
	.key_pos = NULL,		/* XXH3_64bits(key), as native */
};
