/* SPDX-License-Identifier: MIT */
/* watch_state.h - the watcher's state (internal to the watcher): watch.c
 * runs its thread (watch_sync.c its records and ring), watch_control.c
 * serves the other threads (start, the wait for the first ring, status,
 * stop).  The fields under `mu` are the
 * only ones both sides touch while the thread runs. */
#ifndef HR_WATCH_STATE_H
#define HR_WATCH_STATE_H

#include "etcd_stream.h"
#include "nodeset.h"
#include "watch_opts.h"

#include <pthread.h>
#include <stdint.h>

typedef enum hr__stream_end {
	HR__END_NONE = 0,
	HR__END_RECONNECT,   /* resume at next_rev on the next endpoint */
	HR__END_RESYNC,      /* compacted, unexpected cancel, revision went back */
	HR__END_STOP
} hr__stream_end;

/* As watch.h names it (a typedef may be repeated in C11). */
typedef struct hr__watcher hr__watcher;

struct hr__watcher {
	/* Configuration (immutable once the thread runs). */
	hr__watch_opts o;
	char *prefix;
	size_t prefix_len;
	hr__etcd *etcd;
	int probe_timeout_ms;

	pthread_t thread;
	int started;
	int stop;                   /* atomic */

	/* Shared with other threads, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* first sync done; stop requested */
	int first_done;
	int first_fatal;
	hr_error last_err;
	uint64_t confirmed_revision;
	uint64_t cluster_id;        /* of the last full sync; 0 unknown */
	int64_t last_confirm_ms;
	uint64_t rings_published, resyncs, reconnects;
	char endpoint[256];
	hr__etcd_stream *stream;    /* set while a stream runs (for wakeup) */

	/* The watcher thread's own state. */
	hr__nodeset set;
	int64_t next_rev;
	int need_sync;
	int synced_once;
	int replaced;               /* etcd's data was replaced: logged, and
				       the next full sync publishes */
	int backoff_ms;
	uint64_t rng;
	int stale_warned;
	int64_t stale_since_ms;     /* the last confirmation before it */
	int64_t last_stale_log_ms;
	int resync_due;             /* a full sync was decided: the ring is
				       behind until it is rebuilt */

	/* Per stream. */
	hr__kv *frag;               /* events of fragments not yet complete */
	size_t n_frag;
	hr__stream_end end;
	int created;
	int64_t last_activity_ms;
	/* The revision confirmed when the running probe was sent: its
	 * linearizable answer can be no older.  The watch may confirm newer
	 * revisions before the answer arrives; they prove nothing. */
	uint64_t probe_floor;
	/* etcd's progress notifications on this stream: when the last came,
	 * and the shortest gap between two (its interval, as etcd skips a
	 * tick that follows events); 0 until known. */
	int64_t progress_last_ms;
	int64_t progress_gap_ms;
	/* This wait's share of the probe jitter, drawn at each probe. */
	int probe_jitter_ms;
	/* How long the stream may now stay silent before a probe (atomic:
	 * the status reads it). */
	int64_t quiet_allowed_ms;
};

/* The thread's body (watch.c); `arg` is the watcher. */
void *hr__watch_thread(void *arg);

/* The etcd client's tick while the thread waits on a transfer: keeps the
 * staleness warnings running (watch_sync.c). */
void hr__watch_tick(void *arg);

#endif
