/* SPDX-License-Identifier: MIT */
/*
 * register_impl.h - the registrar inside the cluster layer: its struct,
 * shared by register.c (opening, the public calls, closing) and
 * register_renew.c (holding the id, and the renewal thread that keeps the
 * lease and repairs the record).
 */
#ifndef HR_REGISTER_IMPL_H
#define HR_REGISTER_IMPL_H

#include "hashring/registrar.h"
#include "error.h"
#include "etcd.h"
#include "log.h"

#include <inttypes.h>
#include <pthread.h>
#include <sys/types.h>

/* Lease ids as etcdctl prints and reads them: 16 lowercase hex digits. */
#define LEASE_FMT "%016" PRIx64
#define LEASE_ARG(id) ((uint64_t)(id))

struct hr_registrar {
	hr__log log;
	hr__etcd *etcd;           /* used under mu only */
	hr_ring_options ring;     /* the clients': records are checked with them */
	hr_registrar_lost_fn on_lost;
	void *on_lost_userdata;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started;
	int stop;                 /* under mu */
	/* 0 while we hold the id, then for good HR_EEXIST (another process
	 * took it over) or HR_ECLOSED (deregistered).  Written under mu, read
	 * with atomics from any thread; lost_msg is written once, before
	 * status turns HR_EEXIST. */
	int status;
	char lost_msg[HR_ERROR_MSG_MAX];

	char *key;
	char *id;
	char *value;              /* under mu: the record as we last wrote or adopted it */
	int64_t lease;            /* under mu: our lease, 0 once revoked or gone */
	int64_t held_lease;       /* atomic: the lease our record is attached to, 0 unless we hold the id */
	int64_t ttl;              /* granted */
	int64_t expires_ms;       /* under mu: when our lease runs out at the latest */

	/* The renewal thread's current run of failures. */
	int failures;             /* in a row */
	int unlogged;             /* since the last failure line */
	int64_t logged_ms;        /* when that line was logged */
	int64_t failing_since_ms;

	pid_t pid;                /* the process that opened it (fork.h) */
};

static inline int hr__registrar_status_of(hr_registrar *r)
{
	return __atomic_load_n(&r->status, __ATOMIC_ACQUIRE);
}

/* The error a registrar that no longer holds its id gives, or 0. */
static inline int hr__registrar_status_error(hr_registrar *r, hr_error *err)
{
	int status = hr__registrar_status_of(r);

	if (status == HR_EEXIST)
		return hr__error_set(err, HR_EEXIST, "%s", r->lost_msg);
	if (status)
		return hr__error_set(err, status, "node \"%s\" is no longer registered", r->id);
	return 0;
}

/*
 * Whether key `kv` is another registrar's: attached to a live lease that
 * is not ours.  A key with no lease (a plain `etcdctl put` detaches it) or
 * with a lease that is gone is still ours to attach again.  1 or 0, or an
 * error code.  Called with mu held.
 */
int hr__registrar_held_by_other(hr_registrar *r, const hr__kv *kv, hr_error *err);

/*
 * The id was taken over: its key is attached to `holder`, another live
 * lease (`hashring register --replace`, or an operator's put with another
 * lease).  From now on we never write the key again and stop renewing;
 * our own lease is left to deregistration (or expiry), whose revoke cannot
 * touch a key attached to another lease.  Returns HR_EEXIST.  Called with
 * mu held.
 */
int hr__registrar_lose(hr_registrar *r, int64_t holder, hr_error *err);

/* Someone else's change to our record's value becomes ours.  Called with
 * mu held. */
void hr__registrar_adopt(hr_registrar *r, const hr__kv *kv);

/* The renewal thread's body (pthread_create's), started by
 * hr_registrar_open(); it ends on stop or on the id's loss, and tells
 * on_lost of a loss once. */
void *hr__registrar_renew_main(void *arg);

#endif
