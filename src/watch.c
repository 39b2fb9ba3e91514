/* watch.c - the watcher thread: list, watch, apply, publish, recover. */
#include "watch.h"

#include "base64.h"
#include "diff.h"
#include "error.h"
#include "nodeset.h"
#include "watch_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Longest watch message accepted; with "fragment" on, etcd splits larger
 * responses into pieces well below this. */
#define MAX_LINE_BYTES (64u << 20)
/* A stream that lived this long resets the reconnect backoff. */
#define HEALTHY_STREAM_MS 5000
/* Longest sleep of a backoff wait between two staleness checks. */
#define POLL_SLICE_MS 200
/* How many ids a ring-change log line lists per category. */
#define LOG_IDS_MAX 8

typedef enum stream_end {
	END_NONE = 0,
	END_RECONNECT,   /* resume at next_rev on the next endpoint */
	END_RESYNC,      /* compacted, unexpected cancel, revision went back */
	END_STOP
} stream_end;

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
	CURLM *multi;               /* set while a stream runs (for wakeup) */

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
	int64_t last_stale_log_ms;

	/* Per stream. */
	hr__linebuf lb;
	hr__kv *frag;               /* events of fragments not yet complete */
	size_t n_frag;
	stream_end end;
	int created;
	int64_t last_activity_ms;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
	int64_t now = now_ms(), since;

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
	int64_t now = now_ms(), since;
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

