/* SPDX-License-Identifier: MIT */
/* rebalance.c - the rebalancer: its object, the start and end of each
 * call, and the whole handoff of a run (see rebalance_impl.h and
 * hashring/rebalance.h). */
#define _GNU_SOURCE
#include "rebalance_impl.h"


#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The waits look at the cancel flag this often. */
#define WAIT_SLICE_MS 100
/* A wait that has every live client but too few of them reads the acks
 * again this often (each read is a connection to etcd). */
#define CLIENTS_POLL_MS 500

/* ---- the object ---------------------------------------------------------- */

int hr_rebalancer_new(const hr_rebalance_backend *backend, const hr_rebalance_config *cfg,
		      hr_rebalancer **out, hr_error *err)
{
	hr_rebalancer *rb;
	int rc;

	if (!out)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalancer_new: out is NULL");
	*out = NULL;
	rb = calloc(1, sizeof *rb);
	if (!rb)
		return hr__rb_error_set(err, HR_ENOMEM, "out of memory (rebalancer)");
	rc = hr__rebalance_backend_read(backend, &rb->be, err);
	if (!rc)
		rc = hr__rebalance_config_read(cfg, &rb->cfg, err);
	if (!rc && (!(rb->ack_prefix = strdup(rb->cfg.ack_prefix)) ||
		    !(rb->backend_name = strdup(rb->be.name ? rb->be.name : "store"))))
		rc = hr__rb_error_set(err, HR_ENOMEM, "out of memory (rebalancer)");
	if (rc) {
		free(rb->ack_prefix);
		free(rb);
		return rc;
	}
	rb->be.name = rb->backend_name;
	rb->cfg.ack_prefix = rb->ack_prefix;
	rb->log = (hr__rb_log){ rb->cfg.log, rb->cfg.log_userdata, rb->cfg.log_level };
	pthread_mutex_init(&rb->lock, NULL);
	rb->p.eta_s = -1;
	*out = rb;
	return 0;
}

void hr_rebalancer_free(hr_rebalancer *rb)
{
	if (!rb)
		return;
	if (rb->be.close)
		rb->be.close(rb->be.userdata);
	pthread_mutex_destroy(&rb->lock);
	free(rb->totals);
	free(rb->ack_prefix);
	free(rb->backend_name);
	free(rb);
}

void hr_rebalancer_cancel(hr_rebalancer *rb)
{
	if (rb)
		atomic_store(&rb->cancelled, 1);
}

/* ---- steps ---------------------------------------------------------------- */

/* Starts a public call: the figures from 0, the rate cap full. */
static void step_begin(hr_rebalancer *rb, const char *what, const hr_ring *ring,
		       const char *node_id)
{
	uint64_t now = hr__rate_now_ns();

	pthread_mutex_lock(&rb->lock);
	memset(&rb->p, 0, sizeof rb->p);
	rb->p.eta_s = -1;
	rb->p.revision = ring ? hr_ring_revision(ring) : 0;
	rb->cur = rb->ntotals;
	rb->busy = 1;
	rb->t0_ns = rb->mark_ns = rb->last_log_ns = now;
	rb->mark_done = rb->mark_bytes = 0;
	pthread_mutex_unlock(&rb->lock);
	rb->skipped_named = 0;
	rb->failed_role = NULL;
	hr__rate_init(&rb->rate, rb->cfg.keys_per_s, rb->cfg.bytes_per_s, now);
	snprintf(rb->target, sizeof rb->target, "%s", node_id ? node_id : "all");
	hr__rb_log_emit(&rb->log, HR_LOG_INFO, "rebalance_start",
			"step=%s node=%s revision=%" PRIu64 " keys_cap=%.0f bytes_cap=%.0f",
			what, rb->target, ring ? hr_ring_revision(ring) : 0,
			rb->cfg.keys_per_s, rb->cfg.bytes_per_s);
}

