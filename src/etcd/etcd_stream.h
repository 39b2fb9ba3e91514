/* SPDX-License-Identifier: MIT */
/* etcd_stream.h - a watch stream and its liveness probes over etcd's
 * gateway (internal).
 *
 * Knows etcd, knows nothing of rings.  One stream watches every key under
 * a prefix from a start revision (progress notifications and fragments
 * on); beside it a probe, a count-only range over the same prefix, can
 * tell a quiet stream from a hung member.  Both run on a multi handle of
 * their own, moved on by hr__etcd_stream_perform(), which hands the
 * stream's lines, finished probes and the stream's end to the callbacks.
 * Once a callback asked to stop, or the stream ended, no callback runs
 * again.  A stream belongs to the thread that owns its hr__etcd, except
 * hr__etcd_stream_wakeup(). */
#ifndef HR_ETCD_STREAM_H
#define HR_ETCD_STREAM_H

#include "etcd.h"

#include <stddef.h>
#include <stdint.h>

typedef enum hr__probe_outcome {
	HR__PROBE_ANSWERED,        /* revision and cluster_id are set      */
	HR__PROBE_REAUTHENTICATED, /* the token had expired (HTTP 401) and
				      was renewed: no answer, no failure   */
	HR__PROBE_FAILED           /* err says why                         */
} hr__probe_outcome;

typedef struct hr__probe_result {
	hr__probe_outcome outcome;
	int64_t revision;          /* the reply header's                   */
	uint64_t cluster_id;       /* 0 when absent                        */
	int64_t elapsed_ms;        /* from the probe's start to its end    */
	hr_error err;
} hr__probe_result;

typedef struct hr__etcd_stream_cbs {
	/* One line of the stream's body (a watch message without its '\n';
	 * blank lines skipped), and at its end the bytes after the last '\n'
	 * (etcd 3.4's error chunk has none).  Non-zero stops the stream. */
	int (*line)(void *userdata, const char *line, size_t len);
	/* A probe finished.  Non-zero stops the stream. */
	int (*probe)(void *userdata, const hr__probe_result *r);
	/* The stream ended of itself: `why` is NULL after a clean end (HTTP
	 * 200, the body complete), else the failed transfer's error, or
	 * HR_ELIMIT/HR_ENOMEM for a line too long to buffer. */
	void (*ended)(void *userdata, const hr_error *why);
	void *userdata;
} hr__etcd_stream_cbs;

typedef struct hr__etcd_stream hr__etcd_stream;

/*
 * Opens a watch of every key under `prefix` from `start_revision` on the
 * current endpoint; lines longer than `max_line` bytes end it (HR_ELIMIT).
 * `cbs` is copied.  Errors: HR_ENOMEM.
 */
int hr__etcd_stream_open(hr__etcd *e, const char *prefix, int64_t start_revision,
			 size_t max_line, const hr__etcd_stream_cbs *cbs,
			 hr__etcd_stream **out, hr_error *err);

/* Moves the transfers on without waiting, calling the callbacks.  Returns
 * 1 while the stream runs, 0 once it ended or a callback stopped it. */
int hr__etcd_stream_perform(hr__etcd_stream *s);

/* Starts a probe limited to `timeout_ms`, unless one runs.  HR_ENOMEM. */
int hr__etcd_stream_probe(hr__etcd_stream *s, int timeout_ms, hr_error *err);

/* Whether a probe runs. */
int hr__etcd_stream_probing(const hr__etcd_stream *s);

/* Waits up to `ms` for the network (libcurl shortens it for its own
 * timers) or hr__etcd_stream_wakeup(). */
void hr__etcd_stream_wait(hr__etcd_stream *s, int ms);

/* Ends a wait at once; from any thread, while the stream is open. */
void hr__etcd_stream_wakeup(hr__etcd_stream *s);

/* Aborts what runs and frees the stream.  Accepts NULL. */
void hr__etcd_stream_close(hr__etcd_stream *s);

#endif
