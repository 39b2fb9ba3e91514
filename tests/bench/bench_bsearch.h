/* SPDX-License-Identifier: MIT */
/*
 * bench_bsearch.h - the textbook ring the benchmarks compare lookups with:
 * the points of docs/placement.md (vnodes, "<id>#<i>" hashed with XXH3)
 * computed from a ring's nodes, sorted, and a plain binary search over
 * them.  Used by hashring-bench and hashring-lookup-depth.
 */
#ifndef HRB_BSEARCH_H
#define HRB_BSEARCH_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

struct bs_ring {
	uint64_t *pos;
	uint32_t *node;		/* the ring's node numbers (id order) */
	size_t n;
};

/* Builds `b` from the nodes of `ring` (a vnodes ring); 0, or -1 without
 * memory.  bs_free() frees it either way. */
int bs_build(struct bs_ring *b, const hr_ring *ring);
void bs_free(struct bs_ring *b);

/* The node number of the first point at or after the key's position,
 * wrapping.  Inline: it is what is timed. */
static inline uint32_t bs_lookup(const struct bs_ring *b, const void *key, size_t len)
{
	uint64_t h = hr_hash_key(key, len);
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->pos[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return b->node[lo == b->n ? 0 : lo];
}

#endif
