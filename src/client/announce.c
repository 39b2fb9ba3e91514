/* SPDX-License-Identifier: MIT */
/* announce.c - the event=ring line and the host's callbacks. */
#include "announce.h"

#include "arcs.h"
#include "diff.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* How many ids a ring-change log line lists per category. */
#define LOG_IDS_MAX 8

/* Appends up to LOG_IDS_MAX ids to a comma list (the count written before
 * the list says how many there were). */
static void list_add(char *buf, size_t size, int *count, const char *id)
{
	size_t len = strlen(buf);

	if ((*count)++ < LOG_IDS_MAX)
		snprintf(buf + len, size - len, "%s%s", len ? "," : "", id);
}

/* "N" or "N:list", the form of the added/removed/changed fields. */
static const char *counted(char *buf, size_t size, int n, const char *list)
{
	snprintf(buf, size, "%d%s%s", n, n ? ":" : "", list);
	return buf;
}

void hr__announce_log(const hr__announcement *an, double build_ms)
{
	const hr_ring *old = an->old, *ring = an->ring;
	char added[512] = "", removed[512] = "", changed[768] = "";
	char ca[528], cr[528], cc[784];
	int n_added = 0, n_removed = 0, n_changed = 0;
	size_t i = 0, j = 0, no = old ? hr_ring_node_count(old) : 0;
	size_t nn = hr_ring_node_count(ring);
	double moved_write, moved_read;

	if (!hr__log_enabled(an->log, HR_LOG_INFO))
		return;
	if (an->dw) {
		moved_write = hr__diff_moved_share(an->dw);
		moved_read = hr__diff_moved_share(an->dr);
	} else {
		hr__ring_moved_shares(old, ring, &moved_write, &moved_read);
	}
	/* Both rings list their nodes in id order: one merge walk. */
	while (i < no || j < nn) {
		const hr_node *a = i < no ? hr_ring_node(old, i) : NULL;
		const hr_node *b = j < nn ? hr_ring_node(ring, j) : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->id, b->id);
		if (c < 0) {
			list_add(removed, sizeof removed, &n_removed, a->id);
			i++;
		} else if (c > 0) {
			list_add(added, sizeof added, &n_added, b->id);
			j++;
		} else {
			if (a->state != b->state || a->weight != b->weight ||
			    strcmp(a->addr, b->addr) || strcmp(a->zone, b->zone)) {
				char what[160];
				if (a->state != b->state)
					snprintf(what, sizeof what, "%s:%s->%s", b->id,
						 hr_state_name(a->state), hr_state_name(b->state));
				else if (a->weight != b->weight)
					snprintf(what, sizeof what, "%s:weight=%g->%g", b->id,
						 a->weight, b->weight);
				else
					snprintf(what, sizeof what, "%s:record", b->id);
				list_add(changed, sizeof changed, &n_changed, what);
			}
			i++;
			j++;
		}
	}
	hr__log_emit(an->log, HR_LOG_INFO, "ring",
		     "revision=%" PRIu64 " digest=%016" PRIx64 " nodes=%zu points=%zu"
		     " added=%s removed=%s changed=%s"
		     " moved_write=%.4f moved_read=%.4f build_ms=%.3f",
		     hr_ring_revision(ring), hr_ring_digest(ring), nn,
		     hr_ring_point_count(ring),
		     counted(ca, sizeof ca, n_added, added),
		     counted(cr, sizeof cr, n_removed, removed),
		     counted(cc, sizeof cc, n_changed, changed),
		     moved_write, moved_read, build_ms);
}

void hr__announce_begin(hr__announcement *a, const hr__log *log,
			const hr_ring *old, const hr_ring *ring, bool diffs)
{
	hr_error err = { 0 };

	*a = (hr__announcement){ log, old, ring, NULL, NULL };
	if (diffs && (hr_diff_new(old, ring, HR_VIEW_WRITE, &a->dw, &err) ||
		      hr_diff_new(old, ring, HR_VIEW_READ, &a->dr, &err))) {
		hr__log_emit(log, HR_LOG_ERROR, "diff_failed",
			     "revision=%" PRIu64 " msg=%s", hr_ring_revision(ring),
			     err.message);
		hr__announce_end(a);
	}
}

void hr__announce_to(const hr__announcement *a, const hr__listener *l)
{
	if (l->on_change)
		l->on_change(l->on_change_userdata, a->old, a->ring);
	if (l->on_diff && a->dw)
		l->on_diff(l->on_diff_userdata, a->dw, a->dr);
}

void hr__announce_end(hr__announcement *a)
{
	hr_diff_free(a->dw);
	hr_diff_free(a->dr);
	a->dw = a->dr = NULL;
}
