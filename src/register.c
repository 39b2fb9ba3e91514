/* register.c - lease-backed self-registration of a node, and in-place
 * changes of a registered node's state or weight. */
#include "error.h"
#include "etcd.h"
#include "log.h"
#include "member.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Renewal never waits longer than this after a failure, so a lease
 * survives an etcd outage shorter than its TTL. */
#define RETRY_MS 500

struct hr_registrar {
	hr__log log;
	hr__etcd *etcd;           /* used under mu only */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int started;
	int stop;                 /* under mu */
	int registered;           /* under mu: 0 after deregistration */

	char *key;
	char *id;
	char *value;              /* the record as we last wrote or adopted it */
	int64_t lease;            /* atomic reads from any thread */
	int64_t ttl;              /* granted */
};

void hr_registration_init(hr_registration *reg)
{
	if (!reg)
		return;
	memset(reg, 0, sizeof *reg);
	reg->weight = 1;
	reg->state = HR_STATE_WARMING;
	reg->ttl_s = 10;
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

/*
 * `value` with its "state" (when `state` >= 0) or "weight" (when `weight`
 * > 0) replaced, every other field kept.  A bare address becomes an object.
 * NULL with `err` set if the value is not a record.
 */
static char *record_modify(const char *id, const char *value, size_t len,
			   int state, double weight, hr_error *err)
{
	hr__record rec;
	cJSON *o;
	char *s = NULL;
	size_t i = 0;

	if (hr__record_parse(id, strlen(id), value, len, &rec, err))
		return NULL;
	while (i < len && (value[i] == ' ' || value[i] == '\t' || value[i] == '\r' ||
			   value[i] == '\n'))
		i++;
	if (i < len && value[i] == '{') {
		o = cJSON_ParseWithLength(value, len);
	} else {
		o = cJSON_CreateObject();
		if (o && !cJSON_AddStringToObject(o, "addr", rec.addr)) {
			cJSON_Delete(o);
			o = NULL;
		}
	}
	hr__record_clear(&rec);
	if (o && state >= 0) {
		cJSON *v = cJSON_CreateString(hr_state_name((hr_state)state));
		if (!v || (cJSON_GetObjectItemCaseSensitive(o, "state") ?
			   !cJSON_ReplaceItemInObjectCaseSensitive(o, "state", v) :
			   !cJSON_AddItemToObject(o, "state", v))) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			o = NULL;
		}
	}
	if (o && weight > 0) {
		cJSON *v = cJSON_CreateNumber(weight);
		if (!v || (cJSON_GetObjectItemCaseSensitive(o, "weight") ?
			   !cJSON_ReplaceItemInObjectCaseSensitive(o, "weight", v) :
			   !cJSON_AddItemToObject(o, "weight", v))) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			o = NULL;
		}
	}
	if (o)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		hr__error_set(err, HR_ENOMEM, "out of memory");
	return s;
}

static char *make_key(const char *prefix, const char *id)
{
	size_t n = strlen(prefix) + strlen(id) + 1;
	char *key = malloc(n);

	if (key)
		snprintf(key, n, "%s%s", prefix, id);
	return key;
}

static hr__etcd_opts etcd_opts(const hr_config *cfg)
{
	hr__etcd_opts o = {
		.endpoints = cfg->endpoints,
		.api_base = cfg->api_base,
		.request_timeout_ms = cfg->request_timeout_ms,
		.connect_timeout_ms = cfg->connect_timeout_ms,
		.ca_file = cfg->ca_file,
		.cert_file = cfg->cert_file,
		.key_file = cfg->key_file,
		.insecure_skip_verify = cfg->insecure_skip_verify,
		.username = cfg->username,
		.password = cfg->password,
	};
	return o;
}

static int check_cfg(const hr_config *cfg, hr_error *err)
{
	if (!cfg)
		return hr__error_set(err, HR_EINVAL, "config must not be NULL");
	if (!cfg->prefix || !cfg->prefix[0])
		return hr__error_set(err, HR_EINVAL, "config: prefix must be set and not empty");
	return 0;
}

/* ---- the renewal thread --------------------------------------------------- */

/* Puts our record under a fresh lease; the key must be absent or still
 * ours.  Called with mu held. */
