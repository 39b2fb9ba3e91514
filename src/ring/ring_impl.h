/*
 * ring_impl.h - the layout of a ring, shared by the files that build and
 * read it (internal; nothing outside src/ring*.c, the placements, arcs.c
 * and owner.c includes it).  The search of a view and the owner of a
 * position are here, inline: every lookup entry point compiles them into
 * itself.
 */
#ifndef HR_RING_IMPL_H
#define HR_RING_IMPL_H

#include "placement.h"
#include "rendezvous.h"
#include "ring.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Inlined: a 16-byte key hashes in a few nanoseconds, less than the call
 * into the shared library would cost. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A node as the ring keeps it.  The public record comes first so that a
 * `const hr_node *` handed out maps back to its slot. */
struct ring_node {
	hr_node pub;
	unsigned vnodes;
	uint32_t zone;		/* equal numbers mean equal zones */
	uint16_t id_len, addr_len, zone_len;	/* for the copy-out */
	/* Its record's tokens, ascending, in ring->tokens (tokens placement;
	 * else none). */
	uint32_t ntokens;
	const uint64_t *tokens;
	/* Its number in a paged view's points (ring->handle_slot maps it
	 * back), kept from ring to ring; else its slot. */
	uint32_t handle;
};

/*
 * A page of a big view (ring_pages.c): the points of one 2^-page_bits part
 * of the circle, sorted, with an index on the next bits of a position.
 * Points name their node by handle.  A page never changes once built and
 * is shared by the rings that have the same points there (refs).
 */
struct vpage {
	atomic_uint refs;
	uint32_t n;
	/* In this order after the header, so that a lookup finds them
	 * from the page's address and its view's count[] without reading
	 * the header. */
	uint32_t *index;	/* first point of each bucket */
	uint64_t *pos;		/* n, then POS_PAD times UINT64_MAX */
	uint32_t *node;		/* n handles */
	size_t bytes;		/* of the page, as asked of malloc */
	/* NULL, or the block of regions (ring_pages.c) the page is in. */
	struct vslab *slab;
};

/*
 * The sorted points of one view, with a direct index on the top bits of a
 * position: the points whose top bits equal k start at index[k].  Buckets
 * hold one or two points on average, so a lookup is one index read and a
 * few comparisons on one cache line (see view_find).  Node numbers take two
 * bytes per point when they fit, which with the index keeps a point at
 * about 13 bytes.
 */
struct view {
	uint64_t *pos;		/* npoints, then POS_PAD times UINT64_MAX */
	void *node;		/* per point: uint16_t, or uint32_t if wide */
	uint32_t *index;
	/* A paged view (big rings of a placement with point_positions):
	 * pos, node and index are NULL, the points are in pages[0 ..
	 * npages), page p holding positions p << page_shift on; mem owns
	 * pages[], after[], count[] and a reference to each page.  Beside pos:
	 * a lookup tests it on the same cache line. */
	struct vpage **pages;
	/* A table of `table` slots (maglev), else 0: point j is slot j, so the
	 * first point at or after a position is one multiplication away. */
	uint64_t table;
	/* Rendezvous: the view's nodes (npoints of them, node[i] their slots)
	 * with their score inputs; the positions are not searched. */
	const struct rdv_member *rdv;
	size_t npoints;
	size_t nnodes;
	size_t nzones;
	unsigned shift;		/* 64 - index bits */
	bool wide;
	void *mem;		/* owned block; NULL if it is ring->shared */
	size_t bytes;		/* of that block, as asked of malloc */
	/* Per page: the handle of the first point at or after its end,
	 * wrapping: the owner of the positions past its last point; and
	 * its points (pages[p]->n, where a lookup reads it). */
	uint32_t *after;
	uint32_t *count;
	size_t npages;
	unsigned page_shift;	/* 64 - page bits */
	unsigned bucket_shift;	/* (pos >> bucket_shift) & bucket_mask */
	uint32_t bucket_mask;	/*   is a position's bucket in its page */
};

/* Positions compared at once in view_lower_bound, hence the padding after
 * the last point. */
#define POS_PAD 4

/* Bytes copied at once by the copy-out: the string block is padded so
 * that reading this much from any string start stays inside it. */
#define COPY_CHUNK 32

/* Points placed ahead of a full build (ring_pages.h). */
typedef struct hr__pages_pre hr__pages_pre;

