/* SPDX-License-Identifier: MIT */
/* watch_opts.h - what a watcher is started with (internal): apart from
 * watch.h, so that the watcher's own state (watch_state.h) can hold a copy
 * without depending on the interface its files implement. */
#ifndef HR_WATCH_OPTS_H
#define HR_WATCH_OPTS_H

#include "etcd.h"
#include "log.h"
#include "subscribers.h"

typedef struct hr__watch_opts {
	hr__etcd_opts etcd;        /* stop_flag and tick are set by the watcher */
	const char *prefix;
	hr_ring_options ring;
	unsigned page_size;
	int backoff_initial_ms;
	int backoff_max_ms;
	int probe_interval_ms;
	int stale_warn_ms;
	int probe_jitter_pct;      /* 0..50 */
	int spread_endpoints;      /* start at a random endpoint */
	const hr__log *log;        /* must outlive the watcher */
	/* The clients the rings go to; must outlive the watcher. */
	hr__subscribers *subs;
} hr__watch_opts;

#endif