static int reregister(hr_registrar *r, hr_error *err)
{
	int64_t lease, ttl;
	hr__kv kv;
	int found, done, rc;

	rc = hr__etcd_lease_grant(r->etcd, (int)r->ttl, &lease, &ttl, err);
	if (rc)
		return rc;
	rc = hr__etcd_get(r->etcd, r->key, &kv, &found, err);
	if (!rc && found && kv.lease) {
		/* Someone else registered the id while our lease was gone. */
		int64_t ttl_left = 0;
		if (hr__etcd_lease_keepalive(r->etcd, kv.lease, &ttl_left, NULL) == 0 &&
		    ttl_left > 0 && kv.lease != __atomic_load_n(&r->lease, __ATOMIC_RELAXED)) {
			hr__kv_clear(&kv);
			hr__etcd_lease_revoke(r->etcd, lease, NULL);
			return hr__error_set(err, HR_EEXIST,
					     "node \"%s\" was registered by another process while our lease was lost",
					     r->id);
		}
	}
	if (!rc)
		rc = hr__etcd_put_if(r->etcd, r->key, r->value, found ? kv.mod_revision : -1,
				     lease, 0, &done, err);
	hr__kv_clear(&kv);
	if (!rc && !done)
		rc = hr__error_set(err, HR_EETCD, "record changed during re-registration; retrying");
	if (rc) {
		hr__etcd_lease_revoke(r->etcd, lease, NULL);
		return rc;
	}
	__atomic_store_n(&r->lease, lease, __ATOMIC_RELEASE);
	r->ttl = ttl;
	return 0;
}

/* After a renewal: the record must exist, carry our lease, and any change
 * someone else made to its value becomes ours.  Called with mu held. */
static void check_record(hr_registrar *r)
{
	int64_t lease = __atomic_load_n(&r->lease, __ATOMIC_RELAXED);
	hr_error err = { 0 };
	hr__kv kv;
	int found, done;

	if (hr__etcd_get(r->etcd, r->key, &kv, &found, &err))
		return;
	if (!found) {
		/* Deleted by hand while we live: put it back (revoke the lease
		 * to deregister a node, do not delete its key). */
		if (!hr__etcd_put_if(r->etcd, r->key, r->value, -1, lease, 0, &done, &err) && done)
			hr__log_emit(&r->log, HR_LOG_WARN, "record_restored",
				     "id=%s lease=%" PRId64 " msg=\"key was deleted while the"
				     " lease lives; put back\"", r->id, lease);
		return;
	}
	if (kv.value_len != strlen(r->value) || memcmp(kv.value, r->value, kv.value_len)) {
		char *v = strdup(kv.value);
		if (v) {
			free(r->value);
			r->value = v;
			hr__log_emit(&r->log, HR_LOG_INFO, "record_adopted",
				     "id=%s mod_revision=%" PRId64 " msg=\"record changed by"
				     " someone else; keeping their value\"", r->id, kv.mod_revision);
		}
	}
	if (kv.lease != lease) {
		/* A plain `etcdctl put` detaches the key from its lease; without
		 * it the node would outlive this process. */
		if (!hr__etcd_put_if(r->etcd, r->key, r->value, kv.mod_revision, lease, 0,
				     &done, &err) && done)
			hr__log_emit(&r->log, HR_LOG_INFO, "lease_reattached",
				     "id=%s lease=%" PRId64 " old_lease=%" PRId64, r->id, lease,
				     kv.lease);
	}
	hr__kv_clear(&kv);
}

static void wait_ms(hr_registrar *r, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0)
		;
}

