/* SPDX-License-Identifier: MIT */
/* rebalance_progress.c - the rebalancer's figures: the counters of a step
 * and of each node's life, the rate and ETA, the progress and per-node
 * log lines, the copies that hr_rebalancer_progress() and the metrics
 * read (see rebalance_impl.h). */
#define _GNU_SOURCE
#include "rebalance_impl.h"


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull
/* The rate is measured over windows of about this long. */
#define RATE_WINDOW_NS (NS / 2)

static const char *const step_names[] = {
	"idle", "wait", "scan", "copy", "promote", "purge", "done", "failed"
};

const char *hr_rebalance_step_name(hr_rebalance_step step)
{
	if ((unsigned)step >= sizeof step_names / sizeof step_names[0])
		return NULL;
	return step_names[step];
}

int hr__rb_check_cancel(hr_rebalancer *rb, const char *where, hr_error *err)
{
	if (!atomic_load(&rb->cancelled))
		return 0;
	return hr__rb_error_set(err, HR_ECLOSED, "rebalance cancelled %s", where);
}

static uint64_t *progress_field(hr_rebalance_progress *p, hr__rb_count c)
{
	switch (c) {
	case HR__RB_SCANNED: return &p->scanned;
	case HR__RB_MOVING: return &p->moving;
	case HR__RB_COPIED: return &p->copied;
	case HR__RB_PRESENT: return &p->present;
	case HR__RB_GONE: return &p->gone;
	case HR__RB_TAKEN_BACK: return &p->taken_back;
	case HR__RB_BYTES: return &p->bytes;
	case HR__RB_PURGE_SCANNED: return &p->purge_scanned;
	case HR__RB_PURGE_STALE: return &p->purge_stale;
	case HR__RB_PURGED: return &p->purged;
	case HR__RB_PURGE_CHANGED: return &p->purge_changed;
	case HR__RB_SKIPPED: return &p->skipped;
	default: return NULL;
	}
}

/* Whether counter `c` counts keys done, by the copy or the purge. */
static int counts_done(hr__rb_count c)
{
	return c == HR__RB_COPIED || c == HR__RB_PRESENT || c == HR__RB_GONE ||
	       c == HR__RB_SKIPPED || c == HR__RB_PURGED || c == HR__RB_PURGE_CHANGED;
}

