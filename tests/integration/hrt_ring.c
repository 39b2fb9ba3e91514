/* SPDX-License-Identifier: MIT */
/* hrt_ring.c - see hrt_ring.h. */
#include "hrt_ring.h"

#include "base64.h"
#include "etcd.h"
#include "etcd_fixture.h"
#include "nodeset.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void hrt_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	/* A deadline computed by the caller may already have passed: a
	 * negative time makes nanosleep fail with EINVAL, forever. */
	if (ms <= 0)
		return;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int64_t hrt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t reply_revision(const char *body)
{
	cJSON *root = cJSON_Parse(body);
	int64_t rev = -1;

	if (root)
		hr__json_int64(cJSON_GetObjectItemCaseSensitive(root, "header"),
			       "revision", -1, &rev);
	cJSON_Delete(root);
	return rev;
}

static int64_t post_kv(const char *url, const char *path, const char *key,
		       const char *value)
{
	size_t kl = strlen(key), vl = value ? strlen(value) : 0;
	char *k64 = malloc(hr__base64_encoded_size(kl));
	char *v64 = malloc(hr__base64_encoded_size(vl));
	char *body = malloc(hr__base64_encoded_size(kl) + hr__base64_encoded_size(vl) + 64);
	char full[512], out[4096];
	long status = 0;
	int64_t rev = -1;

	hr__base64_encode(key, kl, k64);
	hr__base64_encode(value ? value : "", vl, v64);
	if (value)
		sprintf(body, "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
	else
		sprintf(body, "{\"key\":\"%s\"}", k64);
	snprintf(full, sizeof full, "%s/v3%s", url, path);
	if (hrt_http_post(full, body, out, sizeof out, &status) == 0 && status == 200)
		rev = reply_revision(out);
	else
		fprintf(stderr, "hrt: POST %s failed: status %ld: %s\n", path, status, out);
	free(k64);
	free(v64);
	free(body);
	return rev;
}

int64_t hrt_put(const char *url, const char *key, const char *value)
{
	return post_kv(url, "/kv/put", key, value);
}

int64_t hrt_del(const char *url, const char *key)
{
	return post_kv(url, "/kv/deleterange", key, NULL);
}

hr_ring *hrt_ring_from_etcd(const char *endpoints, const char *prefix,
			    uint64_t *revision)
{
	hr__etcd_opts o = { .endpoints = endpoints };
	hr__etcd *e = NULL;
	hr__kv *kvs = NULL;
	size_t n = 0, plen = strlen(prefix);
	int64_t rev = 0;
	hr_error err = { 0 };
	hr__nodeset set = { 0 };
	hr_ring *ring = NULL;

	if (hr__etcd_new(&o, &e, &err) ||
	    hr__etcd_list(e, prefix, 500, HR_NODES_MAX, &kvs, &n, &rev, &err)) {
		fprintf(stderr, "hrt: fresh range failed: %s\n", err.message);
		hr__etcd_free(e);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		hr__record rec;
		if (hr__record_parse(kvs[i].key + plen, kvs[i].key_len - plen,
				     kvs[i].value, kvs[i].value_len, &rec, NULL) == 0)
			hr__nodeset_put(&set, &rec, kvs[i].create_revision,
					kvs[i].mod_revision);
	}
	if (hr__nodeset_build(&set, NULL, (uint64_t)rev, &ring, &err))
		fprintf(stderr, "hrt: build failed: %s\n", err.message);
	hr__nodeset_clear(&set);
	hr__kvs_free(kvs, n);
	hr__etcd_free(e);
	if (revision)
		*revision = (uint64_t)rev;
	return ring;
}

int hrt_wait_converged(hr_client *c, const char *endpoints, const char *prefix,
		       int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	uint64_t want = 0, have = 0;

	for (;;) {
		hr_ring *truth = hrt_ring_from_etcd(endpoints, prefix, NULL);
		hr_ring *mine = hr_client_ring(c);
		if (truth) {
			want = hr_ring_digest(truth);
			have = hr_ring_digest(mine);
		}
		hr_ring_release(truth);
		hr_ring_release(mine);
		if (truth && want == have)
			return 0;
		if (hrt_now_ms() > until)
			break;
		hrt_sleep_ms(50);
	}
	fprintf(stderr, "hrt: not converged after %d ms: etcd %016llx client %016llx\n",
		timeout_ms, (unsigned long long)want, (unsigned long long)have);
	return -1;
}

int hrt_wait_nodes(hr_client *c, size_t n, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;

	for (;;) {
		hr_ring *r = hr_client_ring(c);
		size_t have = hr_ring_node_count(r);
		hr_ring_release(r);
		if (have == n)
			return 0;
		if (hrt_now_ms() > until) {
			fprintf(stderr, "hrt: %zu nodes, want %zu\n", have, n);
			return -1;
		}
		hrt_sleep_ms(20);
	}
}

int hrt_node_state(hr_client *c, const char *id)
{
	hr_ring *r = hr_client_ring(c);
	const hr_node *n = hr_ring_find(r, id);
	int st = n ? (int)n->state : -1;

	hr_ring_release(r);
	return st;
}

int hrt_wait_state(hr_client *c, const char *id, int want, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;

	while (hrt_node_state(c, id) != want) {
		if (hrt_now_ms() > until)
			return -1;
		hrt_sleep_ms(10);
	}
	return 0;
}

void hrt_log_init(hrt_log *l)
{
	memset(l, 0, sizeof *l);
	pthread_mutex_init(&l->mu, NULL);
	l->echo = getenv("HRT_ECHO_LOG") != NULL;
}

void hrt_log_free(hrt_log *l)
{
	free(l->text);
	pthread_mutex_destroy(&l->mu);
}

void hrt_text_append(char **text, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t want = *cap ? *cap * 2 : 65536;

		while (want < *len + n + 1)
			want *= 2;
		*text = realloc(*text, want);
		if (!*text)
			abort();
		*cap = want;
	}
	memcpy(*text + *len, p, n);
	*len += n;
	(*text)[*len] = '\0';
}

