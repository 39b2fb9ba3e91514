/* SPDX-License-Identifier: MIT */
/* register.c - lease-backed self-registration of a node: the first grant,
 * the registrar's own record, the public calls and closing.  Renewal, loss
 * and repair are register_renew.c's; the in-place edit of a record is
 * update.c's. */
#include "backoff.h"
#include "client_config.h"
#include "clock.h"
#include "cluster_config.h"
#include "error.h"
#include "etcd.h"
#include "fork.h"
#include "log.h"
#include "record.h"
#include "register_impl.h"
#include "register_tokens.h"
#include "update.h"

#include <inttypes.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest wait between tries of the first lease (a client's default
 * backoff_max_ms). */
#define FIRST_GRANT_WAIT_MAX_MS 5000

/* The error of a call in a child of fork(), which neither renews nor owns
 * the parent's registration; else 0. */
static int forked(const hr_registrar *r, const char *call, hr_error *err)
{
	if (!hr__forked_since(r->pid))
		return 0;
	return hr__forked_error(err, call, "the registrar was opened",
				"only that process renews or removes its node", r->pid);
}

/* ---- records -------------------------------------------------------------- */

/* The JSON record of a registration. */
static char *record_json(const hr_registration *reg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o && cJSON_AddStringToObject(o, "addr", reg->addr) &&
	    cJSON_AddNumberToObject(o, "weight", reg->weight) &&
	    cJSON_AddStringToObject(o, "zone", reg->zone ? reg->zone : "") &&
	    cJSON_AddStringToObject(o, "state", hr_state_name(reg->state)))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* ---- public API -------------------------------------------------------- */

static void registrar_free(hr_registrar *r)
{
	hr__etcd_free(r->etcd);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->key);
	free(r->id);
	free(r->value);
	free(r);
	curl_global_cleanup();
}

/* Takes the id over from whoever holds it, if the key is still as read. */
static int take_over(hr_registrar *r, hr_error *err)
{
	hr__kv kv = { 0 };
	int found = 0, done = 0;
	int rc = hr__etcd_get(r->etcd, r->key, &kv, &found, err);

	if (!rc && found)
		rc = hr__etcd_put_if(r->etcd, r->key, r->value, kv.mod_revision, kv.lease, r->lease,
				     0, &done, err);
	if (!rc && done)
		hr__log_emit(&r->log, HR_LOG_WARN, "replaced",
			     "id=%s old_lease=" LEASE_FMT " lease=" LEASE_FMT, r->id,
			     LEASE_ARG(kv.lease), LEASE_ARG(r->lease));
	else if (!rc)
		rc = hr__error_set(err, HR_EEXIST, "node \"%s\" changed while being replaced; try again",
				   r->id);
	hr__kv_clear(&kv);
	return rc;
}

/* Why the id cannot be ours: someone holds it. */
static int already_registered(hr_registrar *r, hr_error *err)
{
	hr__kv kv = { 0 };
	int found = 0;
	char held[64];
	int rc = hr__etcd_get(r->etcd, r->key, &kv, &found, err);

	if (rc)
		return rc;
	if (!found)
		return hr__error_set(err, HR_EEXIST,
				     "node \"%s\" changed while being registered; try again", r->id);
	if (kv.lease)
		snprintf(held, sizeof held, "lease " LEASE_FMT, LEASE_ARG(kv.lease));
	else
		snprintf(held, sizeof held, "no lease: a static record");
	hr__kv_clear(&kv);
	return hr__error_set(err, HR_EEXIST,
			     "node \"%s\" is already registered at %s (%s); stop that process,"
			     " or take the id over with replace (hashring register --replace)",
			     r->id, r->key, held);
}

/* The first put of a registration with tokens (register_tokens.c): the
 * record written, or the one to take over with, becomes r->value. */