void hr__rb_add(hr_rebalancer *rb, hr__rb_count c, uint64_t n)
{
	pthread_mutex_lock(&rb->lock);
	*progress_field(&rb->p, c) += n;
	if (counts_done(c))
		rb->p.node_keys_done += n;
	if (rb->cur < rb->ntotals)
		rb->totals[rb->cur].n[c] += n;
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_node_keys(hr_rebalancer *rb, uint64_t keys)
{
	pthread_mutex_lock(&rb->lock);
	rb->p.node_keys = keys;
	rb->p.node_keys_done = 0;
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_enter(hr_rebalancer *rb, const hr_node *node, hr_rebalance_step step)
{
	size_t i;

	pthread_mutex_lock(&rb->lock);
	rb->p.step = step;
	rb->p.node_keys = rb->p.node_keys_done = 0;
	snprintf(rb->p.node, sizeof rb->p.node, "%s", node ? node->id : "");
	for (i = 0; node && i < rb->ntotals && strcmp(rb->totals[i].node, node->id); i++)
		;
	if (node && i == rb->ntotals) {
		/* A node the metrics have not seen: one more series.  Out of
		 * memory only loses the node's totals, not the step. */
		if (rb->ntotals == rb->cap) {
			size_t cap = rb->cap ? 2 * rb->cap : 8;
			hr__rb_total *t = realloc(rb->totals, cap * sizeof *t);

			if (t) {
				rb->totals = t;
				rb->cap = cap;
			}
		}
		if (rb->ntotals < rb->cap) {
			memset(&rb->totals[i], 0, sizeof rb->totals[i]);
			snprintf(rb->totals[i].node, sizeof rb->totals[i].node, "%s", node->id);
			rb->ntotals++;
		}
	}
	rb->cur = node ? i : rb->ntotals;
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_nodes(hr_rebalancer *rb, size_t total)
{
	pthread_mutex_lock(&rb->lock);
	rb->p.nodes_total = total;
	rb->p.nodes_done = 0;
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_node_done(hr_rebalancer *rb)
{
	pthread_mutex_lock(&rb->lock);
	rb->p.nodes_done++;
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_expect(hr_rebalancer *rb, double keys)
{
	pthread_mutex_lock(&rb->lock);
	rb->p.expected += keys;
	pthread_mutex_unlock(&rb->lock);
}

static uint64_t keys_done(const hr_rebalance_progress *p)
{
	return p->copied + p->present + p->gone + p->skipped + p->purged + p->purge_changed;
}

static void log_progress(hr_rebalancer *rb, const hr_rebalance_progress *p)
{
	hr__rb_log_emit(&rb->log, HR_LOG_INFO, "rebalance_progress",
			"step=%s node=%s revision=%" PRIu64 " scanned=%" PRIu64 " moving=%" PRIu64
			" copied=%" PRIu64 " present=%" PRIu64 " gone=%" PRIu64
			" taken_back=%" PRIu64 " skipped=%" PRIu64 " bytes=%" PRIu64
			" purged=%" PRIu64 " keys_per_s=%.1f bytes_per_s=%.0f eta_s=%.1f",
			hr_rebalance_step_name(p->step), p->node, p->revision, p->scanned,
			p->moving, p->copied, p->present, p->gone, p->taken_back, p->skipped,
			p->bytes, p->purged, p->keys_per_s, p->bytes_per_s, p->eta_s);
}

void hr__rb_tick(hr_rebalancer *rb)
{
	uint64_t now = hr__rate_now_ns(), interval_ns;
	hr_rebalance_progress copy;
	int log_now = 0;

	pthread_mutex_lock(&rb->lock);
	rb->p.elapsed_s = (double)(now - rb->t0_ns) / 1e9;
	if (now - rb->mark_ns >= RATE_WINDOW_NS) {
		double dt = (double)(now - rb->mark_ns) / 1e9;
		uint64_t done = keys_done(&rb->p);
		uint64_t left = rb->p.node_keys - rb->p.node_keys_done;

		rb->p.keys_per_s = (double)(done - rb->mark_done) / dt;
		rb->p.bytes_per_s = (double)(rb->p.bytes - rb->mark_bytes) / dt;
		rb->p.eta_s = rb->p.step != HR_REBALANCE_STEP_COPY ? -1 :
			      rb->p.keys_per_s > 0 ? (double)left / rb->p.keys_per_s : -1;
		rb->mark_ns = now;
		rb->mark_done = done;
		rb->mark_bytes = rb->p.bytes;
	}
	interval_ns = (uint64_t)rb->cfg.progress_interval_ms * 1000000u;
	if (interval_ns && now - rb->last_log_ns >= interval_ns) {
		rb->last_log_ns = now;
		copy = rb->p;
		log_now = 1;
	}
	pthread_mutex_unlock(&rb->lock);
	if (log_now)
		log_progress(rb, &copy);
}

/* The size of the first 1.1 struct, which ended at `promoted`. */
#define PROGRESS_FIRST_SIZE \
	(offsetof(hr_rebalance_progress, promoted) + sizeof(((hr_rebalance_progress *)0)->promoted))

int hr_rebalancer_progress_size(hr_rebalancer *rb, hr_rebalance_progress *out, size_t size,
				hr_error *err)
{
	hr_rebalance_progress p;

	if (!rb || !out || size < PROGRESS_FIRST_SIZE)
		return hr__rb_error_set(err, HR_EINVAL, "progress: %s",
				     !rb ? "rebalancer is NULL" : !out ? "out is NULL" :
				     "size below the first release's struct");
	pthread_mutex_lock(&rb->lock);
	p = rb->p;
	if (rb->busy)
		p.elapsed_s = (double)(hr__rate_now_ns() - rb->t0_ns) / 1e9;
	pthread_mutex_unlock(&rb->lock);
	/* The caller's struct, however old or new, and not a byte more. */
	memcpy(out, &p, size < sizeof p ? size : sizeof p);
	if (size > sizeof p)
		memset((char *)out + sizeof p, 0, size - sizeof p);
	return 0;
}

int hr__rb_snapshot(hr_rebalancer *rb, hr_rebalance_progress *p, hr__rb_total **totals,
		    size_t *n, uint64_t *runs_ok, uint64_t *runs_failed, hr_error *err)
{
	int rc = 0;

	pthread_mutex_lock(&rb->lock);
	*p = rb->p;
	*n = rb->ntotals;
	*totals = NULL;
	*runs_ok = rb->runs_ok;
	*runs_failed = rb->runs_failed;
	if (*n && !(*totals = malloc(*n * sizeof **totals)))
		rc = hr__rb_error_set(err, HR_ENOMEM, "out of memory (totals of %zu nodes)", *n);
	else if (*n)
		memcpy(*totals, rb->totals, *n * sizeof **totals);
	pthread_mutex_unlock(&rb->lock);
	return rc;
}

void hr__rb_counts(hr_rebalancer *rb, uint64_t out[HR__RB_COUNTS])
{
	pthread_mutex_lock(&rb->lock);
	for (int c = 0; c < HR__RB_COUNTS; c++)
		out[c] = *progress_field(&rb->p, (hr__rb_count)c);
	pthread_mutex_unlock(&rb->lock);
}

void hr__rb_log_node(hr_rebalancer *rb, const char *event, const hr_node *node,
		     const uint64_t before[HR__RB_COUNTS], size_t passes, double seconds)
{
	uint64_t d[HR__RB_COUNTS];

	hr__rb_counts(rb, d);
	for (int c = 0; c < HR__RB_COUNTS; c++)
		d[c] -= before[c];
	if (!strcmp(event, "rebalance_purged"))
		hr__rb_log_emit(&rb->log, HR_LOG_INFO, event,
				"node=%s scanned=%" PRIu64 " stale=%" PRIu64 " deleted=%" PRIu64
				" changed=%" PRIu64 " skipped=%" PRIu64 " seconds=%.3f",
				node->id, d[HR__RB_PURGE_SCANNED], d[HR__RB_PURGE_STALE],
				d[HR__RB_PURGED], d[HR__RB_PURGE_CHANGED], d[HR__RB_SKIPPED], seconds);
	else
		hr__rb_log_emit(&rb->log, HR_LOG_INFO, event,
				"node=%s scanned=%" PRIu64 " moving=%" PRIu64 " copied=%" PRIu64
				" present=%" PRIu64 " gone=%" PRIu64 " taken_back=%" PRIu64
				" skipped=%" PRIu64 " bytes=%" PRIu64 " passes=%zu seconds=%.3f"
				" keys_per_s=%.1f",
				node->id, d[HR__RB_SCANNED], d[HR__RB_MOVING], d[HR__RB_COPIED],
				d[HR__RB_PRESENT], d[HR__RB_GONE], d[HR__RB_TAKEN_BACK],
				d[HR__RB_SKIPPED], d[HR__RB_BYTES], passes, seconds,
				seconds > 0 ? (double)(d[HR__RB_COPIED] + d[HR__RB_PRESENT] +
						    d[HR__RB_GONE] + d[HR__RB_SKIPPED]) / seconds :
					   0.0);
}

void hr__rb_skip(hr_rebalancer *rb, const hr_node *node, const hr_node *dest,
		 const void *key, size_t len, hr_error *err)
{
	hr__rb_add(rb, HR__RB_SKIPPED, 1);
	if (rb->skipped_named < HR__RB_SKIPPED_NAMED)
		/* The key last: a key too long for the line is cut there, its
		 * quote closed, and no other field is lost. */
		hr__rb_log_emit(&rb->log, HR_LOG_WARN, "rebalance_skipped",
				"node=%s addr=%s dest=%s backend=%s len=%zu msg=%s key=%.*s",
				node->id, node->addr, dest ? dest->id : "-", rb->backend_name, len,
				err->message, (int)len, (const char *)key);
	else if (rb->skipped_named == HR__RB_SKIPPED_NAMED)
		hr__rb_log_emit(&rb->log, HR_LOG_WARN, "rebalance_skipped_more",
				"named=%d msg=%s", HR__RB_SKIPPED_NAMED,
				"more keys the backend cannot move: counted (skipped), not named");
	rb->skipped_named++;
	*err = (hr_error){ 0 };
}

int hr__rb_backend_failed(hr_rebalancer *rb, const hr_node *node, const char *role, int rc,
			  hr_error *err)
{
	char msg[HR_ERROR_MSG_MAX];

	snprintf(rb->failed_node, sizeof rb->failed_node, "%s", node->id);
	snprintf(rb->failed_addr, sizeof rb->failed_addr, "%s", node->addr);
	rb->failed_role = role;
	snprintf(msg, sizeof msg, "%s", err->message);
	return hr__rb_error_set(err, rc, "%s %.100s: %s", role, node->id, msg);
}
