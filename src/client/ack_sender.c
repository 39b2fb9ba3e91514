/* SPDX-License-Identifier: MIT */
/* ack_sender.c - the announcing side of acknowledged epochs: a client's ack
 * thread, its lease and the coalescing of acks (ack_sender.h; docs/handoff.md). */
#include "ack_sender.h"

#include "ack_record.h"
#include "clock.h"
#include "error.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A burst is over once no ring came for this long: its last ring is
 * announced then (or ack_interval_ms after its first, if it goes on). */
#define QUIET_MS 25
/* After a failed put or renewal: RETRY_MS, doubling up to RETRY_MAX_MS. */
#define RETRY_MS 500
#define RETRY_MAX_MS 5000
/* During an outage at most one failure line this often. */
#define FAILURE_LOG_MS 5000
/* Longest sleep with nothing to do. */
#define IDLE_MS 60000

#define LEASE_FMT "%016" PRIx64
#define LEASE_ARG(id) ((uint64_t)(id))

struct hr__acker {
	const hr__log *log;
	hr__etcd *etcd;
	char *key;
	char *id;
	int ttl_s;
	int interval_ms;
	pthread_t thread;
	int started;

	/* Shared with the watcher and the closer, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int have;                 /* rev and digest hold the newest ring */
	uint64_t rev, digest;
	int pending;              /* the newest ring is not announced yet */
	int64_t pending_since_ms; /* when the first unannounced ring came */
	int64_t noted_ms;         /* when the newest ring came */
	int64_t retry_ms;         /* no put before this (after a failure) */
	pthread_cond_t first_cv;  /* the first ack is written, or cannot be */
	int first_done;
	int first_fatal;          /* an error retrying will not cure */
	hr_error first_err;       /* the last failure before the first ack */