static void *renew_main(void *arg)
{
	hr_registrar *r = arg;
	int64_t interval = 0;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		hr_error err = { 0 };
		int64_t ttl = 0;
		int rc;

		if (!interval)
			interval = r->ttl * 1000 / 3;
		wait_ms(r, interval);
		if (r->stop || !r->registered)
			break;
		interval = 0;
		rc = hr__etcd_lease_keepalive(r->etcd, r->lease, &ttl, &err);
		if (rc) {
			hr__log_emit(&r->log, HR_LOG_WARN, "keepalive_failed",
				     "id=%s lease=%" PRId64 " code=%d msg=%s", r->id, r->lease,
				     rc, err.message);
			interval = RETRY_MS;
			continue;
		}
		if (ttl <= 0) {
			int64_t old = r->lease;
			rc = reregister(r, &err);
			if (rc) {
				hr__log_emit(&r->log, rc == HR_EEXIST ? HR_LOG_ERROR : HR_LOG_WARN,
					     "reregister_failed", "id=%s code=%d msg=%s",
					     r->id, rc, err.message);
				if (rc == HR_EEXIST) {
					r->registered = 0;
					__atomic_store_n(&r->lease, 0, __ATOMIC_RELEASE);
					break;
				}
				interval = RETRY_MS;
				continue;
			}
			hr__log_emit(&r->log, HR_LOG_WARN, "lease_lost",
				     "id=%s old_lease=%" PRId64 " lease=%" PRId64
				     " msg=\"lease expired or revoked; registered again\"",
				     r->id, old, r->lease);
			continue;
		}
		check_record(r);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
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

int hr_register(const hr_config *cfg, const hr_registration *reg,
		hr_registrar **out, hr_error *err)
{
	hr__etcd_opts eo;
	hr_registrar *r;
	hr_node node;
	hr__kv kv = { 0 };
	int64_t granted;
	int rc, done = 0, found = 0;

	if (!out || !reg)
		return hr__error_set(err, HR_EINVAL, "registration and out must not be NULL");
	*out = NULL;
	rc = check_cfg(cfg, err);
	if (rc)
		return rc;
	node = (hr_node){ reg->id, reg->addr, reg->zone ? reg->zone : "", reg->weight,
			  reg->state };
	if (!reg->id || !reg->addr)
		return hr__error_set(err, HR_EINVAL, "registration: id and addr are required");
	rc = hr__node_validate(&node, err);
	if (rc)
		return rc;
	if (reg->ttl_s < 2 || reg->ttl_s > 3600)
		return hr__error_set(err, HR_EINVAL, "registration: ttl_s must be 2..3600 (is %d)",
				     reg->ttl_s);

	/* Thread safe since libcurl 7.84 and reference counted. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	r = calloc(1, sizeof *r);
	if (!r) {
		curl_global_cleanup();
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&r->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&r->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	r->log = (hr__log){ cfg->log, cfg->log_userdata, cfg->log_level };
	r->key = make_key(cfg->prefix, reg->id);
	r->id = strdup(reg->id);
	r->value = record_json(reg);
	if (!r->key || !r->id || !r->value) {
		registrar_free(r);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	eo = etcd_opts(cfg);
	rc = hr__etcd_new(&eo, &r->etcd, err);
	if (!rc)
		rc = hr__etcd_lease_grant(r->etcd, reg->ttl_s, &r->lease, &granted, err);
	if (rc) {
		registrar_free(r);
		return rc;
	}
	r->ttl = granted;
	/* Create only if absent: two processes must not share an id. */
	rc = hr__etcd_put_if(r->etcd, r->key, r->value, -1, r->lease, 0, &done, err);
	if (!rc && !done) {
		rc = hr__etcd_get(r->etcd, r->key, &kv, &found, err);
		if (!rc && found && reg->replace) {
			rc = hr__etcd_put_if(r->etcd, r->key, r->value, kv.mod_revision, r->lease,
					     0, &done, err);
			if (!rc && done)
				hr__log_emit(&r->log, HR_LOG_WARN, "replaced",
					     "id=%s old_lease=%" PRId64 " lease=%" PRId64,
					     r->id, kv.lease, r->lease);
			else if (!rc)
				rc = hr__error_set(err, HR_EEXIST,
						   "node \"%s\" changed while being replaced; try again",
						   reg->id);
		} else if (!rc) {
			rc = hr__error_set(err, HR_EEXIST,
					   "node \"%s\" is already registered at %s (lease %" PRId64
					   "%s); stop that process or use replace to take it over",
					   reg->id, r->key, kv.lease, kv.lease ? "" : ", none: a static record");
		}
		hr__kv_clear(&kv);
	}
	if (rc) {
		hr__etcd_lease_revoke(r->etcd, r->lease, NULL);
		registrar_free(r);
		return rc;
	}
	r->registered = 1;
	hr__log_emit(&r->log, HR_LOG_INFO, "registered",
		     "id=%s lease=%" PRId64 " ttl=%" PRId64 " state=%s endpoint=%s", r->id,
		     r->lease, r->ttl, hr_state_name(reg->state), hr__etcd_endpoint(r->etcd));

	{
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&r->thread, NULL, renew_main, r);
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

/* One put of a modified record, keeping the lease, retried if the record
 * changed in between.  `lease` 0 keeps whatever lease the key has. */
static int update_record(hr__etcd *e, const char *key, const char *id,
			 int state, double weight, int64_t lease,
			 char **value_out, hr_error *err)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		hr__kv kv;
		int found, done, rc;
		char *v;

		rc = hr__etcd_get(e, key, &kv, &found, err);
		if (rc)
			return rc;
		if (!found)
			return hr__error_set(err, HR_ENOTFOUND, "node \"%s\" is not registered (no key %s)",
					     id, key);
		v = record_modify(id, kv.value, kv.value_len, state, weight, err);
		if (!v) {
			hr__kv_clear(&kv);
			return err ? err->code : HR_EPARSE;
		}
		rc = hr__etcd_put_if(e, key, v, kv.mod_revision, lease, lease == 0, &done, err);
		hr__kv_clear(&kv);
		if (rc || done) {
			if (!rc && value_out) {
				free(*value_out);
				*value_out = v;
			} else {
				free(v);
			}
			return rc;
		}
		free(v);
	}
	return hr__error_set(err, HR_EETCD, "node \"%s\": record keeps changing; try again", id);
}

