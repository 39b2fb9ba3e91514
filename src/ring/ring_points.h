/* SPDX-License-Identifier: MIT */
/* ring_points.h - the views of a placement of points (internal). */
#ifndef HR_RING_POINTS_H
#define HR_RING_POINTS_H

#include "ring_impl.h"

/* Fills both views of `ring`, of a placement of points (HR__PLACE_POINTS),
 * whose nodes, vnodes, zones and digest are set: places every point, or
 * derives them from `prev` (may be NULL) when it was placed the same way
 * by index and few changed, then takes both views.  HR_ENOMEM with `err`
 * set; the caller frees the ring. */
int hr__points_fill(hr_ring *ring, const hr_ring *prev, hr_error *err);

#endif
