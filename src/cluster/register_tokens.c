/*
 * register_tokens.c - a registration with allocated tokens
 * (docs/placement.md section 16): the records under the prefix read at one
 * revision, the node's tokens allocated against their ring, and the record
 * put only if nothing under the prefix was put since; otherwise read and
 * allocate again.
 */
#include "register_tokens.h"

#include "error.h"
#include "nodeset.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads and allocates at most this often before giving up: each retry
 * means another record was put meanwhile. */
#define ATTEMPTS_MAX 8

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

int hr__register_tokens(hr__etcd *e, const char *prefix, const char *key,
			const hr_node *node, size_t ntokens,
			const hr_ring_options *opts, int64_t lease,
			hr__tokens_race_fn race, void *userdata, char **value,
			int *done, int *attempts, hr_error *err)
{
	uint64_t *tokens = malloc((ntokens ? ntokens : 1) * sizeof *tokens);
	int rc = tokens ? HR_OK : hr__error_set(err, HR_ENOMEM, "out of memory");
	int taken = 0;

	*value = NULL;
	*done = 0;
	*attempts = 0;
	while (!rc && *attempts < ATTEMPTS_MAX) {
		hr_ring *ring = NULL;
		hr__kv kv = { 0 };
		int64_t revision = 0;
		int found = 0;

		++*attempts;
		rc = hr__records_ring(e, prefix, opts, &ring, &revision, NULL, NULL, err);
		if (!rc)
			rc = hr_tokens_allocate(ring, node, ntokens, tokens, err);
		hr_ring_release(ring);
		if (rc)
			break;
		free(*value);
		*value = record_json(node, tokens, ntokens);
		if (!*value) {
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			break;
		}
		if (race)
			race(userdata, *attempts);
		rc = hr__etcd_put_if_prefix_unchanged(e, key, *value, lease, prefix,
						      revision, done, err);
		if (rc || *done)
			break;
		/* The key exists (the caller decides: taken, or replace), or
		 * another record was put since: allocate again. */
		rc = hr__etcd_get(e, key, &kv, &found, err);
		hr__kv_clear(&kv);
		taken = found;
		if (rc || taken)
			break;
	}
	if (!rc && !*done && !taken)
		rc = hr__error_set(err, HR_ECONFLICT,
				   "the records under %s changed at each of %d attempts to allocate tokens",
				   prefix, ATTEMPTS_MAX);
	free(tokens);
	if (rc) {
		free(*value);
		*value = NULL;
	}
	return rc;
}
