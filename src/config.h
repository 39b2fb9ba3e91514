/* config.h - an hr_config read once, checked once (internal).
 *
 * The client, the registrar and the in-place node changes all take an
 * hr_config; these functions are the only code that reads one, so that
 * each accepts and refuses the same settings with the same messages, and
 * the connection settings become etcd options in one place. */
#ifndef HR_CONFIG_H
#define HR_CONFIG_H

#include "hashring.h"
#include "etcd.h"
#include "log.h"

/* What every user of an hr_config takes from it: the connection, the
 * prefix, the clients' ring options and the log.  Strings are the
 * caller's, valid during the call that read them. */
typedef struct hr__conn {
	hr__etcd_opts etcd;        /* stop_flag and tick left NULL */
	const char *prefix;
	hr_ring_options ring;
	hr__log log;
} hr__conn;

/* Reads the connection part of `in` (required) into *out.  HR_EINVAL,
 * naming the field: no or empty prefix, a prefix over 4096 bytes,
 * timeouts not > 0, an invalid log level. */
int hr__conn_read(const hr_config *in, hr__conn *out, hr_error *err);

/* Checks the client's own part of `in`.  HR_EINVAL for a time not > 0,
 * backoff_max_ms below backoff_initial_ms, a page size out of
 * 1..100000. */
int hr__client_config_check(const hr_config *in, hr_error *err);

#endif
