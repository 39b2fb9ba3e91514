/* ring_points.h - the views of a placement whose points depend on their
 * node alone (internal). */
#ifndef HR_RING_POINTS_H
#define HR_RING_POINTS_H

#include "ring_impl.h"

/* fill_views (placement.h) of a placement with point_positions: places
 * every point, or derives them from `prev` (may be NULL) when it was
 * placed the same way and few changed, then takes both views. */
int hr__points_fill(hr_ring *ring, const hr_ring *prev, hr_error *err);

#endif
