/* ring.h - placement internals shared with tests (internal). */
#ifndef HR_RING_H
#define HR_RING_H

#include "hashring.h"

/* Position of a point name ("<id>#<i>") on the circle.  The contract uses
 * XXH3_64bits; tests pass other functions to force equal positions. */
typedef uint64_t (*hr__point_hash_fn)(const void *name, size_t len);

/* hr_ring_build() with the point hash given explicitly. */
int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err);

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

/* Points per unit of weight the ring was built with. */
unsigned hr__ring_vnodes_per_weight(const hr_ring *ring);

/* Number of nodes and points in one view. */
size_t hr__ring_view_nodes(const hr_ring *ring, hr_view view);
size_t hr__ring_view_points(const hr_ring *ring, hr_view view);

#endif
