/* SPDX-License-Identifier: MIT */
/* etcd_json.h - the v3 JSON gateway's wire conventions (internal).
 *
 * int64s travel as JSON strings (lease ids need all 64 bits), bytes fields
 * as padded base64, and fields holding their default value are left out
 * (an absent field is zero, false or empty).  Pure functions over cJSON
 * values: no I/O, shared by every request and by the watch stream's
 * parser. */
#ifndef HR_ETCD_JSON_H
#define HR_ETCD_JSON_H

#include "hashring.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* A key-value pair (or a deletion) as read from etcd; owns its buffers,
 * each NUL-terminated after `*_len` bytes. */
typedef struct hr__kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t mod_revision;
	int64_t create_revision;
	int64_t lease;
	int deleted;               /* a DELETE event */
} hr__kv;

void hr__kv_clear(hr__kv *kv);
void hr__kvs_free(hr__kv *kvs, size_t n);

/* Decodes one gateway "kv" object into `out`.  HR_EPARSE on bad base64 or
 * types.  Used for range replies and watch events alike. */
int hr__kv_from_json(const cJSON *kv, hr__kv *out, hr_error *err);

/* The cluster id in a reply's "header" (a uint64 sent as a string); 0 when
 * absent or malformed.  A wiped and rebuilt etcd usually gets a new one. */
uint64_t hr__json_cluster_id(const cJSON *reply);

/* Reads an int64 sent as a JSON string (or number); `dflt` when absent. */
int hr__json_int64(const cJSON *obj, const char *name, int64_t dflt,
		   int64_t *out);

/* Adds `name` as an int64 in a string; 0 on out of memory. */
int hr__json_add_int64(cJSON *obj, const char *name, int64_t v);

/* Adds `name` as the padded base64 of `n` bytes; 0 on out of memory. */
int hr__json_add_b64(cJSON *obj, const char *name, const void *data, size_t n);

/* Sets `end` (capacity len+1) to the end of the range holding every key
 * that starts with `prefix`; returns its length (1 and "\0" meaning "to
 * the end of the key space" for an empty or all-0xff prefix). */
size_t hr__etcd_prefix_end(const char *prefix, size_t len, char *end);

/* Adds "key" and "range_end" selecting every key that starts with
 * `prefix` (an empty one: every key); 0 on out of memory. */
int hr__json_add_prefix_range(cJSON *obj, const char *prefix, size_t len);

#endif
