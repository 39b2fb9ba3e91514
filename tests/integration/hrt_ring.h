/* SPDX-License-Identifier: MIT */
/* hrt_ring.h - integration-test helpers around a client: writing records
 * over the gateway, the ring etcd holds now (from a fresh range), waiting for
 * a client to converge, and capturing its log lines. */
#ifndef HRT_RING_H
#define HRT_RING_H

#include "hashring.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Puts `value` at `key` through member `url`'s gateway; returns the new
 * revision, or -1. */
int64_t hrt_put(const char *url, const char *key, const char *value);
/* Deletes `key`; returns the new revision, or -1. */
int64_t hrt_del(const char *url, const char *key);

/* Builds the ring etcd holds now under `prefix` (fresh linearizable range,
 * bad records skipped as the client skips them).  NULL on failure. */
hr_ring *hrt_ring_from_etcd(const char *endpoints, const char *prefix,
			    uint64_t *revision);

/* Polls `c` until its ring has the digest of what etcd holds now; returns
 * 0, or -1 after `timeout_ms` (printing both digests). */
int hrt_wait_converged(hr_client *c, const char *endpoints, const char *prefix,
		       int timeout_ms);

/* The state of node `id` in the client's ring, or -1 if it is absent. */
int hrt_node_state(hr_client *c, const char *id);

/* Polls until hrt_node_state() is `want` (-1: gone); 0, or -1 after
 * `timeout_ms`. */
int hrt_wait_state(hr_client *c, const char *id, int want, int timeout_ms);

/* Polls until the client's ring holds `n` nodes; 0 or -1. */
int hrt_wait_nodes(hr_client *c, size_t n, int timeout_ms);

/* A log sink that keeps every line, for assertions. */
typedef struct hrt_log {
	pthread_mutex_t mu;
	char *text;            /* all lines, '\n'-separated */
	size_t len, cap;
	int echo;              /* also print lines to stderr */
} hrt_log;

void hrt_log_init(hrt_log *l);
void hrt_log_free(hrt_log *l);
void hrt_log_fn(void *userdata, hr_log_level level, const char *line);
/* Number of lines containing every one of the NULL-terminated needles. */
int hrt_log_count(hrt_log *l, ...);
/* Polls every `poll_ms` until at least `at_least` lines contain every
 * needle or `timeout_ms` has passed; returns the last count. */
int hrt_log_wait(hrt_log *l, int at_least, int timeout_ms, int poll_ms, ...);
/* Forgets the lines so far. */
void hrt_log_clear(hrt_log *l);

/* Appends n bytes at p to the buffer *text of *len bytes (and *cap
 * allocated), which grows as needed and stays NUL-terminated. */
void hrt_text_append(char **text, size_t *len, size_t *cap, const void *p, size_t n);

/* Sleeps `ms` milliseconds. */
void hrt_sleep_ms(int ms);
/* Monotonic milliseconds. */
int64_t hrt_now_ms(void);

#endif
