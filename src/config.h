/* config.h - the public settings structs read once, checked once
 * (internal).
 *
 * Every struct a caller fills in starts with its size (hashring.h, "Structs
 * that grow").  The readers below are the only code that looks at a
 * caller's struct: each checks the size, takes the fields that lie within
 * it and the defaults for the others, and checks the values, so that the
 * client, the registrar and hr_node_update() accept and refuse the same
 * settings with the same messages.  What they fill is complete and
 * trusted: the rest of the library reads it directly. */
#ifndef HR_CONFIG_H
#define HR_CONFIG_H

#include "hashring.h"
#include "etcd.h"
#include "log.h"

/* An hr_etcd_config as the library uses it.  Strings are the caller's,
 * valid during the call that read them. */
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

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size or
 * placement. */
int hr__ring_options_read(const hr_ring_options *in, hr_ring_options *out,
			  hr_error *err);

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size, a
 * time not > 0, backoff_max_ms below backoff_initial_ms, a page size out
 * of 1..100000. */
int hr__client_config_read(const hr_client_config *in, hr_client_config *out,
			   hr_error *err);

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, no id or
 * addr, a TTL out of 2..3600.  The node itself is checked against the
 * ring options by the caller (hr_node_check). */
int hr__registration_read(const hr_registration *in, hr_registration *out,
			  hr_error *err);

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, no field or
 * an unknown flag, an invalid state, a weight not finite and > 0. */
int hr__record_update_read(const hr_record_update *in, hr_record_update *out,
			   hr_error *err);

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for a bad size or
 * an unknown flag in omit.  The names and labels are the exposition's to
 * check (metrics_text.h), which knows the format's rules. */
int hr__metrics_options_read(const hr_metrics_options *in, hr_metrics_options *out,
			     hr_error *err);

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, a missing
 * enumerate, fetch or add (naming it), over 16 enumerate passes; 0 passes
 * become 1. */
int hr__rebalance_backend_read(const hr_rebalance_backend *in, hr_rebalance_backend *out,
			       hr_error *err);

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for the reasons
 * hashring.h lists.  The strings stay the caller's. */
int hr__rebalance_config_read(const hr_rebalance_config *in, hr_rebalance_config *out,
			      hr_error *err);

#endif
