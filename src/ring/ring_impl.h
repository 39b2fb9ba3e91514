/* SPDX-License-Identifier: MIT */
/*
 * ring_impl.h - the layout of a ring, shared by the files that build and
 * read it (internal; nothing outside src/ring/ and owner.c includes it):
 * its nodes, its views (view.h) and the placement that made them.  The
 * owners of a position are here, inline: every lookup entry point
 * compiles them into itself.
 */
#ifndef HR_RING_IMPL_H
#define HR_RING_IMPL_H

#include "placement.h"
#include "view.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Bytes copied at once by the copy-out: the string block is padded so
 * that reading this much from any string start stays inside it. */
#define COPY_CHUNK 32

/*
 * What a lookup copies out of its owner, in one 64-byte line of its own
 * per node (ring->lines[slot]): the id and the address inline, each
 * NUL-terminated and zero-padded in LINE_STR bytes, and the state.  The
 * copy-out reads COPY_CHUNK bytes from either string start, which stays
 * inside the line.  A node whose id or address is LINE_STR bytes or more
 * is spilled (LINE_SPILLED): its strings are read from its ring_node
 * instead, out of line.  The line after the last node's is the empty one
 * (both strings "", active, LINE_NONE): the line of an empty view's
 * owner, so that the lookup's one test of the flags finds every rare
 * case.  See docs/design-notes.md, "The lookup path".
 */
#define LINE_STR 30

struct ring_line {
	char id[LINE_STR];
	char addr[LINE_STR];
	uint8_t state;		/* an hr_state */
	uint8_t flags;		/* LINE_*: the copy-out's rare cases */
	uint8_t spare[2];
} __attribute__((aligned(64)));

#define LINE_SPILLED 0x1	/* id or addr too long to be inline */
#define LINE_NONE 0x2		/* the empty line: no node */

_Static_assert(sizeof(struct ring_line) == 64, "a lookup line is one cache line");
_Static_assert(offsetof(struct ring_line, addr) + COPY_CHUNK <=
	       sizeof(struct ring_line), "a chunk of the addr stays in its line");

/* How a ring of a placement of points (HR__PLACE_POINTS, by_index) keeps
 * them: flat arrays, or pages; by default by their number. */
typedef enum hr__layout {
	HR__LAYOUT_AUTO = 0,
	HR__LAYOUT_FLAT,
	HR__LAYOUT_PAGED,
} hr__layout;

/* Points placed ahead of a full build (pages.h). */
typedef struct hr__pages_pre hr__pages_pre;

struct hr_ring {
	atomic_size_t refs;
	uint64_t revision;
	uint64_t digest;
	hr__place_opts place;		/* what the placement reads */
	const hr__placement *pl;	/* what placed the points and keys */
	/* pl->key_pos, copied so that a lookup reads it from the ring: one
	 * load, not two. */
	uint64_t (*key_pos)(const void *key, size_t len);
	bool derived;			/* points taken from a previous ring */
	bool placed_ahead;		/* points placed as the nodes came */
	hr__layout layout;		/* as asked; the views say which it is */
	size_t nnodes;
	size_t npoints;
	size_t nzones;			/* distinct zones of the nodes */
	struct ring_node *nodes;	/* sorted by id, bytewise */
	/* nnodes + 1 lookup lines, 64-byte aligned: the copy-out's */
	struct ring_line *lines;
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
	/* NULL, or what frees the memory every array of the ring is in (a
	 * mapped snapshot's), called with mem_arg by the last release in
	 * place of freeing the arrays one by one. */
	void (*mem_free)(void *arg);
	void *mem_arg;
};

/* Points [from, to) of node `slot` of `ring`, as its placement (of
 * points) places them, into out[0 .. to - from). */
static inline void ring_points_of(const hr_ring *ring, uint32_t slot,
				  unsigned from, unsigned to, struct point *out)
{
	const struct ring_node *rn = &ring->nodes[slot];
	const hr__place_node node = { rn->pub.id, rn->id_len, rn->tokens, rn->ntokens };

	ring->pl->point_positions(&ring->place, &node, slot, from, to, out);
}

/* The owner of `pos` in view `v` of `ring`; NULL for an empty view. */
static inline const struct ring_node *view_owner(const hr_ring *ring,
						 const struct view *v,
						 uint64_t pos)
{
	if (!v->npoints)
		return NULL;
	return &ring->nodes[view_find_slot(v, pos)];
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

/* A key's position on the ring's circle.  The branch on the placement is
 * the same for every key of a ring: predicted. */
static inline uint64_t ring_key_pos(const hr_ring *ring, const void *key,
				    size_t len)
{
	if (__builtin_expect(ring->key_pos != NULL, 0))
		return ring->key_pos(key, len);
	return hr__xxh3_key(key, len);
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
