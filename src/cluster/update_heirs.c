/* SPDX-License-Identifier: MIT */
/*
 * update_heirs.c - a node that leaves hands its tokens to heirs
 * (docs/placement.md section 16, "Leaving"): the records under the prefix
 * read at one revision, heirs chosen in their ring, and in one transaction
 * the node's record edited (draining) and each heir's record listing the
 * tokens it takes, on condition that no record changed since.
 */
#include "update_heirs.h"

#include "backoff.h"
#include "error.h"
#include "record.h"
#include "register_tokens.h"
#include "tokens.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Compares (one more than the puts) in one transaction: etcd's default
 * --max-txn-ops. */
#define TXN_OPS_MAX 128

/* The record of `kvs` at key `key`, or NULL. */
static const hr__kv *find_kv(const hr__kv *kvs, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (kvs[i].key_len == strlen(key) && !memcmp(kvs[i].key, key, kvs[i].key_len))
			return &kvs[i];
	return NULL;
}

/* Heir `kv`'s record with tokens[i] appended where heirs[i] == heir;
 * NULL when out of memory. */
static char *with_tokens(const hr__kv *kv, const hr_node *heir, const hr_node **heirs,
			 const uint64_t *tokens, size_t n)
{
	cJSON *o = cJSON_ParseWithLength(kv->value, kv->value_len);
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "tokens");
	char *s = NULL;
	int ok = cJSON_IsArray(arr);

	for (size_t i = 0; ok && i < n; i++) {
		char buf[24];

		if (heirs[i] != heir)
			continue;
		hr__token_format(buf, tokens[i]);
		ok = cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
	}
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* Whether node j of `ring` could have taken tokens of `self`: another
 * node of the write view.  A draining node still lists the tokens it
 * handed over, among them any it had taken itself. */
static int takes_over(const hr_ring *ring, const hr_node *self, size_t j)
{
	const hr_node *nd = hr_ring_node(ring, j);

	return nd != self && nd->state != HR_STATE_DRAINING;
}

/*
 * Marks with NULL in heirs[] the tokens of `self` that another node of
 * the write view already lists: handed over before (a retry whose first
 * transaction went through unanswered), they are not handed again.
 */
static int skip_handed(const hr_ring *ring, const hr_node *self, const uint64_t *tokens,
		       size_t ntokens, const hr_node **heirs, hr_error *err)
{
	size_t total = 0, k = 0, count = hr_ring_node_count(ring);
	uint64_t *all;

	for (size_t j = 0; j < count; j++)
		if (takes_over(ring, self, j))
			total += hr_ring_node(ring, j)->ntokens;
	all = malloc((total ? total : 1) * sizeof *all);
	if (!all)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t j = 0; j < count; j++) {
		const hr_node *nd = hr_ring_node(ring, j);

		if (!takes_over(ring, self, j) || !nd->ntokens)
			continue;
		memcpy(all + k, nd->tokens, nd->ntokens * sizeof *nd->tokens);
		k += nd->ntokens;
	}
	qsort(all, total, sizeof *all, hr__token_cmp);
	for (size_t i = 0; i < ntokens; i++)
		if (bsearch(&tokens[i], all, total, sizeof *all, hr__token_cmp))
			heirs[i] = NULL;
	free(all);
	return HR_OK;
}

/*
 * One attempt on the records read at `revision`: the puts of the node's
 * record (*own, also the first put) and its heirs' into puts[], their
 * count in *n, the values malloc'd.
 */
