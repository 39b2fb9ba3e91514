/* watch.c - the watcher thread: list, watch, apply, publish, recover. */
#include "watch_state.h"

#include "clock.h"
#include "error.h"
#include "watch_stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest watch message accepted; with "fragment" on, etcd splits larger
 * responses into pieces well below this. */
#define MAX_LINE_BYTES (64u << 20)
/* A stream that lived this long resets the reconnect backoff. */
#define HEALTHY_STREAM_MS 5000
/* Longest sleep of a backoff wait between two staleness checks. */
#define POLL_SLICE_MS 200
/* Beyond etcd's progress interval plus a quarter (it adds up to 10% of
 * jitter), how late a notification may be before the stream is probed. */
#define PROGRESS_SLACK_MS 500

static int stopping(const hr__watcher *w)
{
	return __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

static const char *endpoint(const hr__watcher *w)
{
	return hr__etcd_endpoint(w->etcd);
}

/* ---- confirmation and staleness ------------------------------------------ */

/* The ring is known to match etcd at `revision` (0: only liveness). */
static void confirm(hr__watcher *w, uint64_t revision)
{
	int64_t now = hr__now_ms(), since;

	pthread_mutex_lock(&w->mu);
	since = now - w->last_confirm_ms;
	w->last_confirm_ms = now;
	if (revision > w->confirmed_revision)
		w->confirmed_revision = revision;
	revision = w->confirmed_revision;
	pthread_mutex_unlock(&w->mu);
	if (w->stale_warned) {
		w->stale_warned = 0;
		hr__log_emit(w->o.log, HR_LOG_INFO, "stale_recovered",
			     "unconfirmed_ms=%" PRId64 " revision=%" PRIu64 " endpoint=%s",
			     since, revision, endpoint(w));
	}
}

/* Runs often (loop iterations, transfer progress): warns while the ring
 * cannot be confirmed current. */
static void check_stale(hr__watcher *w)
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
	w->stale_warned = 1;
	w->last_stale_log_ms = now;
	hr__log_emit(w->o.log, HR_LOG_WARN, "stale",
		     "unconfirmed_ms=%" PRId64 " revision=%" PRIu64 " endpoint=%s"
		     " msg=\"ring cannot be confirmed current\"",
		     since, rev, endpoint(w));
}

void hr__watch_tick(void *arg)
{
	check_stale(arg);
}

static void set_error(hr__watcher *w, const hr_error *err)
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