static int put_with_tokens(hr_registrar *r, const char *prefix, const hr_node *node,
			   const hr_ring_options *opts, size_t per_weight, int *done,
			   hr_error *err)
{
	double x = round(node->weight * (double)per_weight);
	hr__tokens_join join;
	char *value = NULL;
	int attempts, rc;

	if (opts->placement != HR_PLACEMENT_TOKENS)
		return hr__error_set(err, HR_EINVAL,
				     "hr_registration: tokens need the ring placement HR_PLACEMENT_TOKENS");
	if (!(x <= HR_TOKENS_MAX))
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": weight %g x %zu tokens exceed the limit of %d",
				     node->id, node->weight, per_weight, HR_TOKENS_MAX);
	join = (hr__tokens_join){ .etcd = r->etcd, .prefix = prefix, .key = r->key,
				  .node = node, .ntokens = x < 1 ? 1 : (size_t)x, .opts = opts,
				  .lease = r->lease, .lease_ttl_s = r->ttl,
				  .renewed_ms = r->expires_ms - r->ttl * 1000 };
	rc = hr__register_tokens(&join, &value, done, &attempts, err);
	r->expires_ms = join.renewed_ms + r->ttl * 1000;
	if (rc)
		return rc;
	free(r->value);
	r->value = value;
	if (attempts > 1)
		hr__log_emit(&r->log, HR_LOG_INFO, "tokens_reallocated",
			     "id=%s attempts=%d", node->id, attempts);
	return HR_OK;
}

/* The first lease, tried again while etcd cannot be reached: a service
 * and its etcd often start together.  *t0: when the granted try began. */
static int first_grant(hr_registrar *r, const hr_registration *reg, int64_t *granted,
		       int64_t *t0, hr_error *err)
{
	/* In microseconds: in milliseconds the truncation of the start
	 * could end the tries up to 1 ms before open_timeout_ms. */
	int64_t start = hr__now_us(), wait = reg->backoff_initial_ms;
	hr_error why = { 0 };
	int attempts = 0, rc;

	for (;;) {
		int64_t left;

		*t0 = hr__now_ms();
		attempts++;
		memset(&why, 0, sizeof why);
		rc = hr__etcd_lease_grant(r->etcd, reg->ttl_s, &r->lease, granted, &why);
		left = (start + reg->open_timeout_ms * 1000 - hr__now_us() + 999) / 1000;
		if ((rc != HR_ECONNECT && rc != HR_ETIMEDOUT) || left <= 0)
			break;
		if (wait > left)
			wait = left;
		hr__log_emit(&r->log, HR_LOG_WARN, "etcd_retry",
			     "id=%s attempt=%d wait_ms=%" PRId64 " code=%d msg=%s", r->id, attempts,
			     wait, rc, why.message);
		hr__sleep_ms(wait);
		wait = wait * 2 > FIRST_GRANT_WAIT_MAX_MS ? FIRST_GRANT_WAIT_MAX_MS : wait * 2;
	}
	if (!rc)
		return 0;
	if (attempts == 1)
		return hr__error_set(err, rc, "%s", why.message);
	return hr__error_set(err, rc, "etcd unreachable for %" PRId64 " ms (%d attempts): %.200s",
			     (hr__now_us() - start) / 1000, attempts, why.message);
}

