/* SPDX-License-Identifier: MIT */
/* etcd.h - a small client for etcd's v3 HTTP/JSON gateway (internal).
 *
 * etcd.c holds the client itself (endpoints, transfers, auth, the unary
 * call); etcd_kv.c the requests built on hr__etcd_call() (ranges, keys,
 * conditional puts, leases); etcd_json.h the wire conventions they share.
 * Knows etcd, knows nothing of rings.  One hr__etcd is used by one thread at
 * a time (the watcher and the registrar each own one).  Every unary request
 * has a timeout; failures move to the next endpoint.  Passwords and tokens
 * never appear in error messages. */
#ifndef HR_ETCD_H
#define HR_ETCD_H

#include "etcd_json.h"
#include "hashring.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdint.h>

typedef struct hr__etcd_opts {
	/* Comma-separated; NULL: http://127.0.0.1:2379.  A "user:password@"
	 * (percent-decoded) is the etcd user unless username is set, and must
	 * then agree with it; endpoints are kept and shown without it. */
	const char *endpoints;
	const char *api_base;      /* NULL: "/v3" */
	int request_timeout_ms;
	int connect_timeout_ms;
	const char *ca_file, *cert_file, *key_file;
	int insecure_skip_verify;
	const char *username, *password;
	/* Polled during transfers; a non-zero value aborts them (closing). */
	const int *stop_flag;
	/* Called now and then during transfers (at least once a second), so
	 * the owner can keep its timers running through a blocking call. */
	void (*tick)(void *userdata);
	void *tick_userdata;
	/* The endpoint tried first, modulo their number (0: the first). */
	unsigned first_endpoint;
} hr__etcd_opts;

typedef struct hr__etcd hr__etcd;

/* ---- the client (etcd.c) ----------------------------------------------- */

int hr__etcd_new(const hr__etcd_opts *opts, hr__etcd **out, hr_error *err);
void hr__etcd_free(hr__etcd *e);

/* The endpoint requests go to now, and a move to the next one. */
const char *hr__etcd_endpoint(const hr__etcd *e);
void hr__etcd_next_endpoint(hr__etcd *e);

/*
 * POSTs `body` to <endpoint><base><path> and parses the JSON reply into
 * *reply (caller frees with cJSON_Delete).  Authenticates first when a user
 * is set and no token is held, and once more when the token is rejected.
 * On a connection failure or 503 the next endpoints are tried.  Errors map
 * etcd's codes: HR_ECONNECT, HR_ETIMEDOUT, HR_ETLS, HR_EAUTH, HR_EPERM,
 * HR_ENOTFOUND (code 5), HR_ECOMPACTED (code 11 "compacted"), HR_EETCD.
 */
int hr__etcd_call(hr__etcd *e, const char *path, const cJSON *body,
		  cJSON **reply, hr_error *err);

/*
 * Sets up `h` (a fresh easy handle) for a POST of `body` to `path` with the
 * gateway's headers, TLS options, the auth token and timeouts; with
 * `streaming` no total timeout is set (a watch).  *headers must be freed
 * with curl_slist_free_all() after the transfer.
 */
int hr__etcd_setup(hr__etcd *e, CURL *h, const char *path, const char *body,
		   int streaming, struct curl_slist **headers, hr_error *err);

/* Gets a fresh auth token if a user is configured (before a reconnect). */
int hr__etcd_authenticate(hr__etcd *e, hr_error *err);

/* Maps a failed transfer (curl code, HTTP status, body) to an error. */
int hr__etcd_transfer_error(hr__etcd *e, CURLcode rc, long status,
			    const char *body, size_t len, hr_error *err);

/* The cluster id of the last reply hr__etcd_call() parsed (0 if none). */
uint64_t hr__etcd_cluster_id(const hr__etcd *e);

/* ---- requests (etcd_kv.c) ---------------------------------------------- */

/*
 * Lists every key under `prefix` with a linearizable range, `page_size`
 * keys a page, all pages pinned to the first page's revision, which is
 * returned in *revision.  *kvs is malloc'd (hr__kvs_free).  At most
 * `max_keys` keys: HR_ELIMIT beyond.
 */
int hr__etcd_list(hr__etcd *e, const char *prefix, unsigned page_size,
		  size_t max_keys, hr__kv **kvs, size_t *n, int64_t *revision,
		  hr_error *err);

