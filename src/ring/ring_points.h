/* ring_points.h - the views of a placement whose points depend on their
 * node alone (internal). */
#ifndef HR_RING_POINTS_H
#define HR_RING_POINTS_H

#include "ring_impl.h"

/* fill_views (placement.h) of a placement with point_positions: places
 * every point, or derives them from `prev` (may be NULL) when it was
 * placed the same way and few changed, then takes both views. */
int hr__points_fill(hr_ring *ring, const hr_ring *prev, hr_error *err);

/* The type of placement.h's point_positions. */
typedef void (*hr__point_positions_fn)(const hr_ring *ring, uint32_t slot,
				       unsigned from, unsigned to,
				       struct point *out);

/* hr__points_fill() of points that `positions` places, never derived from
 * a previous ring: for placements whose points depend on more than a
 * node's id and index (tokens.c). */
int hr__points_fill_fresh(hr_ring *ring, hr__point_positions_fn positions,
			  hr_error *err);

#endif
