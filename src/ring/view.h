/* SPDX-License-Identifier: MIT */
/*
 * view.h - a view: the points of the nodes in one state of a ring (its
 * write or its read view) laid out for search, and the one interface that
 * every walk over a view goes through (internal).
 *
 * A view is of one of four kinds, which its placement decides:
 *
 *   VIEW_FLAT    sorted points in arrays, with a direct index on the top
 *                bits of a position (points placed one by one: XXH3,
 *                tokens; ketama's continuum);
 *   VIEW_PAGED   the same cut into pages by the top bits of a position,
 *                which the next ring shares where they do not change
 *                (big rings of a placement with point_positions);
 *   VIEW_TABLE   a Maglev table: M slots, slot j a point at a fixed
 *                position, so the slot of a position is one multiplication
 *                away;
 *   VIEW_SCORES  no points on the circle but the view's nodes with their
 *                score inputs (rendezvous): a key goes to the highest score.
 *
 * Whatever the kind, a point is named by one number (a size_t: an index,
 * or for a paged view its page and its place there), and the functions
 * below find the point owning a position (view_find), name its node's slot
 * (view_slot) and position (view_pos), and walk on from it (view_succ,
 * view_next; view_lower and view_after for walks that stop at the end).
 * The search is inline: every lookup entry point compiles it into itself.
 * Nothing outside view*.c, pages*.c and the views' builders reads a
 * layout's fields.
 */
#ifndef HR_VIEW_H
#define HR_VIEW_H

#include "page.h"
#include "placement.h"
#include "rendezvous.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum view_kind {
	VIEW_FLAT = 0,
	VIEW_PAGED,
	VIEW_TABLE,
	VIEW_SCORES,
};

/*
 * One view.  A flat view's buckets hold one or two points on average, so a
 * lookup is one index read and a few comparisons on one cache line (see
 * view_find); node numbers take two bytes per point when they fit, which
 * with the index keeps a point at about 13 bytes.  An empty view (no
 * points) is flat.
 */
struct view {
	/* The layout's memory, one pointer whatever the kind, so that two
	 * views over the same memory compare as one (views_one). */
	union {
		uint64_t *pos;		/* FLAT, TABLE: npoints positions, then
					 * POS_PAD times UINT64_MAX */
		struct vpage **pages;	/* PAGED: npages pages, page p holding
					 * positions p << page_shift on */
		const struct rdv_member *rdv;	/* SCORES: npoints nodes' inputs */
	};
	/* FLAT, TABLE, SCORES: per point its node's slot, uint16_t or (wide)
	 * uint32_t; for SCORES always wide.  FLAT and TABLE: then POS_PAD
	 * zeros, read (not used) by view_flat_slot(). */
	void *node;
	uint32_t *index;	/* FLAT, TABLE: the first point of each bucket */
	uint64_t table;		/* TABLE: its slots (M) */
	size_t npoints;
	size_t nnodes;
	size_t nzones;
	unsigned shift;		/* FLAT, TABLE: 64 - index bits */
	bool wide;
	unsigned char kind;	/* enum view_kind */
	void *mem;		/* owned block; NULL if it is another's */
	size_t bytes;		/* of that block, as asked of malloc */
	/* PAGED: per page the handle of the first point at or after its end,
	 * wrapping: the owner of the positions past its last point; and its
	 * points (pages[p]->n, where a lookup reads it).  mem owns pages[],
	 * after[], count[] and a reference to each page. */
	uint32_t *after;
	uint32_t *count;
	size_t npages;
	unsigned page_shift;	/* 64 - page bits */
	unsigned bucket_shift;	/* (pos >> bucket_shift) & bucket_mask */
	uint32_t bucket_mask;	/*   is a position's bucket in its page */
	/* PAGED: points name their node by a handle that stays with it from
	 * ring to ring; handle_slot[h] is the slot of handle h (the ring's). */
	const uint32_t *handle_slot;
	uint32_t nhandles;	/* PAGED: handles 0..nhandles-1 exist */
};

/* No node: a slot that a ring does not have. */
#define NO_NODE UINT32_MAX

/* ---- flat layouts (FLAT, TABLE; node numbers of SCORES) ------------------ */

static inline uint32_t view_node(const struct view *v, size_t i)
{
	return v->wide ? ((const uint32_t *)v->node)[i] :
			 ((const uint16_t *)v->node)[i];
}