/* Sleeps `ms` unless stopped, keeping the stale timer running. */
static void sleep_ms(hr__watcher *w, int ms)
{
	int64_t until = hr__now_ms() + ms;

	pthread_mutex_lock(&w->mu);
	while (!stopping(w)) {
		int64_t left = until - hr__now_ms();
		struct timespec ts;
		if (left <= 0)
			break;
		hr__deadline_in(&ts, left < POLL_SLICE_MS ? left : POLL_SLICE_MS);
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		pthread_mutex_unlock(&w->mu);
		check_stale(w);
		hr__subs_flush(w->o.subs);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
}

/* A random number in [0, n] (n >= 0). */
static int rand_upto(hr__watcher *w, int n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (int)(w->rng % (uint64_t)(n + 1));
}

/* Exponential backoff with jitter: sleeps a random time in [d/2, d], then
 * doubles d up to the cap. */
static void backoff(hr__watcher *w)
{
	int d = w->backoff_ms, ms;

	ms = d / 2 + rand_upto(w, d / 2);
	hr__log_emit(w->o.log, HR_LOG_DEBUG, "backoff", "delay_ms=%d", ms);
	sleep_ms(w, ms);
	w->backoff_ms = d * 2 > w->o.backoff_max_ms ? w->o.backoff_max_ms : d * 2;
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
	int64_t t0 = hr__now_us(), spent;
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
	confirm(w, revision);
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
static void data_replaced(hr__watcher *w, int by_cluster_id,
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
		     revision, confirmed, endpoint(w),
		     by_cluster_id ?
		     "etcd answers with another cluster id: its data was wiped"
		     " and rebuilt or restored; resyncing" :
		     "etcd's revision went below the ring's: its data was wiped"
		     " or restored; resyncing");
}

/* Whether a reply's cluster id shows another cluster than the last full
 * sync's (0: unknown, no evidence either way). */
static int other_cluster(hr__watcher *w, uint64_t id)
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

static int full_sync(hr__watcher *w)
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
				     "endpoint=%s code=%d msg=%s", endpoint(w), rc,
				     err.message);
			set_error(w, &err);
		}
		return rc;
	}
	hr__nodeset_clear(&old);
	uint64_t id = hr__etcd_cluster_id(w->etcd);
	if (other_cluster(w, id))
		data_replaced(w, 1, id, rev);
	else if (revision_backwards(w, rev))
		data_replaced(w, 0, id, rev);
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
		     w->set.n, endpoint(w), (double)t_list / 1000.0,
		     (double)sp.records_us / 1000.0, (double)build_us / 1000.0);
	pthread_mutex_lock(&w->mu);
	snprintf(w->endpoint, sizeof w->endpoint, "%s", endpoint(w));
	if (!w->first_done) {
		w->first_done = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* ---- liveness: probes and progress notifications -------------------------- */

/*
 * How long the stream may stay silent before it is probed: the probe
 * interval less this wait's jitter, or, while etcd sends progress
 * notifications, a little more than their interval, but only when a probe
 * sent that late still fails (probe timeout) before the stale warning is
 * due.  A notification proves less than a linearizable probe: a member cut
 * off from the leader still sends them.  Such a member ends the stream
 * itself, as every stream asks for a leader (Grpc-Metadata-hasleader):
 * etcd cancels those streams a few election timeouts after it lost its
 * leader (docs/reliability.md).
 */
static void update_quiet(hr__watcher *w)
{
	int64_t allowed = w->o.probe_interval_ms - w->probe_jitter_ms;
	int64_t gap = w->progress_gap_ms;

	if (gap > 0) {
		int64_t late = gap + gap / 4 + PROGRESS_SLACK_MS;
		if (late > allowed && late + w->probe_timeout_ms <= w->o.stale_warn_ms)
			allowed = late;
	}
	__atomic_store_n(&w->quiet_allowed_ms, allowed, __ATOMIC_RELAXED);
}

/* A new draw of the jitter, for the next wait. */
static void draw_probe_jitter(hr__watcher *w)
{
	w->probe_jitter_ms = rand_upto(w, (int)((int64_t)w->o.probe_interval_ms *
						w->o.probe_jitter_pct / 100));
	update_quiet(w);
}

/* A progress notification arrived (at last_activity_ms).  etcd's interval
 * is the shortest gap between two (or from the stream's creation): it
 * skips a tick that follows events. */
static void note_progress(hr__watcher *w)
{
	int64_t now = w->last_activity_ms, gap = now - w->progress_last_ms;

	if (w->progress_last_ms && gap > 0 &&
	    (!w->progress_gap_ms || gap < w->progress_gap_ms)) {
		w->progress_gap_ms = gap;
		update_quiet(w);
	}
	w->progress_last_ms = now;
}

/* When the silent stream is due for a probe. */
static int64_t probe_due_ms(const hr__watcher *w)
{
	return w->last_activity_ms + __atomic_load_n(&w->quiet_allowed_ms, __ATOMIC_RELAXED);
}

/* ---- the watch stream ----------------------------------------------------- */

static void apply_batch(hr__watcher *w, const hr__kv *events, size_t n)
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

static int take_fragment(hr__watcher *w, hr__wmsg *m)
{
	hr__kv *t = realloc(w->frag, (w->n_frag + m->n_events) * sizeof *t);

	if (!t && w->n_frag + m->n_events)
		return HR_ENOMEM;
	w->frag = t;
	memcpy(w->frag + w->n_frag, m->events, m->n_events * sizeof *t);
	w->n_frag += m->n_events;
	free(m->events);       /* the kvs' buffers now belong to w->frag */
	m->events = NULL;
	m->n_events = 0;
	return 0;
}

static int end_stream(hr__watcher *w, hr__stream_end how)
{
	if (how > w->end)
		w->end = how;
	return 1;
}

static int on_line(void *ud, const char *line, size_t len)
{
	hr__watcher *w = ud;
	hr__wmsg m;
	hr_error err = { 0 };
	int rc;

	w->last_activity_ms = hr__now_ms();
	if (stopping(w))
		return end_stream(w, HR__END_STOP);
	rc = hr__wmsg_parse(line, len, &m, &err);
	if (rc) {
		hr__log_emit(w->o.log, HR_LOG_WARN, "bad_message",
			     "endpoint=%s bytes=%zu msg=%s", endpoint(w), len, err.message);
		return end_stream(w, HR__END_RECONNECT);
	}
	if (other_cluster(w, m.cluster_id)) {
		data_replaced(w, 1, m.cluster_id, m.header_revision);
		hr__wmsg_clear(&m);
		return end_stream(w, HR__END_RESYNC);
	}
	switch (m.kind) {
	case HR__WMSG_CREATED:
		w->created = 1;
		/* etcd's progress timer starts with the stream: the first
		 * notification's gap from here is an interval too.  If events
		 * made etcd skip a tick it is two: a hung member then shows
		 * later, still before the stale warning (update_quiet), until
		 * a shorter gap corrects it. */
		w->progress_last_ms = w->last_activity_ms;
		hr__log_emit(w->o.log, HR_LOG_INFO, "watching",
			     "start_revision=%" PRId64 " endpoint=%s", w->next_rev, endpoint(w));
		confirm(w, 0);
		break;
	case HR__WMSG_EVENTS:
		if (take_fragment(w, &m)) {
			rc = end_stream(w, HR__END_RESYNC);
			break;
		}
		if (!m.fragment) {
			apply_batch(w, w->frag, w->n_frag);
			hr__kvs_free(w->frag, w->n_frag);
			w->frag = NULL;
			w->n_frag = 0;
		}
		break;
	case HR__WMSG_PROGRESS:
		/* Everything up to header.revision has been delivered. */
		if (m.header_revision + 1 > w->next_rev)
			w->next_rev = m.header_revision + 1;
		confirm(w, (uint64_t)m.header_revision);
		note_progress(w);
		break;
	case HR__WMSG_COMPACTED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "compacted",
			     "compact_revision=%" PRId64 " next_revision=%" PRId64
			     " endpoint=%s msg=\"resyncing\"",
			     m.compact_revision, w->next_rev, endpoint(w));
		rc = end_stream(w, HR__END_RESYNC);
		break;
	case HR__WMSG_CANCELED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "watch_canceled",
			     "endpoint=%s reason=%s", endpoint(w), m.reason);
		if (m.cancel == HR__WCANCEL_DENIED || m.cancel == HR__WCANCEL_UNAUTHENTICATED) {
			hr_error e2;
			hr__error_set(&e2, m.cancel == HR__WCANCEL_DENIED ? HR_EPERM : HR_EAUTH,
				      "%s: watch refused: %s", endpoint(w), m.reason);
			set_error(w, &e2);
		}
		rc = end_stream(w, HR__END_RESYNC);
		break;
	case HR__WMSG_ERROR:
		hr__log_emit(w->o.log, HR_LOG_WARN, "stream_error",
			     "endpoint=%s code=%d msg=%s", endpoint(w), m.code, m.reason);
		rc = end_stream(w, HR__END_RECONNECT);
		break;
	}
	hr__wmsg_clear(&m);
	return rc;
}

