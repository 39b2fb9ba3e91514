/* SPDX-License-Identifier: MIT */
/*
 * pages.h - paged views (internal): a big ring's points in pages that the
 * rings after a small change share (see view.h for the layout, page.h for
 * a page's memory).
 *
 * A ring of millions of points rebuilt after a one-node change would write
 * all of them again (hundreds of megabytes) to move a few hundred.  A big
 * ring's points are instead cut into pages by the top bits of their
 * positions, about 2,000 points each; the ring after a small change copies
 * the table of pages and rebuilds only the pages where a point comes or
 * goes, sharing the others with the previous ring (each page counts its
 * rings).  Points name their node by a handle that stays with the node
 * from ring to ring, so that a node that joins or leaves, which shifts
 * every slot after its id, changes no page but its own points' pages.
 * Lookups pay two more reads than in a flat view: the page, and the slot
 * of the handle.
 *
 *   pages_table.c   the layout of a ring's pages, and the table of a view
 *   pages_build.c   a full build: every point placed (or placed ahead as a
 *                   first sync's nodes arrive) and sorted into pages
 *   pages_derive.c  the next ring's pages from the previous ring's
 *   pages_views.c   the write and read views from the pages of all points
 */
#ifndef HR_PAGES_H
#define HR_PAGES_H

#include "ring_impl.h"

/* Bits of a position that group pages while a ring is built. */
#define HR__PAGES_GROUP_BITS 8

/* Point positions computed at a time. */
#define HR__PAGES_CHUNK 64

/* A page's mark while a view is derived: shared, with fresh points only,
 * or with points to drop. */
enum { HR__PAGE_SHARED = 0, HR__PAGE_FRESH = 1, HR__PAGE_DROPS = 2 };

/* Whether `ring` (its layout and points counted), of a placement of
 * points by index, keeps its points in pages. */
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

/* ---- shared by the pages files ------------------------------------------- */

/* Index buckets per page of paged view `v`. */
static inline size_t hr__pages_buckets(const struct view *v)
{
	return (size_t)v->bucket_mask + 1;
}

/* Page bits for a ring of `npoints`: about 2,048 points a page, and one
 * group of pages or more per value of a position's top
 * HR__PAGES_GROUP_BITS bits (a full build places by them). */
unsigned hr__pages_bits(size_t npoints);

/* A full build's layout for `npoints` points: its page and bucket bits. */
void hr__pages_layout(size_t npoints, unsigned *page_bits, unsigned *bucket_bits);

/* The shifts and mask of 2^page_bits pages of 2^bucket_bits buckets. */
void hr__pages_shape(struct view *v, unsigned page_bits, unsigned bucket_bits);

/* Sets up paged view `v` of 2^page_bits pages (the table's memory, no page
 * yet) with 2^bucket_bits buckets a page.  HR_ENOMEM. */
int hr__pages_table(struct view *v, unsigned page_bits, unsigned bucket_bits);

/* A table like `from`'s, its pages not set.  HR_ENOMEM. */
int hr__pages_table_like(struct view *v, const struct view *from);

/* after[] of every page of `v`. */
void hr__pages_after_all(struct view *v);

/* after[] once page p changed: the pages before it up to the first with a
 * point (wrapping, p itself last) now end at its first point. */
void hr__pages_after_fix(struct view *v, size_t p);

/* Marks in `dirty` the pages of view `v` holding the points of node `slot`
 * of `r` (vnodes from .. to) as HR__PAGE_DROPS. */
void hr__pages_mark(const hr_ring *r, uint32_t slot, unsigned from, unsigned to,
		    const struct view *v, unsigned char *dirty);

/* Pages of `v` (a table like `from`'s) whose dirty[] is set, from the old
 * view `from`: each without the points of the handles drop[] marks and
 * merged with the fresh points (sorted, slots of `ring`) that fall in it;
 * the others shared (counted in v->bytes when `count_shared`).  after[]
 * follows.  HR_ENOMEM, the view's pages released. */
int hr__pages_rebuild(const hr_ring *ring, struct view *v, const struct view *from,
		      const unsigned char *dirty, const unsigned char *drop,
		      const struct point *fresh, size_t nfresh, bool count_shared);

#endif
