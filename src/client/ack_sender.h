/* SPDX-License-Identifier: MIT */
/* ack_sender.h - the announcing side of acknowledged epochs (internal): a small
 * thread per client that puts the ring's (revision, digest) at
 * <ack prefix><client id> under the client's own lease, coalesced.
 *
 * Why a thread of its own rather than the watcher's: an ack is a put (and
 * a lease to keep alive on a timer) that can take up to a request timeout
 * on a slow etcd, and the watcher must never stop reading its stream for
 * that; coalescing also needs a timer of its own (the last ring of a burst
 * is announced after the burst).  The watcher only hands the newest
 * (revision, digest) over under a mutex, which never waits on I/O. */
#ifndef HR_ACK_H
#define HR_ACK_H

#include "etcd.h"
#include "log.h"

#include <stdint.h>

typedef struct hr__acker_opts {
	hr__etcd_opts etcd;       /* copied; stop_flag and tick unused */
	const char *ack_prefix;   /* copied */
	const char *client_id;    /* copied */
	int ttl_s;
	int interval_ms;          /* least time between two puts */
	const hr__log *log;       /* must outlive the acker */
} hr__acker_opts;

typedef struct hr__acker hr__acker;

/* Starts the thread (no request yet: the lease is granted at the first
 * ack).  Errors: HR_EINVAL (bad endpoints), HR_ENOMEM. */
int hr__acker_start(const hr__acker_opts *opts, hr__acker **out, hr_error *err);

/* The client's ring matches etcd at `revision` and has `digest`: to be
 * announced.  Never blocks on I/O; from the watcher thread.  NULL: no-op. */
void hr__acker_note(hr__acker *a, uint64_t revision, uint64_t digest);

/* Waits up to `timeout_ms` (0: only checks) for the first ack to be in
 * etcd.  0 (at once if it is); the error retrying will not cure (HR_EPERM,
 * HR_EAUTH, HR_ETLS, HR_EEXIST: the id is another live client's, the
 * message naming its lease) as soon as it happens, for as long as no ack
 * was written; or HR_ETIMEDOUT with the last failure, its message counting
 * the time since `since_ms` (hr__now_ms(): when the client opened). */
int hr__acker_wait_first(hr__acker *a, int timeout_ms, int64_t since_ms, hr_error *err);

/* Stops the thread, revokes the lease (the ack disappears at once) and
 * frees.  Waits for the request under way, if any, and for the revoke,
 * which is skipped while etcd fails (the lease then expires by itself).
 * Accepts NULL. */
void hr__acker_stop(hr__acker *a);

#endif
