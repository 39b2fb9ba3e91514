/* SPDX-License-Identifier: MIT */
/*
 * raw_fan.h - the fan-out floor: many bare watch streams on the etcd
 * gateway, all on one thread, with no library in the way.
 *
 * Every stream is one libcurl POST /v3/watch on a single multi handle
 * driven by epoll (curl_multi_socket_action), so the receiving side costs
 * a read and a scan per stream and etcd's own fan-out is what is measured.
 * Each chunk's arrival time is taken as libcurl hands it over, and every
 * event in it is told to the caller with its kv.mod_revision.
 */
#ifndef HRB_RAW_FAN_H
#define HRB_RAW_FAN_H

#include <stdint.h>

typedef struct hrb_raw_fan hrb_raw_fan;

/* Called on the fan's thread for each event of stream `stream`, with the
 * event's mod_revision and the arrival time of its bytes (hrb_now_ns). */
typedef void (*hrb_raw_fan_fn)(void *ud, int stream, int64_t rev, int64_t t_ns);

/* Opens `n` streams watching every key under `prefix` from `start_rev` on
 * gateway `url` ("http://127.0.0.1:PORT").  NULL on failure, with the
 * reason on stderr. */
hrb_raw_fan *hrb_raw_fan_start(const char *url, const char *prefix,
			       int64_t start_rev, int n, hrb_raw_fan_fn fn, void *ud);

/* Waits until etcd confirmed every stream (created); 0, or -1 on timeout or
 * if a stream failed. */
int hrb_raw_fan_wait_created(hrb_raw_fan *f, int timeout_ms);

/* Streams that ended or failed so far. */
int hrb_raw_fan_failed(const hrb_raw_fan *f);

/* Aborts every stream, joins the thread and frees everything.  Accepts
 * NULL. */
void hrb_raw_fan_stop(hrb_raw_fan *f);

#endif
