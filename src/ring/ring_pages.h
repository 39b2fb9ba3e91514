/* ring_pages.h - paged views: a big ring's points in pages that the rings
 * after a small change share (internal; see ring_impl.h for the layout). */
#ifndef HR_RING_PAGES_H
#define HR_RING_PAGES_H

#include "ring_impl.h"

/* Whether `ring` (its layout and points counted), of a placement with
 * point_positions, keeps its points in pages. */
bool hr__pages_wanted(const hr_ring *ring);

/* ring->all of every point of `ring` (its nodes and vnodes set), placed
 * and sorted into pages; handles are the slots.  Takes ring->pre (may be
 * NULL) and, when it holds every point of the ring in the layout the ring
 * gets, only sorts them.  HR_ENOMEM with `err` set. */
int hr__pages_build(hr_ring *ring, hr_error *err);

/*
 * Points placed ahead of a full build, by group into the slab of the
 * layout that `expect` points get (ring_stream.c feeds it while a ring's
 * nodes arrive).  NULL when that many points are not paged, or when out of
 * memory.  Not thread safe: one thread places, then a build takes it.
 */
hr__pages_pre *hr__pages_pre_new(size_t expect);

/* Writes pts[0 .. n) (node: the slot each will have) into `pre`; false,
 * and no more, once a group of positions outgrows its room (a hash that
 * is not uniform). */
bool hr__pages_pre_place(hr__pages_pre *pre, const struct point *pts, size_t n);

/* Accepts NULL. */
void hr__pages_pre_free(hr__pages_pre *pre);

/*
 * ring->all from prev->all (paged, placed the same way): the pages with
 * no point of a removed or changed node and no new point are shared, the
 * others built again.  Kept nodes keep their handles.  Sets *done to false,
 * changing nothing, when a full build is the better way (many points
 * change, or the page size no longer fits the ring).  HR_ENOMEM with `err`
 * set.
 */
int hr__pages_derive(hr_ring *ring, const hr_ring *prev, bool *done,
		     hr_error *err);

/* Both views of `ring` from ring->all: all itself where every node is in
 * the view, else all's pages without the other nodes' points (only the
 * pages that have some are copied).  Counts each view's nodes and zones.
 * HR_ENOMEM with `err` set. */
int hr__pages_views(hr_ring *ring, hr_error *err);

/* Drops a ring's hold on `slab` (ring->slab; may be NULL). */
void hr__pages_slab_drop(struct vslab *slab);

/* Releases what paged view `v` owns (nothing when it shares another's
 * pages); `v` is cleared.  Accepts a flat view (does nothing). */
void hr__pages_release(struct view *v);

#endif
