/* SPDX-License-Identifier: MIT */
/* arcs.h - measuring the circle: the arcs where two rings' owners differ,
 * and the share that moved (internal). */
#ifndef HR_ARCS_H
#define HR_ARCS_H

#include "hashring.h"

#include <stdint.h>

/* No owner: the view is empty. */
#define HR__NO_OWNER UINT32_MAX

/* Called for each maximal arc [first, last] (inclusive) whose owner in the
 * view differs between the two rings: the owners' slots in their rings
 * (hr_ring_node), HR__NO_OWNER for an empty view. */
typedef void (*hr__moved_fn)(void *userdata, uint64_t first, uint64_t last,
			     uint32_t old_slot, uint32_t new_slot);

/*
 * Walks the circle from position 0 up and calls `fn` once per maximal arc
 * whose owner in `view` (a valid view) differs between `a` and `b` (either
 * may be NULL: an empty ring), owners compared by id; adjacent arcs with
 * the same pair of owners are one arc, so arcs do not cross position 0.
 * docs/placement.md section 12.  At most (points of both views + 1) arcs.
 * Looks only where the rings' points differ when the placement allows
 * (point_positions, placement.h); never fails: short of memory it walks
 * every point and compares ids.
 */
void hr__arcs_moved(const hr_ring *a, const hr_ring *b, hr_view view,
		    hr__moved_fn fn, void *userdata);

/* hr_ring_moved_share() of the write view, then of the read view: one walk
 * when each ring's two views are the same points (no node warming or
 * draining), as after most changes. */
void hr__ring_moved_shares(const hr_ring *a, const hr_ring *b, double *write,
			   double *read);

#endif
