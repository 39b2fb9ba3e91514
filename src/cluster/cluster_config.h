/* SPDX-License-Identifier: MIT */
/* cluster_config.h - hr_registration and hr_record_update read once,
 * checked once (internal; settings.h says how). */
#ifndef HR_CLUSTER_CONFIG_H
#define HR_CLUSTER_CONFIG_H

#include "hashring.h"

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, no id or
 * addr, a TTL out of 2..3600.  The node itself is checked against the
 * ring options by the caller (hr_node_check). */
int hr__registration_read(const hr_registration *in, hr_registration *out,
			  hr_error *err);

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, no field or
 * an unknown flag, an invalid state, a weight not finite and > 0. */
int hr__record_update_read(const hr_record_update *in, hr_record_update *out,
			   hr_error *err);

#endif
