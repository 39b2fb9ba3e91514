/* SPDX-License-Identifier: MIT */
/* rebalance_impl.h - the rebalancer's object, shared by its steps (internal).
 *
 * rebalance.c owns the object and the public steps: settings, the start
 * and end of each call, the run (waits, promotion).  rebalance_copy.c is
 * the work on the store through the backend: the scan, the copy and the
 * purge.  rebalance_progress.c keeps the figures both update, behind
 * hr_rebalancer_progress() and the metrics (under `lock`, which a step
 * holds for a few counters at a time), and their log lines.  One step
 * runs at a time; everything but `lock`'s fields and `cancelled` is the
 * step's thread's. */
#ifndef HR_REBALANCE_IMPL_H
#define HR_REBALANCE_IMPL_H

#include "hashring.h"
#include "hashring/rebalance.h"
#include "rate.h"

#include <pthread.h>
#include <stdatomic.h>

/* Where the rebalancer's lines go: hr_log_write()'s first arguments. */
typedef struct hr__rb_log {
	hr_log_fn fn;        /* NULL: timestamped lines on stderr */
	void *userdata;
	hr_log_level max;    /* most verbose level delivered      */
} hr__rb_log;

/* One logfmt line of the rebalancer (hr_log_write() says how). */
#define hr__rb_log_emit(log, level, event, ...) \
	hr_log_write((log)->fn, (log)->userdata, (log)->max, (level), (event), __VA_ARGS__)

/* ---- rebalance_config.c ---- */

/* Fills `err` (may be NULL) with `code` and a printf-style message, and
 * returns `code`, as the core library does for its own errors. */
int hr__rb_error_set(hr_error *err, int code, const char *fmt, ...)
	HR_PRINTF_LIKE(3, 4);

/* Reads `in` (required) into *out.  HR_EINVAL for a bad size, a missing
 * enumerate, fetch or add (naming it), over 16 enumerate passes; 0 passes
 * become 1. */
int hr__rebalance_backend_read(const hr_rebalance_backend *in, hr_rebalance_backend *out,
			       hr_error *err);

/* Reads `in` into *out; NULL: the defaults (a timeout of 0 becomes the
 * default).  HR_EINVAL as hr_rebalance_redis() says.  The strings stay
 * the caller's. */
int hr__rebalance_redis_config_read(const hr_rebalance_redis_config *in,
				    hr_rebalance_redis_config *out, hr_error *err);

/* Reads `in` into *out; NULL: the defaults.  HR_EINVAL for the reasons
 * hashring/rebalance.h lists.  The strings stay the caller's. */
int hr__rebalance_config_read(const hr_rebalance_config *in, hr_rebalance_config *out,
			      hr_error *err);

/* What the counters count; each adds to the step's figures and to the
 * node's totals of the rebalancer's life. */
typedef enum hr__rb_count {
	HR__RB_SCANNED, HR__RB_MOVING, HR__RB_COPIED, HR__RB_PRESENT, HR__RB_GONE,
	HR__RB_TAKEN_BACK, HR__RB_BYTES, HR__RB_PURGE_SCANNED, HR__RB_PURGE_STALE,
	HR__RB_PURGED, HR__RB_PURGE_CHANGED, HR__RB_SKIPPED, HR__RB_COUNTS
} hr__rb_count;

/* One node's totals over the rebalancer's life (the metrics). */
typedef struct hr__rb_total {
	char node[HR_ID_MAX + 1];
	uint64_t n[HR__RB_COUNTS];
} hr__rb_total;

struct hr_rebalancer {
	hr_rebalance_backend be;
	hr_rebalance_config cfg;   /* ack_prefix points at our own copy */
	char *ack_prefix;
	char *backend_name;        /* be.name, our own copy ("store" if none) */
	hr__rb_log log;
	atomic_int cancelled;

	pthread_mutex_t lock;      /* guards p, totals, runs, rate marks */
	hr_rebalance_progress p;
	hr__rb_total *totals;
	size_t ntotals, cap;
	size_t cur;                /* totals[cur] is the node worked on; ntotals: none */
	uint64_t runs_ok, runs_failed;

