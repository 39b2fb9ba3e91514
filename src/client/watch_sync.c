/* SPDX-License-Identifier: MIT */
/*
 * watch_sync.c - what the watcher knows of etcd's records (watch_sync.h):
 * the set they make, kept by a full sync and by each revision's events;
 * the ring built from it and published; the revision it is confirmed
 * current at, and the warning when it cannot be; other data found where
 * the ring's was.  watch.c runs the stream and the loop around this.
 */
#include "watch_sync.h"

#include "clock.h"
#include "error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- confirmation and staleness ------------------------------------------ */

/* Restarts the stale timer at `revision` (0: only liveness); the time
 * since the last confirmation into *since, the revision confirmed into
 * *confirmed. */
static void confirm_at(hr__watcher *w, uint64_t revision, int64_t *since,
		       uint64_t *confirmed)
{
	int64_t now = hr__now_ms();

	pthread_mutex_lock(&w->mu);
	/* Since the stale warning's own clock, so that a confirmation
	 * deferred past hr__watch_alive() still says how long it lasted. */
	*since = now - (w->stale_warned ? w->stale_since_ms : w->last_confirm_ms);
	w->last_confirm_ms = now;
	if (revision > w->confirmed_revision)
		w->confirmed_revision = revision;
	*confirmed = w->confirmed_revision;
	pthread_mutex_unlock(&w->mu);
}

/* Takes a stale warning back, once the ring is current again. */
static void recovered(hr__watcher *w, int64_t since, uint64_t revision)
{
	if (!w->stale_warned || w->resync_due)
		return;
	w->stale_warned = 0;
	hr__log_emit(w->o.log, HR_LOG_INFO, "stale_recovered",
		     "unconfirmed_ms=%" PRId64 " revision=%" PRIu64 " endpoint=%s",
		     since, revision, hr__watch_endpoint(w));
}

void hr__watch_confirm(hr__watcher *w, uint64_t revision)
{
	int64_t since;
	uint64_t confirmed;

	confirm_at(w, revision, &since, &confirmed);
	recovered(w, since, confirmed);
}

void hr__watch_alive(hr__watcher *w)
{
	int64_t since;
	uint64_t confirmed;

	confirm_at(w, 0, &since, &confirmed);
}

/* Runs often (loop iterations, transfer progress): warns while the ring
 * cannot be confirmed current. */
void hr__watch_check_stale(hr__watcher *w)
{
	int64_t now = hr__now_ms(), since;
	uint64_t rev;

	pthread_mutex_lock(&w->mu);
	since = now - w->last_confirm_ms;
	rev = w->confirmed_revision;
	pthread_mutex_unlock(&w->mu);
	if (since < w->o.stale_warn_ms)
		return;
	if (w->stale_warned && now - w->last_stale_log_ms < w->o.stale_warn_ms)
		return;
	if (!w->stale_warned)
		w->stale_since_ms = now - since;
	w->stale_warned = 1;
	w->last_stale_log_ms = now;
	hr__log_emit(w->o.log, HR_LOG_WARN, "stale",
		     "unconfirmed_ms=%" PRId64 " revision=%" PRIu64 " endpoint=%s"
		     " msg=\"ring cannot be confirmed current\"",
		     since, rev, hr__watch_endpoint(w));
}

void hr__watch_tick(void *arg)
{
	hr__watch_check_stale(arg);
}

