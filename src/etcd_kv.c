/* etcd_kv.c - the requests built on hr__etcd_call(): paged prefix ranges,
 * single keys, conditional puts and leases. */
#include "etcd.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

/* ---- range over a prefix -------------------------------------------------- */

/* Appends the kvs of one range reply to kvs[0..*n) (capacity *cap). */
static int take_kvs(const cJSON *reply, hr__kv **kvs, size_t *n, size_t *cap,
		    size_t max_keys, hr_error *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(reply, "kvs")) {
		int rc;

		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			hr__kv *t = realloc(*kvs, ncap * sizeof *t);
			if (!t)
				return hr__error_set(err, HR_ENOMEM, "out of memory");
			*kvs = t;
			*cap = ncap;
		}
		rc = hr__kv_from_json(it, &(*kvs)[*n], err);
		if (rc)
			return rc;
		if (++*n > max_keys)
			return hr__error_set(err, HR_ELIMIT,
					     "more than %zu keys under the prefix", max_keys);
	}
	return 0;
}

int hr__etcd_list(hr__etcd *e, const char *prefix, unsigned page_size,
		  size_t max_keys, hr__kv **kvs_out, size_t *n_out,
		  int64_t *revision, hr_error *err)
{
	cJSON *body = cJSON_CreateObject();
	size_t n = 0, cap = 0;
	hr__kv *kvs = NULL;
	int64_t rev = 0;
	int rc = 0, more = 1;

	*kvs_out = NULL;
	*n_out = 0;
	if (!body || !hr__json_add_prefix_range(body, prefix, strlen(prefix)) ||
	    !hr__json_add_int64(body, "limit", page_size ? page_size : 1000)) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	while (more && !rc) {
		cJSON *reply = NULL;

		rc = hr__etcd_call(e, "/kv/range", body, &reply, err);
		if (rc)
			break;
		if (!rev) {
			const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(reply, "header");
			if (hr__json_int64(hdr, "revision", 0, &rev) || rev <= 0)
				rc = hr__error_set(err, HR_EETCD, "range reply without a revision");
			/* The later pages read at the first one's revision. */
			else if (!hr__json_add_int64(body, "revision", rev))
				rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		}
		if (!rc)
			rc = take_kvs(reply, &kvs, &n, &cap, max_keys, err);
		more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "more")) && n > 0;
		cJSON_Delete(reply);
		if (!rc && more) {
			/* The next page starts just after the last key: the key
			 * and its terminating NUL. */
			cJSON_DeleteItemFromObjectCaseSensitive(body, "key");
			if (!hr__json_add_b64(body, "key", kvs[n - 1].key, kvs[n - 1].key_len + 1))
				rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		}
	}
	cJSON_Delete(body);
	if (rc) {
		hr__kvs_free(kvs, n);
		return rc;
	}
	*kvs_out = kvs;
	*n_out = n;
	*revision = rev;
	return 0;
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