	/* The step's own. */
	char target[HR_ID_MAX + 1]; /* the node asked for, or "all"      */
	int busy;
	hr__rate rate;
	uint64_t t0_ns;            /* the step's start                       */
	uint64_t mark_ns;          /* the rate's last sample, and its figures */
	uint64_t mark_done, mark_bytes;
	uint64_t last_log_ns;      /* the last event=rebalance_progress      */
	uint64_t skipped_named;    /* event=rebalance_skipped lines so far   */
	/* The node of the backend call that failed the step, for its line. */
	char failed_node[HR_ID_MAX + 1];
	char failed_addr[HR_ADDR_MAX + 1];
	const char *failed_role;   /* "source", "destination", "purge"; NULL */
};

/* ---- rebalance_progress.c ---- */

/* Adds `n` to counter `c` of the step and of the current node. */
void hr__rb_add(hr_rebalancer *rb, hr__rb_count c, uint64_t n);

/* The step now works on `node` (a node of the ring) in `step`. */
void hr__rb_enter(hr_rebalancer *rb, const hr_node *node, hr_rebalance_step step);

/* The keys of the current node the step works on, now listed: a source's
 * moving keys, a purged node's stale ones (node_keys; those done are
 * counted by hr__rb_add). */
void hr__rb_node_keys(hr_rebalancer *rb, uint64_t keys);

/* Skipped keys named in a step's log; the others are only counted. */
#define HR__RB_SKIPPED_NAMED 100

/* A key the backend cannot move (it returned HR_ELIMIT, with `err` saying
 * why): counted as skipped, named in an event=rebalance_skipped line (the
 * first HR__RB_SKIPPED_NAMED of a step), `err` cleared.  `node` holds the key
 * and keeps it; `dest` is where it would have gone (NULL in a purge). */
void hr__rb_skip(hr_rebalancer *rb, const hr_node *node, const hr_node *dest,
		 const void *key, size_t len, hr_error *err);

/* A backend call about `node`, in `role` ("source", "destination",
 * "purge"), failed with `rc`: kept for the step's event=rebalance_failed
 * line, and the message led by the role and the node's id.  Returns rc. */
int hr__rb_backend_failed(hr_rebalancer *rb, const hr_node *node, const char *role, int rc,
			  hr_error *err);

/* Sets the number of nodes of a copy or purge (none done yet), or counts
 * one more done. */
void hr__rb_nodes(hr_rebalancer *rb, size_t total);
void hr__rb_node_done(hr_rebalancer *rb);

/* Adds to the expected count of moving keys. */
void hr__rb_expect(hr_rebalancer *rb, double keys);

/* Refreshes the rate and ETA, and logs event=rebalance_progress when its
 * interval has passed.  Cheap: call it after every key. */
void hr__rb_tick(hr_rebalancer *rb);

/* HR_ECLOSED, with a message saying `where`, once cancelled; else 0. */
int hr__rb_check_cancel(hr_rebalancer *rb, const char *where, hr_error *err);

/* The step's counters now, for hr__rb_log_node()'s `before`. */
void hr__rb_counts(hr_rebalancer *rb, uint64_t out[HR__RB_COUNTS]);

/* Logs event=rebalance_copied (one source done, its scan `passes` long)
 * or rebalance_purged: the counters' growth since `before`. */
void hr__rb_log_node(hr_rebalancer *rb, const char *event, const hr_node *node,
		     const uint64_t before[HR__RB_COUNTS], size_t passes, double seconds);

/* ---- rebalance_copy.c ---- */

/* The steps on the store; errors as hashring.h says. */
int hr__rb_copy_ring(hr_rebalancer *rb, const hr_ring *ring, const hr_node *only,
		     hr_error *err);
int hr__rb_purge_ring(hr_rebalancer *rb, const hr_ring *ring, hr_error *err);

/* For the metrics (rebalance_metrics.c): a copy of the figures and totals, under
 * the lock.  *totals is malloc'ed (free it), NULL when there is none. */
int hr__rb_snapshot(hr_rebalancer *rb, hr_rebalance_progress *p, hr__rb_total **totals,
		    size_t *n, uint64_t *runs_ok, uint64_t *runs_failed, hr_error *err);

#endif