static inline void view_set_node(struct view *v, size_t i, uint32_t node)
{
	if (v->wide)
		((uint32_t *)v->node)[i] = node;
	else
		((uint16_t *)v->node)[i] = (uint16_t)node;
}

/*
 * The first of positions p[i ..] at or after `key`: i is the start of
 * key's index bucket (view_lower_bound() reads it; a batch reads it ahead,
 * see view_batch.c).  Every point after the bucket is above any position
 * in it, and padding ends the array with UINT64_MAX, so the points below
 * `key` from the bucket's start are a prefix: counting them among the next
 * POS_PAD is exact unless all are below, which needs a crowded bucket.
 * The count has no branch to mispredict.
 */
static inline size_t scan_pos(const uint64_t *p, size_t i, uint64_t key)
{
	const uint64_t *q = p + i;
	size_t below = (size_t)(q[0] < key) + (size_t)(q[1] < key) +
		       (size_t)(q[2] < key) + (size_t)(q[3] < key);

	i += below;
	if (__builtin_expect(below == POS_PAD, 0)) {
		while (p[i] < key)
			i++;
	}
	return i;
}

/* The first point of flat view `v` at or after `pos`, or v->npoints: no
 * wrap, counting from `i`, the start of pos's index bucket. */
static inline size_t view_scan(const struct view *v, size_t i, uint64_t pos)
{
	return scan_pos(v->pos, i, pos);
}

/* The index bucket of `pos` in a flat view: where view_scan() starts. */
static inline const uint32_t *view_bucket(const struct view *v, uint64_t pos)
{
	return &v->index[pos >> v->shift];
}

static inline size_t view_lower_bound(const struct view *v, uint64_t pos)
{
	return view_scan(v, *view_bucket(v, pos), pos);
}

/* The slot of a table of `m` slots that holds `pos`: floor(pos * m / 2^64). */
static inline size_t table_slot(uint64_t pos, uint64_t m)
{
	return (size_t)(((unsigned __int128)pos * m) >> 64);
}

/* ---- paged layouts ---------------------------------------------------------
 * A point of a paged view is named by its page and its place in it:
 * page << 32 | offset. */

#define PAGED_AT(page, i) (((size_t)(page) << 32) | (size_t)(i))
#define PAGED_PAGE(at) ((at) >> 32)
#define PAGED_OFF(at) ((at) & 0xffffffffu)

/* The page holding `pos`. */
static inline size_t paged_page(const struct view *v, uint64_t pos)
{
	return (size_t)(pos >> v->page_shift);
}

/* The bucket of `pos` in its page. */
static inline size_t paged_bucket(const struct view *v, uint64_t pos)
{
	return (size_t)(pos >> v->bucket_shift) & v->bucket_mask;
}

/* The offset of the first point at or after `pos` in page `pg` (the one
 * holding pos); pg->n when there is none in it. */
static inline size_t paged_scan(const struct view *v, const struct vpage *pg,
				uint64_t pos)
{
	return scan_pos(pg->pos, pg->index[paged_bucket(v, pos)], pos);
}

/* Page p's arrays from its address and the view's count[] alone (the
 * page's header is not read): its index, and its positions, followed
 * (after the padding) by its handles. */
static inline const uint32_t *paged_index(const struct view *v, size_t p)
{
	return (const uint32_t *)(v->pages[p] + 1);
}

static inline const uint64_t *paged_positions(const struct view *v,
					      const uint32_t *index)
{
	return (const uint64_t *)(index + v->bucket_mask + 1);
}

/* The handle of point `i` of a page whose positions are `at` (n points),
 * else, past its last point, the one after page p. */
static inline uint32_t paged_handle_at(const struct view *v, size_t p,
				       const uint64_t *at, size_t n, size_t i)
{
	return i < n ? ((const uint32_t *)(at + n + POS_PAD))[i] : v->after[p];
}

/* The handle owning `pos`: the first point at or after it, else the one
 * after the page.  As in view_flat_slot(), the handles of the POS_PAD
 * points from the bucket's start are read with their positions (a page's
 * handles are padded for it), not after the count. */
