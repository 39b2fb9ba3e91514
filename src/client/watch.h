/* SPDX-License-Identifier: MIT */
/* watch.h - the watcher thread (internal): full sync at revision R, watch
 * from R+1, one ring per batch, compaction -> resync, reconnect with
 * backoff, liveness probes and staleness warnings.
 *
 * Rules followed (never miss, never double-apply an event):
 *  - the full sync is a paged linearizable range pinned to one revision R,
 *    and replaces the whole node set;
 *  - the watch starts at next_rev = R+1; an event with mod_revision below
 *    next_rev is dropped; a message's events are applied as one batch and
 *    next_rev becomes the last mod_revision + 1; next_rev never decreases;
 *  - compaction or an unexpected cancel drops the stream and resyncs;
 *  - any other end of stream resumes at next_rev on the next endpoint;
 *  - a quiet stream is probed (linearizable) after a jittered interval,
 *    or, while etcd's progress notifications arrive often enough to show
 *    a hung member in time, only when one is late. */
#ifndef HR_WATCH_H
#define HR_WATCH_H

#include "watch_opts.h"

typedef struct hr__watcher hr__watcher;

/* Starts the thread.  Errors: HR_EINVAL (bad endpoints, prefix), HR_ENOMEM. */
int hr__watcher_start(const hr__watch_opts *opts, hr__watcher **out,
		      hr_error *err);

/*
 * Waits up to `timeout_ms` for the first full sync to publish a ring.
 * Returns 0, the error that makes waiting pointless (HR_EAUTH, HR_EPERM,
 * HR_ETLS, HR_ELIMIT), or HR_ETIMEDOUT with the last failure in `err`.
 */
int hr__watcher_wait_first(hr__watcher *w, int timeout_ms, hr_error *err);

/* Fills the watcher's part of a status (thread safe). */
void hr__watcher_status(hr__watcher *w, hr_client_status *out);

/* Wakes the thread to announce the rings of pending subscribers
 * (hr__subs_add): at once from a stream's or a backoff's wait, after the
 * call from a full sync.  Thread safe. */
void hr__watcher_wake(hr__watcher *w);

/* Stops and joins the thread and frees the watcher.  Accepts NULL. */
void hr__watcher_stop(hr__watcher *w);

#endif
