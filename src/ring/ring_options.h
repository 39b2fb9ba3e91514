/* SPDX-License-Identifier: MIT */
/* ring_options.h - hr_ring_options read once, checked once (internal;
 * settings.h says how). */
#ifndef HR_RING_OPTIONS_H
#define HR_RING_OPTIONS_H

#include "hashring.h"

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size or
 * placement. */
int hr__ring_options_read(const hr_ring_options *in, hr_ring_options *out,
			  hr_error *err);

#endif
