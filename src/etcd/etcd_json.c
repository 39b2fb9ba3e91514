/* SPDX-License-Identifier: MIT */
/* etcd_json.c - int64 strings, base64 bytes, kvs and prefix ranges as the
 * gateway writes and reads them. */
#include "etcd_json.h"

#include "base64.h"
#include "error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hr__kv_clear(hr__kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof *kv);
}

void hr__kvs_free(hr__kv *kvs, size_t n)
{
	for (size_t i = 0; kvs && i < n; i++)
		hr__kv_clear(&kvs[i]);
	free(kvs);
}

int hr__json_int64(const cJSON *obj, const char *name, int64_t dflt,
		   int64_t *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
	char *end;
	long long v;

	if (!it) {
		*out = dflt;
		return 0;
	}
	if (cJSON_IsNumber(it)) {
		double d = it->valuedouble;
		/* Casting a double outside int64's range is undefined. */
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
		    d != (double)(int64_t)d)
			return HR_EPARSE;
		*out = (int64_t)d;
		return 0;
	}
	if (!cJSON_IsString(it) || !it->valuestring[0])
		return HR_EPARSE;
	errno = 0;
	v = strtoll(it->valuestring, &end, 10);
	if (errno || *end)
		return HR_EPARSE;
	*out = v;
	return 0;
}

int hr__json_add_int64(cJSON *obj, const char *name, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%" PRId64, v);
	return cJSON_AddStringToObject(obj, name, buf) != NULL;
}

uint64_t hr__json_cluster_id(const cJSON *reply)
{
	const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(reply, "header");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(hdr, "cluster_id");
	unsigned long long v;
	char *end;

	if (!cJSON_IsString(id) || !id->valuestring[0] || id->valuestring[0] == '-')
		return 0;
	errno = 0;
	v = strtoull(id->valuestring, &end, 10);
	return errno || *end ? 0 : (uint64_t)v;
}

int hr__json_add_b64(cJSON *obj, const char *name, const void *data, size_t n)
{
	char *enc = malloc(hr__base64_encoded_size(n));
	int ok;

	if (!enc)
		return 0;
	hr__base64_encode(data, n, enc);
	ok = cJSON_AddStringToObject(obj, name, enc) != NULL;
	free(enc);
	return ok;
}

static int b64_field(const cJSON *obj, const char *name, char **out,
		     size_t *len)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!it) {
		/* etcd leaves empty values out: an absent field is "". */
		*out = calloc(1, 1);
		*len = 0;
		return *out ? 0 : HR_ENOMEM;
	}
	if (!cJSON_IsString(it))
		return HR_EPARSE;
	return hr__base64_decode(it->valuestring, strlen(it->valuestring), out,
				 len) ? HR_EPARSE : 0;
}

int hr__kv_from_json(const cJSON *kv, hr__kv *out, hr_error *err)
{
	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(kv))
		return hr__error_set(err, HR_EPARSE, "kv is not an object");
	if (!cJSON_GetObjectItemCaseSensitive(kv, "key") ||
	    b64_field(kv, "key", &out->key, &out->key_len) ||
	    b64_field(kv, "value", &out->value, &out->value_len) ||
	    hr__json_int64(kv, "mod_revision", 0, &out->mod_revision) ||
	    hr__json_int64(kv, "create_revision", 0, &out->create_revision) ||
	    hr__json_int64(kv, "lease", 0, &out->lease)) {
		hr__kv_clear(out);
		return hr__error_set(err, HR_EPARSE,
				     "malformed kv from etcd (base64 or integer field)");
	}
	return 0;
}

size_t hr__etcd_prefix_end(const char *prefix, size_t len, char *end)
{
	memcpy(end, prefix, len);
	while (len && (unsigned char)end[len - 1] == 0xff)
		len--;
	if (!len) {
		end[0] = '\0';
		return 1;
	}
	end[len - 1] = (char)((unsigned char)end[len - 1] + 1);
	return len;
}

int hr__json_add_prefix_range(cJSON *obj, const char *prefix, size_t len)
{
	char *end = malloc(len + 1);
	size_t end_len;
	int ok;

	if (!end)
		return 0;
	end_len = hr__etcd_prefix_end(prefix, len, end);
	/* An empty prefix means every key: etcd wants key "\0" for that. */
	ok = hr__json_add_b64(obj, "key", len ? prefix : "", len ? len : 1) &&
	     hr__json_add_b64(obj, "range_end", end, end_len);
	free(end);
	return ok;
}