static inline uint32_t paged_handle(const struct view *v, uint64_t pos)
{
	size_t p = paged_page(v, pos), n = v->count[p];
	const uint32_t *index = paged_index(v, p);
	const uint64_t *at = paged_positions(v, index);
	size_t i = index[paged_bucket(v, pos)], below;
	const uint64_t *q = at + i;
	uint32_t hd[POS_PAD];

	memcpy(hd, (const uint32_t *)(at + n + POS_PAD) + i, sizeof hd);
	below = (size_t)(q[0] < pos) + (size_t)(q[1] < pos) +
		(size_t)(q[2] < pos) + (size_t)(q[3] < pos);
	if (__builtin_expect(below < POS_PAD && i + below < n, 1))
		return hd[below];
	return paged_handle_at(v, p, at, n, scan_pos(at, i, pos));
}

/* Past the last point of a view, for the walks that do not wrap
 * (view_lower, view_after). */
#define VIEW_END SIZE_MAX

/* The first point of the first page at or after page p that has one, or
 * VIEW_END. */
static inline size_t paged_from(const struct view *v, size_t p)
{
	for (; p < v->npages; p++)
		if (v->pages[p]->n)
			return PAGED_AT(p, 0);
	return VIEW_END;
}

/* The first point at or after `pos`, or VIEW_END. */
static inline size_t paged_lower(const struct view *v, uint64_t pos)
{
	size_t p = paged_page(v, pos), i = paged_scan(v, v->pages[p], pos);

	return i < v->pages[p]->n ? PAGED_AT(p, i) : paged_from(v, p + 1);
}

/* The point after `at`, or VIEW_END. */
static inline size_t paged_after(const struct view *v, size_t at)
{
	size_t p = PAGED_PAGE(at), i = PAGED_OFF(at) + 1;

	return i < v->pages[p]->n ? PAGED_AT(p, i) : paged_from(v, p + 1);
}

/* VIEW_END wraps to the first point (the view is not empty). */
static inline size_t paged_wrap(const struct view *v, size_t at)
{
	return at != VIEW_END ? at : paged_from(v, 0);
}

/* ---- the interface ---------------------------------------------------------- */

/* view_find() of a view that is not paged. */
static inline size_t view_find_unpaged(const struct view *v, uint64_t pos)
{
	size_t i;

	if (v->kind == VIEW_TABLE)
		return table_slot(pos, v->table);
	if (__builtin_expect(v->kind == VIEW_SCORES, 0))
		return hr__rdv_find(v->rdv, v->npoints, pos);
	i = view_lower_bound(v, pos);

	return i == v->npoints ? 0 : i;
}

/* The first point at or after `pos`, wrapping; the view is not empty.  For
 * SCORES, the node of highest score for the key hash `pos`. */
static inline size_t view_find(const struct view *v, uint64_t pos)
{
	if (__builtin_expect(v->kind == VIEW_PAGED, 0))
		return paged_wrap(v, paged_lower(v, pos));
	return view_find_unpaged(v, pos);
}

/* The slot of the node of point `i` (as view_find() names points). */
static inline size_t view_slot(const struct view *v, size_t i)
{
	if (__builtin_expect(v->kind == VIEW_PAGED, 0))
		return v->handle_slot[v->pages[PAGED_PAGE(i)]->node[PAGED_OFF(i)]];
	return view_node(v, i);
}

/*
 * The slot owning `pos` in flat view `v` (not empty).  The node numbers
 * of the POS_PAD points from the bucket's start are read with their
 * positions, before the count says which of them owns `pos`: both loads
 * hang on the bucket alone, so the node array's line arrives beside the
 * positions' rather than after them (one dependent miss less; the node
 * array is padded for it).  A crowded bucket and the wrap (no point at or
 * after `pos`) take the plain way.
 */
static inline size_t view_flat_slot(const struct view *v, uint64_t pos)
{
	size_t i = *view_bucket(v, pos);
	const uint64_t *q = v->pos + i;
	size_t below;

	if (v->wide) {
		uint32_t nd[POS_PAD];

		memcpy(nd, (const uint32_t *)v->node + i, sizeof nd);
		below = (size_t)(q[0] < pos) + (size_t)(q[1] < pos) +
			(size_t)(q[2] < pos) + (size_t)(q[3] < pos);
		if (__builtin_expect(below < POS_PAD && i + below < v->npoints, 1))
			return nd[below];
	} else {
		uint64_t nd;

		memcpy(&nd, (const uint16_t *)v->node + i, sizeof nd);
		below = (size_t)(q[0] < pos) + (size_t)(q[1] < pos) +
			(size_t)(q[2] < pos) + (size_t)(q[3] < pos);
		if (__builtin_expect(below < POS_PAD && i + below < v->npoints, 1))
			return (uint16_t)(nd >> (16 * below));
	}
	i = scan_pos(v->pos, i, pos);
	return view_node(v, i == v->npoints ? 0 : i);
}

