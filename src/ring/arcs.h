/* arcs.h - measuring the circle: arc lengths summed exactly, and the arcs
 * where two rings' owners differ (internal). */
#ifndef HR_ARCS_H
#define HR_ARCS_H

#include "hashring.h"

#include <math.h>
#include <stdint.h>

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

/* Adds the positions first .. last (inclusive, first <= last): up to the
 * whole circle. */
static inline void hr__arc_add_span(hr__arc_sum *s, uint64_t first,
				    uint64_t last)
{
	hr__arc_add(s, last - first);
	hr__arc_add(s, 1);
}

static inline double hr__arc_share(const hr__arc_sum *s)
{
	return s->hi ? 1.0 : ldexp((double)s->lo, -64);
}

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