	/* The thread's own. */
	int64_t lease;            /* 0: none granted, or lost */
	int64_t keepalive_ms;     /* when to renew it */
	uint64_t acked_rev, acked_digest;
	int acked;                /* the key holds acked_* under our lease */
	int64_t last_put_ms;      /* when the last put was sent */
	/* Failed requests since the ack was last known in etcd under our
	 * lease: a renewal of a lease that holds no ack (the id is taken)
	 * does not end the run. */
	int failures;
	int64_t logged_ms;
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t retry_delay(const hr__acker *a)
{
	int64_t d = RETRY_MS;

	for (int i = 1; i < a->failures && d < RETRY_MAX_MS; i++)
		d *= 2;
	return d < RETRY_MAX_MS ? d : RETRY_MAX_MS;
}

/* A failed request: the first of a run is logged at once, then at most
 * one line every FAILURE_LOG_MS, each with the run's count so far. */
static void failed(hr__acker *a, const char *event, hr_log_level level,
		   const hr_error *err)
{
	int64_t now = hr__now_ms();

	if (!a->first_done) {
		a->first_err = *err;
		if (err->code == HR_EPERM || err->code == HR_EAUTH || err->code == HR_ETLS ||
		    err->code == HR_EEXIST)
			a->first_fatal = err->code;
		pthread_cond_broadcast(&a->first_cv);
	}
	a->failures++;
	if (a->failures > 1 && now - a->logged_ms < FAILURE_LOG_MS)
		return;
	hr__log_emit(a->log, level, event, "client=%s key=%s failures=%d code=%d msg=%s",
		     a->id, a->key, a->failures, err->code, err->message);
	a->logged_ms = now;
}

/* Our ack is in etcd under our lease again (acked): the run is over. */
static void recovered(hr__acker *a)
{
	if (!a->failures || !a->acked)
		return;
	hr__log_emit(a->log, HR_LOG_INFO, "ack_recovered", "client=%s failures=%d", a->id,
		     a->failures);
	a->failures = 0;
}

/*
 * Puts the ack of (rev, digest) under our lease, granting one first if
 * needed.  The put is conditional on the key being as just read, and is
 * not made when another live lease holds the key (another client with our
 * id): HR_EEXIST then.
 */
static int announce(hr__acker *a, uint64_t rev, uint64_t digest, hr_error *err)
{
	hr__kv kv = { 0 };
	int64_t ttl = 0;
	int found = 0, done = 0, rc;
	char *value;

	if (a->acked && a->acked_rev == rev && a->acked_digest == digest)
		return 0;
	if (!a->lease) {
		int64_t t0 = hr__now_ms();

		rc = hr__etcd_lease_grant(a->etcd, a->ttl_s, &a->lease, &ttl, err);
		if (rc) {
			a->lease = 0;
			return rc;
		}
		a->keepalive_ms = t0 + ttl * 1000 / 3;
		a->acked = 0;
	}
	rc = hr__etcd_get(a->etcd, a->key, &kv, &found, err);
	if (!rc && found && kv.lease && kv.lease != a->lease) {
		rc = hr__etcd_lease_ttl(a->etcd, kv.lease, &ttl, err);
		if (!rc && ttl > 0)
			rc = hr__error_set(err, HR_EEXIST,
					   "%s is held by lease " LEASE_FMT ", not ours (" LEASE_FMT
					   "): another client uses the id \"%s\"; not overwriting it",
					   a->key, LEASE_ARG(kv.lease), LEASE_ARG(a->lease), a->id);
	}
	value = rc ? NULL : hr__ack_record_write(a->id, rev, digest, wall_ms());
	if (!rc && !value)
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	if (!rc)
		rc = hr__etcd_put_if(a->etcd, a->key, value, found ? kv.mod_revision : -1,
				     found ? kv.lease : -1, a->lease, 0, &done, err);
	if (!rc && !done)
		rc = hr__error_set(err, HR_EETCD, "%s changed while being written; retrying",
				   a->key);
	free(value);
	hr__kv_clear(&kv);
	if (rc)
		return rc;
	a->acked = 1;
	a->acked_rev = rev;
	a->acked_digest = digest;
	hr__log_emit(a->log, HR_LOG_DEBUG, "acked",
		     "client=%s revision=%" PRIu64 " digest=%016" PRIx64 " lease=" LEASE_FMT,
		     a->id, rev, digest, LEASE_ARG(a->lease));
	return 0;
}

/* Renews the lease; a lease that is gone is granted again with the next
 * ack, which is due at once.  Called with mu held, which it drops for the
 * request. */
static void renew(hr__acker *a)
{
	hr_error err = { 0 };
	int64_t ttl = 0, sent = hr__now_ms(), old = a->lease;
	int rc;

	pthread_mutex_unlock(&a->mu);
	rc = hr__etcd_lease_keepalive(a->etcd, a->lease, &ttl, &err);
	pthread_mutex_lock(&a->mu);
	if (rc) {
		failed(a, "ack_keepalive_failed", HR_LOG_WARN, &err);
		a->keepalive_ms = sent + retry_delay(a);
		return;
	}
	recovered(a);
	if (ttl > 0) {
		a->keepalive_ms = sent + ttl * 1000 / 3;
		return;
	}
	hr__log_emit(a->log, HR_LOG_WARN, "ack_lease_lost",
		     "client=%s lease=" LEASE_FMT " msg=%s", a->id, LEASE_ARG(old),
		     "lease expired or revoked; acknowledging again under a new one");
	a->lease = 0;
	a->acked = 0;
	if (a->have && !a->pending) {
		a->pending = 1;
		a->pending_since_ms = a->noted_ms = sent;
	}
}

/* When the pending ack is due: the end of a burst (QUIET_MS without a new
 * ring) or ack_interval_ms after its first ring, whichever is first, but
 * never within ack_interval_ms of the last put nor before a retry is due. */
static int64_t put_due(const hr__acker *a)
{
	int64_t t = a->noted_ms + QUIET_MS, cap = a->pending_since_ms + a->interval_ms;

	if (t > cap)
		t = cap;
	if (a->last_put_ms && t < a->last_put_ms + a->interval_ms)
		t = a->last_put_ms + a->interval_ms;
	return t > a->retry_ms ? t : a->retry_ms;
}

static void *ack_main(void *arg)
{
	hr__acker *a = arg;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		int64_t now = hr__now_ms(), due = now + IDLE_MS;
		struct timespec ts;

		if (a->pending) {
			int64_t t = put_due(a);

			if (now >= t) {
				uint64_t rev = a->rev, digest = a->digest;
				hr_error err = { 0 };
				int rc;

				a->pending = 0;
				a->last_put_ms = now;
				pthread_mutex_unlock(&a->mu);
				rc = announce(a, rev, digest, &err);
				pthread_mutex_lock(&a->mu);
				if (rc) {
					failed(a, rc == HR_EEXIST ? "ack_id_taken" : "ack_failed",
					       rc == HR_EEXIST ? HR_LOG_ERROR : HR_LOG_WARN, &err);
					a->retry_ms = hr__now_ms() + retry_delay(a);
					if (!a->pending) {
						a->pending = 1;
						a->pending_since_ms = a->noted_ms = now;
					}
				} else {
					recovered(a);
					a->first_done = 1;
					pthread_cond_broadcast(&a->first_cv);
				}
				continue;
			}
			due = t;
		}
		if (a->lease) {
			if (now >= a->keepalive_ms) {
				renew(a);
				continue;
			}
			if (a->keepalive_ms < due)
				due = a->keepalive_ms;
		}
		hr__deadline_in(&ts, due - now);
		pthread_cond_timedwait(&a->cv, &a->mu, &ts);
	}
	pthread_mutex_unlock(&a->mu);
	/* Our ack disappears with the lease; while etcd fails, closing does
	 * not wait for it: the lease expires by itself. */
	if (a->lease && !a->failures) {
		hr_error err = { 0 };

		if (hr__etcd_lease_revoke(a->etcd, a->lease, &err) && err.code != HR_ENOTFOUND)
			hr__log_emit(a->log, HR_LOG_WARN, "ack_revoke_failed",
				     "client=%s lease=" LEASE_FMT " msg=%s note=%s", a->id,
				     LEASE_ARG(a->lease), err.message,
				     "the ack expires with its lease");
	}
	return NULL;
}

