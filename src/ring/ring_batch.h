/* SPDX-License-Identifier: MIT */
/* ring_batch.h - batch lookups on one ring, software-pipelined
 * (internal; the public entry points are hr_ring_lookup_batch() and the
 * client's, in hashring.h). */
#ifndef HR_RING_BATCH_H
#define HR_RING_BATCH_H

#include "hashring.h"
#include "view_batch.h"	/* HR__BATCH_DIST_MAX */

/*
 * hr_ring_lookup_batch() with the pipeline distance given: key j is hashed
 * while key j - dist has its points prefetched and key j - 2 * dist is
 * answered (0: one key at a time, no overlap).  For the benchmark, which
 * measures the distance the library uses.  HR_EINVAL beyond
 * HR__BATCH_DIST_MAX.
 */
int hr__ring_lookup_batch_dist(const hr_ring *ring, const void *const *keys,
			       const size_t *lens, size_t n,
			       hr_batch_owner *out, size_t dist, hr_error *err);

#endif
