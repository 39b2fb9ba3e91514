/* SPDX-License-Identifier: MIT */
/*
 * ring_batch.c - batch lookups: the owners of many keys from one ring, the
 * keys checked, then searched in its two views a batch at a time
 * (view_batch.c).
 */
#include "ring_batch.h"

#include "error.h"
#include "ring_impl.h"
#include "view_batch.h"

/* Measured with hashring-bench (docs/performance.md, "Batch lookups"): at
 * 1,000 nodes the time per key falls steeply up to a distance of 4, levels
 * off by 8 and is flat to 16, rising past it; at 10 and 100 nodes, where
 * the ring is in cache, it is flat from 1 or 2.  8 is in the flat part on
 * every size. */
#define BATCH_DIST 8

static int check_args(const hr_ring *ring, const void *const *keys,
		      const size_t *lens, size_t n, hr_batch_owner *out,
		      hr_error *err)
{
	if (!ring)
		return hr__error_set(err, HR_EINVAL, "lookup_batch: NULL ring");
	if (n && (!keys || !lens || !out))
		return hr__error_set(err, HR_EINVAL, "lookup_batch: %s is NULL with n = %zu",
				     !keys ? "keys" : !lens ? "lens" : "out", n);
	for (size_t i = 0; i < n; i++)
		if (!keys[i] && lens[i])
			return hr__error_set(err, HR_EINVAL,
					     "lookup_batch: keys[%zu] is NULL with "
					     "lens[%zu] = %zu", i, i, lens[i]);
	return HR_OK;
}

int hr__ring_lookup_batch_dist(const hr_ring *ring, const void *const *keys,
			       const size_t *lens, size_t n,
			       hr_batch_owner *out, size_t dist, hr_error *err)
{
	const struct view *w, *r;
	int rc = check_args(ring, keys, lens, n, out, err);

	if (rc)
		return rc;
	if (dist > HR__BATCH_DIST_MAX)
		return hr__error_set(err, HR_EINVAL, "lookup_batch: distance %zu over %d",
				     dist, HR__BATCH_DIST_MAX);
	w = &ring->views[HR_VIEW_WRITE];
	r = &ring->views[HR_VIEW_READ];
	if (!w->npoints && !r->npoints) {
		for (size_t i = 0; i < n; i++)
			out[i] = (hr_batch_owner){ HR_NO_NODE, HR_NO_NODE };
		return hr__error_set(err, HR_EEMPTY,
				     "lookup_batch: the ring (revision %llu) has no node",
				     (unsigned long long)ring->revision);
	}
	hr__views_batch(w, r, ring->key_pos, keys, lens, n, out, dist);
	return HR_OK;
}

int hr_ring_lookup_batch(const hr_ring *ring, const void *const *keys,
			 const size_t *lens, size_t n, hr_batch_owner *out,
			 hr_error *err)
{
	return hr__ring_lookup_batch_dist(ring, keys, lens, n, out, BATCH_DIST,
					  err);
}