/* A finished probe: alive and not behind us, or a reason to reconnect. */
static int on_probe(void *ud, const hr__probe_result *r)
{
	hr__watcher *w = ud;
	int other;

	switch (r->outcome) {
	case HR__PROBE_REAUTHENTICATED:
		hr__log_emit(w->o.log, HR_LOG_INFO, "reauthenticated",
			     "endpoint=%s reason=\"token rejected by a probe\"", endpoint(w));
		return 0;
	case HR__PROBE_FAILED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "probe_failed",
			     "endpoint=%s after_ms=%" PRId64 " msg=%s", endpoint(w),
			     r->elapsed_ms, r->err.message);
		return end_stream(w, HR__END_RECONNECT);
	case HR__PROBE_ANSWERED:
		break;
	}
	w->last_activity_ms = hr__now_ms();
	other = other_cluster(w, r->cluster_id);
	/* Another cluster, or a linearizable read below what we applied: a
	 * watch at our next revision would wait forever. */
	if (other || (uint64_t)r->revision < w->probe_floor) {
		data_replaced(w, other, r->cluster_id, r->revision);
		return end_stream(w, HR__END_RESYNC);
	}
	confirm(w, 0);
	return 0;
}

/* The stream ended of itself. */
static void on_ended(void *ud, const hr_error *why)
{
	hr__watcher *w = ud;
	hr_error err;

	if (why && (why->code == HR_ELIMIT || why->code == HR_ENOMEM)) {
		hr__log_emit(w->o.log, HR_LOG_ERROR, "message_too_large",
			     "endpoint=%s limit=%u", endpoint(w), MAX_LINE_BYTES);
		end_stream(w, HR__END_RECONNECT);
		return;
	}
	if (stopping(w)) {
		end_stream(w, HR__END_STOP);
		return;
	}
	if (why)
		set_error(w, why);
	else
		hr__error_set(&err, HR_ECONNECT, "%s: stream closed", endpoint(w));
	hr__log_emit(w->o.log, HR_LOG_WARN, "stream_ended",
		     "endpoint=%s msg=%s", endpoint(w), why ? why->message : err.message);
	end_stream(w, HR__END_RECONNECT);
}

/* Milliseconds until the stream loop has something to do: start a probe
 * (unless one runs) or write a stale warning. */
static int next_deadline_ms(hr__watcher *w, int probing)
{
	int64_t now = hr__now_ms(), due = now + 60000, t;

	if (!probing) {
		t = probe_due_ms(w);
		if (t < due)
			due = t;
	}
	if (w->stale_warned) {
		t = w->last_stale_log_ms + w->o.stale_warn_ms;
	} else {
		pthread_mutex_lock(&w->mu);
		t = w->last_confirm_ms + w->o.stale_warn_ms;
		pthread_mutex_unlock(&w->mu);
	}
	if (t < due)
		due = t;
	t = due - now;
	return t < 1 ? 1 : t > 60000 ? 60000 : (int)t;
}

