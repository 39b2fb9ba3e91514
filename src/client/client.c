/* SPDX-License-Identifier: MIT */
/* client.c - the public client: open/close, and the lookup entry points
 * over the published ring. */
#include "client.h"
#include "ack_record.h"
#include "ack_sender.h"
#include "client_config.h"
#include "clock.h"
#include "counters.h"
#include "error.h"
#include "fork.h"
#include "host_reader.h"
#include "log.h"
#include "owner.h"
#include "publish.h"
#include "ring.h"
#include "settings.h"
#include "share.h"
#include "thread_cache.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hr_client {
	hr__log log;
	hr__publisher pub;	/* the rings the client's lookups read */
	hr__counters counters;	/* the lookups' per-node counts */
	hr__subscriber sub;	/* how the watcher reaches pub, callbacks, acker */
	hr__feed *feed;		/* the watcher followed, NULL until joined */
	hr__acker *acker;	/* NULL without acks; stopped after leaving */
	int64_t opened_ms;	/* CLOCK_MONOTONIC, for hr_client_wait_synced */
	pid_t pid;		/* the process that opened it (fork.h) */
	/* An agent's reader (hr_client_config.agent_dir), in place of feed
	 * and acker; NULL for a client that follows etcd. */
	hr__host_reader *host;
	bool agent;		/* opened with agent_dir (host set once attached) */
	uint64_t host_rings;	/* snapshots mapped and published; atomic */
};

/* ---- a client attached to an agent ------------------------------------- */

/* The agent's notices: its ring stale (while it stays so, every
 * HR__HOST_STALE_MS), or current again; logged as a client of etcd logs
 * its own. */
static void log_agent_state(hr_client *c)
{
	hr__host_reader *h = c->host;
	uint64_t pid;
	int64_t beat, unconfirmed;
	bool stale = hr__host_agent_stale(h);

	if (!stale && !h->stale)
		return;
	hr__host_agent(h, &pid, &beat, &unconfirmed);
	if (stale)
		hr__log_emit(&c->log, HR_LOG_WARN, "stale",
			     "unconfirmed_ms=%" PRId64 " revision=%" PRIu64 " agent_dir=%s"
			     " agent_pid=%" PRIu64 " msg=\"the agent's ring cannot be confirmed"
			     " current\"", unconfirmed, hr_ring_revision(c->pub.current), h->dir, pid);
	else
		hr__log_emit(&c->log, HR_LOG_INFO, "stale_recovered",
			     "revision=%" PRIu64 " agent_dir=%s", hr_ring_revision(c->pub.current),
			     h->dir);
	h->stale = stale;
}

/* The publisher's `follow` for an agent's reader, when the control page
 * changed: maps the snapshot it names and publishes it, and logs the
 * agent's notices, unless another thread does. */
static void follow_agent(hr__publisher *p)
{
	hr_client *c = (hr_client *)((char *)p - offsetof(hr_client, pub));
	uint64_t seen;
	hr_ring *ring;
	hr_error err;
	int rc;

	if (!hr__host_follow_begin(c->host))
		return;
	/* Read first: a change made meanwhile is followed next time. */
	seen = __atomic_load_n(&c->host->ctl->changes, __ATOMIC_ACQUIRE);
	if (hr__host_new_generation(c->host)) {
		rc = hr__host_map_current(c->host, &ring, &err);
		if (rc == HR_OK) {
			hr__publish_swap(&c->pub, ring);
			__atomic_fetch_add(&c->host_rings, 1, __ATOMIC_RELAXED);
		} else if (rc != HR_ENOTFOUND) {
			/* The ring in use stays; the next generation is tried. */
			hr__log_emit(&c->log, HR_LOG_ERROR, "snapshot_refused",
				     "revision=%" PRIu64 " msg=%s",
				     hr_ring_revision(c->pub.current), err.message);
		}
	}
	log_agent_state(c);
	__atomic_store_n(&c->host->seen, seen, __ATOMIC_RELAXED);
	hr__host_follow_end(c->host);
}

/* Sets up the publisher of a client whose source is the agent in `dir`:
 * the snapshot it published last, waiting for a first one up to the open
 * timeout (unless nonblocking: an empty ring then). */
