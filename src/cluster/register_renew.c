/* SPDX-License-Identifier: MIT */
/* register_renew.c - a registrar's hold on its id: the renewal thread that
 * keeps the lease, registers again when it was lost, and repairs the record
 * (put back when deleted, attached again when detached, another's value
 * adopted), and the loss of the id to another process. */
#include "register_impl.h"

#include "clock.h"
#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Renewal after a failure first waits RETRY_MS, then twice as long each
 * time up to the renewal interval, but never so long that the lease could
 * expire before the next try (see renewal_failed). */
#define RETRY_MS 500
#define RETRY_MIN_MS 100
/* During an outage at most one failure line is logged this often. */
#define FAILURE_LOG_MS 5000

/* ---- holding the id --------------------------------------------------- */

int hr__registrar_held_by_other(hr_registrar *r, const hr__kv *kv, hr_error *err)
{
	int64_t ttl = 0;
	int rc;

	if (!kv->lease || kv->lease == r->lease)
		return 0;
	rc = hr__etcd_lease_ttl(r->etcd, kv->lease, &ttl, err);
	return rc ? rc : ttl > 0;
}

int hr__registrar_lose(hr_registrar *r, int64_t holder, hr_error *err)
{
	snprintf(r->lost_msg, sizeof r->lost_msg,
		 "another process took node \"%s\" over: its key is attached to lease "
		 LEASE_FMT ", not ours (" LEASE_FMT "); no longer renewing it",
		 r->id, LEASE_ARG(holder), LEASE_ARG(r->lease));
	__atomic_store_n(&r->held_lease, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->status, HR_EEXIST, __ATOMIC_RELEASE);
	hr__log_emit(&r->log, HR_LOG_ERROR, "registration_lost",
		     "id=%s lease=" LEASE_FMT " holder_lease=" LEASE_FMT " msg=%s", r->id,
		     LEASE_ARG(r->lease), LEASE_ARG(holder),
		     "another process took the id over; no longer renewing it");
	pthread_cond_broadcast(&r->cv);
	return hr__error_set(err, HR_EEXIST, "%s", r->lost_msg);
}

void hr__registrar_adopt(hr_registrar *r, const hr__kv *kv)
{
	char *v;

	if (kv->value_len == strlen(r->value) && !memcmp(kv->value, r->value, kv->value_len))
		return;
	v = strdup(kv->value);
	if (!v)
		return;
	free(r->value);
	r->value = v;
	hr__log_emit(&r->log, HR_LOG_INFO, "record_adopted",
		     "id=%s mod_revision=%" PRId64 " msg=%s", r->id, kv->mod_revision,
		     "record changed by someone else; keeping their value");
}

/* ---- the renewal thread --------------------------------------------------- */

/* Puts our record under a fresh lease after ours was lost; the key must be
 * absent or still ours.  Called with mu held. */
static int reregister(hr_registrar *r, hr_error *err)
{
	int64_t lease, ttl, t0 = hr__now_ms();
	hr__kv kv = { 0 };
	int found = 0, done, rc;

	rc = hr__etcd_lease_grant(r->etcd, (int)r->ttl, &lease, &ttl, err);
	if (rc)
		return rc;
	rc = hr__etcd_get(r->etcd, r->key, &kv, &found, err);
	if (!rc && found) {
		/* Someone else may have registered the id while our lease was gone. */
		rc = hr__registrar_held_by_other(r, &kv, err);
		if (rc == 1) {
			hr__etcd_lease_revoke(r->etcd, lease, NULL);
			rc = hr__registrar_lose(r, kv.lease, err);
			r->lease = 0; /* expired or revoked: nothing left to revoke */
			hr__kv_clear(&kv);
			return rc;
		}
		if (!rc)
			hr__registrar_adopt(r, &kv);
	}
	if (!rc)
		rc = hr__etcd_put_if(r->etcd, r->key, r->value, found ? kv.mod_revision : -1,
				     found ? kv.lease : -1, lease, 0, &done, err);
	hr__kv_clear(&kv);
	if (!rc && !done)
		rc = hr__error_set(err, HR_EETCD, "record changed during re-registration; retrying");
	if (rc) {
		hr__etcd_lease_revoke(r->etcd, lease, NULL);
		return rc;
	}
	r->lease = lease;
	__atomic_store_n(&r->held_lease, lease, __ATOMIC_RELEASE);
	r->ttl = ttl;
	r->expires_ms = t0 + ttl * 1000;
	return 0;
}

/* After a renewal: the record must exist and carry our lease, unless
 * another registrar took it over; any change someone else made to its
 * value becomes ours.  Every put is conditional on the key being as we
 * read it, so none can land on a key another registrar holds.  Called
 * with mu held. */