static int registrar_update(hr_registrar *r, int state, double weight,
			    hr_error *err)
{
	int rc;

	if (!r)
		return hr__error_set(err, HR_EINVAL, "registrar must not be NULL");
	pthread_mutex_lock(&r->mu);
	if (!r->registered)
		rc = hr__error_set(err, HR_ECLOSED, "node \"%s\" is no longer registered", r->id);
	else
		rc = update_record(r->etcd, r->key, r->id, state, weight, r->lease, &r->value, err);
	pthread_mutex_unlock(&r->mu);
	if (!rc && state >= 0)
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated", "id=%s state=%s", r->id,
			     hr_state_name((hr_state)state));
	else if (!rc)
		hr__log_emit(&r->log, HR_LOG_INFO, "record_updated", "id=%s weight=%g", r->id,
			     weight);
	return rc;
}

static int check_weight(double weight, hr_error *err)
{
	if (!isfinite(weight) || weight <= 0)
		return hr__error_set(err, HR_EINVAL, "weight must be a finite number > 0");
	return 0;
}

int hr_registrar_set_state(hr_registrar *r, hr_state state, hr_error *err)
{
	if (!hr_state_name(state))
		return hr__error_set(err, HR_EINVAL, "invalid state %d", (int)state);
	return registrar_update(r, (int)state, 0, err);
}

int hr_registrar_set_weight(hr_registrar *r, double weight, hr_error *err)
{
	int rc = check_weight(weight, err);

	return rc ? rc : registrar_update(r, -1, weight, err);
}

int64_t hr_registrar_lease(hr_registrar *r)
{
	return r ? __atomic_load_n(&r->lease, __ATOMIC_ACQUIRE) : 0;
}

int hr_registrar_deregister(hr_registrar *r, hr_error *err)
{
	int rc = 0;

	if (!r)
		return hr__error_set(err, HR_EINVAL, "registrar must not be NULL");
	pthread_mutex_lock(&r->mu);
	if (r->registered) {
		rc = hr__etcd_lease_revoke(r->etcd, r->lease, err);
		if (rc == HR_ENOTFOUND)
			rc = 0; /* already gone: the record is too */
		if (!rc) {
			r->registered = 0;
			hr__log_emit(&r->log, HR_LOG_INFO, "deregistered", "id=%s lease=%" PRId64,
				     r->id, r->lease);
			__atomic_store_n(&r->lease, 0, __ATOMIC_RELEASE);
		}
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void hr_registrar_close(hr_registrar *r)
{
	hr_error err = { 0 };

	if (!r)
		return;
	if (hr_registrar_deregister(r, &err))
		hr__log_emit(&r->log, HR_LOG_WARN, "deregister_failed",
			     "id=%s msg=%s note=\"the record expires with its lease\"",
			     r->id, err.message);
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started)
		pthread_join(r->thread, NULL);
	registrar_free(r);
}

static int node_update(const hr_config *cfg, const char *id, int state,
		       double weight, hr_error *err)
{
	hr__etcd_opts eo;
	hr__etcd *e = NULL;
	char *key;
	int rc = check_cfg(cfg, err);

	if (rc)
		return rc;
	if (!id)
		return hr__error_set(err, HR_EINVAL, "id must not be NULL");
	rc = hr__id_validate(id, strlen(id), err);
	if (rc)
		return rc;
	key = make_key(cfg->prefix, id);
	if (!key)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(key);
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	}
	eo = etcd_opts(cfg);
	rc = hr__etcd_new(&eo, &e, err);
	if (!rc)
		rc = update_record(e, key, id, state, weight, 0, NULL, err);
	hr__etcd_free(e);
	curl_global_cleanup();
	free(key);
	return rc;
}

int hr_node_set_state(const hr_config *cfg, const char *id, hr_state state,
		      hr_error *err)
{
	if (!hr_state_name(state))
		return hr__error_set(err, HR_EINVAL, "invalid state %d", (int)state);
	return node_update(cfg, id, (int)state, 0, err);
}

int hr_node_set_weight(const hr_config *cfg, const char *id, double weight,
		       hr_error *err)
{
	int rc = check_weight(weight, err);

	return rc ? rc : node_update(cfg, id, -1, weight, err);
}
