/* ring_view.h - a view's memory, its index and the subset views of a ring
 * (internal; see ring_impl.h for the layout). */
#ifndef HR_RING_VIEW_H
#define HR_RING_VIEW_H

#include "ring_impl.h"

/* Allocates view `v` of `ring` with room for `npoints` (positions padded,
 * node numbers of 2 or 4 bytes as the ring's node count needs).  Fills
 * nothing but the padding.  HR_ENOMEM. */
int hr__view_alloc(const hr_ring *ring, struct view *v, size_t npoints);

/* Bytes of the block hr__view_alloc() gave view `v` (as asked of malloc),
 * whether the view or the ring's shared block owns it; 0 for a view never
 * allocated. */
size_t hr__view_bytes(const struct view *v);

/*
 * malloc() for the big arrays of a ring build (views, placed points): a
 * block of HR__BIG_BLOCK bytes or more is aligned to and advised for
 * transparent huge pages, so that the first touch of a large ring's memory
 * costs one page fault per 2 MiB rather than per 4 KiB, and its scattered
 * writes fewer TLB misses.  Released with free().  NULL when out of
 * memory.
 */
#define HR__BIG_BLOCK ((size_t)4 << 20)
void *hr__big_alloc(size_t bytes);

/*
 * hr__big_alloc() with the advice left for later (hr__big_advise): for a
 * block written while etcd serves a first sync (ring_stream.c).  A huge
 * page must be fresh memory, which a virtual machine's host may back
 * several times slower than the small pages the kernel has at hand;
 * advised once written, the block is gathered into huge pages in the
 * background (khugepaged).
 */
void *hr__big_alloc_later(size_t bytes);
void hr__big_advise(void *mem, size_t bytes);

/* index[k] = how many of the sorted positions pos[0 .. n) have a bucket,
 * (pos >> shift) & mask, below k, for the mask + 1 buckets: counted, then
 * summed, two passes without a branch to mispredict.  A flat view's index
 * and a page's (ring_pages.c). */
void hr__index_build(const uint64_t *pos, size_t n, uint32_t *index,
		     unsigned shift, uint64_t mask);

/* Builds the index of a view whose points are in place and sorted. */
void hr__view_index(struct view *v);

/* qsort() order of struct point: by position, then node number. */
int hr__point_cmp(const void *a, const void *b);

/* Sets up view `which` of `ring` from `all`, the sorted points of every
 * node: `all` itself when every node is in the view (the view then owns
 * no memory), else a copy of the points of its nodes, indexed.  Counts the
 * view's nodes and zones.  HR_ENOMEM with `err` set. */
int hr__view_subset(hr_ring *ring, const struct view *all, hr_view which,
		    hr_error *err);

/* Counts the nodes and zones of view `which` into `v` (ring->nodes and
 * their zones set). HR_ENOMEM. */
int hr__view_count(const hr_ring *ring, hr_view which, struct view *v);

/* Sorts `n` 16-byte records (struct point, or any pair of uint64_t) by the
 * uint64_t they start with, stably, through `tmp` (room for n records). */
void hr__sort_records(void *base, void *tmp, size_t n);

/* fill_views for placements that build each view whole from its nodes
 * (ketama, Maglev): the write view by `build_view`; the read view the same
 * when a node warms or drains, else one shared with the write view; then
 * ring->npoints from the nodes' vnodes. */
int hr__view_fill_each(hr_ring *ring,
		       int (*build_view)(hr_ring *ring, hr_view which, hr_error *err),
		       hr_error *err);

#endif