static void tick(void *ud)
{
	check_stale(ud);
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
	int64_t until = now_ms() + ms;

	pthread_mutex_lock(&w->mu);
	while (!stopping(w)) {
		int64_t left = until - now_ms();
		struct timespec ts;
		if (left <= 0)
			break;
		if (left > POLL_SLICE_MS)
			left = POLL_SLICE_MS;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (long)(left % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		pthread_mutex_unlock(&w->mu);
		check_stale(w);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
}

/* Exponential backoff with jitter: sleeps a random time in [d/2, d], then
 * doubles d up to the cap. */
static void backoff(hr__watcher *w)
{
	int d = w->backoff_ms, ms;

	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	ms = d / 2 + (int)(w->rng % (uint64_t)(d / 2 + 1));
	hr__log_emit(w->o.log, HR_LOG_DEBUG, "backoff", "delay_ms=%d", ms);
	sleep_ms(w, ms);
	w->backoff_ms = d * 2 > w->o.backoff_max_ms ? w->o.backoff_max_ms : d * 2;
}

/* ---- building and publishing rings -------------------------------------- */

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

static void log_ring_change(hr__watcher *w, const hr_ring *old,
			    const hr_ring *ring, const hr_diff *dw,
			    const hr_diff *dr)
{
	char added[512] = "", removed[512] = "", changed[768] = "";
	char ca[528], cr[528], cc[784];
	int n_added = 0, n_removed = 0, n_changed = 0;
	size_t i = 0, j = 0, no = old ? hr_ring_node_count(old) : 0;
	size_t nn = hr_ring_node_count(ring);

	if (!hr__log_enabled(w->o.log, HR_LOG_INFO))
		return;
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
	hr__log_emit(w->o.log, HR_LOG_INFO, "ring",
		     "revision=%" PRIu64 " digest=%016" PRIx64 " nodes=%zu points=%zu"
		     " added=%s removed=%s changed=%s"
		     " moved_write=%.4f moved_read=%.4f",
		     hr_ring_revision(ring), hr_ring_digest(ring), nn,
		     hr_ring_point_count(ring),
		     counted(ca, sizeof ca, n_added, added),
		     counted(cr, sizeof cr, n_removed, removed),
		     counted(cc, sizeof cc, n_changed, changed),
		     dw ? hr__diff_moved_share(dw) : hr_ring_moved_share(old, ring, HR_VIEW_WRITE),
		     dr ? hr__diff_moved_share(dr) : hr_ring_moved_share(old, ring, HR_VIEW_READ));
}

/* Tells the log and the callbacks about a published ring.  When on_diff
 * wants the diffs, the log takes its moved shares from them: the arcs are
 * walked once. */
static void announce(hr__watcher *w, const hr_ring *old, const hr_ring *ring)
{
	hr_diff *dw = NULL, *dr = NULL;
	hr_error err = { 0 };

	if (w->o.on_diff &&
	    (hr_ring_diff(old, ring, HR_VIEW_WRITE, &dw, &err) ||
	     hr_ring_diff(old, ring, HR_VIEW_READ, &dr, &err))) {
		hr__log_emit(w->o.log, HR_LOG_ERROR, "diff_failed",
			     "revision=%" PRIu64 " msg=%s", hr_ring_revision(ring),
			     err.message);
		hr_diff_free(dw);
		dw = NULL;
	}
	log_ring_change(w, old, ring, dw, dr);
	if (w->o.on_change)
		w->o.on_change(w->o.on_change_userdata, old, ring);
	if (dw && dr)
		w->o.on_diff(w->o.on_diff_userdata, dw, dr);
	hr_diff_free(dw);
	hr_diff_free(dr);
}

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
 * as staleness; the error is returned. */
static int rebuild(hr__watcher *w, uint64_t revision, hr_error *err)
{
	hr_ring *ring = NULL, *old = hr__publish_acquire(w->o.publisher);
	/* Derived from the ring in use: only what changed is hashed again. */
	int rc = hr__nodeset_derive(&w->set, old, &w->o.ring, revision,
				    log_left_out, w, &ring, err);

	if (rc) {
		/* Keep serving the previous ring; say loudly that it lags. */
		hr__log_emit(w->o.log, HR_LOG_ERROR, "build_failed",
			     "revision=%" PRIu64 " code=%d msg=%s", revision, rc,
			     err->message);
		hr_ring_release(old);
		return rc;
	}
	confirm(w, revision);
	if (w->synced_once && !w->replaced && old &&
	    hr_ring_digest(old) == hr_ring_digest(ring)) {
		hr_ring_release(ring);
		hr_ring_release(old);
		hr__log_emit(w->o.log, HR_LOG_DEBUG, "ring_unchanged",
			     "revision=%" PRIu64, revision);
		return 0;
	}
	w->replaced = 0;
	hr__publish_swap(w->o.publisher, ring);
	pthread_mutex_lock(&w->mu);
	w->rings_published++;
	pthread_mutex_unlock(&w->mu);
	announce(w, old, ring);
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
	hr_error err = { 0 };
	int rc = hr__record_parse(id, id_len, kv->value, kv->value_len, &rec, &err);

	if (!rc && hr__nodeset_put(&w->set, &rec, kv->create_revision,
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

static int full_sync(hr__watcher *w)
{
	hr__kv *kvs = NULL;
	size_t n = 0;
	int64_t rev = 0;
	hr_error err = { 0 };
	hr__nodeset old;
	int rc;

	rc = hr__etcd_list(w->etcd, w->prefix, w->o.page_size, HR_NODES_MAX,
			   &kvs, &n, &rev, &err);
	if (rc) {
		if (rc != HR_ECLOSED) {
			hr__log_emit(w->o.log, HR_LOG_WARN, "sync_failed",
				     "endpoint=%s code=%d msg=%s", endpoint(w), rc,
				     err.message);
			set_error(w, &err);
		}
		return rc;
	}
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

	/* Build the new set off to the side, then replace the old one whole:
	 * this also drops nodes deleted while we were away. */
	old = w->set;
	memset(&w->set, 0, sizeof w->set);
	for (size_t i = 0; i < n; i++)
		apply_kv(w, &kvs[i]);
	hr__kvs_free(kvs, n);
	hr__nodeset_clear(&old);

	w->next_rev = rev + 1;
	rc = rebuild(w, (uint64_t)rev, &err);
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
		     "revision=%" PRId64 " keys=%zu nodes=%zu endpoint=%s", rev, n,
		     w->set.n, endpoint(w));
	pthread_mutex_lock(&w->mu);
	snprintf(w->endpoint, sizeof w->endpoint, "%s", endpoint(w));
	if (!w->first_done) {
		w->first_done = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return 0;
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
	rebuild(w, (uint64_t)last, &err);
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

static int end_stream(hr__watcher *w, stream_end how)
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

	w->last_activity_ms = now_ms();
	if (stopping(w))
		return end_stream(w, END_STOP);
	rc = hr__wmsg_parse(line, len, &m, &err);
	if (rc) {
		hr__log_emit(w->o.log, HR_LOG_WARN, "bad_message",
			     "endpoint=%s bytes=%zu msg=%s", endpoint(w), len, err.message);
		return end_stream(w, END_RECONNECT);
	}
	if (other_cluster(w, m.cluster_id)) {
		data_replaced(w, 1, m.cluster_id, m.header_revision);
		hr__wmsg_clear(&m);
		return end_stream(w, END_RESYNC);
	}
	switch (m.kind) {
	case HR__WMSG_CREATED:
		w->created = 1;
		hr__log_emit(w->o.log, HR_LOG_INFO, "watching",
			     "start_revision=%" PRId64 " endpoint=%s", w->next_rev, endpoint(w));
		confirm(w, 0);
		break;
	case HR__WMSG_EVENTS:
		if (take_fragment(w, &m)) {
			rc = end_stream(w, END_RESYNC);
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
		break;
	case HR__WMSG_COMPACTED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "compacted",
			     "compact_revision=%" PRId64 " next_revision=%" PRId64
			     " endpoint=%s msg=\"resyncing\"",
			     m.compact_revision, w->next_rev, endpoint(w));
		rc = end_stream(w, END_RESYNC);
		break;
	case HR__WMSG_CANCELED:
		hr__log_emit(w->o.log, HR_LOG_WARN, "watch_canceled",
			     "endpoint=%s reason=%s", endpoint(w), m.reason);
		if (strstr(m.reason, "ermission")) {
			hr_error e2;
			hr__error_set(&e2, HR_EPERM, "%s: watch refused: %s", endpoint(w), m.reason);
			set_error(w, &e2);
		} else if (strstr(m.reason, "nauthenticated") || strstr(m.reason, "user name")) {
			hr_error e2;
			hr__error_set(&e2, HR_EAUTH, "%s: watch refused: %s", endpoint(w), m.reason);
			set_error(w, &e2);
		}
		rc = end_stream(w, END_RESYNC);
		break;
	case HR__WMSG_ERROR:
		hr__log_emit(w->o.log, HR_LOG_WARN, "stream_error",
			     "endpoint=%s code=%d msg=%s", endpoint(w), m.code, m.reason);
		rc = end_stream(w, END_RECONNECT);
		break;
	}
	hr__wmsg_clear(&m);
	return rc;
}

static size_t on_stream_data(char *p, size_t size, size_t nmemb, void *ud)
{
	hr__watcher *w = ud;
	size_t n = size * nmemb;
	int rc = hr__linebuf_feed(&w->lb, p, n, on_line, w);

	if (rc == HR_ELIMIT || rc == HR_ENOMEM) {
		hr__log_emit(w->o.log, HR_LOG_ERROR, "message_too_large",
			     "endpoint=%s limit=%u", endpoint(w), MAX_LINE_BYTES);
		end_stream(w, END_RECONNECT);
	}
	/* Returning less than n makes libcurl abort the transfer. */
	return rc ? 0 : n;
}

typedef struct probe {
	CURL *h;
	struct curl_slist *headers;
	char *body;
	size_t len;
	int64_t started_ms;
} probe;

static size_t on_probe_data(char *p, size_t size, size_t nmemb, void *ud)
{
	probe *pr = ud;
	size_t n = size * nmemb;
	char *b;

	if (pr->len + n > 65536)
		return 0;
	b = realloc(pr->body, pr->len + n + 1);
	if (!b)
		return 0;
	memcpy(b + pr->len, p, n);
	pr->body = b;
	pr->len += n;
	b[pr->len] = '\0';
	return n;
}

static void probe_free(CURLM *multi, probe *pr)
{
	if (pr->h) {
		curl_multi_remove_handle(multi, pr->h);
		curl_easy_cleanup(pr->h);
	}
	curl_slist_free_all(pr->headers);
	free(pr->body);
	memset(pr, 0, sizeof *pr);
}

/* JSON body of a range over the prefix: {"key":..,"range_end":..}. */
static char *prefix_range_body(const hr__watcher *w, const char *extra)
{
	char *end = malloc(w->prefix_len + 1);
	size_t end_len, kl = hr__base64_encoded_size(w->prefix_len);
	char *k64, *e64, *body = NULL;

	if (!end)
		return NULL;
	end_len = hr__etcd_prefix_end(w->prefix, w->prefix_len, end);
	k64 = malloc(kl);
	e64 = malloc(hr__base64_encoded_size(end_len));
	if (k64 && e64) {
		size_t size;
		hr__base64_encode(w->prefix, w->prefix_len, k64);
		hr__base64_encode(end, end_len, e64);
		size = strlen(k64) + strlen(e64) + strlen(extra) + 64;
		body = malloc(size);
		if (body)
			snprintf(body, size, "\"key\":\"%s\",\"range_end\":\"%s\"%s",
				 k64, e64, extra);
	}
	free(end);
	free(k64);
	free(e64);
	return body;
}

static int probe_start(hr__watcher *w, CURLM *multi, probe *pr)
{
	char *range = prefix_range_body(w, ",\"count_only\":true");
	char *json;
	hr_error err = { 0 };

	memset(pr, 0, sizeof *pr);
	if (!range)
		return HR_ENOMEM;
	json = malloc(strlen(range) + 3);
	if (!json) {
		free(range);
		return HR_ENOMEM;
	}
	sprintf(json, "{%s}", range);
	free(range);
	pr->h = curl_easy_init();
	if (!pr->h || hr__etcd_setup(w->etcd, pr->h, "/kv/range", json, 0,
				     &pr->headers, &err)) {
		free(json);
		probe_free(multi, pr);
		return HR_ENOMEM;
	}
	free(json);
	curl_easy_setopt(pr->h, CURLOPT_TIMEOUT_MS, (long)w->probe_timeout_ms);
	curl_easy_setopt(pr->h, CURLOPT_WRITEFUNCTION, on_probe_data);
	curl_easy_setopt(pr->h, CURLOPT_WRITEDATA, pr);
	pr->started_ms = now_ms();
	curl_multi_add_handle(multi, pr->h);
	return 0;
}

/* A finished probe: alive and not behind us, or a reason to reconnect. */
static void probe_done(hr__watcher *w, probe *pr, CURLcode rc)
{
	long status = 0;
	hr_error err = { 0 };

	curl_easy_getinfo(pr->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OK && status == 401) {
		/* The token expired while the stream was quiet; the stream
		 * itself keeps working, so only the token is renewed. */
		if (hr__etcd_authenticate(w->etcd, &err) == 0) {
			hr__log_emit(w->o.log, HR_LOG_INFO, "reauthenticated",
				     "endpoint=%s reason=\"token rejected by a probe\"",
				     endpoint(w));
			return;
		}
	}
	if (rc != CURLE_OK || status != 200) {
		hr__etcd_transfer_error(w->etcd, rc, status, pr->body, pr->len, &err);
		hr__log_emit(w->o.log, HR_LOG_WARN, "probe_failed",
			     "endpoint=%s after_ms=%" PRId64 " msg=%s", endpoint(w),
			     now_ms() - pr->started_ms, err.message);
		end_stream(w, END_RECONNECT);
		return;
	}

	cJSON *root = cJSON_ParseWithLength(pr->body ? pr->body : "", pr->len);
	int64_t rev = 0;
	if (!root || hr__json_int64(cJSON_GetObjectItemCaseSensitive(root, "header"),
				    "revision", 0, &rev)) {
		cJSON_Delete(root);
		end_stream(w, END_RECONNECT);
		return;
	}
	uint64_t id = hr__json_cluster_id(root);
	int other = other_cluster(w, id);
	cJSON_Delete(root);
	w->last_activity_ms = now_ms();
	/* Another cluster, or a linearizable read below what we applied: a
	 * watch at our next revision would wait forever. */
	if (other || revision_backwards(w, rev)) {
		data_replaced(w, other, id, rev);
		end_stream(w, END_RESYNC);
		return;
	}
	confirm(w, 0);
}

static char *watch_body(const hr__watcher *w)
{
	char extra[160];
	char *range, *body;
	size_t size;

	snprintf(extra, sizeof extra,
		 ",\"start_revision\":\"%" PRId64 "\",\"progress_notify\":true,\"fragment\":true",
		 w->next_rev);
	range = prefix_range_body(w, extra);
	if (!range)
		return NULL;
	size = strlen(range) + 32;
	body = malloc(size);
	if (body)
		snprintf(body, size, "{\"create_request\":{%s}}", range);
	free(range);
	return body;
}

/* Milliseconds until the stream loop has something to do: start a probe
 * (unless one runs) or write a stale warning. */
static int next_deadline_ms(hr__watcher *w, int probing)
{
	int64_t now = now_ms(), due = now + 60000, t;

	if (!probing) {
		t = w->last_activity_ms + w->o.probe_interval_ms;
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
static stream_end run_stream(hr__watcher *w)
{
	CURLM *multi = curl_multi_init();
	CURL *h = curl_easy_init();
	struct curl_slist *headers = NULL;
	hr_error err = { 0 };
	char *body = watch_body(w);
	probe pr = { 0 };
	int64_t started = now_ms();
	int running = 1;

	w->end = END_NONE;
	w->created = 0;
	w->last_activity_ms = started;
	hr__linebuf_reset(&w->lb);
	if (!multi || !h || !body ||
	    hr__etcd_setup(w->etcd, h, "/watch", body, 1, &headers, &err)) {
		free(body);
		curl_easy_cleanup(h);
		curl_multi_cleanup(multi);
		return END_RECONNECT;
	}
	free(body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_multi_add_handle(multi, h);
	pthread_mutex_lock(&w->mu);
	w->multi = multi;
	snprintf(w->endpoint, sizeof w->endpoint, "%s", endpoint(w));
	pthread_mutex_unlock(&w->mu);

	while (w->end == END_NONE) {
		CURLMsg *msg;
		int left;

		if (stopping(w)) {
			w->end = END_STOP;
			break;
		}
		curl_multi_perform(multi, &running);
		while ((msg = curl_multi_info_read(multi, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			if (msg->easy_handle == pr.h) {
				CURLcode prc = msg->data.result;
				probe_done(w, &pr, prc);
				probe_free(multi, &pr);
			} else if (msg->easy_handle == h && w->end == END_NONE) {
				long status = 0;
				CURLcode rc = msg->data.result;
				/* etcd 3.4 ends a failed stream with an
				 * error object and no newline. */
				hr__linebuf_finish(&w->lb, on_line, w);
				curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
				if (w->end == END_NONE && stopping(w)) {
					w->end = END_STOP;
				} else if (w->end == END_NONE) {
					if (rc != CURLE_OK || status != 200) {
						hr__etcd_transfer_error(w->etcd, rc, status,
									NULL, 0, &err);
						set_error(w, &err);
					} else {
						hr__error_set(&err, HR_ECONNECT, "%s: stream closed",
							      endpoint(w));
					}
					hr__log_emit(w->o.log, HR_LOG_WARN, "stream_ended",
						     "endpoint=%s msg=%s", endpoint(w), err.message);
					w->end = END_RECONNECT;
				}
			}
		}
		if (w->end != END_NONE)
			break;
		check_stale(w);
		/* Lookups move to a new ring lazily; free what they left. */
		hr__publish_reclaim(w->o.publisher);
		/* Silence is not proof of life: a hung member sends nothing,
		 * exactly like a quiet prefix.  Ask it something cheap. */
		if (!pr.h && now_ms() - w->last_activity_ms >= w->o.probe_interval_ms)
			probe_start(w, multi, &pr);
		/* Sleep until the next deadline (libcurl shortens the wait
		 * for its own timers; close wakes it up): an idle watcher
		 * wakes about once per probe interval. */
		curl_multi_poll(multi, NULL, 0, next_deadline_ms(w, pr.h != NULL), NULL);
	}

	pthread_mutex_lock(&w->mu);
	w->multi = NULL;
	pthread_mutex_unlock(&w->mu);
	probe_free(multi, &pr);
	curl_multi_remove_handle(multi, h);
	curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	curl_multi_cleanup(multi);
	hr__kvs_free(w->frag, w->n_frag);
	w->frag = NULL;
	w->n_frag = 0;
	if (w->created && now_ms() - started >= HEALTHY_STREAM_MS)
		w->backoff_ms = w->o.backoff_initial_ms;
	return w->end;
}

/* ---- the thread ------------------------------------------------------------ */

static void *watcher_main(void *arg)
{
	hr__watcher *w = arg;

	while (!stopping(w)) {
		stream_end how;

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
		if (how == END_STOP || stopping(w))
			break;
		pthread_mutex_lock(&w->mu);
		w->reconnects++;
		pthread_mutex_unlock(&w->mu);
		if (how == END_RESYNC) {
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

int hr__watcher_start(const hr__watch_opts *opts, hr__watcher **out,
		      hr_error *err)
{
	hr__watcher *w;
	hr__etcd_opts eo;
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!opts->prefix || !opts->prefix[0])
		return hr__error_set(err, HR_EINVAL, "prefix: must be set and not empty");
	w = calloc(1, sizeof *w);
	if (!w)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	w->o = *opts;
	w->prefix = strdup(opts->prefix);
	w->prefix_len = w->prefix ? strlen(w->prefix) : 0;
	w->next_rev = 0;
	w->need_sync = 1;
	w->backoff_ms = opts->backoff_initial_ms;
	w->lb.max = MAX_LINE_BYTES;
	w->last_confirm_ms = now_ms();
	w->rng = (uint64_t)now_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)w;
	if (!w->rng)
		w->rng = 1;
	w->probe_timeout_ms = opts->etcd.request_timeout_ms < 2000 ?
			      opts->etcd.request_timeout_ms : 2000;
	if (w->probe_timeout_ms > opts->probe_interval_ms)
		w->probe_timeout_ms = opts->probe_interval_ms;
	if (w->probe_timeout_ms < 100)
		w->probe_timeout_ms = 100;
	pthread_mutex_init(&w->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (!w->prefix) {
		hr__watcher_stop(w);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	eo = opts->etcd;
	eo.stop_flag = &w->stop;
	eo.tick = tick;
	eo.tick_userdata = w;
	rc = hr__etcd_new(&eo, &w->etcd, err);
	if (rc) {
		hr__watcher_stop(w);
		return rc;
	}
	/* The caller's strings are not kept: the etcd client has copies. */
	memset(&w->o.etcd, 0, sizeof w->o.etcd);
	w->o.prefix = w->prefix;
	/* The host's signals are not ours to receive. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&w->thread, NULL, watcher_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	w->started = rc == 0;
	if (rc) {
		hr__watcher_stop(w);
		return hr__error_set(err, HR_ENOMEM, "cannot start the watcher thread: %s",
				     strerror(rc));
	}
	*out = w;
	return 0;
}

int hr__watcher_wait_first(hr__watcher *w, int timeout_ms, hr_error *err)
{
	struct timespec ts;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->first_done && !w->first_fatal && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	if (w->first_done) {
		rc = 0;
	} else if (w->first_fatal) {
		rc = hr__error_copy(err, &w->last_err);
	} else if (w->last_err.code) {
		rc = hr__error_set(err, w->last_err.code == HR_ETIMEDOUT ? HR_ETIMEDOUT :
				   w->last_err.code, "no ring after %d ms: %s",
				   timeout_ms, w->last_err.message);
	} else {
		rc = hr__error_set(err, HR_ETIMEDOUT, "no ring after %d ms", timeout_ms);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void hr__watcher_status(hr__watcher *w, hr_client_status *out)
{
	int64_t since;

	pthread_mutex_lock(&w->mu);
	since = now_ms() - w->last_confirm_ms;
	out->confirmed_revision = w->confirmed_revision;
	/* A quiet stream is confirmed once per probe interval: that long
	 * (twice, for slack) counts as current, but never longer than the
	 * stale warnings allow. */
	int64_t current = 2 * (int64_t)w->o.probe_interval_ms;
	if (current > w->o.stale_warn_ms)
		current = w->o.stale_warn_ms;
	out->unconfirmed_ms = since >= current ? since : 0;
	out->rings_published = w->rings_published;
	out->resyncs = w->resyncs;
	out->reconnects = w->reconnects;
	snprintf(out->endpoint, sizeof out->endpoint, "%s", w->endpoint);
	pthread_mutex_unlock(&w->mu);
}

void hr__watcher_stop(hr__watcher *w)
{
	if (!w)
		return;
	if (w->etcd) {
		__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&w->mu);
		pthread_cond_broadcast(&w->cv);
		if (w->multi)
			curl_multi_wakeup(w->multi);
		pthread_mutex_unlock(&w->mu);
		if (w->started)
			pthread_join(w->thread, NULL);
	}
	hr__etcd_free(w->etcd);
	hr__nodeset_clear(&w->set);
	hr__linebuf_free(&w->lb);
	hr__kvs_free(w->frag, w->n_frag);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->prefix);
	free(w);
}
