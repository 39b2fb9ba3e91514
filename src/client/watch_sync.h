/* SPDX-License-Identifier: MIT */
/*
 * watch_sync.h - the watcher's records, ring and confirmation, as its
 * thread's stream loop (watch.c) drives them (internal to the watcher;
 * watch_sync.c).  Every function runs on the watcher's thread.
 */
#ifndef HR_WATCH_SYNC_H
#define HR_WATCH_SYNC_H

#include "watch_state.h"

#include <stddef.h>
#include <stdint.h>

/* The etcd endpoint in use, for messages. */
static inline const char *hr__watch_endpoint(const hr__watcher *w)
{
	return hr__etcd_endpoint(w->etcd);
}

/* The ring is known to match etcd at `revision` (0: only liveness); a
 * stale warning given is taken back (event=stale_recovered) unless a
 * resync is due: the ring is then behind, however alive etcd is. */
void hr__watch_confirm(hr__watcher *w, uint64_t revision);

/* etcd is alive, but a new stream's first message proves no more: etcd
 * may say next that its start revision is compacted.  The stale timer
 * restarts; a stale warning is taken back by the next confirmation. */
void hr__watch_alive(hr__watcher *w);

/* Runs often (loop iterations, transfer progress): warns while the ring
 * cannot be confirmed current. */
void hr__watch_check_stale(hr__watcher *w);

/* Records `err` as the last error; one that no retry mends (auth,
 * permission, TLS, a limit) before the first ring ends the open's wait. */
void hr__watch_set_error(hr__watcher *w, const hr_error *err);

/* Applies a revision's events (those not applied yet) to the set, then
 * builds and publishes the ring at the last one. */
void hr__watch_apply_batch(hr__watcher *w, const hr__kv *events, size_t n);

/* Whether a reply's cluster id shows another cluster than the last full
 * sync's (0: unknown, no evidence either way). */
int hr__watch_other_cluster(hr__watcher *w, uint64_t id);

/* etcd holds other data than the ring followed (seen by its cluster id,
 * or by a revision below the ring's): logged once, and the next full sync
 * publishes its ring whatever its digest. */
void hr__watch_data_replaced(hr__watcher *w, int by_cluster_id,
			     uint64_t cluster_id, int64_t revision);

/* Reads the whole prefix into a new set, builds and publishes its ring,
 * and ends the open's wait for the first ring.  0, or the error (the
 * previous set and ring stay). */
int hr__watch_full_sync(hr__watcher *w);

#endif