void hrt_log_fn(void *userdata, hr_log_level level, const char *line)
{
	hrt_log *l = userdata;

	(void)level;
	pthread_mutex_lock(&l->mu);
	hrt_text_append(&l->text, &l->len, &l->cap, line, strlen(line));
	hrt_text_append(&l->text, &l->len, &l->cap, "\n", 1);
	if (l->echo)
		fprintf(stderr, "log: %s\n", line);
	pthread_mutex_unlock(&l->mu);
}

static int log_count_v(hrt_log *l, va_list needles)
{
	int count = 0;

	pthread_mutex_lock(&l->mu);
	for (char *p = l->text; p && *p;) {
		char *nl = strchr(p, '\n');
		va_list ap;
		const char *needle;
		int all = 1;

		*nl = '\0';
		va_copy(ap, needles);
		while ((needle = va_arg(ap, const char *)))
			if (!strstr(p, needle))
				all = 0;
		va_end(ap);
		*nl = '\n';
		count += all;
		p = nl + 1;
	}
	pthread_mutex_unlock(&l->mu);
	return count;
}

int hrt_log_count(hrt_log *l, ...)
{
	va_list ap;
	int count;

	va_start(ap, l);
	count = log_count_v(l, ap);
	va_end(ap);
	return count;
}

int hrt_log_wait(hrt_log *l, int at_least, int timeout_ms, int poll_ms, ...)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	va_list ap;
	int count;

	for (;;) {
		va_start(ap, poll_ms);
		count = log_count_v(l, ap);
		va_end(ap);
		if (count >= at_least || hrt_now_ms() >= until)
			return count;
		hrt_sleep_ms(poll_ms);
	}
}

void hrt_log_clear(hrt_log *l)
{
	pthread_mutex_lock(&l->mu);
	l->len = 0;
	if (l->text)
		l->text[0] = '\0';
	pthread_mutex_unlock(&l->mu);
}
