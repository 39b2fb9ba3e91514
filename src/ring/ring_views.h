/* SPDX-License-Identifier: MIT */
/* ring_views.h - a ring's two views: the nodes each holds, and the views
 * of placements that make each view from all its nodes at once
 * (internal; see view.h for a view, placement.h for the kinds, and
 * ring_points.h for the placements of points). */
#ifndef HR_RING_VIEWS_H
#define HR_RING_VIEWS_H

#include "ring_impl.h"

/*
 * Fills both views of `ring`, of a placement of kind CONTINUUM, TABLE or
 * SCORES, whose nodes, zones and digest are set: the write view from its
 * nodes, the read view the same when a node warms or drains, else one
 * shared with the write view.  A node's vnodes are then its points in its
 * home view (hr__home_view), and ring->npoints their sum.  Errors:
 * HR_ELIMIT, HR_EINVAL, HR_ENOMEM; the caller frees the ring.
 */
int hr__ring_views_each(hr_ring *ring, hr_error *err);

/* Counts the nodes and zones of view `which` into `v` (ring->nodes and
 * their zones set).  HR_ENOMEM. */
int hr__ring_view_count(const hr_ring *ring, hr_view which, struct view *v);

/* Sets up view `which` of `ring` from `all`, the sorted points of every
 * node (flat): `all` itself when every node is in the view (the view then
 * owns no memory), else a copy of the points of its nodes, indexed.
 * Counts the view's nodes and zones.  HR_ENOMEM with `err` set. */
int hr__ring_view_subset(hr_ring *ring, const struct view *all, hr_view which,
			 hr_error *err);

/* Whether node numbers of `ring`'s views take four bytes: when it has more
 * nodes than two bytes can number. */
static inline bool ring_wide(const hr_ring *ring)
{
	return ring->nnodes > UINT16_MAX + 1u;
}

#endif
