/* SPDX-License-Identifier: MIT */
/*
 * page.h - a page of a paged view (view.h) in memory: its header and
 * arrays in one block, the count of the rings that share it, and the slab
 * it may be cut from (internal).
 *
 * A ring of millions of points rebuilt after a one-node change would write
 * them all again to move a few hundred: a big ring's points are instead in
 * pages of about 2,000, and the ring after a small change rebuilds only the
 * pages where a point comes or goes, sharing the others (pages_*.c).
 * Fresh memory costs a page fault per 4 KiB first touched, which would be
 * most of such a change: a full build puts its pages in one slab of equal
 * regions, and a page that dies leaves its region to the next change's
 * pages, so rings derived one from another reuse the same memory.
 */
#ifndef HR_PAGE_H
#define HR_PAGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Positions compared at once by a search (view.h, scan_pos), hence the
 * padding of UINT64_MAX after the last position of a page or a flat
 * view. */
#define POS_PAD 4

/*
 * A page: the points of one 2^-page_bits part of the circle, sorted, with
 * an index on the next bits of a position.  Points name their node by
 * handle.  A page never changes once built and is shared by the rings
 * that have the same points there (refs).
 */
struct vpage {
	atomic_uint refs;
	uint32_t n;
	/* In this order after the header, so that a lookup finds them
	 * from the page's address and its view's count[] without reading
	 * the header. */
	uint32_t *index;	/* first point of each bucket */
	uint64_t *pos;		/* n, then POS_PAD times UINT64_MAX */
	uint32_t *node;		/* n handles, then POS_PAD zeros */
	size_t bytes;		/* of the page, as asked of malloc */
	/* NULL, or the slab the page is a region of. */
	struct vslab *slab;
};

_Static_assert(sizeof(struct vpage) % sizeof(uint64_t) == 0 && POS_PAD % 2 == 0,
	       "a page's positions are aligned");

/*
 * One block of equal regions, each room for a page: counted, the pages in
 * it and the rings that cut pages from it; freed with the last.
 */
struct vslab {
	pthread_mutex_t mu;
	size_t users;		/* under mu */
	size_t region;		/* bytes of a region */
	void *free;		/* dead regions, linked by their first word */
};

/* A slab's regions start on cache lines; the first after the header. */
#define HR__SLAB_ALIGN 64
#define HR__SLAB_FIRST ((sizeof(struct vslab) + HR__SLAB_ALIGN - 1) & \
			~(size_t)(HR__SLAB_ALIGN - 1))

/* Bytes of a page of `n` points and `buckets` index buckets. */
size_t hr__page_bytes(size_t n, size_t buckets);

/* Sets up page `pg` of `bytes` bytes (a region of `slab`, or NULL) for
 * `n` points: its arrays laid out, the padding written, one ring
 * counted; positions, handles and index are the caller's to fill. */
struct vpage *hr__page_init(struct vpage *pg, size_t bytes, size_t n,
			    size_t buckets, struct vslab *slab);

/* A page of `n` points: a dead region of `slab` (may be NULL) if it has
 * one, else memory of its own.  NULL when out of memory. */
struct vpage *hr__page_new(size_t n, size_t buckets, struct vslab *slab);

/* Drops a ring's count of `pg`; the last gives its memory back. */
void hr__page_release(struct vpage *pg);

/* Sets up the header of a slab whose regions are `region` bytes, with
 * `users` (its pages, and the ring that cut them). */
void hr__slab_init(struct vslab *slab, size_t users, size_t region);

/* A ring more cuts pages from `slab`. */
void hr__slab_hold(struct vslab *slab);

/* A ring drops its hold on `slab` (may be NULL). */
void hr__slab_drop(struct vslab *slab);

#endif