/* Ends a public call with `rc`: the step done or failed, its line. */
static int step_end(hr_rebalancer *rb, const char *what, int rc, hr_error *err)
{
	hr_rebalance_progress p;

	pthread_mutex_lock(&rb->lock);
	rb->p.step = rc ? HR_REBALANCE_STEP_FAILED : HR_REBALANCE_STEP_DONE;
	rb->p.error = rc;
	rb->p.elapsed_s = (double)(hr__rate_now_ns() - rb->t0_ns) / 1e9;
	rb->p.keys_per_s = rb->p.bytes_per_s = 0;
	rb->p.eta_s = -1;
	rb->busy = 0;
	*(rc ? &rb->runs_failed : &rb->runs_ok) += 1;
	p = rb->p;
	pthread_mutex_unlock(&rb->lock);
	if (rc && rb->failed_role)
		/* A backend call failed: the node it was about, which may be
		 * a destination while p.node is the source. */
		hr__rb_log_emit(&rb->log, HR_LOG_ERROR, "rebalance_failed",
				"step=%s node=%s addr=%s role=%s backend=%s source=%s revision=%" PRIu64
				" code=%d error=%s msg=%s", what, rb->failed_node, rb->failed_addr,
				rb->failed_role, rb->backend_name, p.node[0] ? p.node : "-", p.revision,
				rc, hr_strerror(rc), err && err->code == rc ? err->message : "");
	else if (rc)
		hr__rb_log_emit(&rb->log, HR_LOG_ERROR, "rebalance_failed",
				"step=%s node=%s revision=%" PRIu64 " code=%d error=%s msg=%s", what,
				p.node[0] ? p.node : rb->target, p.revision, rc, hr_strerror(rc),
				err && err->code == rc ? err->message : "");
	else
		hr__rb_log_emit(&rb->log, p.skipped ? HR_LOG_WARN : HR_LOG_INFO, "rebalance_done",
				"step=%s node=%s revision=%" PRIu64 " nodes=%zu scanned=%" PRIu64
				" moving=%" PRIu64 " expected=%.0f copied=%" PRIu64 " present=%" PRIu64
				" gone=%" PRIu64 " taken_back=%" PRIu64 " skipped=%" PRIu64
				" bytes=%" PRIu64 " purged=%" PRIu64 " seconds=%.3f",
				what, rb->target, p.revision, p.nodes_done, p.scanned, p.moving, p.expected,
				p.copied, p.present, p.gone, p.taken_back, p.skipped, p.bytes, p.purged,
				p.elapsed_s);
	return rc;
}

/* The node `node_id` of `ring`, which must be warming or draining. */
static int find_handoff(const hr_ring *ring, const char *node_id, const hr_node **out,
			hr_error *err)
{
	const hr_node *n;

	*out = NULL;
	if (!node_id)
		return 0;
	n = hr_ring_find(ring, node_id);
	if (!n)
		return hr__rb_error_set(err, HR_ENOTFOUND,
					"node %.200s is not in the ring (revision %" PRIu64 ")",
					node_id, hr_ring_revision(ring));
	if (n->state == HR_STATE_ACTIVE)
		return hr__rb_error_set(err, HR_EINVAL,
					"node %.200s is active, not warming or draining: nothing to"
					" hand off", node_id);
	*out = n;
	return 0;
}

/* Takes the lock on steps: one public call at a time. */
static int claim(hr_rebalancer *rb, const char *fn, hr_error *err)
{
	int busy;

	pthread_mutex_lock(&rb->lock);
	busy = rb->busy;
	rb->busy = 1;
	pthread_mutex_unlock(&rb->lock);
	if (busy)
		return hr__rb_error_set(err, HR_EINVAL, "%s: another step of this rebalancer is running",
					fn);
	return 0;
}

