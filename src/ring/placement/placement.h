/*
 * placement.h - a placement: how one ring's nodes and keys sit on the
 * circle, as one table of operations per hr_placement (internal).
 *
 * The ring around it is the same for every placement: nodes in id order,
 * zones, the digest, two views (write, read), each a sorted array of
 * points with an index (ring_impl.h), and the walks over them (lookups,
 * preference lists, shares, diffs).  A placement decides three things:
 * which nodes it can place and with how many points, where the points of a
 * view are, and where a key is.  docs/placement.md gives each placement a
 * contract section; a new one is a file that defines its table, an entry
 * in placement.c and that section.
 *
 * Rendezvous (rendezvous.c) has no points: its fill_views gives each view
 * its nodes' score inputs (struct view's `rdv`), and the walks branch on
 * that, after the point search's own tests: view_find() to the highest
 * score, the preference and bounded walks to descending scores, shares,
 * moved shares and diffs to the method's formulas.  Point placements keep
 * the inline search of ring_impl.h.
 */
#ifndef HR_PLACEMENT_H
#define HR_PLACEMENT_H

#include "hashring.h"

#include <stdbool.h>
#include <stdint.h>

struct point;

/* Bytes a digest opening may take. */
#define HR__DIGEST_OPENING_MAX 16

/* Position of a point name ("<id>#<i>") on the circle.  The contract uses
 * XXH3_64bits; tests pass other functions to force equal positions. */
typedef uint64_t (*hr__point_hash_fn)(const void *name, size_t len);

typedef struct hr__placement {
	const char *name;	/* as the CLI and messages name it */

	/* Writes the bytes that open the digest (docs/placement.md section
	 * 7) into out[0 .. HR__DIGEST_OPENING_MAX) and gives their count: no
	 * two placements may give one ring the same opening (section 13). */
	size_t (*digest_opening)(const hr_ring *ring, unsigned char *out);

	/*
	 * Checks what this placement needs of `node` (a valid hr_node) and
	 * gives its number of points: HR_EINVAL or HR_ELIMIT with a message
	 * naming the node when it cannot place it.  *points is 0 when a
	 * node's points depend on the other nodes (fill_views counts them).
	 */
	int (*node_points)(const hr_node *node, unsigned vnodes_per_weight,
			   unsigned *points, hr_error *err);

	/*
	 * For placements where point i of a node depends on the node's id
	 * and i alone, not on its vnode count or on other nodes (NULL
	 * otherwise): writes the positions of points [from, to) of node
	 * `slot` of `ring` into out[0 .. to - from), their `node` set to
	 * `slot`.  Then two nodes with one id and one vnode count have the
	 * same points, and a node that grows keeps its points: a ring is
	 * derived from the previous one by placing only what changed
	 * (ring_derive.c), and a moved share or a diff looks only where
	 * points differ (arcs.c).
	 */
	void (*point_positions)(const hr_ring *ring, uint32_t slot,
				unsigned from, unsigned to, struct point *out);

	/*
	 * Fills both views of `ring`, whose nodes, vnodes (as node_points
	 * gave them), zones and digest are set; `prev` (may be NULL) is the
	 * ring this one follows, for placements that can reuse its points.
	 * Sets ring->npoints when node_points left it to the views.
	 * Errors: HR_ELIMIT, HR_EINVAL, HR_ENOMEM; the caller frees the ring.
	 */
	int (*fill_views)(hr_ring *ring, const hr_ring *prev, hr_error *err);

	/* A key's position on the circle; NULL means hr_hash_key(), which
	 * the lookup path inlines. */
	uint64_t (*key_pos)(const void *key, size_t len);

	/* The nodes' tokens place their points (tokens_placement.c): the
	 * build keeps them in the ring and the digest covers them. */
	bool tokens;
} hr__placement;

/* The placements, defined by their files (xxh3.c, ketama.c, maglev.c,
 * rendezvous.c, tokens.c). */
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

/* The placement `opts` select (NULL: the default, XXH3).  HR_EINVAL for a
 * value no placement has. */
int hr__placement_get(const hr_ring_options *opts, const hr__placement **out,
		      hr_error *err);

#endif
