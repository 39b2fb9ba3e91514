/* SPDX-License-Identifier: MIT */
/* share.c - feeds (a watcher and its clients) and the shares that let
 * clients with equal settings follow one feed. */
#include "share.h"

#include "buffer.h"
#include "error.h"
#include "fork.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct hr_share {
	pthread_mutex_t mu;
	size_t refs;            /* the owner's until hr_share_free, one per feed */
	hr__feed *feeds;
	pid_t pid;              /* the process that made it (fork.h) */
};

struct hr__feed {
	hr_share *share;        /* NULL: one client's own */
	hr__feed *next;         /* in share->feeds */
	hr__buffer key;         /* the settings, canonical (share only) */
	hr__log log;            /* the watcher's and the event=ring lines' */
	hr__subscribers subs;
	hr__watcher *watcher;
};

int hr_share_new(hr_share **out, hr_error *err)
{
	hr_share *sh;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "hr_share_new: out must not be NULL");
	*out = NULL;
	sh = calloc(1, sizeof *sh);
	if (!sh)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	pthread_mutex_init(&sh->mu, NULL);
	sh->refs = 1;
	sh->pid = hr__process();
	*out = sh;
	return 0;
}

static void share_unref(hr_share *sh)
{
	size_t left;

	pthread_mutex_lock(&sh->mu);
	left = --sh->refs;
	pthread_mutex_unlock(&sh->mu);
	if (left)
		return;
	pthread_mutex_destroy(&sh->mu);
	free(sh);
}

void hr_share_free(hr_share *sh)
{
	/* In a child of fork() its feeds are the parent's, and its lock may
	 * have been held at the fork: it is left as it is (a leak by design;
	 * the clients of the child close without it). */
	if (sh && !hr__forked_since(sh->pid))
		share_unref(sh);
}

/* ---- the key: what a watcher depends on ----------------------------------- */

static int key_bytes(hr__buffer *k, const void *p, size_t n)
{
	return hr__buffer_append(k, p, n, 0);
}

/* A string with its length, NULL apart from "". */
static int key_str(hr__buffer *k, const char *s)
{
	size_t n = s ? strlen(s) + 1 : 0;

	return key_bytes(k, &n, sizeof n) || (n && key_bytes(k, s, n));
}

#define KEY_VAL(k, v) key_bytes((k), &(v), sizeof(v))

/*
 * Every input of a watcher, field by field (no struct is compared whole:
 * padding bytes are not settings).  The callbacks, acks, open timeout and
 * hot-key settings are each client's own and stay out.
 */
static int make_key(hr__buffer *k, const hr__conn *c, const hr_client_config *cc)
{
	const hr__etcd_opts *e = &c->etcd;

	return key_str(k, e->endpoints) || key_str(k, e->api_base) ||
	       KEY_VAL(k, e->request_timeout_ms) || KEY_VAL(k, e->connect_timeout_ms) ||
	       key_str(k, e->ca_file) || key_str(k, e->cert_file) ||
	       key_str(k, e->key_file) || KEY_VAL(k, e->insecure_skip_verify) ||
	       key_str(k, e->username) || key_str(k, e->password) ||
	       key_str(k, c->prefix) || KEY_VAL(k, c->ring.vnodes_per_weight) ||
	       KEY_VAL(k, c->ring.placement) || KEY_VAL(k, c->ring.maglev_size) ||
	       KEY_VAL(k, c->log.fn) || KEY_VAL(k, c->log.userdata) ||
	       KEY_VAL(k, c->log.max) || KEY_VAL(k, cc->page_size) ||
	       KEY_VAL(k, cc->backoff_initial_ms) || KEY_VAL(k, cc->backoff_max_ms) ||
	       KEY_VAL(k, cc->probe_interval_ms) || KEY_VAL(k, cc->stale_warn_ms) ||
	       KEY_VAL(k, cc->probe_jitter_pct) || KEY_VAL(k, cc->endpoint_order);
}

static void key_free(hr__buffer *k)
{
	/* It holds the password. */
	if (k->data)
		memset(k->data, 0, k->cap);
	hr__buffer_free(k);
}

/* ---- feeds ------------------------------------------------------------------ */

static void feed_free(hr__feed *f)
{
	hr__watcher_stop(f->watcher);
	hr__subs_destroy(&f->subs);
	key_free(&f->key);
	free(f);
}

