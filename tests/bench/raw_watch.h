/* SPDX-License-Identifier: MIT */
/*
 * raw_watch.h - the baseline: a bare watch on the etcd gateway, with no
 * library in the way.
 *
 * One libcurl POST /v3/watch streaming on its own thread.  Each chunk's
 * arrival time is taken as libcurl hands it over (before any parsing), and
 * every event in it is credited to its kv.mod_revision.  The library's
 * watcher receives the same bytes from the same etcd, so the difference
 * between the two is what the library adds.
 */
#ifndef HRB_RAW_WATCH_H
#define HRB_RAW_WATCH_H

#include "bench.h"

#include <curl/curl.h>

typedef struct hrb_raw_watch hrb_raw_watch;

/* Watches every key under `prefix` from `start_rev` on gateway `url`
 * ("http://127.0.0.1:PORT"), marking first arrivals in `log` (which must
 * outlive the watch).  NULL on failure, with the reason on stderr. */
hrb_raw_watch *hrb_raw_watch_start(const char *url, const char *prefix,
				   int64_t start_rev, hrb_revlog *log);

/* Waits until etcd confirmed the watch (created); 0, or -1 on timeout or
 * if the stream failed. */
int hrb_raw_watch_wait_created(hrb_raw_watch *w, int timeout_ms);

/* Events received so far. */
int64_t hrb_raw_watch_events(const hrb_raw_watch *w);

/* The JSON body of a watch on every key under `prefix` from `start_rev`
 * (malloc'd), or NULL when out of memory. */
char *hrb_watch_body(const char *prefix, int64_t start_rev);

/* Sets up `h` as one watch stream: POST `body` (which must outlive the
 * transfer) to `url`'s /v3/watch with `headers`, each chunk handed to
 * chunk_fn(.., data), connecting within `connect_ms`. */
void hrb_watch_request(CURL *h, const char *url, struct curl_slist *headers,
		       const char *body, curl_write_callback chunk_fn, void *data,
		       long connect_ms);

/* Aborts the stream, joins the thread and frees everything.  Accepts NULL. */
void hrb_raw_watch_stop(hrb_raw_watch *w);

#endif
