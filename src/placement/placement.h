/* SPDX-License-Identifier: MIT */
/*
 * placement.h - a placement: how one ring's nodes and keys sit on the
 * circle, as one table of operations per hr_placement (internal).
 *
 * The ring around it (src/ring/) is the same for every placement: nodes in
 * id order, zones, the digest, two views (write, read) and the walks over
 * them (lookups, preference lists, shares, diffs).  A placement decides
 * which nodes it can place and with how many points, where the points of
 * a view are, and where a key is; it knows nodes, never rings or views.
 * Placements make their points in one of four ways, their kind, which
 * decides the kind of their rings' views (src/ring/view.h):
 *
 *   HR__PLACE_POINTS     each node's points on their own (point_positions):
 *                        the ring places and sorts them, flat or in pages;
 *   HR__PLACE_CONTINUUM  a view's points from all its nodes at once
 *                        (view_points), a flat view;
 *   HR__PLACE_TABLE      a table of slots from all the view's nodes
 *                        (view_table), a table view;
 *   HR__PLACE_SCORES     no points: a key scored on every node of the view,
 *                        a scores view (rendezvous.h's scores).
 *
 * docs/placement.md gives each placement a contract section; a new one is
 * a file that defines its table, an entry in placements.c and that section.
 */
#ifndef HR_PLACEMENT_H
#define HR_PLACEMENT_H

#include "hashring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Inlined: a 16-byte key hashes in a few nanoseconds, less than the call
 * into the shared library would cost. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Bytes a digest opening may take. */
#define HR__DIGEST_OPENING_MAX 16

/* A point: its position on the circle and its node (a slot of the ring, or
 * an index into the nodes a placement was given).  16 bytes, sorted as a
 * record. */
struct point {
	uint64_t pos;
	uint32_t node;
};

/* Points at one position are ordered by node: node numbers follow id
 * order, so ordering them by number is ordering them by id, bytewise (ids
 * hold no NUL: a proper prefix sorts first). */
static inline bool point_less(const struct point *a, const struct point *b)
{
	return a->pos < b->pos || (a->pos == b->pos && a->node < b->node);
}

/* A key's position with the native key hash: hr_hash_key(), inline. */
static inline uint64_t hr__xxh3_key(const void *key, size_t len)
{
	return XXH3_64bits(len ? key : "", len);
}

/* Position of a point name ("<id>#<i>") on the circle.  The contract uses
 * XXH3_64bits; tests pass other functions to force equal positions. */
typedef uint64_t (*hr__point_hash_fn)(const void *name, size_t len);

/* What a ring was built with that its placement reads. */
typedef struct hr__place_opts {
	unsigned vnodes_per_weight;
	uint64_t maglev_size;		/* the table's slots (TABLE) */
	hr__point_hash_fn hash;		/* the point hash of named points */
} hr__place_opts;

/* A node as point_positions reads it. */
typedef struct hr__place_node {
	const char *id;
	size_t id_len;
	const uint64_t *tokens;		/* its record's tokens, ascending */
	size_t ntokens;
} hr__place_node;

typedef enum hr__place_kind {
	HR__PLACE_POINTS,
	HR__PLACE_CONTINUUM,
	HR__PLACE_TABLE,
	HR__PLACE_SCORES,
} hr__place_kind;

typedef struct hr__placement {
	const char *name;	/* as the CLI and messages name it */
	hr__place_kind kind;

	/* Writes the bytes that open the digest (docs/placement.md section
	 * 7) into out[0 .. HR__DIGEST_OPENING_MAX) and gives their count: no
	 * two placements may give one ring the same opening (section 13). */
	size_t (*digest_opening)(const hr__place_opts *o, unsigned char *out);

	/*
	 * Checks what this placement needs of `node` (a valid hr_node) and
	 * gives its number of points: HR_EINVAL or HR_ELIMIT with a message
	 * naming the node when it cannot place it.  *points is 0 when a
	 * node's points depend on the other nodes (the views count them).
	 */
	int (*node_points)(const hr_node *node, unsigned vnodes_per_weight,
			   unsigned *points, hr_error *err);

	/* NULL, or checks the options the views need (HR_EINVAL with a
	 * message), before any is made. */
	int (*check)(const hr__place_opts *o, hr_error *err);

	/*
	 * POINTS: writes the positions of points [from, to) of `node` into
	 * out[0 .. to - from), their `node` set to `slot`.
	 */
	void (*point_positions)(const hr__place_opts *o, const hr__place_node *node,
				uint32_t slot, unsigned from, unsigned to,
				struct point *out);

	/*
	 * POINTS: point i of a node depends on the node's id and i alone,
	 * not on its vnode count, its tokens or other nodes.  Then two nodes
	 * with one id and one vnode count have the same points, and a node
	 * that grows keeps its points: a ring is derived from the previous
	 * one by placing only what changed (ring_derive.c, pages_derive.c),
	 * its points may be placed as its nodes arrive (ring_stream.c), and a
	 * moved share or a diff looks only where points differ (arcs.c).
	 */
	bool by_index;

	/* POINTS: points at one position take a draining node's first, then
	 * by id (section 16), rather than by id alone. */
	bool draining_first;

	/*
	 * CONTINUUM: the points of a view of nodes[0 .. n) (in id order, all
	 * in the view), sorted by position then node, each naming its node
	 * by its index in nodes[]: *out (malloc'd; NULL for none) and
	 * *npoints.  Errors: HR_EINVAL, HR_ELIMIT, HR_ENOMEM.
	 */
	int (*view_points)(const hr__place_opts *o, const hr_node *const *nodes,
			   size_t n, struct point **out, size_t *npoints,
			   hr_error *err);

	/*
	 * TABLE: the o->maglev_size slots of a view of nodes[0 .. n) (in id
	 * order, n > 0): table[j] is the index in nodes[] of slot j's node.
	 * Errors: HR_ENOMEM.
	 */
	int (*view_table)(const hr__place_opts *o, const hr_node *const *nodes,
			  size_t n, uint32_t *table, hr_error *err);

	/* A key's position on the circle; NULL means hr_hash_key(), which
	 * the lookup path inlines. */
	uint64_t (*key_pos)(const void *key, size_t len);

	/* The nodes' tokens place their points (tokens_placement.c): the
	 * build keeps them in the ring and the digest covers them. */
	bool tokens;
} hr__placement;

/* The placements, defined by their files (xxh3.c, ketama.c, maglev.c,
 * rendezvous.c, tokens_placement.c). */
extern const hr__placement hr__placement_xxh3;
extern const hr__placement hr__placement_ketama;
extern const hr__placement hr__placement_maglev;
extern const hr__placement hr__placement_rendezvous;
extern const hr__placement hr__placement_tokens;

/* u32le(v) at out[0 .. 4): the digest's word. */
static inline void hr__put_u32le(unsigned char *out, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		out[i] = (unsigned char)(v >> (8 * i));
}

#endif
