/* SPDX-License-Identifier: MIT */
/*
 * register_tokens.c - a registration with allocated tokens
 * (docs/placement.md section 16): the records under the prefix read at one
 * revision, the node's tokens allocated against their ring, and the record
 * put only if nothing under the prefix was put since; otherwise read and
 * allocate again.
 */
#include "register_tokens.h"

#include "backoff.h"
#include "clock.h"
#include "error.h"
#include "nodeset.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hr__records_ring(hr__etcd *e, const char *prefix, const hr_ring_options *opts,
		     hr_ring **ring, int64_t *revision, hr__kv **records,
		     size_t *nrecords, hr_error *err)
{
	size_t plen = strlen(prefix), n = 0;
	hr__nodeset set = { 0 };
	hr__kv *kvs = NULL;
	int rc = hr__etcd_list(e, prefix, 0, HR_NODES_MAX * (size_t)2, &kvs, &n,
			       revision, err);

	for (size_t i = 0; !rc && i < n; i++) {
		hr__record rec;
		hr__tokens t;

		if (kvs[i].key_len <= plen ||
		    hr__record_parse_tokens(kvs[i].key + plen, kvs[i].key_len - plen,
					    kvs[i].value, kvs[i].value_len, &rec, &t,
					    NULL))
			continue;
		if (hr__nodeset_put_tokens(&set, &rec, &t, kvs[i].create_revision,
					   kvs[i].mod_revision)) {
			hr__record_clear(&rec);
			hr__tokens_clear(&t);
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		}
	}
	if (!rc)
		rc = hr__nodeset_build(&set, opts, (uint64_t)*revision, ring, err);
	hr__nodeset_clear(&set);
	if (!rc && records) {
		*records = kvs;
		*nrecords = n;
	} else {
		hr__kvs_free(kvs, n);
	}
	return rc;
}

static char *record_json(const hr_node *nd, const uint64_t *tokens, size_t n)
{
	cJSON *o = cJSON_CreateObject(), *arr = NULL;
	char *s = NULL;
	int ok = o && cJSON_AddStringToObject(o, "addr", nd->addr) &&
		 cJSON_AddNumberToObject(o, "weight", nd->weight) &&
		 cJSON_AddStringToObject(o, "zone", nd->zone ? nd->zone : "") &&
		 cJSON_AddStringToObject(o, "state", hr_state_name(nd->state)) &&
		 (arr = cJSON_AddArrayToObject(o, "tokens"));

	for (size_t i = 0; ok && i < n; i++) {
		char buf[24];

		snprintf(buf, sizeof buf, "%" PRIu64, tokens[i]);
		ok = cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
	}
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* When the lease is due for renewal: a third of its TTL after it was
 * granted or last renewed. */
static int64_t renewal_due(const hr__tokens_join *j)
{
	return j->renewed_ms + j->lease_ttl_s * 1000 / 3;
}

/* Renews the lease if it is due: the registrar's renewals start once the
 * record is written, and conflicts may be retried for longer than a TTL. */
static int keep_lease(hr__tokens_join *j, hr_error *err)
{
	int64_t sent = hr__now_ms(), ttl = 0;
	int rc;

	if (!j->lease || sent < renewal_due(j))
		return 0;
	rc = hr__etcd_lease_keepalive(j->etcd, j->lease, &ttl, err);
	if (!rc && ttl <= 0)
		rc = hr__error_set(err, HR_ENOTFOUND,
				   "lease %016" PRIx64 " expired while retrying a conflict",
				   (uint64_t)j->lease);
	if (!rc)
		j->renewed_ms = sent;
	return rc;
}

int hr__tokens_wait(hr__tokens_join *j, int64_t ms, hr_error *err)
{
	int64_t end = hr__now_ms() + ms;
	int rc = 0;

	for (int64_t now = hr__now_ms(); !rc && now < end; now = hr__now_ms()) {
		int64_t until = j->lease && renewal_due(j) < end ? renewal_due(j) : end;

		hr__sleep_ms(until - now);
		rc = keep_lease(j, err);
	}
	return rc;
}

/* An etcd that could not answer now (overloaded, a leader election, a
 * member down) may answer later: within the budget, such an attempt is
 * retried as a conflict is. */
static int transient(int rc)
{
	return rc == HR_ETIMEDOUT || rc == HR_ECONNECT || rc == HR_EETCD;
}

/*
 * Attempt `n`: read, allocate, put if unchanged.  *done when written;
 * *taken when the key exists under another lease (or none); neither on a
 * conflict.  The key under our own lease is our record, written by an
 * attempt whose answer was lost.
 */
static int attempt(hr__tokens_join *j, int n, uint64_t *tokens, char **value, int *done,
		   int *taken, hr_error *err)
{
	hr_ring *ring = NULL;
	hr__kv kv = { 0 };
	int64_t revision = 0;
	int found = 0;
	int rc = hr__records_ring(j->etcd, j->prefix, j->opts, &ring, &revision, NULL, NULL,
				  err);

	if (!rc)
		rc = hr_tokens_allocate(ring, j->node, j->ntokens, tokens, err);
	hr_ring_release(ring);
	if (rc)
		return rc;
	free(*value);
	*value = record_json(j->node, tokens, j->ntokens);
	if (!*value)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (j->race)
		j->race(j->userdata, n);
	/* A read or an allocation may take long on a loaded host. */
	rc = keep_lease(j, err);
	if (!rc)
		rc = hr__etcd_put_if_prefix_unchanged(j->etcd, j->key, *value, j->lease, j->prefix,
						      revision, done, err);
	if (rc || *done)
		return rc;
	/* The key exists (the caller decides: taken, or replace), or another
	 * record was put since the read. */
	rc = hr__etcd_get(j->etcd, j->key, &kv, &found, err);
	if (!rc && found && j->lease && kv.lease == j->lease) {
		char *ours = strndup(kv.value, kv.value_len);

		if (!ours) {
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		} else {
			free(*value);
			*value = ours;
			*done = 1;
		}
	} else if (!rc) {
		*taken = found;
	}
	hr__kv_clear(&kv);
	return rc;
}

int hr__register_tokens(hr__tokens_join *j, char **value, int *done, int *attempts,
			hr_error *err)
{
	uint64_t *tokens = malloc((j->ntokens ? j->ntokens : 1) * sizeof *tokens);
	hr__backoff b;
	int taken = 0, rc = 0;

	*value = NULL;
	*done = 0;
	*attempts = 0;
	if (!tokens)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	hr__backoff_init(&b, j->budget_ms, j->node->id);
	for (;;) {
		if (*attempts) {
			/* Another record was put since the read, or etcd could
			 * not answer: later, at random. */
			int64_t wait = hr__backoff_next(&b);

			if (wait < 0)
				break;
			rc = hr__tokens_wait(j, wait, err);
			if (rc)
				break;
		}
		++*attempts;
		rc = attempt(j, *attempts, tokens, value, done, &taken, err);
		if ((!rc && (*done || taken)) || (rc && !transient(rc)))
			break;
	}
	if (!rc && !*done && !taken)
		rc = hr__error_set(err, HR_ECONFLICT,
				   "the records under %s changed at each of %d attempts to allocate"
				   " tokens, over %lld ms", j->prefix, *attempts,
				   (long long)hr__backoff_elapsed_ms(&b));
	free(tokens);
	if (rc) {
		free(*value);
		*value = NULL;
	}
	return rc;
}
