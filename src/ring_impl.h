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
};

/* Positions compared at once in view_lower_bound, hence the padding after
 * the last point. */
#define POS_PAD 4

/* Bytes copied at once by the copy-out: the string block is padded so
 * that reading this much from any string start stays inside it. */
#define COPY_CHUNK 32

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
	size_t nnodes;
	size_t npoints;
	struct ring_node *nodes;	/* sorted by id, bytewise */
	char *strings;			/* every id, addr and zone */
	uint64_t *tokens;		/* every node's tokens, or NULL */
	void *shared;			/* all points, when a view is all */
	struct view views[2];
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
 * The first point at or after `pos`, or v->npoints: no wrap, counting from
 * `i`, the start of pos's index bucket (view_lower_bound() reads it; a
 * batch reads it ahead, see ring_batch.c).  Every point after bucket k is
 * above any position in it, and the padding ends the array with
 * UINT64_MAX, so the points below `pos` from the bucket's start are a
 * prefix: counting them among the next POS_PAD is exact unless all are
 * below, which needs a crowded bucket.  The count has no branch to
 * mispredict.
 */
static inline size_t view_scan(const struct view *v, size_t i, uint64_t pos)
{
	const uint64_t *p = v->pos + i;
	size_t below = (size_t)(p[0] < pos) + (size_t)(p[1] < pos) +
		       (size_t)(p[2] < pos) + (size_t)(p[3] < pos);

	i += below;
	if (__builtin_expect(below == POS_PAD, 0)) {
		while (v->pos[i] < pos)
			i++;
	}
	return i;
}

/* The index bucket of `pos`: where view_scan() starts. */
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

/* The first point at or after `pos`, wrapping; the view is not empty.  For
 * rendezvous, the node of highest score for the key hash `pos`. */
static inline size_t view_find(const struct view *v, uint64_t pos)
{
	size_t i;

	if (v->table)
		return table_slot(pos, v->table);
	if (__builtin_expect(v->rdv != NULL, 0))
		return hr__rdv_find(v, pos);
	i = view_lower_bound(v, pos);

	return i == v->npoints ? 0 : i;
}

/* The owner of `pos` in view `v` of `ring`; NULL for an empty view. */
static inline const struct ring_node *view_owner(const hr_ring *ring,
						 const struct view *v,
						 uint64_t pos)
{
	if (!v->npoints)
		return NULL;
	return &ring->nodes[view_node(v, view_find(v, pos))];
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
	*rn = r->pos == w->pos ? *wn : view_owner(ring, r, pos);
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