int hr_rebalancer_copy(hr_rebalancer *rb, const hr_ring *ring, const char *node_id,
		       hr_error *err)
{
	hr_error local = { 0 };
	const hr_node *only;
	int rc;

	if (!err)
		err = &local; /* the failure's line gives the message */
	if (!rb || !ring)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalancer_copy: %s is NULL",
					rb ? "ring" : "rebalancer");
	rc = claim(rb, "hr_rebalancer_copy", err);
	if (rc)
		return rc;
	step_begin(rb, "copy", ring, node_id);
	rc = find_handoff(ring, node_id, &only, err);
	if (!rc)
		rc = hr__rb_check_cancel(rb, "before the copy", err);
	if (!rc)
		rc = hr__rb_copy_ring(rb, ring, only, err);
	return step_end(rb, "copy", rc, err);
}

int hr_rebalancer_purge(hr_rebalancer *rb, const hr_ring *ring, hr_error *err)
{
	hr_error local = { 0 };
	int rc;

	if (!err)
		err = &local;
	if (!rb || !ring)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalancer_purge: %s is NULL",
					rb ? "ring" : "rebalancer");
	if (!rb->be.remove)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalancer_purge: the backend has no remove");
	rc = claim(rb, "hr_rebalancer_purge", err);
	if (rc)
		return rc;
	step_begin(rb, "purge", ring, NULL);
	rc = hr__rb_check_cancel(rb, "before the purge", err);
	if (!rc)
		rc = hr__rb_purge_ring(rb, ring, err);
	return step_end(rb, "purge", rc, err);
}

/* ---- the run --------------------------------------------------------------- */

/* Tells the run's caller that `step` ended well. */
static void step_done(hr_rebalancer *rb, hr_rebalance_step step)
{
	hr_rebalance_progress p;

	if (!rb->cfg.on_step)
		return;
	hr_rebalancer_progress(rb, &p, NULL);
	rb->cfg.on_step(rb->cfg.on_step_userdata, step, &p);
}

/* Sleeps until `until_ns`, in slices so that a cancel is seen. */
static int nap(hr_rebalancer *rb, uint64_t until_ns, const char *where, hr_error *err)
{
	for (;;) {
		uint64_t now = hr__rate_now_ns(), ns;
		int rc = hr__rb_check_cancel(rb, where, err);

		if (rc || now >= until_ns)
			return rc;
		ns = until_ns - now;
		if (ns > WAIT_SLICE_MS * 1000000ull)
			ns = WAIT_SLICE_MS * 1000000ull;
		nanosleep(&(struct timespec){ 0, (long)ns }, NULL);
	}
}

/* "no live client acknowledged", "1 live client acknowledged", ... */
static int too_few(hr_rebalancer *rb, size_t n, hr_error *err)
{
	char count[48];

	if (n)
		snprintf(count, sizeof count, "%zu live client%s", n, n == 1 ? "" : "s");
	return hr__rb_error_set(err, HR_ETIMEDOUT,
				"%s acknowledged under %.200s within %d ms (at least %zu required)",
				n ? count : "no live client", rb->ack_prefix, rb->cfg.wait_timeout_ms,
				rb->cfg.min_clients);
}

/* Waits until every live client acknowledges the newest change of the
 * records, and at least min_clients of them live, in slices so that a
 * cancel is seen.  (Not the revision of the client's ring: that of a full
 * sync is etcd's at the time, which the acks themselves move past the
 * last change of a record.) */
