/* SPDX-License-Identifier: MIT */
/* raw_fan.c - see raw_fan.h. */
#define _GNU_SOURCE /* memmem */
#include "raw_fan.h"

#include "bench.h"
#include "raw_watch.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Longest message kept; the bench's messages are a few hundred bytes. */
#define LINE_MAX_BYTES (1u << 20)
#define EPOLL_BATCH 256

typedef struct stream {
	hrb_raw_fan *f;
	int index;
	CURL *h;
	hrb_buf lines;
	int64_t t_arrival;	/* of the bytes being framed */
} stream;

struct hrb_raw_fan {
	CURLM *multi;
	int ep;                  /* epoll descriptor          */
	long timeout_ms;         /* libcurl's timer; -1: none */
	struct curl_slist *headers;
	char *body;
	int n;
	stream *s;
	hrb_raw_fan_fn fn;
	void *ud;
	pthread_t thread;
	int started;
	/* Written by the fan's thread, read by others: atomics. */
	int stop;
	int created;
	int failed;
};

/* One message: created, a stream error, or events whose mod_revision is
 * found by a scan (no JSON parser: the floor is etcd's, not cJSON's). */
static void on_message(void *ud, const char *line, size_t len)
{
	stream *s = ud;
	int64_t t_ns = s->t_arrival;
	static const char MR[] = "\"mod_revision\":\"";
	const char *p = line, *end = line + len;

	if (memmem(line, len, "\"created\":true", 14)) {
		__atomic_add_fetch(&s->f->created, 1, __ATOMIC_RELEASE);
	} else if (memmem(line, len, "\"canceled\":true", 15) ||
		   memmem(line, len, "\"error\":", 8)) {
		fprintf(stderr, "bench: raw fan stream %d failed: %.*s\n", s->index,
			(int)(len < 300 ? len : 300), line);
		__atomic_add_fetch(&s->f->failed, 1, __ATOMIC_RELEASE);
	}
	while ((p = memmem(p, (size_t)(end - p), MR, sizeof MR - 1))) {
		p += sizeof MR - 1;
		s->f->fn(s->f->ud, s->index, strtoll(p, NULL, 10), t_ns);
	}
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	stream *s = ud;
	size_t n = size * nmemb;

	/* The arrival time comes first: scanning is not network latency. */
	s->t_arrival = hrb_now_ns();
	return hrb_buf_lines(&s->lines, p, n, LINE_MAX_BYTES, on_message, s) ? 0 : n;
}

/* libcurl's socket callback: keeps epoll's interest list as it asks. */
static int on_socket(CURL *h, curl_socket_t fd, int what, void *ud, void *sockp)
{
	hrb_raw_fan *f = ud;
	struct epoll_event ev = { 0 };

	(void)h;
	ev.data.fd = fd;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(f->ep, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (!sockp) {
		curl_multi_assign(f->multi, fd, f);
		if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) && errno == EEXIST)
			epoll_ctl(f->ep, EPOLL_CTL_MOD, fd, &ev);
	} else {
		epoll_ctl(f->ep, EPOLL_CTL_MOD, fd, &ev);
	}
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	hrb_raw_fan *f = ud;

	(void)m;
	f->timeout_ms = timeout_ms;
	return 0;
}

static void reap(hrb_raw_fan *f)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(f->multi, &left)))
		if (msg->msg == CURLMSG_DONE) {
			if (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
				fprintf(stderr, "bench: raw fan stream ended: %s\n",
					curl_easy_strerror(msg->data.result));
			__atomic_add_fetch(&f->failed, 1, __ATOMIC_RELEASE);
		}
}

static void *fan_main(void *arg)
{
	hrb_raw_fan *f = arg;
	struct epoll_event evs[EPOLL_BATCH];
	int running;

	curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		/* At most 100 ms: the stop flag is looked at that often. */
		int wait = f->timeout_ms < 0 || f->timeout_ms > 100 ? 100 : (int)f->timeout_ms;
		int k = epoll_wait(f->ep, evs, EPOLL_BATCH, wait);

		if (k <= 0) {
			curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		} else {
			for (int i = 0; i < k; i++) {
				int mask = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
					   (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
					   (evs[i].events & (EPOLLERR | EPOLLHUP) ?
					    CURL_CSELECT_ERR : 0);
				curl_multi_socket_action(f->multi, evs[i].data.fd, mask, &running);
			}
		}
		reap(f);
	}
	return NULL;
}

hrb_raw_fan *hrb_raw_fan_start(const char *url, const char *prefix,
			       int64_t start_rev, int n, hrb_raw_fan_fn fn, void *ud)
{
	hrb_raw_fan *f = calloc(1, sizeof *f);

	if (!f)
		return NULL;
	f->n = n;
	f->fn = fn;
	f->ud = ud;
	f->timeout_ms = -1;
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	f->s = calloc((size_t)n, sizeof *f->s);
	f->body = hrb_watch_body(prefix, start_rev);
	f->multi = curl_multi_init();
	f->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (f->ep < 0 || !f->s || !f->body || !f->multi || !f->headers) {
		fprintf(stderr, "bench: raw fan: out of memory or descriptors\n");
		hrb_raw_fan_stop(f);
		return NULL;
	}
	curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
	curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
	for (int i = 0; i < n; i++) {
		stream *s = &f->s[i];

		s->f = f;
		s->index = i;
		s->h = curl_easy_init();
		if (!s->h) {
			fprintf(stderr, "bench: raw fan: out of memory\n");
			hrb_raw_fan_stop(f);
			return NULL;
		}
		hrb_watch_request(s->h, url, f->headers, f->body, on_data, s, 10000L);
		curl_multi_add_handle(f->multi, s->h);
	}
	if (pthread_create(&f->thread, NULL, fan_main, f)) {
		fprintf(stderr, "bench: raw fan: cannot start its thread\n");
		hrb_raw_fan_stop(f);
		return NULL;
	}
	f->started = 1;
	return f;
}

int hrb_raw_fan_wait_created(hrb_raw_fan *f, int timeout_ms)
{
	int64_t until = hrb_now_ns() + (int64_t)timeout_ms * 1000000;

	while (__atomic_load_n(&f->created, __ATOMIC_ACQUIRE) < f->n) {
		if (hrb_raw_fan_failed(f) || hrb_now_ns() > until)
			return -1;
		hrb_sleep_ns(1000000);
	}
	return hrb_raw_fan_failed(f) ? -1 : 0;
}

int hrb_raw_fan_failed(const hrb_raw_fan *f)
{
	return __atomic_load_n(&f->failed, __ATOMIC_ACQUIRE);
}

void hrb_raw_fan_stop(hrb_raw_fan *f)
{
	if (!f)
		return;
	if (f->started) {
		__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
		pthread_join(f->thread, NULL);
	}
	for (int i = 0; f->s && i < f->n; i++) {
		if (f->s[i].h) {
			curl_multi_remove_handle(f->multi, f->s[i].h);
			curl_easy_cleanup(f->s[i].h);
		}
		free(f->s[i].lines.p);
	}
	curl_multi_cleanup(f->multi);
	if (f->ep >= 0)
		close(f->ep);
	curl_slist_free_all(f->headers);
	free(f->body);
	free(f->s);
	free(f);
}
