/* SPDX-License-Identifier: MIT */
/* watch_control.c - the watcher as other threads use it: start, the wait
 * for the first ring, status, stop. */
#include "watch.h"
#include "watch_state.h"

#include "clock.h"
#include "error.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	w->last_confirm_ms = hr__now_ms();
	w->rng = (uint64_t)hr__now_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)w;
	if (!w->rng)
		w->rng = 1;
	w->probe_timeout_ms = opts->etcd.request_timeout_ms < 2000 ?
			      opts->etcd.request_timeout_ms : 2000;
	if (w->probe_timeout_ms > opts->probe_interval_ms)
		w->probe_timeout_ms = opts->probe_interval_ms;
	if (w->probe_timeout_ms < 100)
		w->probe_timeout_ms = 100;
	pthread_mutex_init(&w->mu, NULL);
	hr__cond_init_monotonic(&w->cv);
	if (!w->prefix) {
		hr__watcher_stop(w);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	eo = opts->etcd;
	/* Clients given the same list start on different members. */
	if (opts->spread_endpoints)
		eo.first_endpoint = (unsigned)((w->rng * 0x9e3779b97f4a7c15ull) >> 33);
	eo.stop_flag = &w->stop;
	eo.tick = hr__watch_tick;
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
	rc = pthread_create(&w->thread, NULL, hr__watch_thread, w);
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

	hr__deadline_in(&ts, timeout_ms);
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
	since = hr__now_ms() - w->last_confirm_ms;
	out->confirmed_revision = w->confirmed_revision;
	/* A quiet stream is confirmed once per probe interval, or per
	 * progress notification when they replace probes: that long (twice,
	 * for slack) counts as current, but never longer than the stale
	 * warnings allow. */
	int64_t current = 2 * (int64_t)w->o.probe_interval_ms, quiet;
	quiet = __atomic_load_n(&w->quiet_allowed_ms, __ATOMIC_RELAXED) + w->probe_timeout_ms;
	if (quiet > current)
		current = quiet;
	if (current > w->o.stale_warn_ms)
		current = w->o.stale_warn_ms;
	out->unconfirmed_ms = since >= current ? since : 0;
	out->rings_published = w->rings_published;
	out->resyncs = w->resyncs;
	out->reconnects = w->reconnects;
	snprintf(out->endpoint, sizeof out->endpoint, "%s", w->endpoint);
	pthread_mutex_unlock(&w->mu);
}

void hr__watcher_wake(hr__watcher *w)
{
	pthread_mutex_lock(&w->mu);
	/* A stream's wait, or a backoff's (sleep_ms); waiters for the first
	 * ring check their condition again. */
	pthread_cond_broadcast(&w->cv);
	if (w->stream)
		hr__etcd_stream_wakeup(w->stream);
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
		if (w->stream)
			hr__etcd_stream_wakeup(w->stream);
		pthread_mutex_unlock(&w->mu);
		if (w->started)
			pthread_join(w->thread, NULL);
	}
	hr__etcd_free(w->etcd);
	hr__nodeset_clear(&w->set);
	hr__kvs_free(w->frag, w->n_frag);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->prefix);
	free(w);
}