static int wait_clients(hr_rebalancer *rb, const hr_etcd_config *etcd, hr_error *err)
{
	hr_acks *last = NULL;
	uint64_t revision, end_ns;
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&rb->lock);
	rb->p.step = HR_REBALANCE_STEP_WAIT;
	rb->p.clients = 0;
	pthread_mutex_unlock(&rb->lock);
	rc = hr_acks_new(etcd, rb->ack_prefix, &last, err);
	if (rc)
		return rc;
	revision = hr_acks_ring_revision(last);
	if (!revision)
		revision = 1;
	hr_acks_free(last);
	end_ns = hr__rate_now_ns() + (uint64_t)rb->cfg.wait_timeout_ms * 1000000u;
	for (;;) {
		uint64_t now = hr__rate_now_ns();
		int slice = now >= end_ns ? 0 : (int)((end_ns - now) / 1000000u);

		if (slice > WAIT_SLICE_MS)
			slice = WAIT_SLICE_MS;
		last = NULL;
		rc = hr_acks_wait(etcd, rb->ack_prefix, revision, slice, &last, err);
		n = hr_acks_count(last);
		hr_acks_free(last);
		pthread_mutex_lock(&rb->lock);
		rb->p.clients = n; /* live so far: the progress of the wait */
		pthread_mutex_unlock(&rb->lock);
		if (rc == 0 && n >= rb->cfg.min_clients)
			break;
		if (rc == 0) {
			/* Every live client is there, too few of them: more may
			 * come within the time.  hr_acks_wait() returned at once,
			 * so wait before asking etcd again. */
			rc = too_few(rb, n, err);
			if (hr__rate_now_ns() < end_ns) {
				uint64_t next = hr__rate_now_ns() + CLIENTS_POLL_MS * 1000000ull;
				int c = nap(rb, next < end_ns ? next : end_ns,
					    "while waiting for the clients' acks", err);

				if (c)
					return c;
			}
		}
		if (rc != HR_ETIMEDOUT || hr__rate_now_ns() >= end_ns)
			break;
		rc = hr__rb_check_cancel(rb, "while waiting for the clients' acks", err);
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
	pthread_mutex_lock(&rb->lock);
	rb->p.acked_revision = revision;
	pthread_mutex_unlock(&rb->lock);
	hr__rb_log_emit(&rb->log, n ? HR_LOG_INFO : HR_LOG_WARN, "rebalance_acked",
			"revision=%" PRIu64 " clients=%zu ack_prefix=%s", revision, n,
			rb->ack_prefix);
	step_done(rb, HR_REBALANCE_STEP_WAIT);
	return 0;
}

static int warming(const hr_node *n, const hr_node *only)
{
	return n->state == HR_STATE_WARMING && (!only || !strcmp(n->id, only->id));
}

/* Puts the warming nodes (or `only`) to active, then waits until the
 * client's ring has them so; that ring in *out. */
static int promote(hr_rebalancer *rb, hr_client *client, const hr_etcd_config *etcd,
		   const hr_ring *ring, const hr_node *only, hr_ring **out, hr_error *err)
{
	uint64_t end_ns = hr__rate_now_ns() + (uint64_t)rb->cfg.wait_timeout_ms * 1000000u;
	size_t promoted = 0;
	int rc;

	pthread_mutex_lock(&rb->lock);
	rb->p.step = HR_REBALANCE_STEP_PROMOTE;
	pthread_mutex_unlock(&rb->lock);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *n = hr_ring_node(ring, i);
		hr_record_update upd;

		if (!warming(n, only))
			continue;
		hr_record_update_init(&upd);
		upd.fields = HR_UPDATE_STATE;
		upd.state = HR_STATE_ACTIVE;
		rc = hr_node_update(etcd, n->id, &upd, err);
		if (rc)
			return rc;
		promoted++;
	}
	for (;;) {
		hr_ring *now = hr_client_ring(client);
		size_t still = 0;

		for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
			const hr_node *n = hr_ring_node(ring, i), *m;

			if (warming(n, only) && (m = hr_ring_find(now, n->id)) &&
			    m->state == HR_STATE_WARMING)
				still++;
		}
		if (!still) {
			for (size_t i = 0; i < hr_ring_node_count(ring); i++)
				if (warming(hr_ring_node(ring, i), only))
					hr__rb_log_emit(&rb->log, HR_LOG_INFO, "rebalance_promoted",
							"node=%s revision=%" PRIu64,
							hr_ring_node(ring, i)->id, hr_ring_revision(now));
			pthread_mutex_lock(&rb->lock);
			rb->p.promoted = promoted;
			rb->p.revision = hr_ring_revision(now);
			pthread_mutex_unlock(&rb->lock);
			step_done(rb, HR_REBALANCE_STEP_PROMOTE);
			*out = now;
			return 0;
		}
		hr_ring_release(now);
		rc = hr__rb_check_cancel(rb, "while waiting for the promoted ring", err);
		if (rc)
			return rc;
		if (hr__rate_now_ns() > end_ns)
			return hr__rb_error_set(err, HR_ETIMEDOUT,
						"%zu promoted nodes still warming in the"
						" client's ring after %d ms", promoted,
						rb->cfg.wait_timeout_ms);
		usleep(20000);
	}
}