struct hr_ring {
	atomic_size_t refs;
	uint64_t revision;
	uint64_t digest;
	unsigned vnodes_per_weight;
	uint64_t maglev_size;		/* the option, for maglev placement */
	const hr__placement *pl;	/* what placed the points and keys */
	/* pl->key_pos, copied so that a lookup reads it from the ring: one
	 * load, not two. */
	uint64_t (*key_pos)(const void *key, size_t len);
	hr__point_hash_fn hash;		/* the point hash of named points */
	bool derived;			/* points taken from a previous ring */
	bool placed_ahead;		/* points placed as the nodes came */
	hr__layout layout;		/* as asked; the views say which it is */
	size_t nnodes;
	size_t npoints;
	size_t nzones;			/* distinct zones of the nodes */
	struct ring_node *nodes;	/* sorted by id, bytewise */
	char *strings;			/* every id, addr and zone */
	uint64_t *tokens;		/* every node's tokens, or NULL */
	void *shared;			/* all points, when a view is all */
	struct view views[2];
	/* Paged rings: the view of every node, which the next ring derives
	 * from (the views share its pages where they hold the same points);
	 * handle_slot[h] is the slot of handle h, NO_NODE for none. */
	struct view all;
	uint32_t *handle_slot;
	uint32_t nhandles;
	struct vslab *slab;	/* where its new pages are cut from */
	/* While the ring is built: its points placed ahead (ring_stream.c),
	 * which a full build takes; else NULL. */
	hr__pages_pre *pre;
	/* NULL, or the ring whose memory this alias shares (hr__ring_alias):
	 * releasing the alias releases it and frees nothing else. */
	hr_ring *origin;
};

/* A point while the ring is built: 16 bytes, sorted as a record (see
 * hr__sort_records). */
struct point {
	uint64_t pos;
	uint32_t node;
};

/* No node: a slot that a ring does not have. */
#define NO_NODE UINT32_MAX

/* Node indices follow id order, so ordering equal positions by index is
 * ordering them by id, bytewise (ids hold no NUL: a proper prefix sorts
 * first). */
static inline bool point_less(const struct point *a, const struct point *b)
{
	return a->pos < b->pos || (a->pos == b->pos && a->node < b->node);
}

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
 * see ring_batch.c).  Every point after the bucket is above any position
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

/* ---- paged views ----------------------------------------------------------
 * A point of a paged view is named by one number too, its page and its
 * place in it: page << 32 | offset. */

#define PAGED_AT(page, i) (((size_t)(page) << 32) | (size_t)(i))
#define PAGED_PAGE(at) ((at) >> 32)
#define PAGED_OFF(at) ((at) & 0xffffffffu)

/* The page holding `pos`. */
static inline size_t paged_page(const struct view *v, uint64_t pos)
{
	return (size_t)(pos >> v->page_shift);
}

/* The offset of the first point at or after `pos` in page `pg` (the one
 * holding pos); pg->n when there is none in it. */
static inline size_t paged_scan(const struct view *v, const struct vpage *pg,
				uint64_t pos)
{
	return scan_pos(pg->pos, pg->index[(pos >> v->bucket_shift) & v->bucket_mask],
			pos);
}

/* The handle owning `pos`: the first point at or after it, else the one
 * after the page.  The page's arrays from its address and count: its
 * header is not read. */
static inline uint32_t paged_handle(const struct view *v, uint64_t pos)
{
	size_t p = paged_page(v, pos), n = v->count[p];
	const uint32_t *index = (const uint32_t *)(v->pages[p] + 1);
	const uint64_t *at = (const uint64_t *)(index + v->bucket_mask + 1);
	size_t i = scan_pos(at, index[(pos >> v->bucket_shift) & v->bucket_mask], pos);

	return i < n ? ((const uint32_t *)(at + n + POS_PAD))[i] : v->after[p];
}

/* Past the last point of a paged view, for the walks that do not wrap. */
#define PAGED_END SIZE_MAX

/* The first point of the first page at or after page p that has one, or
 * PAGED_END. */
static inline size_t paged_from(const struct view *v, size_t p)
{
	for (; p < v->npages; p++)
		if (v->pages[p]->n)
			return PAGED_AT(p, 0);
	return PAGED_END;
}

/* The first point at or after `pos`, or PAGED_END. */
static inline size_t paged_lower(const struct view *v, uint64_t pos)
{
	size_t p = paged_page(v, pos), i = paged_scan(v, v->pages[p], pos);

	return i < v->pages[p]->n ? PAGED_AT(p, i) : paged_from(v, p + 1);
}

/* The point after `at`, or PAGED_END. */
static inline size_t paged_after(const struct view *v, size_t at)
{
	size_t p = PAGED_PAGE(at), i = PAGED_OFF(at) + 1;

	return i < v->pages[p]->n ? PAGED_AT(p, i) : paged_from(v, p + 1);
}

/* PAGED_END wraps to the first point (the view is not empty). */
static inline size_t paged_wrap(const struct view *v, size_t at)
{
	return at != PAGED_END ? at : paged_from(v, 0);
}

/* The first point at or after page p's start, wrapping. */
static inline size_t paged_first_from(const struct view *v, size_t p)
{
	return paged_wrap(v, paged_from(v, p));
}

/* The point after `at`, wrapping. */
static inline size_t paged_next(const struct view *v, size_t at)
{
	return paged_wrap(v, paged_after(v, at));
}

