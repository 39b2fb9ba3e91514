/* SPDX-License-Identifier: MIT */
/*
 * hashring/common.h - what every part of the hashring API shares: the
 * library's version, error codes and hr_error, the rule for structs that
 * grow, and logging.  Included by every other header (hashring.h gives
 * them all).
 */
#ifndef HASHRING_COMMON_H
#define HASHRING_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "hashring/version.h"

/* Marks the library's functions; visible outside the library only when
 * the library itself is built. */
#if defined(HR_BUILDING_LIBRARY) && defined(__GNUC__)
#define HR_EXPORT __attribute__((visibility("default")))
#else
#define HR_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * The version of the library in use, as "major.minor.patch": compare it
 * with HR_VERSION_STRING to tell the library a program runs with from the
 * headers it was built with.  A static string, never NULL; thread safe.
 */
HR_EXPORT const char *hr_version(void);

/* The same as one number, major * 10000 + minor * 100 + patch, comparable
 * with HR_VERSION_NUMBER.  Thread safe. */
HR_EXPORT int hr_version_number(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

enum {
	HR_OK = 0,
	HR_EINVAL = -1,      /* invalid argument (NULL, out of range, bad flag)  */
	HR_ENOMEM = -2,      /* out of memory                                     */
	HR_EEMPTY = -3,      /* the ring (or the view asked for) has no node      */
	HR_EDUPLICATE = -4,  /* the same node id given twice                      */
	HR_ELIMIT = -5,      /* a documented size or count limit was exceeded     */
	HR_EPARSE = -6,      /* malformed record, JSON or file                    */
	HR_EIO = -7,         /* a file could not be read                          */
	HR_ECONNECT = -8,    /* no endpoint could be reached (etcd, a store)      */
	HR_ETIMEDOUT = -9,   /* an operation did not finish in its time limit     */
	HR_EETCD = -10,      /* etcd answered with an error                       */
	HR_EAUTH = -11,      /* authentication failed or token rejected           */
	HR_EPERM = -12,      /* etcd denied permission                            */
	HR_ETLS = -13,       /* TLS set-up or certificate verification failed     */
	HR_ENOTFOUND = -14,  /* no such node, key or lease                        */
	HR_EEXIST = -15,     /* the id is already registered by someone else      */
	HR_ECLOSED = -16,    /* the object is closing or closed; or, in a child
	                        of fork(), it was opened before the fork          */
	HR_ECOMPACTED = -17, /* the revision asked for was compacted              */
	HR_ECONFLICT = -18   /* clients report different rings at one revision   */
};

/* Longest message stored in an hr_error, terminating NUL included. */
#define HR_ERROR_MSG_MAX 256

/* Optional detail for a failed call.  Zero-initialise or pass NULL. */
typedef struct hr_error {
	int code;                       /* the same negative code returned  */
	char message[HR_ERROR_MSG_MAX]; /* one line, never a password/token */
} hr_error;

/* A static sentence for `code` ("invalid argument", ...).  Unknown codes
 * give "unknown error".  Thread safe; never NULL. */
HR_EXPORT const char *hr_strerror(int code);

/* ------------------------------------------------------------------------ */
/* Naming and errors                                                        */
/* ------------------------------------------------------------------------ */

/*
 * One rule for every type (docs/abi.md): a type hr_T is made by
 * hr_T_new() and destroyed by hr_T_free(), or, when making it starts a
 * thread or keeps connections, by hr_T_open() and hr_T_close().  Rings
 * are the one counted type: hr_ring_build(), hr_ring_from_json(),
 * hr_ring_load_file() and hr_client_ring() give a reference that
 * hr_ring_release() drops (hr_ring_retain() adds one).  Every destructor
 * accepts NULL.  Settings structs are set up by their hr_T_init() macro.
 *
 * Every function that can fail returns a negative HR_E* code and takes
 * `hr_error *err` as its last argument (NULL: no message wanted); on
 * success it leaves *err alone.  The exception is
 * hr_metrics_writer_free(), whose failures go to the hr_error its writer
 * was made with.
 */

/* ------------------------------------------------------------------------ */
/* Structs that grow                                                        */
/* ------------------------------------------------------------------------ */

/*
 * The settings a caller fills in - hr_ring_options, hr_etcd_config,
 * hr_client_config, hr_registration, hr_record_update,
 * hr_metrics_options, hr_rebalance_backend and hr_rebalance_config - may
 * gain fields
 * in a minor release.  Each starts with `size_t size`, the caller's sizeof
 * of the struct, which its init macro sets along with every default:
 *
 *     hr_etcd_config etcd;
 *
 *     hr_etcd_config_init(&etcd);     // etcd.size = sizeof etcd, defaults
 *     etcd.prefix = "/hashring/nodes/";
 *
 * The library reads the fields that lie within `size` and takes the
 * defaults for the others, so a program built against older headers keeps
 * working and gets the defaults of the fields it does not know.  HR_EINVAL,
 * with a message naming the struct, for a size of 0 (a struct zeroed or
 * never initialised), one too small to hold the first field, one above
 * 4096, and a size larger than this library's struct whose extra bytes are
 * not all zero: a program built against newer headers set a field this
 * library does not have, which it would otherwise ignore.  (Such a program
 * checks hr_version_number() before it sets a field of a later release.)
 * No field is ever moved, resized or removed within a major version; new
 * ones are appended.
 *
 * Every field of hr_ring_options, hr_record_update and hr_metrics_options
 * defaults to 0, so a designated initializer that names the size does what
 * the init macro does:
 *
 *     hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 100 };
 *
 * A struct the library fills (hr_client_status, hr_rebalance_progress)
 * takes the caller's sizeof as an argument instead, which a macro passes:
 * the library writes no byte beyond it.
 *
 * Structs in arrays (hr_node, hr_replica, hr_batch_owner, hr_metrics_label,
 * and the library's hr_arc and hr_arc_total), those lookups fill (hr_lookup,
 * hr_owner, hr_epoch) and hr_error keep their layout for the whole major
 * version.
 */

/* ------------------------------------------------------------------------ */
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum hr_log_level {
	HR_LOG_ERROR = 0,
	HR_LOG_WARN = 1,
	HR_LOG_INFO = 2,
	HR_LOG_DEBUG = 3
} hr_log_level;

/*
 * Receives one log line (no trailing newline) in key=value form, e.g.
 *   level=warn event=stale unconfirmed_ms=10012 revision=42 endpoint=...
 * Called from the library's threads, one call at a time per client; a
 * registrar calls it from its renewal thread and from the threads that
 * call its functions.
 */
typedef void (*hr_log_fn)(void *userdata, hr_log_level level,
			  const char *line);

/* "error", "warn", "info", "debug"; NULL for an invalid value. */
HR_EXPORT const char *hr_log_level_name(hr_log_level level);

#if defined(__GNUC__)
#define HR_PRINTF_LIKE(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define HR_PRINTF_LIKE(fmt, first)
#endif

/*
 * (1.2) Writes one line as the library writes its own: `level=<level>
 * event=<event> <fields>`, handed to `log` (with `userdata`), or when `log`
 * is NULL written to stderr after a `ts=` timestamp; nothing when `level` is
 * above `max` or not a level, or `event` is NULL.  `fmt` is a printf format
 * of more key=value pairs: each %s value is written bare when logfmt allows
 * it and otherwise quoted and escaped, so that a value cannot forge fields
 * (write `msg=%s`, never `msg="%s"`); `%.*s` takes exactly that many bytes,
 * NULs included.  Conversions: d i u o x X c e E f F g G a A p s and %, with
 * the usual flags, widths, precisions and length modifiers hh h l ll z j t L.
 * A line over 1023 bytes is cut at a field boundary.  For programs and
 * libraries built on hashring that log as it does (libhashring-rebalance
 * does).  Thread safe.
 */
HR_EXPORT void hr_log_write(hr_log_fn log, void *userdata, hr_log_level max,
			    hr_log_level level, const char *event,
			    const char *fmt, ...) HR_PRINTF_LIKE(6, 7);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_COMMON_H */