/* Runs one watch stream until it ends; returns how it ended. */
static hr__stream_end run_stream(hr__watcher *w)
{
	const hr__etcd_stream_cbs cbs = { on_line, on_probe, on_ended, w };
	hr__etcd_stream *s;
	hr_error err = { 0 };
	int64_t started = hr__now_ms();

	w->end = HR__END_NONE;
	w->created = 0;
	w->last_activity_ms = started;
	w->progress_last_ms = 0;
	w->progress_gap_ms = 0;
	draw_probe_jitter(w);
	if (hr__etcd_stream_open(w->etcd, w->prefix, w->next_rev, MAX_LINE_BYTES, &cbs,
				 &s, &err))
		return HR__END_RECONNECT;
	pthread_mutex_lock(&w->mu);
	w->stream = s;
	snprintf(w->endpoint, sizeof w->endpoint, "%s", endpoint(w));
	pthread_mutex_unlock(&w->mu);

	while (w->end == HR__END_NONE) {
		if (stopping(w)) {
			w->end = HR__END_STOP;
			break;
		}
		if (!hr__etcd_stream_perform(s))
			end_stream(w, HR__END_RECONNECT);
		if (w->end != HR__END_NONE)
			break;
		check_stale(w);
		/* Lookups move to a new ring lazily; free what they left. */
		hr__subs_reclaim(w->o.subs);
		/* Clients that joined with a ring hear of it. */
		hr__subs_flush(w->o.subs);
		/* Silence is not proof of life: a hung member sends nothing,
		 * exactly like a quiet prefix.  Ask it something cheap. */
		if (!hr__etcd_stream_probing(s) && hr__now_ms() >= probe_due_ms(w)) {
			pthread_mutex_lock(&w->mu);
			w->probe_floor = w->confirmed_revision;
			pthread_mutex_unlock(&w->mu);
			hr__log_emit(w->o.log, HR_LOG_DEBUG, "probe",
				     "endpoint=%s silent_ms=%" PRId64, endpoint(w),
				     hr__now_ms() - w->last_activity_ms);
			hr__etcd_stream_probe(s, w->probe_timeout_ms, &err);
			draw_probe_jitter(w);
		}
		/* Sleep until the next deadline (libcurl shortens the wait
		 * for its own timers; close wakes it up): an idle watcher
		 * wakes about once per probe interval. */
		hr__etcd_stream_wait(s, next_deadline_ms(w, hr__etcd_stream_probing(s)));
	}

	pthread_mutex_lock(&w->mu);
	w->stream = NULL;
	pthread_mutex_unlock(&w->mu);
	hr__etcd_stream_close(s);
	hr__kvs_free(w->frag, w->n_frag);
	w->frag = NULL;
	w->n_frag = 0;
	if (w->created && hr__now_ms() - started >= HEALTHY_STREAM_MS)
		w->backoff_ms = w->o.backoff_initial_ms;
	return w->end;
}

/* ---- the thread ------------------------------------------------------------ */

void *hr__watch_thread(void *arg)
{
	hr__watcher *w = arg;

	while (!stopping(w)) {
		hr__stream_end how;

		if (w->need_sync) {
			int rc = full_sync(w);
			if (rc == HR_ECLOSED || stopping(w))
				break;
			if (rc) {
				backoff(w);
				hr__etcd_next_endpoint(w->etcd);
				continue;
			}
			w->need_sync = 0;
		}
		{
			/* Tokens expire while idle and a stale one can even
			 * hang requests, so every stream gets a fresh one (a
			 * no-op without a user). */
			hr_error err = { 0 };
			int rc = hr__etcd_authenticate(w->etcd, &err);
			if (rc) {
				if (rc != HR_ECLOSED) {
					hr__log_emit(w->o.log, HR_LOG_WARN, "auth_failed",
						     "endpoint=%s msg=%s", endpoint(w), err.message);
					set_error(w, &err);
					backoff(w);
					hr__etcd_next_endpoint(w->etcd);
				}
				continue;
			}
		}
		how = run_stream(w);
		if (how == HR__END_STOP || stopping(w))
			break;
		pthread_mutex_lock(&w->mu);
		w->reconnects++;
		pthread_mutex_unlock(&w->mu);
		if (how == HR__END_RESYNC) {
			w->need_sync = 1;
			if (!w->created)
				backoff(w);
		} else {
			backoff(w);
			hr__etcd_next_endpoint(w->etcd);
		}
	}
	return NULL;
}
