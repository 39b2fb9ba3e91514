/* SPDX-License-Identifier: MIT */
/* etcd_config.h - hr_etcd_config read once, checked once (internal;
 * settings.h says how). */
#ifndef HR_ETCD_CONFIG_H
#define HR_ETCD_CONFIG_H

#include "etcd.h"
#include "hashring.h"
#include "log.h"

/* An hr_etcd_config as the etcd client uses it.  Strings are the
 * caller's, valid during the call that read them.  Its ring options are
 * passed on unread: they are the ring's to check (client_config.h), and
 * the etcd client knows nothing of rings. */
typedef struct hr__etcd_config {
	hr__etcd_opts etcd;          /* stop_flag and tick left NULL */
	const char *prefix;
	const hr_ring_options *ring; /* the caller's, unread (may be NULL) */
	hr__log log;
} hr__etcd_config;

/* Reads `in` (required) into *out.  HR_EINVAL, naming the struct and the
 * field: bad size, no or empty prefix, a prefix over 4096 bytes,
 * timeouts not > 0, an invalid log level. */
int hr__etcd_config_read(const hr_etcd_config *in, hr__etcd_config *out,
			 hr_error *err);

#endif