static int plan(const hr_ring *ring, const hr__kv *kvs, size_t nkvs,
		const char *prefix, const hr__kv *self_kv, const char *id,
		const hr_ring_options *opts, const hr_record_update *upd,
		const hr__record_writer *w, hr__txn_put *puts, size_t *n,
		hr_error *err)
{
	const hr_node *self = hr_ring_find(ring, id), **heirs = NULL;
	const uint64_t *tokens = self ? self->tokens : NULL;
	size_t ntokens = self ? self->ntokens : 0;
	char *own = hr__record_modify(id, self_kv->value, self_kv->value_len, upd, err);
	int rc = own ? hr__record_check(opts, id, own, err) : err ? err->code : HR_EPARSE;

	*n = 0;
	if (rc) {
		free(own);
		return rc;
	}
	puts[(*n)++] = (hr__txn_put){ self_kv->key, own, self_kv->mod_revision, w->lease };
	if (!self)
		return hr__error_set(err, HR_EPARSE, "node \"%s\": its record is not valid", id);
	heirs = malloc((ntokens ? ntokens : 1) * sizeof *heirs);
	if (!heirs)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = hr_tokens_heirs(ring, self, heirs, err);
	if (!rc)
		rc = skip_handed(ring, self, tokens, ntokens, heirs, err);
	for (size_t i = 0; !rc && i < ntokens; i++) {
		const hr__kv *kv;
		char *key, *v;
		bool seen = !heirs[i];

		for (size_t j = 0; j < i; j++)
			seen = seen || heirs[j] == heirs[i];
		if (seen)
			continue;
		if (*n + 1 == TXN_OPS_MAX) {
			rc = hr__error_set(err, HR_ELIMIT,
					   "node \"%s\": its tokens go to more heirs than one etcd transaction takes (%d)",
					   id, TXN_OPS_MAX - 2);
			break;
		}
		key = hr__record_key(prefix, heirs[i]->id);
		kv = key ? find_kv(kvs, nkvs, key) : NULL;
		free(key);
		/* Heirs come from the ring of these very records: only
		 * memory can lack. */
		v = kv ? with_tokens(kv, heirs[i], heirs, tokens, ntokens) : NULL;
		if (!v) {
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			break;
		}
		puts[(*n)++] = (hr__txn_put){ kv->key, v, kv->mod_revision, 0 };
	}
	free(heirs);
	return rc;
}

static void free_values(hr__txn_put *puts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)puts[i].value);
}

int hr__record_hand_over(hr__etcd *e, const char *key, const char *id,
			 const hr_ring_options *opts, const hr_record_update *upd,
			 const hr__record_writer *w, hr__tokens_race_fn race,
			 void *userdata, char **written, hr_error *err)
{
	hr__txn_put puts[TXN_OPS_MAX];
	hr__backoff b;
	char *prefix;
	int rc = HR_OK, done = 0, attempts = 0;

	if (opts->placement != HR_PLACEMENT_TOKENS)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": heirs take tokens, which need the tokens placement", id);
	prefix = strndup(key, strlen(key) - strlen(id));
	if (!prefix)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	hr__backoff_init(&b, w->budget_ms, id);
	for (int attempt = 0; !rc && !done; attempt++) {
		hr_ring *ring = NULL;
		hr__kv *kvs = NULL;
		const hr__kv *self_kv;
		size_t nkvs = 0, n = 0;
		int64_t revision = 0;

		if (attempt) {
			/* A record changed since the read: another leaver or
			 * joiner, most likely of the same burst; later, at
			 * random, so that they spread out. */
			int64_t wait = hr__backoff_next(&b);

			if (wait < 0)
				break;
			if (w->wait)
				rc = w->wait(w->userdata, wait, err);
			else
				hr__sleep_ms(wait);
			if (rc)
				break;
		}
		attempts = attempt + 1;
		rc = hr__records_ring(e, prefix, opts, &ring, &revision, &kvs, &nkvs, err);
		self_kv = rc ? NULL : find_kv(kvs, nkvs, key);
		if (!rc && !self_kv)
			rc = hr__error_set(err, HR_ENOTFOUND, "node \"%s\" is not registered (no key %s)",
					   id, key);
		if (!rc && w->claim)
			rc = w->claim(w->userdata, self_kv, err);
		if (!rc)
			rc = plan(ring, kvs, nkvs, prefix, self_kv, id, opts, upd, w, puts, &n, err);
		if (!rc && race)
			race(userdata, attempt + 1);
		if (!rc)
			rc = hr__etcd_put_all_if(e, puts, n, prefix, revision, &done, err);
		if (!rc && done && written) {
			*written = (char *)puts[0].value;
			puts[0].value = NULL;
		}
		free_values(puts, n);
		hr__kvs_free(kvs, nkvs);
		hr_ring_release(ring);
	}
	free(prefix);
	if (!rc && !done)
		rc = hr__error_set(err, HR_ECONFLICT,
				   "node \"%s\": the records changed at each of %d attempts to hand its"
				   " tokens over, over %lld ms", id, attempts,
				   (long long)hr__backoff_elapsed_ms(&b));
	else if (!rc && attempts > 1)
		hr__log_emit(w->log, HR_LOG_INFO, "heirs_rechosen", "id=%s attempts=%d", id,
			     attempts);
	return rc;
}
