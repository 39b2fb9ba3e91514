/* SPDX-License-Identifier: MIT */
/* announce.h - telling the log and the host about each published ring
 * (internal).
 *
 * One `event=ring` line per ring: its revision, digest, size, the node ids
 * added, removed and changed since the previous ring (a walk of both
 * rings' id-ordered node lists), and the key-space shares that moved in
 * each view, which come from the ring and diff functions, and how long
 * the ring took from the build's start to its publication; then each
 * listener's on_change and on_diff callbacks (the clients that follow one
 * watcher are its listeners, subscribers.h).  Runs on the watcher thread.
 */
#ifndef HR_ANNOUNCE_H
#define HR_ANNOUNCE_H

#include "hashring.h"
#include "log.h"

#include <stdbool.h>

/* One client's callbacks. */
typedef struct hr__listener {
	hr_ring_change_fn on_change;
	void *on_change_userdata;
	hr_ring_diff_fn on_diff;       /* NULL: no diffs are computed for it */
	void *on_diff_userdata;
} hr__listener;

/* A ring being announced, with its diffs when a listener wants them. */
typedef struct hr__announcement {
	const hr__log *log;
	const hr_ring *old, *ring;
	hr_diff *dw, *dr;              /* both or neither */
} hr__announcement;

/* Starts announcing `ring`, just published in place of `old` (the empty
 * ring for the first).  With `diffs` (a listener has on_diff) both views'
 * diffs are computed once for every listener; a diff that fails is logged
 * (`event=diff_failed`) and on_diff is not called for that ring. */
void hr__announce_begin(hr__announcement *a, const hr__log *log,
			const hr_ring *old, const hr_ring *ring, bool diffs);

/* The `event=ring` line, `build_ms` after the ring's build began.  When
 * the diffs were computed, its moved shares come from them, so the arcs
 * are walked once. */
void hr__announce_log(const hr__announcement *a, double build_ms);

/* One listener's on_change, then its on_diff. */
void hr__announce_to(const hr__announcement *a, const hr__listener *l);

/* Frees the diffs. */
void hr__announce_end(hr__announcement *a);

#endif
