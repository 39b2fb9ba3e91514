/* ring.h - placement internals shared with tests (internal). */
#ifndef HR_RING_H
#define HR_RING_H

#include "hashring.h"

#include <math.h>
#include <stdbool.h>

/* Position of a point name ("<id>#<i>") on the circle.  The contract uses
 * XXH3_64bits; tests pass other functions to force equal positions. */
typedef uint64_t (*hr__point_hash_fn)(const void *name, size_t len);

/* hr_ring_build() with the point hash given explicitly. */
int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err);

/*
 * hr_ring_build() of `nodes` by way of `prev` (NULL: a full build): the
 * points of nodes whose id and vnode count prev already had are reused, so
 * a small change costs about one pass over the points instead of hashing
 * and sorting them all.  The ring is identical to a full build's with
 * prev's point hash (same points, digest and answers); placement options
 * other than prev's, or a large change, take the full build.
 */
int hr__ring_derive(const hr_ring *prev, const hr_node *nodes, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr_ring **out, hr_error *err);

/*
 * hr__ring_derive() for nodes that already passed hr__node_validate():
 * `nodes` holds `n` pointers (at most HR_NODES_MAX), in any order, which
 * the build reorders by id; the nodes are copied.  Checks the placement,
 * that the ids are unique (HR_EDUPLICATE) and the placement's rules and
 * limits; the rest of each node is trusted.
 */
int hr__ring_build_valid(const hr_ring *prev, const hr_node **nodes, size_t n,
			 const hr_ring_options *opts, uint64_t revision,
			 hr_ring **out, hr_error *err);

/*
 * The points `node` has in a ring built with `opts` (may be NULL): section
 * 3 of docs/placement.md.  HR_ELIMIT when that alone is over HR_POINTS_MAX,
 * the message naming the node and the limit.  In ketama mode the continuum
 * decides the count (*points is 0) and the node is only checked to be
 * placeable (HR_EINVAL).  The one per-node check of ring builds and of the
 * records a watcher follows.
 */
int hr__ring_node_points(const hr_node *node, const hr_ring_options *opts,
			 unsigned *points, hr_error *err);

/* hr_ring_lookup() for a position already hashed.  Same results. */
int hr__ring_lookup_pos(const hr_ring *ring, uint64_t pos, hr_lookup *out);

/* hr_client_lookup()'s copy-out on one ring: hashes `key`, finds both
 * owners and copies them into `out` (revision and digest always; the
 * strings unless the result is HR_EEMPTY).  Never allocates. */
int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out);

/* hr_ring_preflist() for a position already hashed.  Same results. */
int hr__ring_preflist_pos(const hr_ring *ring, uint64_t pos, hr_view view,
			  const hr_node **out, size_t r);

/* Whether hr__ring_derive() reused the previous ring's points (for tests
 * and figures: the answers are the same either way). */
bool hr__ring_derived(const hr_ring *ring);

/* Whether a node in `state` has points in `view`: the write view leaves
 * draining nodes out, the read view warming ones. */
static inline bool hr__in_view(hr_state state, hr_view view)
{
	return view == HR_VIEW_WRITE ? state != HR_STATE_DRAINING :
				       state != HR_STATE_WARMING;
}

static inline bool hr__valid_view(hr_view view)
{
	return view == HR_VIEW_WRITE || view == HR_VIEW_READ;
}

/* A sum of arc lengths on the 64-bit circle, in 128 bits (a whole circle
 * is 2^64), and its share of the circle. */
typedef struct hr__arc_sum {
	uint64_t hi, lo;
} hr__arc_sum;

static inline void hr__arc_add(hr__arc_sum *s, uint64_t len)
{
	s->lo += len;
	if (s->lo < len)
		s->hi++;
}

static inline double hr__arc_share(const hr__arc_sum *s)
{
	return s->hi ? 1.0 : ldexp((double)s->lo, -64);
}

/* Releases `ring` and returns true if the caller holds its only reference;
 * otherwise returns false and changes nothing.  Sound only when nobody can
 * take a new reference meanwhile (a ring out of publication). */
bool hr__ring_release_if_last(hr_ring *ring);

/* Points per unit of weight the ring was built with. */
unsigned hr__ring_vnodes_per_weight(const hr_ring *ring);

/* Number of nodes and points in one view. */
size_t hr__ring_view_nodes(const hr_ring *ring, hr_view view);
size_t hr__ring_view_points(const hr_ring *ring, hr_view view);

/* A key's position on the ring's circle: hr_hash_key(), or in ketama mode
 * the MD5 key hash shifted into the top 32 bits. */
uint64_t hr__ring_key_pos(const hr_ring *ring, const void *key, size_t len);

/* Point i (0 <= i < hr__ring_view_points()) of a view, in ring order: its
 * position and its node's index in id order.  HR_EINVAL out of range.
 * For walks over the circle (ring diffs, bounded loads). */
int hr__ring_view_point(const hr_ring *ring, hr_view view, size_t i,
			uint64_t *pos, size_t *node);

/* Index of the point owning `pos` in a view that is not empty: the first
 * at or after it, wrapping to 0. */
size_t hr__ring_view_find(const hr_ring *ring, hr_view view, uint64_t pos);

#endif
