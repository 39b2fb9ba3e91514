/* SPDX-License-Identifier: MIT */
/* raw_watch.c - see raw_watch.h. */
#include "raw_watch.h"

#include "base64.h"
#include "etcd.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest message kept; the bench's messages are a few hundred bytes. */
#define LINE_MAX_BYTES (1u << 20)

struct hrb_raw_watch {
	CURLM *multi;
	CURL *h;
	struct curl_slist *headers;
	char *body;
	pthread_t thread;
	int started;
	hrb_revlog *log;

	/* Written by the watch thread, read by others: atomics. */
	int stop;
	int created;
	int failed;
	int64_t events;

	/* The watch thread's own: its line buffer, and when the bytes being
	 * framed arrived. */
	hrb_buf lines;
	int64_t t_arrival;
};

static void set_flag(int *flag)
{
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

static int get_flag(const int *flag)
{
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* Reads just enough of one message: created, the events' mod_revision,
 * or a stream error. */
static void on_message(void *ud, const char *line, size_t len)
{
	hrb_raw_watch *w = ud;
	int64_t t_ns = w->t_arrival;
	cJSON *root = cJSON_ParseWithLength(line, len);
	cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
	cJSON *events = cJSON_GetObjectItemCaseSensitive(res, "events");
	cJSON *ev;

	if (!root)
		return;
	if (cJSON_GetObjectItemCaseSensitive(root, "error") ||
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "canceled"))) {
		fprintf(stderr, "bench: raw watch failed: %.*s\n", (int)len, line);
		set_flag(&w->failed);
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "created"))) {
		set_flag(&w->created);
	}
	cJSON_ArrayForEach(ev, events) {
		cJSON *kv = cJSON_GetObjectItemCaseSensitive(ev, "kv");
		cJSON *mr = cJSON_GetObjectItemCaseSensitive(kv, "mod_revision");
		if (cJSON_IsString(mr))
			hrb_revlog_mark(w->log, strtoll(mr->valuestring, NULL, 10), t_ns);
		__atomic_add_fetch(&w->events, 1, __ATOMIC_RELAXED);
	}
	cJSON_Delete(root);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	hrb_raw_watch *w = ud;
	size_t n = size * nmemb;

	/* The arrival time comes first: parsing is not network latency. */
	w->t_arrival = hrb_now_ns();
	return hrb_buf_lines(&w->lines, p, n, LINE_MAX_BYTES, on_message, w) ? 0 : n;
}

static void *watch_main(void *arg)
{
	hrb_raw_watch *w = arg;
	int running = 1;

	while (!get_flag(&w->stop) && running) {
		CURLMsg *msg;
		int left;

		curl_multi_perform(w->multi, &running);
		while ((msg = curl_multi_info_read(w->multi, &left))) {
			if (msg->msg == CURLMSG_DONE) {
				if (!get_flag(&w->stop))
					fprintf(stderr, "bench: raw watch ended: %s\n",
						curl_easy_strerror(msg->data.result));
				set_flag(&w->failed);
				running = 0;
			}
		}
		/* Returns as soon as bytes arrive, or on hrb_raw_watch_stop(). */
		if (running)
			curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
	}
	return NULL;
}

char *hrb_watch_body(const char *prefix, int64_t start_rev)
{
	size_t plen = strlen(prefix), elen;
	char *end = malloc(plen + 1);
	char *k64 = malloc(hr__base64_encoded_size(plen));
	char *e64 = malloc(hr__base64_encoded_size(plen + 1));
	char *body = malloc(2 * hr__base64_encoded_size(plen + 1) + 128);

	if (!end || !k64 || !e64 || !body) {
		free(body);
		body = NULL;
	} else {
		elen = hr__etcd_prefix_end(prefix, plen, end);
		hr__base64_encode(prefix, plen, k64);
		hr__base64_encode(end, elen, e64);
		sprintf(body, "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\","
			"\"start_revision\":\"%lld\"}}", k64, e64, (long long)start_rev);
	}
	free(end);
	free(k64);
	free(e64);
	return body;
}

hrb_raw_watch *hrb_raw_watch_start(const char *url, const char *prefix,
				   int64_t start_rev, hrb_revlog *log)
{
	hrb_raw_watch *w = calloc(1, sizeof *w);

	if (!w)
		return NULL;
	w->log = log;
	w->body = hrb_watch_body(prefix, start_rev);
	w->multi = curl_multi_init();
	w->h = curl_easy_init();
	w->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!w->body || !w->multi || !w->h || !w->headers) {
		fprintf(stderr, "bench: raw watch: out of memory\n");
		hrb_raw_watch_stop(w);
		return NULL;
	}
	hrb_watch_request(w->h, url, w->headers, w->body, on_data, w, 2000L);
	curl_multi_add_handle(w->multi, w->h);
	if (pthread_create(&w->thread, NULL, watch_main, w)) {
		fprintf(stderr, "bench: raw watch: cannot start its thread\n");
		hrb_raw_watch_stop(w);
		return NULL;
	}
	w->started = 1;
	return w;
}

int hrb_raw_watch_wait_created(hrb_raw_watch *w, int timeout_ms)
{
	int64_t until = hrb_now_ns() + (int64_t)timeout_ms * 1000000;

	while (!get_flag(&w->created)) {
		if (get_flag(&w->failed) || hrb_now_ns() > until)
			return -1;
		hrb_sleep_ns(1000000);
	}
	return get_flag(&w->failed) ? -1 : 0;
}

int64_t hrb_raw_watch_events(const hrb_raw_watch *w)
{
	return __atomic_load_n(&w->events, __ATOMIC_RELAXED);
}

void hrb_raw_watch_stop(hrb_raw_watch *w)
{
	if (!w)
		return;
	if (w->started) {
		set_flag(&w->stop);
		curl_multi_wakeup(w->multi);
		pthread_join(w->thread, NULL);
	}
	if (w->multi && w->h)
		curl_multi_remove_handle(w->multi, w->h);
	curl_easy_cleanup(w->h);
	curl_multi_cleanup(w->multi);
	curl_slist_free_all(w->headers);
	free(w->body);
	free(w->lines.p);
	free(w);
}

void hrb_watch_request(CURL *h, const char *url, struct curl_slist *headers,
		       const char *body, curl_write_callback chunk_fn, void *data,
		       long connect_ms)
{
	char full[512];

	snprintf(full, sizeof full, "%s/v3/watch", url);
	curl_easy_setopt(h, CURLOPT_URL, full);	/* libcurl copies it */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, chunk_fn);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, data);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
}