_Static_assert(POS_PAD == 4, "view_flat_slot() reads four points");

/* The slot owning `pos` in view `v` (not empty): view_slot(view_find()),
 * with a paged view's page read once. */
static inline size_t view_find_slot(const struct view *v, uint64_t pos)
{
	if (__builtin_expect(v->kind == VIEW_PAGED, 0))
		return v->handle_slot[paged_handle(v, pos)];
	if (__builtin_expect(v->kind == VIEW_FLAT, 1))
		return view_flat_slot(v, pos);
	return view_node(v, view_find_unpaged(v, pos));
}

/* The position of point `i`; 0 for SCORES, whose points are not on the
 * circle. */
static inline uint64_t view_pos(const struct view *v, size_t i)
{
	switch (v->kind) {
	case VIEW_PAGED:
		return v->pages[PAGED_PAGE(i)]->pos[PAGED_OFF(i)];
	case VIEW_SCORES:
		return 0;
	default:
		return v->pos[i];
	}
}

/* The first point of view `v` (not empty). */
static inline size_t view_first(const struct view *v)
{
	return v->kind == VIEW_PAGED ? paged_wrap(v, paged_from(v, 0)) : 0;
}

/* The point after `i` clockwise, wrapping; for SCORES the next node in id
 * order. */
static inline size_t view_succ(const struct view *v, size_t i)
{
	if (__builtin_expect(v->kind == VIEW_PAGED, 0))
		return paged_wrap(v, paged_after(v, i));
	return i + 1 == v->npoints ? 0 : i + 1;
}

/* The point after `i` in the walk of the key hash `pos` (preference
 * lists, bounded loads): the next clockwise, wrapping; for SCORES the node
 * of the next lower score (`i` itself when none is lower). */
static inline size_t view_next(const struct view *v, uint64_t pos, size_t i)
{
	if (__builtin_expect(v->kind == VIEW_SCORES, 0))
		return hr__rdv_next(v->rdv, v->npoints, pos, i);
	return view_succ(v, i);
}

/* Whether `v` is cut into pages, which the next ring's views share. */
static inline bool view_paged(const struct view *v)
{
	return v->kind == VIEW_PAGED;
}

/* Whether `i` names a point of `v`. */
static inline bool view_has_point(const struct view *v, size_t i)
{
	if (v->kind == VIEW_PAGED)
		return PAGED_PAGE(i) < v->npages && PAGED_OFF(i) < v->pages[PAGED_PAGE(i)]->n;
	return i < v->npoints;
}

/* Whether write view `w` and read view `r` are one layout in one memory:
 * no node warms or drains, so one search answers both. */
static inline bool views_one(const struct view *w, const struct view *r)
{
	return r->pos == w->pos;
}

/* ---- walks that do not wrap (not for SCORES) --------------------------------
 * From position 0 up, VIEW_END past the last point: the walks over the
 * circle's arcs (arcs.c). */

/* The first point at or after `pos`, or VIEW_END. */
static inline size_t view_lower(const struct view *v, uint64_t pos)
{
	size_t i;

	if (v->kind == VIEW_PAGED)
		return paged_lower(v, pos);
	i = view_lower_bound(v, pos);
	return i == v->npoints ? VIEW_END : i;
}

/* The point after `at` (not VIEW_END), or VIEW_END. */
static inline size_t view_after(const struct view *v, size_t at)
{
	if (v->kind == VIEW_PAGED)
		return paged_after(v, at);
	return at + 1 == v->npoints ? VIEW_END : at + 1;
}

/* The last position of a view (not empty). */
static inline uint64_t view_last_pos(const struct view *v)
{
	if (v->kind != VIEW_PAGED)
		return v->pos[v->npoints - 1];
	for (size_t p = v->npages; p-- > 0;)
		if (v->pages[p]->n)
			return v->pages[p]->pos[v->pages[p]->n - 1];
	return 0;	/* not reached: the view has a point */
}

/* The position of the last point below `pos`; false when none is (the
 * view is not empty). */