int hr_registrar_open(const hr_etcd_config *etcd, const hr_registration *in,
		      hr_registrar **out, hr_error *err)
{
	hr_registration reg;
	hr_registrar *r;
	hr__conn conn;
	hr_node node;
	int64_t granted, t0;
	int rc, done = 0;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "out must not be NULL");
	*out = NULL;
	rc = hr__conn_read(etcd, &conn, err);
	if (!rc)
		rc = hr__registration_read(in, &reg, err);
	if (rc)
		return rc;
	node = (hr_node){ .id = reg.id, .addr = reg.addr, .zone = reg.zone ? reg.zone : "",
			  .weight = reg.weight, .state = reg.state };
	rc = hr_node_check(&node, &conn.ring, err);
	if (rc)
		return rc;

	/* Thread safe since libcurl 7.84 and reference counted. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	r = calloc(1, sizeof *r);
	if (!r) {
		curl_global_cleanup();
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&r->mu, NULL);
	hr__cond_init_monotonic(&r->cv);
	r->pid = hr__process();
	r->log = conn.log;
	r->ring = conn.ring;
	r->on_lost = reg.on_lost;
	r->on_lost_userdata = reg.on_lost_userdata;
	r->key = hr__record_key(conn.prefix, reg.id);
	r->id = strdup(reg.id);
	r->value = record_json(&reg);
	if (!r->key || !r->id || !r->value) {
		registrar_free(r);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_new(&conn.etcd, &r->etcd, err);
	if (!rc)
		rc = first_grant(r, &reg, &granted, &t0, err);
	if (rc) {
		registrar_free(r);
		return rc;
	}
	r->ttl = granted;
	r->expires_ms = t0 + granted * 1000;
	/* Create only if absent: two processes must not share an id. */
	if (reg.tokens)
		rc = put_with_tokens(r, conn.prefix, &node, &conn.ring, reg.tokens, &done, err);
	else
		rc = hr__etcd_put_if(r->etcd, r->key, r->value, -1, -1, r->lease, 0, &done,
				     err);
	if (!rc && !done)
		rc = reg.replace ? take_over(r, err) : already_registered(r, err);
	if (rc) {
		hr__etcd_lease_revoke(r->etcd, r->lease, NULL);
		registrar_free(r);
		return rc;
	}
	r->held_lease = r->lease;
	hr__log_emit(&r->log, HR_LOG_INFO, "registered",
		     "id=%s lease=" LEASE_FMT " ttl=%" PRId64 " state=%s endpoint=%s", r->id,
		     LEASE_ARG(r->lease), r->ttl, hr_state_name(reg.state),
		     hr__etcd_endpoint(r->etcd));

	{
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&r->thread, NULL, hr__registrar_renew_main, r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (rc) {
		hr__etcd_lease_revoke(r->etcd, r->lease, NULL);
		registrar_free(r);
		return hr__error_set(err, HR_ENOMEM, "cannot start the renewal thread");
	}
	r->started = 1;
	*out = r;
	return 0;
}

/* A registrar edits its record only while the key is its own or
 * detached; a key another registrar holds is a loss.  Called with mu
 * held. */
static int claim_key(void *userdata, const hr__kv *kv, hr_error *err)
{
	hr_registrar *r = userdata;
	int rc = hr__registrar_held_by_other(r, kv, err);

	return rc == 1 ? hr__registrar_lose(r, kv->lease, err) : rc;
}

/* A hand-over's wait between attempts, mu held: the renewal thread
 * waits for mu, so the lease is renewed here when due, as a join's is. */
static int wait_renewing(void *userdata, int64_t ms, hr_error *err)
{
	hr_registrar *r = userdata;
	hr__tokens_join j = { .etcd = r->etcd, .lease = r->lease, .lease_ttl_s = r->ttl,
			      .renewed_ms = r->expires_ms - r->ttl * 1000 };
	int rc = hr__tokens_wait(&j, ms, err);

	r->expires_ms = j.renewed_ms + r->ttl * 1000;
	return rc;
}

