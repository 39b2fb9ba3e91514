/* SPDX-License-Identifier: MIT */
/*
 * record.c - node records (docs/placement.md section 8): an etcd value
 * under <prefix><id>, or an entry of a members document, parsed into a
 * node that owns its strings and checked once, here, as every node is
 * (node.c); and a record's value edited field by field, the others kept.
 */
#include "record.h"

#include "error.h"
#include "json.h"
#include "node.h"
#include "tokens.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hr__record_clear(hr__record *rec)
{
	if (!rec)
		return;
	/* A record's strings are its own (see record.h). */
	free((char *)rec->id);
	free((char *)rec->addr);
	free((char *)rec->zone);
	memset(rec, 0, sizeof *rec);
}

static char *dup_bytes(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

/* A bare address: surrounding blanks trimmed, control bytes refused before
 * the copy (a NUL inside would otherwise cut the address short). */
static int record_bare(hr__record *rec, const char *s, size_t len,
		       hr_error *err)
{
	int rc;

	while (len && hr__json_blank(*s)) {
		s++;
		len--;
	}
	while (len && hr__json_blank(s[len - 1]))
		len--;
	rc = hr__addr_validate(rec->id, s, len, err);
	if (rc)
		return rc;
	rec->addr = dup_bytes(s, len);
	if (!rec->addr)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

static int field_string(const hr__record *rec, const cJSON *item,
			const char *name, hr_error *err)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return hr__error_set(err, HR_EPARSE,
				     "node \"%s\": field \"%s\" must be a string",
				     rec->id, name);
	return HR_OK;
}

/* A JSON object record: addr required, weight, zone, state optional (and
 * tokens, when `tokens` asks for them), unknown fields ignored, a known
 * field given twice refused. */
static int record_object(hr__record *rec, const cJSON *obj, hr__tokens *tokens,
			 hr_error *err)
{
	const cJSON *addr = NULL, *weight = NULL, *zone = NULL, *state = NULL;
	const cJSON *toks = NULL;
	const cJSON *item;
	int rc;

	cJSON_ArrayForEach(item, obj) {
		const cJSON **slot = NULL;

		if (strcmp(item->string, "addr") == 0)
			slot = &addr;
		else if (strcmp(item->string, "weight") == 0)
			slot = &weight;
		else if (strcmp(item->string, "zone") == 0)
			slot = &zone;
		else if (strcmp(item->string, "state") == 0)
			slot = &state;
		else if (tokens && strcmp(item->string, "tokens") == 0)
			slot = &toks;
		if (!slot)
			continue;
		if (*slot)
			return hr__error_set(err, HR_EPARSE,
					     "node \"%s\": field \"%s\" given twice",
					     rec->id, item->string);
		*slot = item;
	}

	if (!addr)
		return hr__error_set(err, HR_EPARSE,
				     "node \"%s\": field \"addr\" is missing",
				     rec->id);
	rc = field_string(rec, addr, "addr", err);
	if (rc)
		return rc;
	rec->addr = strdup(addr->valuestring);
	if (!rec->addr)
		return hr__error_set(err, HR_ENOMEM, "out of memory");

	if (weight) {
		if (!cJSON_IsNumber(weight))
			return hr__error_set(err, HR_EPARSE,
					     "node \"%s\": field \"weight\" must be a number",
					     rec->id);
		rec->weight = weight->valuedouble;
	}
	if (zone) {
		rc = field_string(rec, zone, "zone", err);
		if (rc)
			return rc;
		free((char *)rec->zone);
		rec->zone = strdup(zone->valuestring);
		if (!rec->zone)
			return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	if (state) {
		char shown[HR__SHOW_SIZE];

		rc = field_string(rec, state, "state", err);
		if (rc)
			return rc;
		if (hr_state_parse(state->valuestring, &rec->state, NULL))
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": state \"%s\" is not active, warming or draining",
					     rec->id,
					     hr__show(shown, sizeof shown, state->valuestring,
						      strlen(state->valuestring)));
	}
	if (toks)
		return hr__tokens_parse(rec->id, toks, tokens, err);
	return HR_OK;
}

/* Starts a record for an id already validated: defaults filled in. */
static int record_start(hr__record *rec, const char *id, size_t id_len,
			hr_error *err)
{
	memset(rec, 0, sizeof *rec);
	rec->weight = 1;
	rec->state = HR_STATE_ACTIVE;
	rec->id = dup_bytes(id, id_len);
	rec->zone = strdup("");
	if (!rec->id || !rec->zone)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

/* Ends a parse that has come to `rc`: the node's one check, and nothing
 * kept on error.  A value `in_etcd` also has a record's weight range;
 * members documents keep the ring's rules (the placement vectors are
 * documents with weights at the extremes each placement takes). */
static int record_end(hr__record *rec, hr__tokens *tokens, int rc,
		      bool in_etcd, hr_error *err)
{
	if (!rc)
		rc = hr__node_validate(rec, err);
	if (!rc && in_etcd)
		rc = hr__record_weight_validate(rec, err);
	if (rc) {
		hr__record_clear(rec);
		hr__tokens_clear(tokens);
	}
	return rc;
}

/* True for a value that is JSON in full but neither an object (read as a
 * record) nor a string (an address that happens to be quoted, as it always
 * has been): an array, number, true, false or null is a mistake, not an
 * address.  "[::1]:11211" is not JSON, so IPv6 addresses stay addresses. */
static bool json_not_address(const char *s, size_t len)
{
	const char *end = NULL;
	cJSON *json = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	bool yes = false;

	if (json && !cJSON_IsString(json)) {
		len -= (size_t)(end - s);
		while (len && hr__json_blank(*end)) {
			end++;
			len--;
		}
		yes = len == 0;
	}
	cJSON_Delete(json);
	return yes;
}

int hr__record_parse(const char *id, size_t id_len, const char *value,
		     size_t len, hr__record *out, hr_error *err)
{
	return hr__record_parse_tokens(id, id_len, value, len, out, NULL, err);
}

int hr__record_parse_tokens(const char *id, size_t id_len, const char *value,
			    size_t len, hr__record *out, hr__tokens *tokens,
			    hr_error *err)
{
	char shown[HR__SHOW_SIZE];
	size_t i = 0;
	int rc;

	if (tokens)
		memset(tokens, 0, sizeof *tokens);
	if (!out)
		return hr__error_set(err, HR_EINVAL, "record output is NULL");
	memset(out, 0, sizeof *out);
	if (!value && len)
		return hr__error_set(err, HR_EINVAL, "record value is NULL");
	rc = hr__id_validate(id, id_len, err);
	if (rc)
		return rc;
	if (len > HR_RECORD_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": value of %zu bytes exceeds the limit of %d",
				     hr__show(shown, sizeof shown, id, id_len), len,
				     HR_RECORD_MAX);
	rc = record_start(out, id, id_len, err);
	if (rc)
		return record_end(out, tokens, rc, false, err);

	while (i < len && hr__json_blank(value[i]))
		i++;
	if (i < len && value[i] == '{') {
		char what[HR__SHOW_SIZE + 16];
		cJSON *json;

		snprintf(what, sizeof what, "node \"%s\"", out->id);
		json = hr__json_parse(value, len, what, err);
		if (!json)
			return record_end(out, tokens, HR_EPARSE, true, err);
		rc = record_object(out, json, tokens, err);
		cJSON_Delete(json);
	} else if (json_not_address(value + i, len - i)) {
		rc = hr__error_set(err, HR_EPARSE,
				   "node \"%s\": record must be a JSON object or a bare address",
				   out->id);
	} else {
		rc = record_bare(out, value, len, err);
	}
	return record_end(out, tokens, rc, true, err);
}

int hr__record_from_item(const cJSON *item, hr__record *out, hr_error *err)
{
	return hr__record_from_item_tokens(item, out, NULL, err);
}

int hr__record_from_item_tokens(const cJSON *item, hr__record *out,
				hr__tokens *tokens, hr_error *err)
{
	const char *id = item->string;
	int rc;

	if (tokens)
		memset(tokens, 0, sizeof *tokens);
	memset(out, 0, sizeof *out);
	rc = hr__id_validate(id, strlen(id), err);
	if (!rc)
		rc = record_start(out, id, strlen(id), err);
	if (rc)
		return record_end(out, tokens, rc, false, err);
	if (cJSON_IsObject(item))
		rc = record_object(out, item, tokens, err);
	else if (cJSON_IsString(item) && item->valuestring)
		rc = record_bare(out, item->valuestring,
				 strlen(item->valuestring), err);
	else
		rc = hr__error_set(err, HR_EPARSE,
				   "node \"%s\": record must be an object or a string",
				   id);
	return record_end(out, tokens, rc, false, err);
}

/* ---- edits ------------------------------------------------------------- */

char *hr__record_key(const char *prefix, const char *id)
{
	size_t n = strlen(prefix) + strlen(id) + 1;
	char *key = malloc(n);

	if (key)
		snprintf(key, n, "%s%s", prefix, id);
	return key;
}

/* Sets member `name` of object `o` to `v` (taken), replacing any. */
static int set_member(cJSON *o, const char *name, cJSON *v)
{
	if (!v)
		return 0;
	if (cJSON_GetObjectItemCaseSensitive(o, name) ?
	    cJSON_ReplaceItemInObjectCaseSensitive(o, name, v) :
	    cJSON_AddItemToObject(o, name, v))
		return 1;
	cJSON_Delete(v);
	return 0;
}

char *hr__record_modify(const char *id, const char *value, size_t len,
			const hr_record_update *upd, hr_error *err)
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
	if (o && (upd->fields & HR_UPDATE_STATE) &&
	    !set_member(o, "state", cJSON_CreateString(hr_state_name(upd->state)))) {
		cJSON_Delete(o);
		o = NULL;
	}
	if (o && (upd->fields & HR_UPDATE_WEIGHT) &&
	    !set_member(o, "weight", cJSON_CreateNumber(upd->weight))) {
		cJSON_Delete(o);
		o = NULL;
	}
	if (o)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		hr__error_set(err, HR_ENOMEM, "out of memory");
	return s;
}

int hr__record_check(const hr_ring_options *opts, const char *id,
		     const char *value, hr_error *err)
{
	hr__record rec;
	int rc = hr__record_parse(id, strlen(id), value, strlen(value), &rec, err);

	if (rc)
		return rc;
	rc = hr_node_check(&rec, opts, err);
	hr__record_clear(&rec);
	return rc;
}
