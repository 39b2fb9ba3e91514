/* SPDX-License-Identifier: MIT */
/* watch_stream.h - the watch stream's wire format (internal): splitting the
 * newline-delimited byte stream into messages and classifying each message.
 * Pure functions over bytes: no I/O, fuzzable. */
#ifndef HR_WATCH_STREAM_H
#define HR_WATCH_STREAM_H

#include "buffer.h"
#include "etcd_json.h"

#include <stddef.h>
#include <stdint.h>

/* Accumulates stream bytes; hands out whole lines. */
typedef struct hr__linebuf {
	hr__buffer part;   /* the bytes of a line not yet complete */
	size_t max;        /* longest accepted line (HR_ELIMIT beyond) */
} hr__linebuf;

typedef int (*hr__line_fn)(void *userdata, const char *line, size_t len);

/* Appends `n` bytes and calls `fn` for each complete line (without its
 * '\n'; blank lines skipped).  Returns 0, HR_ELIMIT, HR_ENOMEM, or the first
 * non-zero value `fn` returned (which stops the feed). */
int hr__linebuf_feed(hr__linebuf *b, const char *p, size_t n, hr__line_fn fn,
		     void *userdata);
/* At end of stream: the leftover bytes (a last message without '\n', as
 * etcd 3.4 sends its error chunk) go to `fn` as a final line. */
int hr__linebuf_finish(hr__linebuf *b, hr__line_fn fn, void *userdata);
void hr__linebuf_reset(hr__linebuf *b);
void hr__linebuf_free(hr__linebuf *b);

typedef enum hr__wmsg_kind {
	HR__WMSG_CREATED,    /* watch established                           */
	HR__WMSG_EVENTS,     /* events (check `fragment`)                   */
	HR__WMSG_PROGRESS,   /* progress notification at header_revision    */
	HR__WMSG_COMPACTED,  /* canceled: start revision compacted          */
	HR__WMSG_CANCELED,   /* canceled otherwise (reason in `reason`)     */
	HR__WMSG_ERROR       /* {"error":{...}}: the stream failed          */
} hr__wmsg_kind;

/* Why etcd canceled a watch.  etcd 3.4 and later refuse a watch they may
 * not serve with a gRPC status text, "rpc error: code = <code> desc =
 * <desc>" (v3rpc/watch.go): PermissionDenied "etcdserver: permission
 * denied", Unauthenticated "etcdserver: invalid auth token",
 * InvalidArgument "etcdserver: user name is empty" (no token sent) or
 * InvalidArgument "etcdserver: revision of auth store is old" (a retry
 * authenticates afresh: OTHER). */
typedef enum hr__wcancel {
	HR__WCANCEL_NONE = 0,        /* not a cancel                        */
	HR__WCANCEL_COMPACTED,       /* start revision compacted: resync    */
	HR__WCANCEL_DENIED,          /* permission denied (HR_EPERM)        */
	HR__WCANCEL_UNAUTHENTICATED, /* bad token or no user (HR_EAUTH)     */
	HR__WCANCEL_OTHER            /* any other reason, or none: resync   */
} hr__wcancel;

/* The class of a cancel reason as etcd writes it (never NONE or
 * COMPACTED, which only compact_revision tells). */
hr__wcancel hr__wcancel_of(const char *reason);

typedef struct hr__wmsg {
	hr__wmsg_kind kind;
	hr__wcancel cancel;        /* set for COMPACTED and CANCELED        */
	int64_t header_revision;   /* 0 when absent                         */
	uint64_t cluster_id;       /* 0 when absent                         */
	int64_t compact_revision;
	int64_t watch_id;
	int fragment;
	hr__kv *events;            /* in stream order                       */
	size_t n_events;
	int code;                  /* gRPC code of an error message, or -1  */
	char reason[256];          /* cancel reason or error message        */
} hr__wmsg;

/* Parses one line.  HR_EPARSE (message names what was wrong) for anything
 * that is not a well-formed watch message; `out` is cleared then. */
int hr__wmsg_parse(const char *line, size_t len, hr__wmsg *out, hr_error *err);
void hr__wmsg_clear(hr__wmsg *m);

#endif
