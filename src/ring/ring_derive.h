/* SPDX-License-Identifier: MIT */
/* ring_derive.h - a ring's points from the previous ring's (internal). */
#ifndef HR_RING_DERIVE_H
#define HR_RING_DERIVE_H

#include "ring_impl.h"

/*
 * Fills `all` with every point of `ring` (its nodes and vnodes set) from
 * the points of `prev`, placed the same way (same placement, of points by
 * index, vnodes_per_weight and point hash; flat), and the positions of
 * the new vnodes merged in: the points a full placement would give, in the
 * same order.  Sets *done to false, leaving `all` empty, when placing
 * everything is the cheaper way (over a quarter of the points are new, as
 * after a resync).  HR_ENOMEM with `err` set.
 */
int hr__points_derive(hr_ring *ring, const hr_ring *prev, struct view *all,
		      bool *done, hr_error *err);

#endif
