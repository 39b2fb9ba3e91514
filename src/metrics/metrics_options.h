/* SPDX-License-Identifier: MIT */
/* metrics_options.h - hr_metrics_options read once, checked once
 * (internal; settings.h says how). */
#ifndef HR_METRICS_OPTIONS_H
#define HR_METRICS_OPTIONS_H

#include "hashring.h"

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size or
 * an unknown flag in omit.  The names and labels are the exposition's to
 * check (metrics_text.h), which knows the format's rules. */
int hr__metrics_options_read(const hr_metrics_options *in, hr_metrics_options *out,
			     hr_error *err);

#endif