/* A feed with `sub` as its first subscriber, its watcher started. */
static int feed_start(const hr__conn *conn, const hr_client_config *cc,
		      hr__subscriber *sub, hr__feed **out, hr_error *err)
{
	hr__watch_opts wo;
	hr_ring *empty = NULL;
	hr__feed *f;
	bool pending;
	int rc;

	f = calloc(1, sizeof *f);
	if (!f)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	/* Lookups before the first sync see an empty ring, never NULL. */
	rc = hr_ring_build(NULL, 0, &conn->ring, 0, &empty, err);
	if (rc) {
		free(f);
		return rc;
	}
	f->log = conn->log;
	hr__subs_init(&f->subs, empty, &f->log);
	rc = hr__subs_add(&f->subs, sub, &pending);
	if (rc) {
		feed_free(f);
		return hr__error_set(err, rc, "out of memory");
	}

	memset(&wo, 0, sizeof wo);
	wo.etcd = conn->etcd;
	wo.prefix = conn->prefix;
	wo.ring = conn->ring;
	wo.page_size = cc->page_size;
	wo.backoff_initial_ms = cc->backoff_initial_ms;
	wo.backoff_max_ms = cc->backoff_max_ms;
	wo.probe_interval_ms = cc->probe_interval_ms;
	wo.stale_warn_ms = cc->stale_warn_ms;
	wo.probe_jitter_pct = cc->probe_jitter_pct;
	wo.spread_endpoints = cc->endpoint_order == HR_ENDPOINTS_SPREAD;
	wo.log = &f->log;
	wo.subs = &f->subs;
	rc = hr__watcher_start(&wo, &f->watcher, err);
	if (rc) {
		hr__subs_remove(&f->subs, sub);
		hr__publish_destroy(sub->pub);
		feed_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int hr__feed_join(hr_share *sh, const hr__conn *conn, const hr_client_config *cc,
		  hr__subscriber *sub, hr__feed **out, hr_error *err)
{
	hr__buffer key = { 0 };
	hr__feed *f;
	int rc;

	*out = NULL;
	if (!sh)
		return feed_start(conn, cc, sub, out, err);
	/* Its watchers are in the parent: a client here would wait for
	 * rings that never come. */
	if (hr__forked_since(sh->pid))
		return hr__forked_error(err, "hr_client_config.share", "the share was made",
					"make one with hr_share_new() in this process", sh->pid);
	if (make_key(&key, conn, cc)) {
		key_free(&key);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	/* Under the share's lock, so that two clients opened at once with
	 * equal settings start one feed. */
	pthread_mutex_lock(&sh->mu);
	for (f = sh->feeds; f; f = f->next)
		if (f->key.len == key.len && !memcmp(f->key.data, key.data, key.len))
			break;
	if (f) {
		bool pending;

		rc = hr__subs_add(&f->subs, sub, &pending);
		pthread_mutex_unlock(&sh->mu);
		key_free(&key);
		if (rc)
			return hr__error_set(err, rc, "out of memory");
		if (pending)
			hr__watcher_wake(f->watcher);
		*out = f;
		return 0;
	}
	rc = feed_start(conn, cc, sub, &f, err);
	if (!rc) {
		f->share = sh;
		f->key = key;
		f->next = sh->feeds;
		sh->feeds = f;
		sh->refs++;
		*out = f;
	}
	pthread_mutex_unlock(&sh->mu);
	if (rc)
		key_free(&key);
	return rc;
}

void hr__feed_leave(hr__feed *f, hr__subscriber *sub)
{
	hr_share *sh = f->share;
	size_t left;

	if (!sh) {
		hr__subs_remove(&f->subs, sub);
		feed_free(f);
		return;
	}
	/* Under the share's lock: the last to leave frees the feed, and
	 * nobody joins it meanwhile. */
	pthread_mutex_lock(&sh->mu);
	left = hr__subs_remove(&f->subs, sub);
	if (!left) {
		/* Out of the list first: a client opened from now on starts
		 * a feed of its own while this one stops. */
		hr__feed **pp = &sh->feeds;

		while (*pp != f)
			pp = &(*pp)->next;
		*pp = f->next;
	}
	pthread_mutex_unlock(&sh->mu);
	if (left)
		return;
	feed_free(f);
	share_unref(sh);
}

hr__watcher *hr__feed_watcher(hr__feed *f)
{
	return f->watcher;
}

size_t hr__feed_clients(hr__feed *f)
{
	return hr__subs_count(&f->subs);
}
