/* SPDX-License-Identifier: MIT */
/* etcd_kv.c - the requests built on hr__etcd_call(): paged prefix ranges,
 * single keys, conditional puts and leases. */
#include "etcd.h"

#include "error.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- range over a prefix -------------------------------------------------- */

/* Pages of a range read ahead of the one being taken. */
#define READ_AHEAD 2

/* The kvs of one range reply, in *kvs (malloc'd; NULL when none) and *n;
 * `seen` keys came before, at most `max_keys` in all. */
static int take_kvs(const cJSON *reply, size_t seen, size_t max_keys, hr__kv **kvs,
		    size_t *n, hr_error *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(reply, "kvs"), *it;
	size_t count = (size_t)cJSON_GetArraySize(list);

	*kvs = NULL;
	*n = 0;
	if (!count)
		return 0;
	if (count > max_keys - seen)
		return hr__error_set(err, HR_ELIMIT, "more than %zu keys under the prefix",
				     max_keys);
	*kvs = malloc(count * sizeof **kvs);
	if (!*kvs)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, list) {
		int rc = hr__kv_from_json(it, &(*kvs)[*n], err);

		if (rc) {
			hr__kvs_free(*kvs, *n);
			*kvs = NULL;
			*n = 0;
			return rc;
		}
		++*n;
	}
	return 0;
}

/* Whether the range goes on after page `reply`, and if so `body` asks
 * for the next page: from just after the last key, the key and its
 * terminating NUL. */
static int next_page(cJSON *body, const cJSON *reply, bool *more, hr_error *err)
{
	const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(reply, "kvs");
	int n = cJSON_GetArraySize(kvs), rc, ok;
	hr__kv last;

	*more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "more")) && n > 0;
	if (!*more)
		return 0;
	rc = hr__kv_from_json(cJSON_GetArrayItem(kvs, n - 1), &last, err);
	if (rc)
		return rc;
	cJSON_DeleteItemFromObjectCaseSensitive(body, "key");
	ok = hr__json_add_b64(body, "key", last.key, last.key_len + 1);
	hr__kv_clear(&last);
	return ok ? 0 : hr__error_set(err, HR_ENOMEM, "out of memory");
}

/* One page of a range at a time (the caller's thread, or the reader's). */
struct range {
	hr__etcd *e;
	cJSON *body;		/* the next page's request */
	size_t max_keys, seen;
	int64_t total;
	hr__kvs_page_fn on_page;
	void *userdata;
	/* Read ahead: the reader thread's replies, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cJSON *ready[READ_AHEAD];
	unsigned first, nready;
	bool ended;		/* the reader read the last page, or failed */
	bool stop;		/* the caller wants no more */
	int rc;			/* the reader's error */
	hr_error err;
};

/* Hands one reply (taken over) to the caller's callback. */
static int give_page(struct range *r, cJSON *reply, hr_error *err)
{
	hr__kv *kvs = NULL;
	size_t n = 0;
	int rc = take_kvs(reply, r->seen, r->max_keys, &kvs, &n, err);

	cJSON_Delete(reply);
	if (rc)
		return rc;
	r->seen += n;
	return r->on_page(r->userdata, kvs, n, (size_t)r->total, err);
}

/* The reader: asks for the next page as soon as it has the last key of
 * the one before, so that etcd serves it while the caller takes that one
 * (records, and points placed). */
