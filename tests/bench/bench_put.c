/* SPDX-License-Identifier: MIT */
/* bench_put.c - writes over one kept-alive gateway connection. */
#include "bench_put.h"
#include "bench.h"

#include "base64.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Node records written in one transaction while filling the prefix (etcd
 * accepts 128 operations per transaction by default). */
#define LOAD_BATCH 100

static size_t on_reply(char *p, size_t size, size_t nmemb, void *ud)
{
	hrb_putter *pt = ud;
	size_t n = size * nmemb, room = HRB_REPLY_MAX - 1 - pt->len;

	memcpy(pt->reply + pt->len, p, n < room ? n : room);
	pt->len += n < room ? n : room;
	pt->reply[pt->len] = '\0';
	return n;
}

int hrb_putter_init(hrb_putter *pt, const char *url)
{
	memset(pt, 0, sizeof *pt);
	pt->h = curl_easy_init();
	pt->headers = curl_slist_append(NULL, "Content-Type: application/json");
	pt->reply = malloc(HRB_REPLY_MAX);
	if (!pt->h || !pt->headers || !pt->reply)
		return -1;
	snprintf(pt->base, sizeof pt->base, "%s/v3", url);
	curl_easy_setopt(pt->h, CURLOPT_HTTPHEADER, pt->headers);
	curl_easy_setopt(pt->h, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(pt->h, CURLOPT_WRITEDATA, pt);
	curl_easy_setopt(pt->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(pt->h, CURLOPT_TIMEOUT_MS, 5000L);
	return 0;
}

void hrb_putter_free(hrb_putter *pt)
{
	curl_easy_cleanup(pt->h);
	curl_slist_free_all(pt->headers);
	free(pt->reply);
}

/* POSTs `body` to base + `path`; returns the revision of the reply's header
 * or -1.  *t0 gets the time just before the request is sent (everything
 * else is ready by then). */
int64_t hrb_post(hrb_putter *pt, const char *path, const char *body, int64_t *t0)
{
	char url[320];
	long status = 0;
	CURLcode rc;
	int64_t rev = -1;
	cJSON *root, *hdr, *r;

	snprintf(url, sizeof url, "%s%s", pt->base, path);
	curl_easy_setopt(pt->h, CURLOPT_URL, url);
	curl_easy_setopt(pt->h, CURLOPT_POSTFIELDS, body);
	pt->len = 0;
	pt->reply[0] = '\0';
	*t0 = hrb_now_ns();
	rc = curl_easy_perform(pt->h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(pt->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status != 200) {
		fprintf(stderr, "bench: POST %s failed: %s (HTTP %ld) %s\n", path,
			curl_easy_strerror(rc), status, pt->reply);
		return -1;
	}
	root = cJSON_Parse(pt->reply);
	hdr = cJSON_GetObjectItemCaseSensitive(root, "header");
	r = cJSON_GetObjectItemCaseSensitive(hdr, "revision");
	if (cJSON_IsString(r))
		rev = strtoll(r->valuestring, NULL, 10);
	else
		fprintf(stderr, "bench: POST %s: no revision in the reply: %.200s\n",
			path, pt->reply);
	cJSON_Delete(root);
	return rev;
}

/* Writes "key":"<b64>","value":"<b64>" at `out` (room for it is the
 * caller's: see kv_json_size). */
static size_t kv_json(char *out, const char *key, const char *value)
{
	char *p = out;

	p += sprintf(p, "\"key\":\"");
	hr__base64_encode(key, strlen(key), p);
	p += strlen(p);
	p += sprintf(p, "\",\"value\":\"");
	hr__base64_encode(value, strlen(value), p);
	p += strlen(p);
	p += sprintf(p, "\"");
	return (size_t)(p - out);
}

static size_t kv_json_size(const char *key, const char *value)
{
	return hr__base64_encoded_size(strlen(key)) +
	       hr__base64_encoded_size(strlen(value)) + 32;
}

int64_t hrb_put(hrb_putter *pt, const char *key, const char *value, int64_t *t0)
{
	char body[1024];

	if (kv_json_size(key, value) + 2 > sizeof body)
		return -1;
	body[0] = '{';
	strcpy(body + 1 + kv_json(body + 1, key, value), "}");
	return hrb_post(pt, "/kv/put", body, t0);
}

int64_t hrb_delete(hrb_putter *pt, const char *key, int64_t *t0)
{
	char body[512];

	if (kv_json_size(key, "") + 2 > sizeof body)
		return -1;
	strcpy(body, "{\"key\":\"");
	hr__base64_encode(key, strlen(key), body + strlen(body));
	strcat(body, "\"}");
	return hrb_post(pt, "/kv/deleterange", body, t0);
}

void hrb_node_key(char *buf, size_t size, const char *prefix, int i)
{
	snprintf(buf, size, "%snode-%05d", prefix, i);
}

/* Node i's record; records are data only, so a loopback address is fine. */
void hrb_node_value(char *buf, size_t size, int i, int weight)
{
	snprintf(buf, size, "{\"addr\":\"127.0.0.1:%d\",\"weight\":%d,\"zone\":\"z%d\"}",
		 20000 + i, weight, i % 3);
}

int64_t hrb_load_nodes(hrb_putter *pt, const char *prefix, int nodes)
{
	return hrb_load_nodes_batch(pt, prefix, nodes, LOAD_BATCH);
}

/* Writes every node record (weight 1), `batch` per transaction; returns
 * the last revision or -1. */
int64_t hrb_load_nodes_batch(hrb_putter *pt, const char *prefix, int nodes,
			     int batch)
{
	char key[128], value[256];
	size_t size, len;
	char *body;
	int64_t rev = -1, t0;

	hrb_node_key(key, sizeof key, prefix, 0);
	hrb_node_value(value, sizeof value, nodes, 1);
	size = (size_t)batch * (kv_json_size(key, value) + 32) + 64;
	body = malloc(size);
	if (!body)
		return -1;
	for (int first = 0; first < nodes; first += batch) {
		len = (size_t)sprintf(body, "{\"success\":[");
		for (int i = first; i < nodes && i < first + batch; i++) {
			hrb_node_key(key, sizeof key, prefix, i);
			hrb_node_value(value, sizeof value, i, 1);
			len += (size_t)sprintf(body + len, "%s{\"request_put\":{",
					       i > first ? "," : "");
			len += kv_json(body + len, key, value);
			len += (size_t)sprintf(body + len, "}}");
		}
		strcpy(body + len, "]}");
		rev = hrb_post(pt, "/kv/txn", body, &t0);
		if (rev < 0)
			break;
	}
	free(body);
	return rev;
}