void hr__acker_note(hr__acker *a, uint64_t revision, uint64_t digest)
{
	int64_t now;

	if (!a)
		return;
	now = hr__now_ms();
	pthread_mutex_lock(&a->mu);
	if (!a->have || a->rev != revision || a->digest != digest) {
		a->have = 1;
		a->rev = revision;
		a->digest = digest;
		if (!a->pending) {
			a->pending = 1;
			a->pending_since_ms = now;
		}
		a->noted_ms = now;
		pthread_cond_signal(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
}

int hr__acker_wait_first(hr__acker *a, int timeout_ms, int64_t since_ms, hr_error *err)
{
	struct timespec ts;
	long long waited;
	int rc = 0;

	hr__deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&a->mu);
	while (!a->first_done && !a->first_fatal && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&a->first_cv, &a->mu, &ts);
	waited = (long long)(hr__now_ms() - since_ms);
	if (a->first_done)
		rc = 0;
	else if (a->first_fatal)
		rc = hr__error_copy(err, &a->first_err);
	else if (a->first_err.code)
		rc = hr__error_set(err, HR_ETIMEDOUT, "no ack written at %s after %lld ms: %s",
				   a->key, waited, a->first_err.message);
	else
		rc = hr__error_set(err, HR_ETIMEDOUT, "no ack written at %s after %lld ms", a->key,
				   waited);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static void acker_free(hr__acker *a)
{
	hr__etcd_free(a->etcd);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	pthread_cond_destroy(&a->first_cv);
	free(a->key);
	free(a->id);
	free(a);
}

int hr__acker_start(const hr__acker_opts *o, hr__acker **out, hr_error *err)
{
	hr__acker *a = calloc(1, sizeof *a);
	hr__etcd_opts eo = o->etcd;
	size_t plen = strlen(o->ack_prefix), ilen = strlen(o->client_id);
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!a)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	pthread_mutex_init(&a->mu, NULL);
	hr__cond_init_monotonic(&a->cv);
	hr__cond_init_monotonic(&a->first_cv);
	a->log = o->log;
	a->ttl_s = o->ttl_s;
	a->interval_ms = o->interval_ms;
	a->key = malloc(plen + ilen + 1);
	a->id = strdup(o->client_id);
	if (!a->key || !a->id) {
		acker_free(a);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	memcpy(a->key, o->ack_prefix, plen);
	memcpy(a->key + plen, o->client_id, ilen + 1);
	/* Closing waits for the revoke rather than abort it. */
	eo.stop_flag = NULL;
	eo.tick = NULL;
	rc = hr__etcd_new(&eo, &a->etcd, err);
	if (rc) {
		acker_free(a);
		return rc;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&a->thread, NULL, ack_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		acker_free(a);
		return hr__error_set(err, HR_ENOMEM, "cannot start the ack thread: %s",
				     strerror(rc));
	}
	a->started = 1;
	*out = a;
	return 0;
}

void hr__acker_stop(hr__acker *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (a->started)
		pthread_join(a->thread, NULL);
	acker_free(a);
}
