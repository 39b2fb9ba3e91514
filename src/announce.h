/* announce.h - telling the log and the host about each published ring
 * (internal).
 *
 * One `event=ring` line per ring: its revision, digest, size, the node ids
 * added, removed and changed since the previous ring (a walk of both
 * rings' id-ordered node lists), and the key-space shares that moved in
 * each view, which come from the ring and diff functions, and how long
 * the ring took from the build's start to its publication; then the host's
 * on_change and on_diff callbacks.  Runs on the watcher thread. */
#ifndef HR_ANNOUNCE_H
#define HR_ANNOUNCE_H

#include "hashring.h"
#include "log.h"

typedef struct hr__announcer {
	const hr__log *log;
	hr_ring_change_fn on_change;
	void *on_change_userdata;
	hr_ring_diff_fn on_diff;       /* NULL: no diffs are computed for it */
	void *on_diff_userdata;
} hr__announcer;

/* Announces `ring`, just published in place of `old` (NULL for the first)
 * `build_ms` after its build began (the line's build_ms).
 * When on_diff wants the diffs, the log line takes its moved shares from
 * them, so the arcs are walked once; a diff that fails is logged
 * (`event=diff_failed`) and on_diff is not called for that ring. */
void hr__announce(const hr__announcer *an, const hr_ring *old,
		  const hr_ring *ring, double build_ms);

#endif