static void *read_ahead(void *arg)
{
	struct range *r = arg;
	bool more = true;
	int rc = 0;

	while (more && !rc) {
		cJSON *reply = NULL;

		pthread_mutex_lock(&r->mu);
		while (r->nready == READ_AHEAD && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		more = !r->stop;
		pthread_mutex_unlock(&r->mu);
		if (!more)
			break;
		rc = hr__etcd_call(r->e, "/kv/range", r->body, &reply, &r->err);
		if (!rc)
			rc = next_page(r->body, reply, &more, &r->err);
		pthread_mutex_lock(&r->mu);
		if (rc)
			cJSON_Delete(reply);
		else
			r->ready[(r->first + r->nready++) % READ_AHEAD] = reply;
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_lock(&r->mu);
	r->rc = rc;
	r->ended = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* The pages after the first, read ahead on a thread of their own. */
static int rest_ahead(struct range *r, hr_error *err)
{
	pthread_t reader;
	int rc = 0;

	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&reader, NULL, read_ahead, r)) {
		rc = hr__error_set(err, HR_ENOMEM, "cannot start a thread to read the range");
		goto out;
	}
	for (;;) {
		cJSON *reply = NULL;

		pthread_mutex_lock(&r->mu);
		while (!r->nready && !r->ended)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->nready) {
			reply = r->ready[r->first];
			r->first = (r->first + 1) % READ_AHEAD;
			r->nready--;
			pthread_cond_signal(&r->cv);
		} else if (r->rc) {
			rc = hr__error_copy(err, &r->err);
		}
		pthread_mutex_unlock(&r->mu);
		if (!reply)
			break;
		rc = give_page(r, reply, err);
		if (rc)
			break;
	}
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(reader, NULL);
	while (r->nready) {
		cJSON_Delete(r->ready[r->first]);
		r->first = (r->first + 1) % READ_AHEAD;
		r->nready--;
	}
out:
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	return rc;
}