/* Receives a page of a range: kvs[0 .. n) (taken over: hr__kvs_free; NULL
 * when n is 0) and the keys in the whole range, as its first page counted
 * them.  A nonzero return (an HR_E* code, `err` set) ends the range. */
typedef int (*hr__kvs_page_fn)(void *userdata, hr__kv *kvs, size_t n, size_t total,
			       hr_error *err);

/* hr__etcd_list() a page at a time: on_page(userdata, ...) is called with
 * each page as it comes.  Errors as hr__etcd_list() and on_page's. */
int hr__etcd_list_pages(hr__etcd *e, const char *prefix, unsigned page_size,
			size_t max_keys, hr__kvs_page_fn on_page, void *userdata,
			int64_t *revision, hr_error *err);

/* The newest mod_revision of the keys under `prefix` (0: no key), from one
 * linearizable range of a single key, sorted. */
int hr__etcd_newest_mod(hr__etcd *e, const char *prefix, int64_t *revision,
			hr_error *err);

/* Reads one key; *found is 0 when it does not exist (out is then empty). */
int hr__etcd_get(hr__etcd *e, const char *key, hr__kv *out, int *found,
		 hr_error *err);

/*
 * A put that happens only if `key` is as the caller last saw it: with
 * `expect_mod` < 0 the key must not exist, otherwise its mod_revision must
 * equal `expect_mod`; with `expect_lease` >= 0 its lease must also be
 * `expect_lease` (0: attached to none).  The put attaches `lease`; `lease`
 * 0 with `ignore_lease` keeps the key's current lease.  *done is 1 when the
 * put happened, 0 when a comparison failed.
 */
int hr__etcd_put_if(hr__etcd *e, const char *key, const char *value,
		    int64_t expect_mod, int64_t expect_lease, int64_t lease,
		    int ignore_lease, int *done, hr_error *err);

/*
 * Puts `key` (attached to `lease`, 0: none) only if it does not exist and
 * no key under `prefix` has a mod_revision above `revision` (one txn with
 * a range compare): the records a caller read at `revision` are still
 * those.  A key deleted since is not seen.  *done as for hr__etcd_put_if.
 */
int hr__etcd_put_if_prefix_unchanged(hr__etcd *e, const char *key,
				     const char *value, int64_t lease,
				     const char *prefix, int64_t revision,
				     int *done, hr_error *err);

/* One put of hr__etcd_put_all_if(). */
typedef struct hr__txn_put {
	const char *key;
	const char *value;
	int64_t expect_mod;	/* the key's mod_revision as read (> 0) */
	int64_t lease;		/* attached by the put; 0 keeps the key's own */
} hr__txn_put;

/*
 * Puts every puts[i] in one transaction, only if each key's mod_revision
 * is still its expect_mod (so none was deleted either) and no key under
 * `prefix` has a mod_revision above `revision`.  *done as for
 * hr__etcd_put_if.  etcd refuses a transaction of more than its
 * --max-txn-ops operations (128 by default): HR_EETCD.
 */
int hr__etcd_put_all_if(hr__etcd *e, const hr__txn_put *puts, size_t n,
			const char *prefix, int64_t revision, int *done,
			hr_error *err);

/* Grants a lease of `ttl` seconds; *id gets its id and *granted the TTL
 * etcd chose (it may raise a small one). */
int hr__etcd_lease_grant(hr__etcd *e, int ttl, int64_t *id, int64_t *granted,
			 hr_error *err);

/* Renews lease `id`; *ttl gets the remaining TTL, 0 when the lease is gone
 * (expired or revoked: etcd then leaves TTL out). */
int hr__etcd_lease_keepalive(hr__etcd *e, int64_t id, int64_t *ttl,
			     hr_error *err);

/* Revokes lease `id` (its keys are deleted).  HR_ENOTFOUND if unknown. */
int hr__etcd_lease_revoke(hr__etcd *e, int64_t id, hr_error *err);

/* The seconds lease `id` has left, without renewing it; *ttl is 0 when
 * the lease is gone (expired, revoked or never granted). */
int hr__etcd_lease_ttl(hr__etcd *e, int64_t id, int64_t *ttl, hr_error *err);

#endif