int hr_registrar_update(hr_registrar *r, const hr_record_update *upd,
			hr_error *err)
{
	hr_record_update u;
	char *value = NULL;
	int rc;

	if (!r)
		return hr__error_set(err, HR_EINVAL, "registrar must not be NULL");
	rc = hr__record_update_read(upd, &u, err);
	if (!rc)
		rc = forked(r, "hr_registrar_update", err);
	if (rc)
		return rc;
	pthread_mutex_lock(&r->mu);
	rc = hr__registrar_status_error(r, err);
	if (!rc) {
		/* The put attaches our lease, should the key have lost it. */
		hr__record_writer w = { r->lease, claim_key, r, &r->log, 0, wait_renewing };

		rc = hr__record_update(r->etcd, r->key, r->id, &r->ring, &u, &w, &value, err);
	}
	if (!rc) {
		free(r->value);
		r->value = value;
	}
	pthread_mutex_unlock(&r->mu);
	if (rc)
		return rc;
	if (u.fields == (HR_UPDATE_STATE | HR_UPDATE_HEIRS))
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated",
			     "id=%s state=%s heirs=yes msg=%s", r->id, hr_state_name(u.state),
			     "tokens handed to heirs");
	else if (u.fields == HR_UPDATE_STATE)
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated", "id=%s state=%s", r->id,
			     hr_state_name(u.state));
	else if (u.fields == HR_UPDATE_WEIGHT)
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated", "id=%s weight=%g", r->id,
			     u.weight);
	else
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated", "id=%s state=%s weight=%g",
			     r->id, hr_state_name(u.state), u.weight);
	return 0;
}

int64_t hr_registrar_lease(hr_registrar *r)
{
	if (!r || hr__forked_since(r->pid))
		return 0;
	return __atomic_load_n(&r->held_lease, __ATOMIC_ACQUIRE);
}

int hr_registrar_status(hr_registrar *r, hr_error *err)
{
	int rc;

	if (!r)
		return hr__error_set(err, HR_EINVAL, "registrar must not be NULL");
	rc = forked(r, "hr_registrar_status", err);
	return rc ? rc : hr__registrar_status_error(r, err);
}

int hr_registrar_deregister(hr_registrar *r, hr_error *err)
{
	int rc = 0;

	if (!r)
		return hr__error_set(err, HR_EINVAL, "registrar must not be NULL");
	/* The lease is the parent's: revoking it would remove the node of
	 * a process that still serves. */
	rc = forked(r, "hr_registrar_deregister", err);
	if (rc)
		return rc;
	pthread_mutex_lock(&r->mu);
	if (r->lease) {
		/* Deletes only the keys attached to our lease: after a loss the
		 * record is attached to its new holder's and stays. */
		rc = hr__etcd_lease_revoke(r->etcd, r->lease, err);
		if (rc == HR_ENOTFOUND)
			rc = 0; /* already gone: the record is too */
		if (!rc) {
			hr__log_emit(&r->log, HR_LOG_INFO, "deregistered", "id=%s lease=" LEASE_FMT,
				     r->id, LEASE_ARG(r->lease));
			r->lease = 0;
		}
	}
	if (!rc && !hr__registrar_status_of(r)) {
		__atomic_store_n(&r->held_lease, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&r->status, HR_ECLOSED, __ATOMIC_RELEASE);
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/*
 * hr_registrar_close() in a child of fork(): the node stays the parent's,
 * registered and renewed there.  The renewal thread stayed in the parent
 * and holds `mu` through its requests, so nothing here waits for it or
 * joins; the etcd connection and libcurl's reference are left as they are
 * (a leak by design: closing the connection could speak on the parent's
 * socket, a TLS close).  The record goes if `mu` was free at the fork (it
 * was not being replaced), and the strings no thread writes.
 */
static void close_in_child(hr_registrar *r)
{
	if (pthread_mutex_trylock(&r->mu) == 0) {
		free(r->value);
		pthread_mutex_unlock(&r->mu);
	}
	free(r->key);
	free(r->id);
	free(r);
}

void hr_registrar_close(hr_registrar *r)
{
	hr_error err = { 0 };

	if (!r)
		return;
	if (hr__forked_since(r->pid)) {
		close_in_child(r);
		return;
	}
	if (hr_registrar_deregister(r, &err))
		hr__log_emit(&r->log, HR_LOG_WARN, "deregister_failed",
			     "id=%s msg=%s note=%s", r->id, err.message,
			     "the record expires with its lease");
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started)
		pthread_join(r->thread, NULL);
	registrar_free(r);
}