static void check_record(hr_registrar *r)
{
	hr_error err = { 0 };
	hr__kv kv;
	int found, done, rc;

	if (hr__etcd_get(r->etcd, r->key, &kv, &found, &err))
		return;
	if (!found) {
		/* Deleted by hand while we live: put it back if still absent
		 * (revoke the lease to deregister a node, do not delete its key). */
		if (!hr__etcd_put_if(r->etcd, r->key, r->value, -1, -1, r->lease, 0, &done, &err) &&
		    done)
			hr__log_emit(&r->log, HR_LOG_WARN, "record_restored",
				     "id=%s lease=" LEASE_FMT " msg=%s", r->id, LEASE_ARG(r->lease),
				     "key was deleted while the lease lives; put back");
		return;
	}
	rc = hr__registrar_held_by_other(r, &kv, &err);
	if (rc == 1) {
		hr__registrar_lose(r, kv.lease, NULL);
	} else if (rc == 0) {
		hr__registrar_adopt(r, &kv);
		/* A plain `etcdctl put` detaches the key from its lease; without
		 * it the node would outlive this process. */
		if (kv.lease != r->lease &&
		    !hr__etcd_put_if(r->etcd, r->key, r->value, kv.mod_revision, kv.lease, r->lease,
				     0, &done, &err) && done)
			hr__log_emit(&r->log, HR_LOG_INFO, "lease_reattached",
				     "id=%s lease=" LEASE_FMT " old_lease=" LEASE_FMT, r->id,
				     LEASE_ARG(r->lease), LEASE_ARG(kv.lease));
	}
	hr__kv_clear(&kv);
}

static void wait_ms(hr_registrar *r, int64_t ms)
{
	struct timespec ts;

	hr__deadline_in(&ts, ms);
	while (!r->stop && !hr__registrar_status_of(r) && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0)
		;
}

static int64_t renew_interval_ms(const hr_registrar *r)
{
	return r->ttl * 1000 / 3;
}

/*
 * A failed renewal: the first failure of a run is logged at once, then at
 * most one line every FAILURE_LOG_MS, counting the failures since the last
 * line.  Returns how long to wait before the next try: RETRY_MS doubling up
 * to the renewal interval, but while the lease still lives never past its
 * end less a margin for the request itself.  Called with mu held.
 */
static int64_t renewal_failed(hr_registrar *r, const char *event, int rc,
			      const hr_error *err)
{
	int64_t now = hr__now_ms(), interval = renew_interval_ms(r);
	int64_t margin = r->ttl * 1000 / 4 < 1000 ? r->ttl * 1000 / 4 : 1000;
	int64_t wait = RETRY_MS, left;

	if (!r->failures++)
		r->failing_since_ms = now;
	r->unlogged++;
	if (r->failures == 1 || now - r->logged_ms >= FAILURE_LOG_MS) {
		hr__log_emit(&r->log, HR_LOG_WARN, event,
			     "id=%s lease=" LEASE_FMT " failures=%d code=%d msg=%s", r->id,
			     LEASE_ARG(r->lease), r->unlogged, rc, err->message);
		r->unlogged = 0;
		r->logged_ms = now;
	}
	for (int i = 1; i < r->failures && wait < interval; i++)
		wait *= 2;
	if (wait > interval)
		wait = interval;
	left = r->expires_ms - margin - now;
	if (left > 0 && wait > left)
		wait = left;
	return wait < RETRY_MIN_MS ? RETRY_MIN_MS : wait;
}

/* A renewal worked: ends a run of failures.  Called with mu held. */
static void renewal_recovered(hr_registrar *r)
{
	if (!r->failures)
		return;
	hr__log_emit(&r->log, HR_LOG_INFO, "keepalive_recovered",
		     "id=%s lease=" LEASE_FMT " failures=%d failing_ms=%" PRId64, r->id,
		     LEASE_ARG(r->lease), r->failures, hr__now_ms() - r->failing_since_ms);
	r->failures = 0;
	r->unlogged = 0;
}

void *hr__registrar_renew_main(void *arg)
{
	hr_registrar *r = arg;
	int64_t wait = 0;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		hr_error err = { 0 };
		const char *event = "keepalive_failed";
		int64_t ttl = 0, sent, old = r->lease;
		int rc;

		wait_ms(r, wait ? wait : renew_interval_ms(r));
		if (r->stop || hr__registrar_status_of(r))
			break;
		sent = hr__now_ms();
		rc = hr__etcd_lease_keepalive(r->etcd, r->lease, &ttl, &err);
		if (!rc && ttl > 0) {
			r->expires_ms = sent + ttl * 1000;
		} else if (!rc) {
			event = "reregister_failed";
			rc = reregister(r, &err);
			if (rc == HR_EEXIST)
				break; /* lost, and logged */
		}
		if (rc) {
			wait = renewal_failed(r, event, rc, &err);
			continue;
		}
		wait = 0;
		renewal_recovered(r);
		if (ttl > 0)
			check_record(r);
		else
			hr__log_emit(&r->log, HR_LOG_WARN, "lease_lost",
				     "id=%s old_lease=" LEASE_FMT " lease=" LEASE_FMT " msg=%s",
				     r->id, LEASE_ARG(old), LEASE_ARG(r->lease),
				     "lease expired or revoked; registered again");
	}
	pthread_mutex_unlock(&r->mu);
	/* Every loss, whoever found it, ends the loop above: tell the owner
	 * once, with mu free so that the callback may call us. */
	if (hr__registrar_status_of(r) == HR_EEXIST && r->on_lost) {
		hr_error why = { 0 };

		hr__registrar_status_error(r, &why);
		r->on_lost(r->on_lost_userdata, r, &why);
	}
	return NULL;
}
