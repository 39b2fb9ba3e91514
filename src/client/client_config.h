/* SPDX-License-Identifier: MIT */
/* client_config.h - hr_client_config, and an hr_etcd_config with its
 * ring options, read once, checked once (internal; settings.h says how). */
#ifndef HR_CLIENT_CONFIG_H
#define HR_CLIENT_CONFIG_H

#include "etcd.h"
#include "hashring.h"
#include "log.h"

/* An hr_etcd_config as the clients and registrars use it: the etcd
 * client's settings (etcd_config.h) and the ring options, read.  Strings
 * are the caller's, valid during the call that read them. */
typedef struct hr__conn {
	hr__etcd_opts etcd;        /* stop_flag and tick left NULL */
	const char *prefix;
	hr_ring_options ring;
	hr__log log;
} hr__conn;

/* Reads `in` (required) into *out.  HR_EINVAL, naming the struct and the
 * field: bad size, no or empty prefix, a prefix over 4096 bytes,
 * timeouts not > 0, an invalid log level, bad ring options. */
int hr__conn_read(const hr_etcd_config *in, hr__conn *out, hr_error *err);

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size, a
 * time not > 0, backoff_max_ms below backoff_initial_ms, a page size out
 * of 1..100000. */
int hr__client_config_read(const hr_client_config *in, hr_client_config *out,
			   hr_error *err);

#endif