static inline bool view_pos_before(const struct view *v, uint64_t pos,
				   uint64_t *out)
{
	size_t p, i;

	if (v->kind != VIEW_PAGED) {
		i = view_lower_bound(v, pos);
		if (i)
			*out = v->pos[i - 1];
		return i != 0;
	}
	p = paged_page(v, pos);
	i = paged_scan(v, v->pages[p], pos);
	if (i) {
		*out = v->pages[p]->pos[i - 1];
		return true;
	}
	while (p-- > 0) {
		if (v->pages[p]->n) {
			*out = v->pages[p]->pos[v->pages[p]->n - 1];
			return true;
		}
	}
	return false;
}

/*
 * From points ia of `a` and ib of `b` on (not VIEW_END), how many pairs in
 * a row sit at one position below `hi`, with one owner (map[] takes a's
 * slots to b's), and each alone at its position (the padding ends both
 * arrays, so looking one past is safe): the arcs up to them have not
 * moved.  Flat and table views of two-byte node numbers only, the rings
 * of up to 65,536 nodes, where this loop is most of a walk (points are
 * indices there); 0 for the others.
 */
static inline size_t view_same_run(const struct view *a, size_t ia,
				   const struct view *b, size_t ib, uint64_t hi,
				   const uint32_t *map)
{
	const uint64_t *pa, *pb;
	const uint16_t *da, *db;
	size_t n, k = 0;

	if (a->kind == VIEW_PAGED || a->kind == VIEW_SCORES || a->wide ||
	    b->kind == VIEW_PAGED || b->kind == VIEW_SCORES || b->wide)
		return 0;
	pa = a->pos + ia;
	pb = b->pos + ib;
	da = (const uint16_t *)a->node + ia;
	db = (const uint16_t *)b->node + ib;
	n = a->npoints - ia < b->npoints - ib ? a->npoints - ia : b->npoints - ib;
	while (k < n && pa[k] == pb[k] && pa[k] < hi && map[da[k]] == db[k] &&
	       pa[k + 1] != pa[k] && pb[k + 1] != pb[k])
		k++;
	return k;
}

/* ---- shares ---------------------------------------------------------------- */

/* Every node's share of `v` (not empty) into out[slot], for the `nslots`
 * slots of its ring; 0 for the nodes not in it. */
void hr__view_shares(const struct view *v, double *out, size_t nslots);

/* ---- memory ------------------------------------------------------------------ */

/* Sets up flat view `v` with room for `npoints` (positions padded; node
 * numbers of 4 bytes when `wide`, else 2).  Fills nothing but the
 * padding.  HR_ENOMEM. */
int hr__view_alloc(struct view *v, size_t npoints, bool wide);

/* The index bits of a flat view of `n` points (its shift is 64 minus
 * them): what hr__view_alloc() gives it, for those who lay a view out
 * elsewhere (a snapshot file). */
unsigned hr__view_index_bits(size_t n, bool wide);

/* The table view of `m` slots (prime) whose slot j is node table[j]: slot
 * j is the point at ceil((j + 1) 2^64 / m) - 1, so that the point at or
 * after a position and table_slot() agree.  HR_ENOMEM. */
int hr__view_table(struct view *v, const uint32_t *table, uint64_t m, bool wide);

/* Sets up the scores view `v` of `n` nodes: *members gets room for their
 * inputs, view_set_node() gives each its slot.  HR_ENOMEM. */
int hr__view_scores(struct view *v, size_t n, struct rdv_member **members);

/* Bytes of the memory view `v` was given (as asked of malloc), whether
 * it or another view owns it; 0 for a view never given memory. */
size_t hr__view_bytes(const struct view *v);

/* Releases what view `v` owns (nothing when it shares another's
 * memory); `v` is cleared. */
void hr__view_release(struct view *v);

/* index[k] = how many of the sorted positions pos[0 .. n) have a bucket,
 * (pos >> shift) & mask, below k, for the mask + 1 buckets: counted, then
 * summed, two passes without a branch to mispredict.  A flat view's index
 * and a page's. */
void hr__index_build(const uint64_t *pos, size_t n, uint32_t *index,
		     unsigned shift, uint64_t mask);

/* Builds the index of a flat view whose points are in place and sorted. */
void hr__view_index(struct view *v);

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

/* qsort() order of struct point: by position, then node number. */
int hr__point_cmp(const void *a, const void *b);

/* Sorts `n` 16-byte records (struct point, or any pair of uint64_t) by the
 * uint64_t they start with, stably, through `tmp` (room for n records). */
void hr__sort_records(void *base, void *tmp, size_t n);

#endif