int hr__etcd_list_pages(hr__etcd *e, const char *prefix, unsigned page_size,
			size_t max_keys, hr__kvs_page_fn on_page, void *userdata,
			int64_t *revision, hr_error *err)
{
	struct range r = { .e = e, .body = cJSON_CreateObject(), .max_keys = max_keys,
			   .on_page = on_page, .userdata = userdata };
	cJSON *reply = NULL;
	int64_t rev = 0;
	bool more = false;
	int rc;

	if (!r.body || !hr__json_add_prefix_range(r.body, prefix, strlen(prefix)) ||
	    !hr__json_add_int64(r.body, "limit", page_size ? page_size : 1000)) {
		cJSON_Delete(r.body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	/* The first page gives the revision that the later pages read at,
	 * and counts every key of the range. */
	rc = hr__etcd_call(e, "/kv/range", r.body, &reply, err);
	if (!rc) {
		const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(reply, "header");

		if (hr__json_int64(hdr, "revision", 0, &rev) || rev <= 0)
			rc = hr__error_set(err, HR_EETCD, "range reply without a revision");
		else if (!hr__json_add_int64(r.body, "revision", rev))
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		else if (hr__json_int64(reply, "count", 0, &r.total) || r.total < 0)
			r.total = 0;
	}
	if (!rc)
		rc = next_page(r.body, reply, &more, err);
	if (!rc) {
		rc = give_page(&r, reply, err);
		reply = NULL;
	}
	cJSON_Delete(reply);
	if (!rc && more)
		rc = rest_ahead(&r, err);
	cJSON_Delete(r.body);
	if (!rc)
		*revision = rev;
	return rc;
}

/* hr__etcd_list()'s pages, gathered. */
struct gathered {
	hr__kv *kvs;
	size_t n, cap;
};

static int gather(void *userdata, hr__kv *kvs, size_t n, size_t total, hr_error *err)
{
	struct gathered *g = userdata;

	(void)total;
	if (g->cap - g->n < n) {
		size_t cap = g->cap ? g->cap : 64;
		hr__kv *t;

		while (cap - g->n < n)
			cap *= 2;
		t = realloc(g->kvs, cap * sizeof *t);
		if (!t) {
			hr__kvs_free(kvs, n);
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		}
		g->kvs = t;
		g->cap = cap;
	}
	if (n)
		memcpy(g->kvs + g->n, kvs, n * sizeof *kvs);
	g->n += n;
	free(kvs);
	return 0;
}

int hr__etcd_list(hr__etcd *e, const char *prefix, unsigned page_size,
		  size_t max_keys, hr__kv **kvs_out, size_t *n_out,
		  int64_t *revision, hr_error *err)
{
	struct gathered g = { 0 };
	int rc = hr__etcd_list_pages(e, prefix, page_size, max_keys, gather, &g, revision,
				     err);

	if (rc) {
		hr__kvs_free(g.kvs, g.n);
		g.kvs = NULL;
		g.n = 0;
	}
	*kvs_out = g.kvs;
	*n_out = g.n;
	return rc;
}

/* Sends the range request `body` (freed here) and gives the first kv of
 * the reply in *out (zeroed when there is none; *found says which). */
static int range_first(hr__etcd *e, cJSON *body, hr__kv *out, int *found,
		       hr_error *err)
{
	cJSON *reply = NULL;
	const cJSON *kvs;
	int rc;

	memset(out, 0, sizeof *out);
	*found = 0;
	rc = hr__etcd_call(e, "/kv/range", body, &reply, err);
	cJSON_Delete(body);
	if (rc)
		return rc;
	kvs = cJSON_GetObjectItemCaseSensitive(reply, "kvs");
	if (cJSON_GetArraySize(kvs) > 0) {
		rc = hr__kv_from_json(cJSON_GetArrayItem(kvs, 0), out, err);
		*found = rc == 0;
	}
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_newest_mod(hr__etcd *e, const char *prefix, int64_t *revision,
			hr_error *err)
{
	cJSON *body = cJSON_CreateObject();
	hr__kv kv;
	int found, rc;

	*revision = 0;
	if (!body || !hr__json_add_prefix_range(body, prefix, strlen(prefix)) ||
	    !hr__json_add_int64(body, "limit", 1) ||
	    !cJSON_AddStringToObject(body, "sort_target", "MOD") ||
	    !cJSON_AddStringToObject(body, "sort_order", "DESCEND") ||
	    !cJSON_AddTrueToObject(body, "keys_only")) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = range_first(e, body, &kv, &found, err);
	if (!rc && found)
		*revision = kv.mod_revision;
	hr__kv_clear(&kv);
	return rc;
}

int hr__etcd_get(hr__etcd *e, const char *key, hr__kv *out, int *found,
		 hr_error *err)
{
	cJSON *body = cJSON_CreateObject();

	memset(out, 0, sizeof *out);
	*found = 0;
	if (!body || !hr__json_add_b64(body, "key", key, strlen(key))) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	return range_first(e, body, out, found, err);
}

/* ---- conditional put ------------------------------------------------------ */

/* Appends the comparison "`key`'s `target` field EQUAL `n`" to `compare`;
 * 0 on out of memory. */
static int add_compare(cJSON *compare, const char *key, const char *target,
		       const char *field, int64_t n)
{
	cJSON *cmp = cJSON_CreateObject();

	if (!cmp || !cJSON_AddItemToArray(compare, cmp)) {
		cJSON_Delete(cmp);
		return 0;
	}
	return hr__json_add_b64(cmp, "key", key, strlen(key)) &&
	       cJSON_AddStringToObject(cmp, "result", "EQUAL") &&
	       cJSON_AddStringToObject(cmp, "target", target) &&
	       hr__json_add_int64(cmp, field, n);
}

/* Sends the txn `body` (taking it over) that its builder assembled, or
 * fails with HR_ENOMEM when the builder ran out (`ok` false); *done: the
 * compares held and the success branch ran. */
static int send_txn(hr__etcd *e, cJSON *body, int ok, int *done, hr_error *err)
{
	cJSON *reply = NULL;
	int rc;

	if (!ok) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_call(e, "/kv/txn", body, &reply, err);
	cJSON_Delete(body);
	if (!rc)
		*done = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "succeeded"));
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_put_if(hr__etcd *e, const char *key, const char *value,
		    int64_t expect_mod, int64_t expect_lease, int64_t lease,
		    int ignore_lease, int *done, hr_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *compare = cJSON_AddArrayToObject(body, "compare");
	cJSON *success = cJSON_AddArrayToObject(body, "success");
	cJSON *req = cJSON_CreateObject(), *put;
	int ok;

	*done = 0;
	/* Attach at once so that the body owns everything from here on. */
	ok = compare && success && req && cJSON_AddItemToArray(success, req);
	if (!ok) {
		if (!success || !cJSON_GetArraySize(success))
			cJSON_Delete(req);
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	ok = expect_mod < 0 ? add_compare(compare, key, "CREATE", "create_revision", 0) :
			      add_compare(compare, key, "MOD", "mod_revision", expect_mod);
	/* An absent key has lease 0 too: LEASE alone never means "exists". */
	if (ok && expect_lease >= 0)
		ok = add_compare(compare, key, "LEASE", "lease", expect_lease);
	put = cJSON_AddObjectToObject(req, "request_put");
	ok = ok && put && hr__json_add_b64(put, "key", key, strlen(key)) &&
	     hr__json_add_b64(put, "value", value, strlen(value));
	if (ok && lease)
		ok = hr__json_add_int64(put, "lease", lease);
	if (ok && ignore_lease)
		ok = cJSON_AddTrueToObject(put, "ignore_lease") != NULL;
	return send_txn(e, body, ok, done, err);
}

/* Appends to `compare` "no key under `prefix` has a mod_revision above
 * `revision`" (a compare over a range holds for every key in it, and for
 * an empty range); 0 on out of memory. */
static int add_prefix_unchanged(cJSON *compare, const char *prefix, int64_t revision)
{
	cJSON *range = cJSON_CreateObject();

	if (!range || !cJSON_AddItemToArray(compare, range)) {
		cJSON_Delete(range);
		return 0;
	}
	return hr__json_add_prefix_range(range, prefix, strlen(prefix)) &&
	       cJSON_AddStringToObject(range, "result", "LESS") &&
	       cJSON_AddStringToObject(range, "target", "MOD") &&
	       hr__json_add_int64(range, "mod_revision", revision + 1);
}

int hr__etcd_put_if_prefix_unchanged(hr__etcd *e, const char *key,
				     const char *value, int64_t lease,
				     const char *prefix, int64_t revision,
				     int *done, hr_error *err)
{
	cJSON *body = cJSON_CreateObject(), *req = NULL;
	cJSON *compare = cJSON_AddArrayToObject(body, "compare");
	cJSON *success = cJSON_AddArrayToObject(body, "success");
	cJSON *put;
	int ok;

	*done = 0;
	/* Attached at once, so that the body owns everything. */
	if (success && (req = cJSON_CreateObject()) && !cJSON_AddItemToArray(success, req)) {
		cJSON_Delete(req);
		req = NULL;
	}
	/* The key is new, and no key under the prefix was put after
	 * `revision`. */
	ok = req && add_prefix_unchanged(compare, prefix, revision) &&
	     add_compare(compare, key, "CREATE", "create_revision", 0);
	put = ok ? cJSON_AddObjectToObject(req, "request_put") : NULL;
	ok = ok && put && hr__json_add_b64(put, "key", key, strlen(key)) &&
	     hr__json_add_b64(put, "value", value, strlen(value)) &&
	     (!lease || hr__json_add_int64(put, "lease", lease));
	return send_txn(e, body, ok, done, err);
}

int hr__etcd_put_all_if(hr__etcd *e, const hr__txn_put *puts, size_t n,
			const char *prefix, int64_t revision, int *done,
			hr_error *err)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *compare = cJSON_AddArrayToObject(body, "compare");
	cJSON *success = cJSON_AddArrayToObject(body, "success");
	int ok;

	*done = 0;
	ok = success && add_prefix_unchanged(compare, prefix, revision);
	for (size_t i = 0; ok && i < n; i++) {
		cJSON *req = cJSON_CreateObject(), *put;

		if (!req || !cJSON_AddItemToArray(success, req)) {
			cJSON_Delete(req);
			ok = 0;
			break;
		}
		put = cJSON_AddObjectToObject(req, "request_put");
		ok = add_compare(compare, puts[i].key, "MOD", "mod_revision",
				 puts[i].expect_mod) &&
		     put && hr__json_add_b64(put, "key", puts[i].key, strlen(puts[i].key)) &&
		     hr__json_add_b64(put, "value", puts[i].value, strlen(puts[i].value)) &&
		     (puts[i].lease ? hr__json_add_int64(put, "lease", puts[i].lease) :
				      cJSON_AddTrueToObject(put, "ignore_lease") != NULL);
	}
	return send_txn(e, body, ok, done, err);
}

/* ---- leases --------------------------------------------------------------- */

/* POSTs {`name`: `n`} to `path`. */
static int call_with(hr__etcd *e, const char *path, const char *name,
		     int64_t n, cJSON **reply, hr_error *err)
{
	cJSON *body = cJSON_CreateObject();
	int rc;

	*reply = NULL;
	if (!body || !hr__json_add_int64(body, name, n)) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_call(e, path, body, reply, err);
	cJSON_Delete(body);
	return rc;
}

int hr__etcd_lease_grant(hr__etcd *e, int ttl, int64_t *id, int64_t *granted,
			 hr_error *err)
{
	cJSON *reply;
	int rc = call_with(e, "/lease/grant", "TTL", ttl, &reply, err);

	if (rc)
		return rc;
	if (hr__json_int64(reply, "ID", 0, id) || *id == 0 ||
	    hr__json_int64(reply, "TTL", 0, granted) || *granted <= 0) {
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(reply, "error");
		rc = hr__error_set(err, HR_EETCD, "%s: lease grant failed: %s", hr__etcd_endpoint(e),
				   cJSON_IsString(msg) ? msg->valuestring : "no lease in the reply");
	}
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_keepalive(hr__etcd *e, int64_t id, int64_t *ttl,
			     hr_error *err)
{
	cJSON *reply;
	const cJSON *res;
	int rc = call_with(e, "/lease/keepalive", "ID", id, &reply, err);

	if (rc)
		return rc;
	/* A one-message stream: {"result":{...,"TTL":"10"}}, or an error
	 * object if the stream failed. */
	res = cJSON_GetObjectItemCaseSensitive(reply, "result");
	if (!cJSON_IsObject(res))
		rc = hr__error_set(err, HR_EETCD, "%s: lease keepalive failed",
				   hr__etcd_endpoint(e));
	else if (hr__json_int64(res, "TTL", 0, ttl))
		rc = hr__error_set(err, HR_EETCD, "%s: malformed keepalive reply",
				   hr__etcd_endpoint(e));
	else if (*ttl < 0)
		*ttl = 0;
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_revoke(hr__etcd *e, int64_t id, hr_error *err)
{
	cJSON *reply;
	/* This path exists on every gateway version (3.3 has no /lease/revoke). */
	int rc = call_with(e, "/kv/lease/revoke", "ID", id, &reply, err);

	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_ttl(hr__etcd *e, int64_t id, int64_t *ttl, hr_error *err)
{
	cJSON *reply;
	/* Read only, unlike a keepalive; this path exists on every gateway
	 * version.  An unknown lease answers TTL -1. */
	int rc = call_with(e, "/kv/lease/timetolive", "ID", id, &reply, err);

	if (!rc && hr__json_int64(reply, "TTL", 0, ttl))
		rc = hr__error_set(err, HR_EETCD, "%s: malformed timetolive reply",
				   hr__etcd_endpoint(e));
	if (!rc && *ttl < 0)
		*ttl = 0;
	cJSON_Delete(reply);
	return rc;
}