/* The first point at or after `pos`, wrapping. */
static inline size_t paged_find(const struct view *v, uint64_t pos)
{
	return paged_wrap(v, paged_lower(v, pos));
}

/* The slot of a table of `m` slots that holds `pos`: floor(pos * m / 2^64). */
static inline size_t table_slot(uint64_t pos, uint64_t m)
{
	return (size_t)(((unsigned __int128)pos * m) >> 64);
}

/* view_find() of a view that is not paged. */
static inline size_t view_find_unpaged(const struct view *v, uint64_t pos)
{
	size_t i;

	if (v->table)
		return table_slot(pos, v->table);
	if (__builtin_expect(v->rdv != NULL, 0))
		return hr__rdv_find(v, pos);
	i = view_lower_bound(v, pos);

	return i == v->npoints ? 0 : i;
}

/* The first point at or after `pos`, wrapping; the view is not empty.  For
 * rendezvous, the node of highest score for the key hash `pos`. */
static inline size_t view_find(const struct view *v, uint64_t pos)
{
	if (__builtin_expect(v->pages != NULL, 0))
		return paged_find(v, pos);
	return view_find_unpaged(v, pos);
}

/* The slot of the node of point `i` (as view_find() names points). */
static inline size_t view_slot(const hr_ring *ring, const struct view *v,
			       size_t i)
{
	if (__builtin_expect(v->pages != NULL, 0))
		return ring->handle_slot[v->pages[PAGED_PAGE(i)]->node[PAGED_OFF(i)]];
	return view_node(v, i);
}

/* The position of point `i` (as view_find() names points). */
static inline uint64_t view_pos(const struct view *v, size_t i)
{
	if (__builtin_expect(v->pages != NULL, 0))
		return v->pages[PAGED_PAGE(i)]->pos[PAGED_OFF(i)];
	return v->pos[i];
}

/* The first point of view `v` (not empty), as view_find() names points. */
static inline size_t view_first(const struct view *v)
{
	return v->pages ? paged_first_from(v, 0) : 0;
}

/* The point after `i` clockwise, wrapping (not for rendezvous). */
static inline size_t view_succ(const struct view *v, size_t i)
{
	if (__builtin_expect(v->pages != NULL, 0))
		return paged_next(v, i);
	return i + 1 == v->npoints ? 0 : i + 1;
}

/* The slot owning `pos` in view `v` (not empty). */
static inline size_t view_find_slot(const hr_ring *ring, const struct view *v,
				    uint64_t pos)
{
	if (__builtin_expect(v->pages != NULL, 0))
		return ring->handle_slot[paged_handle(v, pos)];
	return view_node(v, view_find_unpaged(v, pos));
}

/* The owner of `pos` in view `v` of `ring`; NULL for an empty view. */
static inline const struct ring_node *view_owner(const hr_ring *ring,
						 const struct view *v,
						 uint64_t pos)
{
	if (!v->npoints)
		return NULL;
	return &ring->nodes[view_find_slot(ring, v, pos)];
}

/* Whether write view `w` and read view `r` are one array or one table of
 * pages: no node warms or drains, so one search answers both. */
static inline bool views_one(const struct view *w, const struct view *r)
{
	return r->pos == w->pos && r->pages == w->pages;
}

/* The owners of `pos` in the write and the read view (NULL: empty view). */
static inline void ring_owners(const hr_ring *ring, uint64_t pos,
			       const struct ring_node **wn,
			       const struct ring_node **rn)
{
	const struct view *w = &ring->views[HR_VIEW_WRITE];
	const struct view *r = &ring->views[HR_VIEW_READ];

	*wn = view_owner(ring, w, pos);
	/* Without warming or draining nodes both views are one array. */
	*rn = views_one(w, r) ? *wn : view_owner(ring, r, pos);
}

/* hr_hash_key(), inline. */
static inline uint64_t xxh3_key(const void *key, size_t len)
{
	return XXH3_64bits(len ? key : "", len);
}

/* A key's position on the ring's circle.  The branch on the placement is
 * the same for every key of a ring: predicted. */
static inline uint64_t ring_key_pos(const hr_ring *ring, const void *key,
				    size_t len)
{
	if (__builtin_expect(ring->key_pos != NULL, 0))
		return ring->key_pos(key, len);
	return xxh3_key(key, len);
}

/* The slot of a node pointer from this ring, or SIZE_MAX. */
static inline size_t ring_slot(const hr_ring *ring, const hr_node *node)
{
	uintptr_t base, p;

	if (!ring || !node)
		return SIZE_MAX;
	base = (uintptr_t)ring->nodes;
	p = (uintptr_t)node;
	if (p < base || p >= base + ring->nnodes * sizeof *ring->nodes ||
	    (p - base) % sizeof *ring->nodes)
		return SIZE_MAX;
	return (p - base) / sizeof *ring->nodes;
}

#endif