static int run(hr_rebalancer *rb, hr_client *client, const hr_etcd_config *etcd,
	       const hr_ring *ring, const char *node_id, hr_error *err)
{
	hr_ring *after = NULL, *now;
	const hr_node *only;
	int rc, has_warming = 0, changed;

	rc = find_handoff(ring, node_id, &only, err);
	if (!rc)
		rc = wait_clients(rb, etcd, err);
	if (!rc)
		rc = hr__rb_copy_ring(rb, ring, only, err);
	if (!rc)
		step_done(rb, HR_REBALANCE_STEP_COPY);
	if (rc || !(rb->cfg.flags & (HR_REBALANCE_PROMOTE | HR_REBALANCE_PURGE)))
		return rc;
	for (size_t i = 0; i < hr_ring_node_count(ring); i++)
		has_warming |= warming(hr_ring_node(ring, i), only);
	if ((rb->cfg.flags & HR_REBALANCE_PROMOTE) && has_warming) {
		/* A ring that changed since the copy began may move arcs the
		 * copy did not see: promoting would make clients read them from
		 * a node that never got them. */
		now = hr_client_ring(client);
		changed = hr_ring_digest(now) != hr_ring_digest(ring);
		if (changed)
			rc = hr__rb_error_set(err, HR_ECONFLICT,
					      "the ring changed during the copy (revision %"
					      PRIu64 " to %" PRIu64 "): run again to copy its new arcs",
					      hr_ring_revision(ring), hr_ring_revision(now));
		hr_ring_release(now);
		if (!rc)
			rc = promote(rb, client, etcd, ring, only, &after, err);
		if (!rc)
			rc = wait_clients(rb, etcd, err);
	}
	if (!rc && (rb->cfg.flags & HR_REBALANCE_PURGE)) {
		const hr_ring *target = after ? after : ring;

		pthread_mutex_lock(&rb->lock);
		rb->p.revision = hr_ring_revision(target);
		pthread_mutex_unlock(&rb->lock);
		rc = hr__rb_purge_ring(rb, target, err);
		if (!rc)
			step_done(rb, HR_REBALANCE_STEP_PURGE);
	}
	hr_ring_release(after);
	return rc;
}

int hr_rebalancer_run(hr_rebalancer *rb, hr_client *client, const hr_etcd_config *etcd,
		      const char *node_id, hr_error *err)
{
	hr_error local = { 0 };
	hr_ring *ring;
	int rc;

	if (!err)
		err = &local;
	if (!rb || !client || !etcd)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalancer_run: %s is NULL",
					!rb ? "rebalancer" : !client ? "client" : "etcd");
	if ((rb->cfg.flags & HR_REBALANCE_PURGE) && !rb->be.remove)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalancer_run: HR_REBALANCE_PURGE needs the backend's"
					" remove");
	rc = claim(rb, "hr_rebalancer_run", err);
	if (rc)
		return rc;
	ring = hr_client_ring(client);
	step_begin(rb, "run", ring, node_id);
	rc = ring ? hr__rb_check_cancel(rb, "before the run", err) :
		    hr__rb_error_set(err, HR_EEMPTY, "hr_rebalancer_run: the client has no ring yet");
	if (!rc)
		rc = run(rb, client, etcd, ring, node_id, err);
	hr_ring_release(ring);
	return step_end(rb, "run", rc, err);
}