static int open_agent(hr_client *c, const hr_client_config *cc, hr_error *err)
{
	hr_ring *ring = NULL;
	int rc = hr__host_attach(cc->agent_dir, &c->host, err);

	if (rc)
		return rc;
	for (;;) {
		if (!hr__host_follow_begin(c->host))
			continue;	/* not yet shared: cannot happen */
		c->host->seen = __atomic_load_n(&c->host->ctl->changes, __ATOMIC_ACQUIRE);
		rc = hr__host_map_current(c->host, &ring, err);
		hr__host_follow_end(c->host);
		if (rc != HR_ENOTFOUND || cc->open_nonblocking)
			break;
		if (hr__now_ms() - c->opened_ms >= cc->open_timeout_ms)
			return hr__error_set(err, HR_ETIMEDOUT, "no ring after %d ms: the "
					     "agent in %s has published none", cc->open_timeout_ms,
					     cc->agent_dir);
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	if (rc == HR_ENOTFOUND)
		rc = hr_ring_build(NULL, 0, NULL, 0, &ring, err);
	if (rc)
		return rc;
	if (__atomic_load_n(&c->host->generation, __ATOMIC_RELAXED))
		c->host_rings = 1;
	hr__publish_init(&c->pub, ring);
	c->pub.host = c->host;
	c->pub.follow = follow_agent;
	c->pub.counters = &c->counters;
	return HR_OK;
}

/* The error of a call that needs the client's threads, in a child of
 * fork(); else 0. */
static int forked(const hr_client *c, const char *call, hr_error *err)
{
	if (!hr__forked_since(c->pid))
		return 0;
	return hr__forked_error(err, call, "the client was opened", "open one in this process",
				c->pid);
}

int hr_client_open(const hr_etcd_config *etcd, const hr_client_config *cfg,
		   hr_client **out, hr_error *err)
{
	hr_client_config cc;
	hr__conn conn;
	hr_client *c;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "out must not be NULL");
	*out = NULL;
	rc = hr__client_config_read(cfg, &cc, err);
	if (!rc && cc.agent_dir && !etcd) {
		/* An agent's reader reads only the log settings: the defaults. */
		hr_etcd_config none;

		hr_etcd_config_init(&none);
		none.prefix = "/";	/* unused, but a config has one */
		rc = hr__conn_read(&none, &conn, err);
	} else if (!rc) {
		rc = hr__conn_read(etcd, &conn, err);
	}
	if (rc)
		return rc;
	if (cc.agent_dir) {
		c = calloc(1, sizeof *c);
		if (!c)
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		c->agent = true;
		c->opened_ms = hr__now_ms();
		c->pid = hr__process();
		c->log = conn.log;
		hr__counters_init(&c->counters, cc.hot_key_sample, cc.hot_key_spread,
				  cc.hot_key_replicas);
		rc = open_agent(c, &cc, err);
		if (rc) {
			hr_client_close(c);
			return rc;
		}
		*out = c;
		return HR_OK;
	}
	if (cc.ack_prefix) {
		hr_error why;

		rc = hr__ack_prefix_check(cc.ack_prefix, conn.prefix, &why);
		if (rc)
			return hr__error_set(err, rc, "hr_client_config: %s", why.message);
	}
	/* Thread safe since libcurl 7.84 and reference counted. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	c = calloc(1, sizeof *c);
	if (!c) {
		curl_global_cleanup();
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	c->opened_ms = hr__now_ms();
	c->pid = hr__process();
	c->log = conn.log;
	hr__counters_init(&c->counters, cc.hot_key_sample, cc.hot_key_spread,
			  cc.hot_key_replicas);

	if (cc.ack_client_id) {
		hr__acker_opts ao = { conn.etcd, cc.ack_prefix, cc.ack_client_id, cc.ack_ttl_s,
				      cc.ack_interval_ms, &c->log };

		rc = hr__acker_start(&ao, &c->acker, err);
		if (rc) {
			hr_client_close(c);
			return rc;
		}
	}
	c->sub.pub = &c->pub;
	c->sub.listener = (hr__listener){ cc.on_change, cc.on_change_userdata,
					  cc.on_diff, cc.on_diff_userdata };
	c->sub.acker = c->acker;
	/* Sets up pub: the feed's ring, or an empty one before its first. */
	rc = hr__feed_join(cc.share, &conn, &cc, &c->sub, &c->feed, err);
	if (rc) {
		hr_client_close(c);
		return rc;
	}
	/* Read by lookups only, none of which runs before open returns. */
	c->pub.counters = &c->counters;
	if (!cc.open_nonblocking)
		rc = hr__watcher_wait_first(hr__feed_watcher(c->feed), cc.open_timeout_ms, err);
	if (!rc && !cc.open_nonblocking && c->acker) {
		/* Once open returns the client routes: from then on waits must
		 * count it.  What is left of the open timeout, 1 s at least. */
		int64_t left = cc.open_timeout_ms - (hr__now_ms() - c->opened_ms);

		rc = hr__acker_wait_first(c->acker, left > 1000 ? (int)left : 1000,
					  c->opened_ms, err);
	}
	if (rc) {
		hr_client_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* The watcher's "no ring after N ms: CAUSE" without its first part, which
 * names the length of one wait, not the time since open. */
static const char *failure_cause(const char *msg)
{
	static const char head[] = "no ring after ";
	const char *p = msg;

	if (strncmp(p, head, sizeof head - 1))
		return msg;
	p += sizeof head - 1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (strncmp(p, " ms", 3))
		return msg;
	p += 3;
	return *p == ':' && p[1] == ' ' ? p + 2 : p;
}

int hr_client_wait_synced(hr_client *c, int timeout_ms, hr_error *err)
{
	hr_error last = { 0 };
	const char *cause;
	int64_t t0 = hr__now_ms(), left;
	int rc;

	if (!c || timeout_ms < 0)
		return hr__error_set(err, HR_EINVAL,
				     "wait_synced: NULL client or negative timeout");
	rc = forked(c, "wait_synced", err);
	if (rc)
		return rc;
	if (c->host) {
		/* Synced: a snapshot mapped.  No thread maps but lookups: this
		 * wait follows the control page itself. */
		while (!__atomic_load_n(&c->host_rings, __ATOMIC_RELAXED)) {
			if (hr__host_changed(c->host))
				follow_agent(&c->pub);
			if (__atomic_load_n(&c->host_rings, __ATOMIC_RELAXED))
				break;
			if (hr__now_ms() - t0 >= timeout_ms)
				return hr__error_set(err, HR_ETIMEDOUT, "no ring after %lld ms: "
						     "the agent has published none",
						     (long long)(hr__now_ms() - c->opened_ms));
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
		}
		return 0;
	}
	rc = hr__watcher_wait_first(hr__feed_watcher(c->feed), timeout_ms, &last);
	switch (rc) {
	case 0:
		if (!c->acker)
			return 0;
		/* As a blocking open: a client that acknowledges is synced
		 * once waits count it, and an id that is another client's
		 * fails here. */
		left = timeout_ms - (hr__now_ms() - t0);
		return hr__acker_wait_first(c->acker, left > 0 ? (int)left : 0, c->opened_ms,
					    err);
	case HR_EAUTH:
	case HR_EPERM:
	case HR_ETLS:
	case HR_ELIMIT:
	case HR_ENOMEM:
		/* Fatal for the first sync: the watcher says so at once. */
		return hr__error_copy(err, &last);
	}
	cause = failure_cause(last.message);
	if (*cause)
		return hr__error_set(err, HR_ETIMEDOUT, "no ring after %lld ms: %s",
				     (long long)(hr__now_ms() - c->opened_ms), cause);
	return hr__error_set(err, HR_ETIMEDOUT, "no ring after %lld ms",
			     (long long)(hr__now_ms() - c->opened_ms));
}

/*
 * hr_client_close() in a child of fork().  The watcher and ack threads
 * stayed in the parent, and a lock one of them held at the fork stays held
 * here, so nothing of theirs is stopped, joined or locked: the watcher
 * (its feed, its etcd connections), the acker and libcurl's reference are
 * left as they are, a leak by design.  Freeing them would wait forever or
 * speak on the parent's connections (a TLS close), and revoking the ack
 * lease would remove the parent's ack.  What is freed: the calling
 * thread's cached ring, the client's own rings, the counters unless a
 * parent thread was folding them, and the client.
 */
static void close_in_child(hr_client *c)
{
	if (c->feed || (c->agent && c->pub.current)) {
		hr__thread_cache_forget(&c->pub);
		hr__publish_destroy_in_child(&c->pub);
	}
	/* Mappings and descriptors of this process's own. */
	hr__host_detach(c->host);
	hr__counters_destroy_in_child(&c->counters);
	free(c);
}

void hr_client_close(hr_client *c)
{
	if (!c)
		return;
	if (hr__forked_since(c->pid)) {
		close_in_child(c);
		return;
	}
	if (c->agent) {
		/* An agent's reader: no threads, no libcurl. */
		if (c->pub.current) {
			hr__thread_cache_forget(&c->pub);
			hr__publish_destroy(&c->pub);
		}
		hr__host_detach(c->host);
		hr__counters_destroy(&c->counters);
		free(c);
		return;
	}
	/* Joined: pub is set up, and the watcher may reach it until left. */
	if (c->feed) {
		hr__feed_leave(c->feed, &c->sub);
		hr__thread_cache_forget(&c->pub);
		hr__publish_destroy(&c->pub);
	}
	hr__acker_stop(c->acker);
	hr__counters_destroy(&c->counters);
	free(c);
	curl_global_cleanup();
}

/* hr_client_lookup() on a new ring, another client's way or no thread
 * cache: out of line, so that the fast path saves no register. */
static __attribute__((noinline)) int lookup_miss(hr_client *c, const void *key,
						 size_t len, hr_owner *out,
						 hr_error *err)
{
	const hr_ring *ring = hr__thread_cache_miss(&c->pub);
	int rc;

	if (ring)
		return hr__ring_lookup_owner_counted(ring, key, len, out,
						     hr__thread_cache_counts(), err);
	/* No per-thread state: not counted. */
	rc = hr__ring_lookup_owner(hr__publish_read_begin(&c->pub), key, len, out,
				   err);
	hr__publish_read_end(&c->pub);
	return rc;
}

int hr_client_lookup(hr_client *c, const void *key, size_t len, hr_owner *out,
		     hr_error *err)
{
	const hr_ring *ring;

	if (!c || !out || (!key && len))
		return hr__lookup_args(err, c, "client", out, key, len);
	/* `err` goes down, so that both calls stay tail calls: the hot path
	 * costs what it cost without it. */
	ring = hr__thread_cache_hit(&c->pub);
	if (__builtin_expect(ring != NULL, 1))
		return hr__ring_lookup_owner_hit(ring, key, len, out,
						 hr__thread_cache_counts(), err);
	return lookup_miss(c, key, len, out, err);
}

/* A batch's owners, counted as single lookups count them (owner.c; not
 * sampled: a batch's keys are the caller's, kept only during the call). */
static void count_batch(hr__count_seg *cnt, const hr_batch_owner *out,
			size_t n)
{
	if (!(cnt->flags & HR__SEG_READS)) {
		for (size_t i = 0; i < n; i++)
			hr__count_fix(cnt, 2 * (size_t)out[i].node + HR_VIEW_WRITE,
				      hr__count(cnt, out[i].node, HR_VIEW_WRITE));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t ws = out[i].node == HR_NO_NODE ? cnt->nodes : out[i].node;
		size_t rs = out[i].read_node == HR_NO_NODE ? cnt->nodes :
			    out[i].read_node;

		hr__count_fix(cnt, 2 * ws + HR_VIEW_WRITE,
			      hr__count(cnt, ws, HR_VIEW_WRITE));
		hr__count_fix(cnt, 2 * rs + HR_VIEW_READ,
			      hr__count(cnt, rs, HR_VIEW_READ));
	}
}

/* A batch on one ring, with the epoch it answered from; counted in `cnt`
 * unless it is NULL. */
static int batch_on(const hr_ring *ring, const void *const *keys,
		    const size_t *lens, size_t n, hr_batch_owner *out,
		    hr_epoch *epoch, hr__count_seg *cnt, hr_error *err)
{
	int rc = hr_ring_lookup_batch(ring, keys, lens, n, out, err);

	if (epoch && rc != HR_EINVAL) {
		epoch->revision = hr_ring_revision(ring);
		epoch->digest = hr_ring_digest(ring);
	}
	if (cnt && rc == HR_OK)
		count_batch(cnt, out, n);
	return rc;
}

int hr_client_lookup_batch(hr_client *c, const void *const *keys,
			   const size_t *lens, size_t n, hr_batch_owner *out,
			   hr_epoch *epoch, hr_error *err)
{
	const hr_ring *ring;
	int rc;

	if (!c)
		return hr__error_set(err, HR_EINVAL, "lookup_batch: NULL client");
	ring = hr__thread_cache_ring(&c->pub);
	if (__builtin_expect(ring != NULL, 1))
		return batch_on(ring, keys, lens, n, out, epoch,
				hr__thread_cache_counts(), err);
	/* No per-thread state: not counted. */
	rc = batch_on(hr__publish_read_begin(&c->pub), keys, lens, n, out, epoch,
		      NULL, err);
	hr__publish_read_end(&c->pub);
	return rc;
}

int hr_client_replicas(hr_client *c, const void *key, size_t len, hr_view view,
		       hr_replica *out, size_t r, uint64_t *revision, hr_error *err)
{
	const hr_ring *ring;
	int k;

	if (!c)
		return hr__error_set(err, HR_EINVAL, "replicas: client is NULL");
	if (!key && len)
		return hr__error_set(err, HR_EINVAL,
				     "replicas: key is NULL with length %zu", len);
	if ((!out && r) || r > HR__REPLICAS_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "replicas: r %zu with out %s (at most %d)", r,
				     out ? "set" : "NULL", HR__REPLICAS_MAX);
	if (view != HR_VIEW_WRITE && view != HR_VIEW_READ)
		return hr__error_set(err, HR_EINVAL, "replicas: bad view %d", (int)view);
	ring = hr__thread_cache_ring(&c->pub);
	if (__builtin_expect(ring != NULL, 1))
		return hr__ring_replicas(ring, key, len, view, out, r, revision);
	k = hr__ring_replicas(hr__publish_read_begin(&c->pub), key, len, view,
			      out, r, revision);
	hr__publish_read_end(&c->pub);
	return k;
}

hr__publisher *hr__client_publisher(hr_client *c)
{
	return &c->pub;
}

void hr__client_count_lookups(hr_client *c, bool on)
{
	hr__counters_enable(&c->counters, on);
}

int hr_client_lookup_counts(hr_client *c, hr_node_lookups *out, size_t n,
			    size_t *total, hr_error *err)
{
	hr__tally t;
	hr_ring *ring;
	size_t k;
	int rc;

	if (!c || (!out && n))
		return hr__error_set(err, HR_EINVAL, "lookup_counts: %s",
				     c ? "out is NULL with n > 0" : "NULL client");
	/* The parent's lookup threads may have held the counters' locks. */
	rc = forked(c, "lookup_counts", err);
	if (rc)
		return rc;
	ring = hr__publish_acquire(&c->pub);
	rc = hr__counters_read(&c->counters, ring, &t);
	if (rc) {
		hr_ring_release(ring);
		return hr__error_set(err, rc, "lookup_counts: out of memory");
	}
	k = t.n < n ? t.n : n;
	for (size_t i = 0; i < k; i++) {
		/* Ids fit: at most HR_ID_MAX bytes. */
		strcpy(out[i].node, t.e[i].id);
		out[i].write = t.e[i].n[HR_VIEW_WRITE];
		out[i].read = t.e[i].n[HR_VIEW_READ];
	}
	if (total)
		*total = t.n;
	hr__counters_read_end(&c->counters, &t);
	hr_ring_release(ring);
	return (int)k;
}

/* The most hot keys one call reports: more than the sketches keep of any
 * key worth the name. */
#define HOT_KEYS_MAX 1024

int hr_client_hot_keys_size(hr_client *c, hr_hot_key *out, size_t n,
			    size_t size, hr_error *err)
{
	hr_hot_key *all;
	uint64_t *ids;
	hr_ring *ring;
	int k;

	if (!c || (!out && n))
		return hr__error_set(err, HR_EINVAL, "hot_keys: %s",
				     c ? "out is NULL with n > 0" : "NULL client");
	if (size < offsetof(hr_hot_key, len) + sizeof out->len)
		return hr__error_set(err, HR_EINVAL, "hot_keys: size %zu is below the"
				     " first fields (pass sizeof *out)", size);
	k = forked(c, "hot_keys", err);
	if (k)
		return k;
	if (n > HOT_KEYS_MAX)
		n = HOT_KEYS_MAX;
	all = calloc(n ? n : 1, sizeof *all);
	ids = calloc(n ? n : 1, sizeof *ids);
	if (!all || !ids) {
		free(all);
		free(ids);
		return hr__error_set(err, HR_ENOMEM, "hot_keys: out of memory");
	}
	k = hr__counters_hot_keys(&c->counters, all, ids, n);
	if (k < 0) {
		free(all);
		free(ids);
		return hr__error_set(err, k, "hot_keys: out of memory");
	}
	ring = hr__publish_acquire(&c->pub);
	for (int i = 0; i < k; i++) {
		const hr_node *wn, *rn;

		if (hr__ring_owners_pos(ring, ids[i], &wn, &rn) == HR_OK) {
			/* Ids fit: at most HR_ID_MAX bytes. */
			strcpy(all[i].node, wn ? wn->id : "");
			strcpy(all[i].read_node, rn ? rn->id : "");
		}
		/* An older program's smaller struct gets its own fields. */
		memcpy((char *)out + (size_t)i * size, &all[i],
		       size < sizeof *all ? size : sizeof *all);
		if (size > sizeof *all)
			memset((char *)out + (size_t)i * size + sizeof *all, 0,
			       size - sizeof *all);
	}
	hr_ring_release(ring);
	free(all);
	free(ids);
	return k;
}

hr_ring *hr_client_ring(hr_client *c)
{
	if (!c)
		return NULL;
	if (c->host && hr__host_changed(c->host))
		follow_agent(&c->pub);
	return hr__publish_acquire(&c->pub);
}

int hr_client_status_get_size(hr_client *c, hr_client_status *out, size_t size,
			      hr_error *err)
{
	hr_client_status st;
	hr_ring *ring;
	int rc;

	if (!c || !out)
		return hr__error_set(err, HR_EINVAL, "status: %s",
				     !c ? "client is NULL" : "out is NULL");
	if (!size)
		return hr__error_set(err, HR_EINVAL, "status: size is 0");
	/* A size short of the first field is garbage, not an older struct. */
	if (size < HR__END(hr_client_status, revision))
		return hr__error_set(err, HR_EINVAL, "status: size %zu is below the"
				     " first field (pass sizeof *out)", size);
	/* The watcher's state is under its lock, maybe held at the fork. */
	rc = forked(c, "status", err);
	if (rc)
		return rc;
	memset(&st, 0, sizeof st);
	ring = hr__publish_acquire(&c->pub);
	st.revision = hr_ring_revision(ring);
	st.digest = hr_ring_digest(ring);
	hr_ring_release(ring);
	if (c->host) {
		uint64_t pid;
		int64_t beat, unconfirmed;

		/* The agent's view, from its control page: its ring is
		 * unconfirmed since its last confirmation, or since its last
		 * heartbeat when it stopped beating. */
		hr__host_agent(c->host, &pid, &beat, &unconfirmed);
		st.confirmed_revision = st.revision;
		st.unconfirmed_ms = unconfirmed > 0 ? unconfirmed : 0;
		if (beat > HR__HOST_BEAT_LATE_MS && beat > st.unconfirmed_ms)
			st.unconfirmed_ms = beat;
		st.rings_published = __atomic_load_n(&c->host_rings, __ATOMIC_RELAXED);
		snprintf(st.endpoint, sizeof st.endpoint, "agent:%s", c->host->dir);
		st.watcher_clients = 1;
	} else {
		hr__watcher_status(hr__feed_watcher(c->feed), &st);
		st.watcher_clients = hr__feed_clients(c->feed);
	}
	/* The caller's struct, however old or new, and not a byte more. */
	memcpy(out, &st, size < sizeof st ? size : sizeof st);
	if (size > sizeof st)
		memset((char *)out + sizeof st, 0, size - sizeof st);
	return 0;
}
