/* SPDX-License-Identifier: MIT */
/* scores_moved.h - what moves between two rings of which one or both are
 * rendezvous rings, whose keys are not on arcs (docs/placement.md section
 * 15; internal). */
#ifndef HR_SCORES_MOVED_H
#define HR_SCORES_MOVED_H

#include "hashring.h"

/* The share of keys whose owner in `view` differs between `a` and `b`
 * (either may be NULL: no ring): by the formula of section 15 when both
 * are rendezvous rings (or have no point in the view), else from a sample
 * of positions.  NAN when out of memory. */
double hr__scores_moved_share(const hr_ring *a, const hr_ring *b, hr_view view);

/* The per-pair totals of a diff between the same two rings: *out
 * (malloc'ed, NULL if none), sorted by the ids of the old node, then the
 * new one (NULL first), and *n.  HR_ENOMEM. */
int hr__scores_totals(const hr_ring *a, const hr_ring *b, hr_view view,
		      hr_arc_total **out, size_t *n);

#endif
