/* SPDX-License-Identifier: MIT */
/*
 * bench_put.h - writes to etcd over one kept-alive gateway connection, and
 * the node records the benchmarks fill a prefix with.
 */
#ifndef HRB_BENCH_PUT_H
#define HRB_BENCH_PUT_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

/* The most of a reply kept: a transaction's reply lists every operation. */
#define HRB_REPLY_MAX (256u << 10)

typedef struct hrb_putter {
	CURL *h;
	struct curl_slist *headers;
	char base[256];         /* "http://127.0.0.1:PORT/v3" */
	char *reply;            /* HRB_REPLY_MAX bytes; a transaction's reply
				   lists every operation */
	size_t len;
} hrb_putter;

/* Sets up a writer to gateway `url` ("http://127.0.0.1:PORT"); -1 when out
 * of memory.  hrb_putter_free() releases it (also after a failed init). */
int hrb_putter_init(hrb_putter *pt, const char *url);
void hrb_putter_free(hrb_putter *pt);

/* POSTs `body` to /v3 + `path`; returns the reply header's revision or -1
 * (with the reason on stderr).  *t0 gets the time just before the request
 * is sent. */
int64_t hrb_post(hrb_putter *pt, const char *path, const char *body, int64_t *t0);
/* Puts `key` = `value`; the revision or -1. */
int64_t hrb_put(hrb_putter *pt, const char *key, const char *value, int64_t *t0);

/* Node i's key under `prefix`, and its record with `weight`. */
void hrb_node_key(char *buf, size_t size, const char *prefix, int i);
void hrb_node_value(char *buf, size_t size, int i, int weight);
/* Deletes `key`; the revision or -1. */
int64_t hrb_delete(hrb_putter *pt, const char *key, int64_t *t0);

/* Writes `nodes` node records (weight 1) in transactions; the last
 * revision or -1. */
int64_t hrb_load_nodes(hrb_putter *pt, const char *prefix, int nodes);
/* The same, `batch` records per transaction (at most etcd's
 * --max-txn-ops). */
int64_t hrb_load_nodes_batch(hrb_putter *pt, const char *prefix, int nodes,
			     int batch);

#endif
