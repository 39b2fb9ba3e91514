/* SPDX-License-Identifier: MIT */
/*
 * watch.c - the watcher thread: the watch stream (its messages, and the
 * probes and progress notifications that prove it alive) and the loop that
 * syncs, streams and reconnects with backoff.  What a message changes, the
 * set and the ring, is watch_sync.c's.
 */
#include "watch_sync.h"

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
		hr__watch_check_stale(w);
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
	if (how == HR__END_RESYNC)
		w->resync_due = 1;
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
			     "endpoint=%s bytes=%zu msg=%s", hr__watch_endpoint(w), len, err.message);
		return end_stream(w, HR__END_RECONNECT);
	}
	if (hr__watch_other_cluster(w, m.cluster_id)) {
		hr__watch_data_replaced(w, 1, m.cluster_id, m.header_revision);
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
			     "start_revision=%" PRId64 " endpoint=%s", w->next_rev, hr__watch_endpoint(w));
		hr__watch_alive(w);
		break;
	case HR__WMSG_EVENTS:
		if (take_fragment(w, &m)) {
			rc = end_stream(w, HR__END_RESYNC);
			break;
		}
		if (!m.fragment) {
			hr__watch_apply_batch(w, w->frag, w->n_frag);
			hr__kvs_free(w->frag, w->n_frag);
			w->frag = NULL;
			w->n_frag = 0;
		}
		break;
	case HR__WMSG_PROGRESS:
		/* Everything up to header.revision has been delivered. */
		if (m.header_revision + 1 > w->next_rev)
			w->next_rev = m.header_revision + 1;
		hr__watch_confirm(w, (uint64_t)m.header_revision);
		note_progress(w);
		break;
	case HR__WMSG_COMPACTED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "compacted",
			     "compact_revision=%" PRId64 " next_revision=%" PRId64
			     " endpoint=%s msg=\"resyncing\"",
			     m.compact_revision, w->next_rev, hr__watch_endpoint(w));
		rc = end_stream(w, HR__END_RESYNC);
		break;
	case HR__WMSG_CANCELED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "watch_canceled",
			     "endpoint=%s reason=%s", hr__watch_endpoint(w), m.reason);
		if (m.cancel == HR__WCANCEL_DENIED || m.cancel == HR__WCANCEL_UNAUTHENTICATED) {
			hr_error e2;
			hr__error_set(&e2, m.cancel == HR__WCANCEL_DENIED ? HR_EPERM : HR_EAUTH,
				      "%s: watch refused: %s", hr__watch_endpoint(w), m.reason);
			hr__watch_set_error(w, &e2);
		}
		rc = end_stream(w, HR__END_RESYNC);
		break;
	case HR__WMSG_ERROR:
		hr__log_emit(w->o.log, HR_LOG_WARN, "stream_error",
			     "endpoint=%s code=%d msg=%s", hr__watch_endpoint(w), m.code, m.reason);
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
			     "endpoint=%s reason=\"token rejected by a probe\"", hr__watch_endpoint(w));
		return 0;
	case HR__PROBE_FAILED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "probe_failed",
			     "endpoint=%s after_ms=%" PRId64 " msg=%s", hr__watch_endpoint(w),
			     r->elapsed_ms, r->err.message);
		return end_stream(w, HR__END_RECONNECT);
	case HR__PROBE_ANSWERED:
		break;
	}
	w->last_activity_ms = hr__now_ms();
	other = hr__watch_other_cluster(w, r->cluster_id);
	/* Another cluster, or a linearizable read below what we applied: a
	 * watch at our next revision would wait forever. */
	if (other || (uint64_t)r->revision < w->probe_floor) {
		hr__watch_data_replaced(w, other, r->cluster_id, r->revision);
		return end_stream(w, HR__END_RESYNC);
	}
	hr__watch_confirm(w, 0);
	return 0;
}

/* The stream ended of itself. */
static void on_ended(void *ud, const hr_error *why)
{
	hr__watcher *w = ud;
	hr_error err;

	if (why && (why->code == HR_ELIMIT || why->code == HR_ENOMEM)) {
		hr__log_emit(w->o.log, HR_LOG_ERROR, "message_too_large",
			     "endpoint=%s limit=%u", hr__watch_endpoint(w), MAX_LINE_BYTES);
		end_stream(w, HR__END_RECONNECT);
		return;
	}
	if (stopping(w)) {
		end_stream(w, HR__END_STOP);
		return;
	}
	if (why)
		hr__watch_set_error(w, why);
	else
		hr__error_set(&err, HR_ECONNECT, "%s: stream closed", hr__watch_endpoint(w));
	hr__log_emit(w->o.log, HR_LOG_WARN, "stream_ended",
		     "endpoint=%s msg=%s", hr__watch_endpoint(w), why ? why->message : err.message);
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
	snprintf(w->endpoint, sizeof w->endpoint, "%s", hr__watch_endpoint(w));
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
		hr__watch_check_stale(w);
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
				     "endpoint=%s silent_ms=%" PRId64, hr__watch_endpoint(w),
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
			int rc = hr__watch_full_sync(w);
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
						     "endpoint=%s msg=%s", hr__watch_endpoint(w), err.message);
					hr__watch_set_error(w, &err);
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