void hr__watch_set_error(hr__watcher *w, const hr_error *err)
{
	pthread_mutex_lock(&w->mu);
	w->last_err = *err;
	if (!w->first_done && (err->code == HR_EAUTH || err->code == HR_EPERM ||
			       err->code == HR_ETLS || err->code == HR_ELIMIT)) {
		w->first_fatal = err->code;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
}

/* ---- building and publishing rings -------------------------------------- */

/* A record the ring cannot hold (a limit): a bad record while it lasts. */
static void log_left_out(void *ud, const hr__member *m, const hr_error *why)
{
	hr__watcher *w = ud;

	hr__log_emit(w->o.log, HR_LOG_WARN, "bad_record",
		     "key=%s%s mod_revision=%" PRId64 " msg=%s", w->prefix,
		     m->rec.id, m->mod_revision, why->message);
}

/* Builds the ring of the current set at `revision`, confirms the revision
 * (before publishing: whoever sees the new ring sees a confirmed revision
 * at least as new) and publishes the ring unless nothing that affects
 * placement changed: the first ring after etcd's data was replaced is
 * published whatever its digest, for its new epoch.  On failure the
 * previous ring stays and the revision is not confirmed, so the lag shows
 * as staleness; the error is returned.  *build_us (may be NULL) gets the
 * time from the build's start to the publication (or to the decision not
 * to publish): the ring work, what the log's build_ms reports. */
static int rebuild(hr__watcher *w, uint64_t revision, int64_t *build_us,
		   hr_error *err)
{
	int64_t t0 = hr__now_us(), spent, since;
	uint64_t confirmed;
	hr_ring *ring = NULL, *old = hr__subs_current(w->o.subs), *prev;
	bool unchanged = false;
	/* Derived from the ring in use: only what changed is hashed again. */
	int rc = hr__nodeset_derive(&w->set, old, &w->o.ring, revision,
				    log_left_out, w, &ring, err);

	if (!rc) {
		unchanged = w->synced_once && !w->replaced &&
			    hr_ring_digest(old) == hr_ring_digest(ring);
		/* On success the lock is held until the announcement. */
		if (!unchanged && hr__subs_prepare(w->o.subs, ring))
			rc = hr__error_set(err, HR_ENOMEM, "out of memory publishing the ring");
	}
	if (rc) {
		/* Keep serving the previous ring; say loudly that it lags. */
		hr__log_emit(w->o.log, HR_LOG_ERROR, "build_failed",
			     "revision=%" PRIu64 " code=%d msg=%s", revision, rc,
			     err->message);
		hr_ring_release(old);
		return rc;
	}
	/* A resync ends here: the ring is current once it is published. */
	w->resync_due = 0;
	confirm_at(w, revision, &since, &confirmed);
	if (unchanged) {
		/* The ring in use is current at this revision too. */
		hr__subs_confirmed(w->o.subs, revision);
		hr_ring_release(ring);
		hr_ring_release(old);
		spent = hr__now_us() - t0;
		if (build_us)
			*build_us = spent;
		hr__log_emit(w->o.log, HR_LOG_DEBUG, "ring_unchanged",
			     "revision=%" PRIu64 " build_ms=%.3f", revision,
			     (double)spent / 1000.0);
		recovered(w, since, confirmed);
		return 0;
	}
	w->replaced = 0;
	/* Counted before any client can see it: a status that shows the new
	 * ring shows it counted (the swap's grace period can be long). */
	pthread_mutex_lock(&w->mu);
	w->rings_published++;
	pthread_mutex_unlock(&w->mu);
	prev = hr__subs_swap(w->o.subs);
	spent = hr__now_us() - t0;
	if (build_us)
		*build_us = spent;
	hr__subs_announce(w->o.subs, prev, (double)spent / 1000.0);
	hr_ring_release(old);
	/* After event=ring: the warning is taken back by the ring itself. */
	recovered(w, since, confirmed);
	return 0;
}

/* Applies one key's new value (or deletion) to the set. */
static void apply_kv(hr__watcher *w, const hr__kv *kv)
{
	const char *id = kv->key + w->prefix_len;
	size_t id_len = kv->key_len - w->prefix_len;

	if (kv->key_len < w->prefix_len || memcmp(kv->key, w->prefix, w->prefix_len))
		return; /* not ours (cannot happen with a prefix range) */
	if (kv->deleted) {
		if (memchr(id, '\0', id_len) == NULL)
			hr__nodeset_remove(&w->set, id);
		return;
	}

	hr__record rec;
	hr__tokens tokens;
	hr_error err = { 0 };
	/* Only the tokens placement reads a record's tokens. */
	int rc = hr__record_parse_tokens(id, id_len, kv->value, kv->value_len, &rec,
					 w->o.ring.placement == HR_PLACEMENT_TOKENS ?
					 &tokens : NULL, &err);

	if (w->o.ring.placement != HR_PLACEMENT_TOKENS)
		tokens = (hr__tokens){ 0 };
	if (!rc && hr__nodeset_put_tokens(&w->set, &rec, &tokens, kv->create_revision,
					  kv->mod_revision))
		rc = hr__error_set(&err, HR_ENOMEM, "out of memory");
	if (rc) {
		/* The ring follows etcd's records alone: a key whose value
		 * turned bad leaves the ring. */
		if (memchr(id, '\0', id_len) == NULL)
			hr__nodeset_remove(&w->set, id);
		hr__log_emit(w->o.log, HR_LOG_WARN, "bad_record",
			     "key=%.*s mod_revision=%" PRId64 " msg=%s",
			     (int)(kv->key_len < 300 ? kv->key_len : 300), kv->key,
			     kv->mod_revision, err.message);
		hr__record_clear(&rec);
		hr__tokens_clear(&tokens);
	}
}

/*
 * etcd holds other data than the ring followed: wiped and rebuilt, or
 * restored from a backup.  Seen as another cluster id (its revision may even
 * be ahead of ours, so revisions alone cannot tell) or, when the cluster id
 * stayed (a data dir wiped under the same configuration), as a linearizable
 * read below the revision the ring reflects.  Logged once, whoever sees it
 * first; the full sync that follows publishes the new data's ring even if
 * its membership is the same, so that everyone sees the new epoch.
 */
void hr__watch_data_replaced(hr__watcher *w, int by_cluster_id,
			     uint64_t cluster_id, int64_t revision)
{
	uint64_t known, confirmed;

	if (w->replaced)
		return;
	w->replaced = 1;
	pthread_mutex_lock(&w->mu);
	known = w->cluster_id;
	confirmed = w->confirmed_revision;
	pthread_mutex_unlock(&w->mu);
	hr__log_emit(w->o.log, HR_LOG_ERROR, "cluster_replaced",
		     "detected_by=%s cluster_id=%016" PRIx64
		     " previous_cluster_id=%016" PRIx64 " revision=%" PRId64
		     " confirmed_revision=%" PRIu64 " endpoint=%s msg=%s",
		     by_cluster_id ? "cluster_id" : "revision", cluster_id, known,
		     revision, confirmed, hr__watch_endpoint(w),
		     by_cluster_id ?
		     "etcd answers with another cluster id: its data was wiped"
		     " and rebuilt or restored; resyncing" :
		     "etcd's revision went below the ring's: its data was wiped"
		     " or restored; resyncing");
}

/* Whether a reply's cluster id shows another cluster than the last full
 * sync's (0: unknown, no evidence either way). */
int hr__watch_other_cluster(hr__watcher *w, uint64_t id)
{
	uint64_t known;

	pthread_mutex_lock(&w->mu);
	known = w->cluster_id;
	pthread_mutex_unlock(&w->mu);
	return id && known && id != known;
}

/* Whether a linearizable read at `revision` is below what the ring
 * reflects. */
static int revision_backwards(hr__watcher *w, int64_t revision)
{
	uint64_t confirmed;

	pthread_mutex_lock(&w->mu);
	confirmed = w->confirmed_revision;
	pthread_mutex_unlock(&w->mu);
	return (uint64_t)revision < confirmed;
}

void hr__watch_apply_batch(hr__watcher *w, const hr__kv *events, size_t n)
{
	hr_error err = { 0 };
	int64_t last = 0;

	for (size_t i = 0; i < n; i++) {
		/* Replays and duplicate deliveries: never apply twice. */
		if (events[i].mod_revision < w->next_rev)
			continue;
		apply_kv(w, &events[i]);
		last = events[i].mod_revision;
	}
	if (!last)
		return;
	w->next_rev = last + 1;
	rebuild(w, (uint64_t)last, NULL, &err);
}

/* ---- full sync ------------------------------------------------------------ */

/* A full sync's range, page by page: the records go into the new set as
 * they come, and with them, on the stream's thread, their points. */
struct sync_pages {
	hr__watcher *w;
	bool first;		/* no page yet */
	size_t keys;
	int64_t records_us;
};

static int take_page(void *userdata, hr__kv *kvs, size_t n, size_t total, hr_error *err)
{
	struct sync_pages *sp = userdata;
	hr__watcher *w = sp->w;
	int64_t t0 = hr__now_us();

	(void)err;
	if (sp->first) {
		hr_ring *cur = hr__subs_current(w->o.subs);

		sp->first = false;
		/* Only a ring built from nothing places every point: a ring
		 * that follows another with nodes derives what changed. */
		if (!hr_ring_node_count(cur))
			w->set.stream = hr__ring_stream_open(cur, &w->o.ring, total);
		hr_ring_release(cur);
	}
	for (size_t i = 0; i < n; i++)
		apply_kv(w, &kvs[i]);
	hr__kvs_free(kvs, n);
	sp->keys += n;
	sp->records_us += hr__now_us() - t0;
	return 0;
}

int hr__watch_full_sync(hr__watcher *w)
{
	struct sync_pages sp = { .w = w, .first = true };
	int64_t rev = 0;
	hr_error err = { 0 };
	hr__nodeset old;
	int64_t t_list = hr__now_us(), build_us = 0;
	int rc;

	/* The new set is built off to the side, then replaces the old one
	 * whole: this also drops nodes deleted while we were away. */
	old = w->set;
	memset(&w->set, 0, sizeof w->set);
	rc = hr__etcd_list_pages(w->etcd, w->prefix, w->o.page_size, HR_NODES_MAX,
				 take_page, &sp, &rev, &err);
	/* The range's pages: etcd's time, the replies' parsing and the
	 * records (records_ms of it). */
	t_list = hr__now_us() - t_list;
	if (rc) {
		hr__nodeset_clear(&w->set);
		w->set = old;
		if (rc != HR_ECLOSED) {
			hr__log_emit(w->o.log, HR_LOG_WARN, "sync_failed",
				     "endpoint=%s code=%d msg=%s", hr__watch_endpoint(w), rc,
				     err.message);
			hr__watch_set_error(w, &err);
		}
		return rc;
	}
	hr__nodeset_clear(&old);
	uint64_t id = hr__etcd_cluster_id(w->etcd);
	if (hr__watch_other_cluster(w, id))
		hr__watch_data_replaced(w, 1, id, rev);
	else if (revision_backwards(w, rev))
		hr__watch_data_replaced(w, 0, id, rev);
	/* From now on this is the cluster, and this its newest revision. */
	pthread_mutex_lock(&w->mu);
	if (w->replaced)
		w->confirmed_revision = 0;
	w->cluster_id = id;
	pthread_mutex_unlock(&w->mu);

	w->next_rev = rev + 1;
	rc = rebuild(w, (uint64_t)rev, &build_us, &err);
	if (rc && !w->synced_once) {
		/* No ring to open with: hr_client_open() returns the error
		 * rather than an empty ring (a blocking open gives up; with
		 * open_nonblocking the watcher retries). */
		pthread_mutex_lock(&w->mu);
		w->last_err = err;
		if (!w->first_done) {
			w->first_fatal = rc;
			pthread_cond_broadcast(&w->cv);
		}
		pthread_mutex_unlock(&w->mu);
		return rc;
	}
	if (w->synced_once) {
		pthread_mutex_lock(&w->mu);
		w->resyncs++;
		pthread_mutex_unlock(&w->mu);
	}
	w->synced_once = 1;
	hr__log_emit(w->o.log, HR_LOG_INFO, "synced",
		     "revision=%" PRId64 " keys=%zu nodes=%zu endpoint=%s"
		     " list_ms=%.3f records_ms=%.3f build_ms=%.3f", rev, sp.keys,
		     w->set.n, hr__watch_endpoint(w), (double)t_list / 1000.0,
		     (double)sp.records_us / 1000.0, (double)build_us / 1000.0);
	pthread_mutex_lock(&w->mu);
	snprintf(w->endpoint, sizeof w->endpoint, "%s", hr__watch_endpoint(w));
	if (!w->first_done) {
		w->first_done = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return 0;
}
