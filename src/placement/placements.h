/* SPDX-License-Identifier: MIT */
/*
 * placements.h - the placements by hr_placement value (internal): the one
 * list a new placement joins.  Apart from the interface (placement.h),
 * which every placement includes, so that the list may name them all.
 */
#ifndef HR_PLACEMENTS_H
#define HR_PLACEMENTS_H

#include "placement.h"

/* The placement `opts` select (NULL: the default, XXH3).  HR_EINVAL for a
 * value no placement has. */
int hr__placement_get(const hr_ring_options *opts, const hr__placement **out,
		      hr_error *err);

#endif
