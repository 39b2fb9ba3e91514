/* SPDX-License-Identifier: MIT */
/*
 * test_faults.c - the fault suite: a client watching a real etcd on
 * loopback while membership churns and etcd, the network and the data go
 * wrong underneath it.
 *
 * Every scenario records each ring the client publishes (on_change) and,
 * once the faults are over, checks every one of them against a range of
 * what etcd held at that ring's revision: a ring that missed a change, that
 * applied one twice or out of order, or that kept a record etcd no longer
 * had, has another digest.  Reader threads look keys up throughout and
 * measure how long each lookup takes.  Each scenario bounds its own time.
 *
 * Sizes shrink under sanitizers (HRT_FAULT_SCALE, a percentage, overrides).
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "fault_proxy.h"
#include "hrt_ring.h"
#include "hrt_logfmt.h"

#include "base64.h"
#include "etcd.h"
#include "nodeset.h"
#include "hrt_check.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define PREFIX "/ring/nodes/"
#define VNODES 20               /* small rings: thousands are built      */
#define CHURN_KEYS 40
#define STABLE_KEYS 4           /* never touched: lookups always answer  */
#define READERS 2
#define MAX_LOOKUP_MS 50
/* The documented bound, test timers (backoff cap 1 s, probe 1 s, request
 * 2 s): converged within 8 s of etcd being reachable again. */
#define CONVERGE_MS 8000

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DEFAULT_SCALE 35
#else
#define DEFAULT_SCALE 100
#endif

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;

static int scaled(int n)
{
	const char *s = getenv("HRT_FAULT_SCALE");
	int pct = s ? atoi(s) : DEFAULT_SCALE;

	if (pct <= 0)
		pct = DEFAULT_SCALE;
	n = n * pct / 100;
	return n > 1 ? n : 1;
}

/* ---- HTTP to the gateway (a reused handle: churn needs the speed) -------- */

typedef struct http {
	CURL *h;
	char *body;
	size_t len, cap;
} http;

static size_t http_sink(char *p, size_t size, size_t nmemb, void *ud)
{
	http *c = ud;

	hrt_text_append(&c->body, &c->len, &c->cap, p, size * nmemb);
	return size * nmemb;
}

static void http_init(http *c)
{
	memset(c, 0, sizeof *c);
	c->h = curl_easy_init();
	ck_assert_ptr_nonnull(c->h);
}

static void http_free(http *c)
{
	curl_easy_cleanup(c->h);
	free(c->body);
}

/* POSTs `body` to <url>/v3<path>; returns the HTTP status, or -1. */
static long http_post(http *c, const char *url, const char *path,
		      const char *body)
{
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	char full[256];
	long status = -1;

	snprintf(full, sizeof full, "%s/v3%s", url, path);
	c->len = 0;
	if (c->body)
		c->body[0] = '\0';
	curl_easy_setopt(c->h, CURLOPT_URL, full);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_PROXY, "");
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 3000L);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, http_sink);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
	if (curl_easy_perform(c->h) == CURLE_OK)
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdr);
	return status;
}

/* Standard padded base64 of a C string, in a static-free caller buffer. */
static const char *b64(char *out, size_t size, const char *s, size_t n)
{
	ck_assert_uint_le(hr__base64_encoded_size(n), size);
	hr__base64_encode(s, n, out);
	return out;
}

/* ---- etcd's state at a revision ------------------------------------------- */

/*
 * The ring etcd held under PREFIX at revision `rev`, built as the client
 * builds it (records parsed the same way, bad ones skipped): a paged range
 * pinned to `rev`.  NULL if the range failed (compacted, unreachable).
 */
static hr_ring *ring_at(http *c, const char *url, int64_t rev)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = VNODES };
	size_t plen = strlen(PREFIX);
	char key[1024], k64[2048], end64[64], body[4096];
	hr__nodeset set = { 0 };
	hr_ring *ring = NULL;
	int more = 1, ok = 1;

	memcpy(key, PREFIX, plen + 1);
	b64(end64, sizeof end64, "/ring/nodes0", 12);
	b64(k64, sizeof k64, key, plen);
	while (more && ok) {
		cJSON *root, *it;

		snprintf(body, sizeof body,
			 "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":200,"
			 "\"revision\":\"%" PRId64 "\"}", k64, end64, rev);
		if (http_post(c, url, "/kv/range", body) != 200) {
			fprintf(stderr, "faults: range at %" PRId64 ": %s\n", rev,
				c->body ? c->body : "no answer");
			ok = 0;
			break;
		}
		root = cJSON_Parse(c->body);
		more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "more"));
		hr__kv kv = { 0 };
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "kvs")) {
			hr__record rec;
			hr__kv_clear(&kv);
			ck_assert_int_eq(hr__kv_from_json(it, &kv, NULL), 0);
			if (hr__record_parse(kv.key + plen, kv.key_len - plen, kv.value,
					     kv.value_len, &rec, NULL) == 0)
				hr__nodeset_put(&set, &rec, kv.create_revision,
						kv.mod_revision);
		}
		if (more) {
			/* The next page starts just after the last key. */
			char next[1024];
			ck_assert_uint_lt(kv.key_len + 1, sizeof next);
			memcpy(next, kv.key, kv.key_len);
			next[kv.key_len] = '\0';
			b64(k64, sizeof k64, next, kv.key_len + 1);
		}
		hr__kv_clear(&kv);
		cJSON_Delete(root);
	}
	if (ok)
		ck_assert_int_eq(hr__nodeset_build(&set, &opts, (uint64_t)rev, &ring, NULL), 0);
	hr__nodeset_clear(&set);
	return ring;
}

static int64_t current_revision(http *c, const char *url)
{
	int64_t rev = -1;

	if (http_post(c, url, "/kv/range", "{\"key\":\"AA==\",\"count_only\":true}") == 200) {
		cJSON *root = cJSON_Parse(c->body);
		hr__json_int64(cJSON_GetObjectItemCaseSensitive(root, "header"),
			       "revision", -1, &rev);
		cJSON_Delete(root);
	}
	return rev;
}

/* ---- the history of published rings --------------------------------------- */

typedef struct entry {
	hr_ring *ring;
	uint64_t revision, digest;
} entry;

typedef struct history {
	pthread_mutex_t mu;
	entry *e;
	size_t n, cap;
	const hr_ring *last;     /* the last new_ring, for the chain check */
	int backwards_ok;        /* a new cluster may restart revisions    */
	int out_of_order, broken_chain;
	void *client;            /* set once open returned (for callbacks) */
} history;

static void on_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	history *h = ud;

	pthread_mutex_lock(&h->mu);
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->e = realloc(h->e, h->cap * sizeof *h->e);
	}
	if (h->n && hr_ring_revision(ring) <= h->e[h->n - 1].revision &&
	    !h->backwards_ok) {
		fprintf(stderr, "faults: ring %" PRIu64 " published after %" PRIu64 "\n",
			hr_ring_revision(ring), h->e[h->n - 1].revision);
		h->out_of_order++;
	}
	/* Each publication replaces exactly the ring published before it. */
	if (h->last && old != h->last)
		h->broken_chain++;
	h->last = ring;
	h->e[h->n++] = (entry){ hr_ring_retain((hr_ring *)ring),
				hr_ring_revision(ring), hr_ring_digest(ring) };
	pthread_mutex_unlock(&h->mu);
}

static void history_init(history *h)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->mu, NULL);
}

static void history_free(history *h)
{
	for (size_t i = 0; i < h->n; i++)
		hr_ring_release(h->e[i].ring);
	free(h->e);
	pthread_mutex_destroy(&h->mu);
}

static size_t history_len(history *h)
{
	pthread_mutex_lock(&h->mu);
	size_t n = h->n;
	pthread_mutex_unlock(&h->mu);
	return n;
}

/* Totals reported at the end of the run (docs/reliability.md). */
static struct {
	long rings_verified, revisions_covered, ops, restarts;
} totals;

/*
 * Checks rings [from, to) of `h` against etcd at their revisions; returns
 * the number that differ (printing the first few).
 */
static int verify(history *h, size_t from, size_t to, const char *url)
{
	http c;
	int bad = 0;

	http_init(&c);
	for (size_t i = from; i < to; i++) {
		entry *e = &h->e[i];
		hr_ring *want = ring_at(&c, url, (int64_t)e->revision);

		ck_assert_msg(want != NULL, "no range at revision %" PRIu64, e->revision);
		if (hr_ring_digest(want) != e->digest) {
			if (bad++ < 5)
				fprintf(stderr, "faults: ring %zu at revision %" PRIu64
					": %zu nodes, digest %016" PRIx64 "; etcd: %zu nodes, %016" PRIx64 "\n",
					i, e->revision, hr_ring_node_count(e->ring), e->digest,
					hr_ring_node_count(want), hr_ring_digest(want));
		}
		hr_ring_release(want);
	}
	if (to > from) {
		totals.rings_verified += (long)(to - from);
		totals.revisions_covered += (long)(h->e[to - 1].revision - h->e[from].revision + 1);
	}
	http_free(&c);
	return bad;
}

/* ---- churn ------------------------------------------------------------------ */

typedef struct churn {
	pthread_t thread;
	const char *urls[HRT_ETCD_MAX_MEMBERS];
	int n_urls;
	int rate;               /* operations per second */
	int ops_wanted;
	int stop;               /* atomic */
	int ops_done, ops_failed;
	uint64_t rng;
} churn;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *const STATES[] = { "active", "warming", "draining" };

static void record_json(char *out, size_t size, uint64_t *r, int key)
{
	switch (rnd(r) % 8) {
	case 0:
		/* A bare address. */
		snprintf(out, size, "127.9.%d.%d:11211", key, (int)(rnd(r) % 250));
		break;
	case 1:
		/* Bad records: they must leave the ring, as they leave etcd's
		 * ring built by ring_at(). */
		snprintf(out, size, rnd(r) % 2 ? "{\"addr\":" :
			 "{\"addr\":\"127.9.0.1:1\",\"weight\":-3}");
		break;
	default:
		snprintf(out, size,
			 "{\"addr\":\"127.9.%d.%d:11211\",\"weight\":%g,\"zone\":\"z%d\",\"state\":\"%s\"}",
			 key, (int)(rnd(r) % 250), (double)(1 + rnd(r) % 6) / 2,
			 (int)(rnd(r) % 3), STATES[rnd(r) % 3]);
	}
}

static void key_of(char *out, size_t size, int k)
{
	snprintf(out, size, PREFIX "c%02d", k);
}

/* One operation; returns the HTTP status (200 when done). */
static long churn_op(churn *ch, http *c, const char *url, int64_t *lease)
{
	char key[64], k64[128], val[256], v64[512], body[4096];
	uint64_t *r = &ch->rng;
	int k = (int)(rnd(r) % CHURN_KEYS);
	unsigned op = (unsigned)(rnd(r) % 100);

	key_of(key, sizeof key, k);
	b64(k64, sizeof k64, key, strlen(key));
	if (op < 45) {
		/* Puts: new records, state and weight changes. */
		record_json(val, sizeof val, r, k);
		snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"%s\"}", k64,
			 b64(v64, sizeof v64, val, strlen(val)));
		return http_post(c, url, "/kv/put", body);
	}
	if (op < 65) {
		snprintf(body, sizeof body, "{\"key\":\"%s\"}", k64);
		return http_post(c, url, "/kv/deleterange", body);
	}
	if (op < 82) {
		/* A transaction of 2-4 distinct keys: one ring change. */
		int n = 2 + (int)(rnd(r) % 3), used[4];
		size_t o = (size_t)snprintf(body, sizeof body, "{\"success\":[");
		for (int i = 0; i < n; i++) {
			int dup;
			do {
				used[i] = (int)(rnd(r) % CHURN_KEYS);
				dup = 0;
				for (int j = 0; j < i; j++)
					dup |= used[j] == used[i];
			} while (dup);
			key_of(key, sizeof key, used[i]);
			b64(k64, sizeof k64, key, strlen(key));
			if (rnd(r) % 3) {
				record_json(val, sizeof val, r, used[i]);
				o += (size_t)snprintf(body + o, sizeof body - o,
					"%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}",
					i ? "," : "", k64, b64(v64, sizeof v64, val, strlen(val)));
			} else {
				o += (size_t)snprintf(body + o, sizeof body - o,
					"%s{\"request_delete_range\":{\"key\":\"%s\"}}",
					i ? "," : "", k64);
			}
		}
		snprintf(body + o, sizeof body - o, "]}");
		return http_post(c, url, "/kv/txn", body);
	}
	if (op < 92) {
		/* Under a short lease: the key expires a second or two later,
		 * a DELETE nobody wrote. */
		if (!*lease || rnd(r) % 20 == 0) {
			long st = http_post(c, url, "/lease/grant", "{\"TTL\":\"1\"}");
			cJSON *root = st == 200 ? cJSON_Parse(c->body) : NULL;
			*lease = 0;
			if (root)
				hr__json_int64(root, "ID", 0, lease);
			cJSON_Delete(root);
			if (!*lease)
				return st == 200 ? -1 : st;
		}
		record_json(val, sizeof val, r, k);
		snprintf(body, sizeof body,
			 "{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}", k64,
			 b64(v64, sizeof v64, val, strlen(val)), *lease);
		long st = http_post(c, url, "/kv/put", body);
		if (st != 200)
			*lease = 0;   /* expired already: take a new one */
		return st;
	}
	/* Neighbours outside the prefix: never in the ring. */
	snprintf(key, sizeof key, op % 2 ? "/ring/nodes0%d" : "/ring/other/%d", k);
	snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"eA==\"}",
		 b64(k64, sizeof k64, key, strlen(key)));
	return http_post(c, url, "/kv/put", body);
}

static void *churn_main(void *arg)
{
	churn *ch = arg;
	http c;
	int64_t start = hrt_now_ms(), lease = 0;
	int u = 0;

	http_init(&c);
	while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE) &&
	       ch->ops_done < ch->ops_wanted) {
		int64_t due = start + (int64_t)(ch->ops_done + ch->ops_failed) * 1000 / ch->rate;
		long st;

		if (hrt_now_ms() < due)
			hrt_sleep_ms((int)(due - hrt_now_ms()));
		st = churn_op(ch, &c, ch->urls[u], &lease);
		if (st == 200) {
			__atomic_fetch_add(&ch->ops_done, 1, __ATOMIC_RELAXED);
		} else {
			/* etcd down or electing: another member, a short pause. */
			__atomic_fetch_add(&ch->ops_failed, 1, __ATOMIC_RELAXED);
			u = (u + 1) % ch->n_urls;
			lease = 0;
			hrt_sleep_ms(20);
		}
	}
	http_free(&c);
	return NULL;
}

static void churn_start(churn *ch, int ops, int rate)
{
	memset(ch, 0, sizeof *ch);
	for (int i = 0; i < hrt_etcd_size(etcd); i++)
		ch->urls[ch->n_urls++] = hrt_etcd_client_url(etcd, i);
	ch->rate = rate;
	ch->ops_wanted = ops;
	ch->rng = 0x2545f4914f6cdd1dull ^ (uint64_t)hrt_now_ms();
	ck_assert_int_eq(pthread_create(&ch->thread, NULL, churn_main, ch), 0);
}

static int churn_ops(churn *ch)
{
	return __atomic_load_n(&ch->ops_done, __ATOMIC_RELAXED);
}

static void churn_join(churn *ch)
{
	pthread_join(ch->thread, NULL);
	totals.ops += ch->ops_done;
	fprintf(stderr, "faults: churn: %d operations done, %d refused or failed\n",
		ch->ops_done, ch->ops_failed);
}

static void churn_stop(churn *ch)
{
	__atomic_store_n(&ch->stop, 1, __ATOMIC_RELEASE);
	churn_join(ch);
}

/* Waits for the churn to finish, at most `ms`. */
static void churn_wait(churn *ch, int ms)
{
	int64_t until = hrt_now_ms() + ms;

	while (churn_ops(ch) < ch->ops_wanted && hrt_now_ms() < until)
		hrt_sleep_ms(50);
	churn_stop(ch);
}

/* ---- readers ------------------------------------------------------------------ */

typedef struct readers {
	pthread_t t[READERS];
	hr_client *c;
	int stop;
	int64_t max_ns[READERS];        /* slowest lookup, preempted or not   */
	int64_t max_run_ns[READERS];    /* slowest one the CPU was not taken
					   from (no involuntary switch)       */
	long lookups[READERS], failures[READERS], backwards[READERS];
	long blocked[READERS];          /* lookups that slept (a voluntary
					   context switch: lock wait, I/O)    */
	int backwards_ok;
} readers;

typedef struct reader_arg {
	readers *r;
	int i;
} reader_arg;

static reader_arg reader_args[READERS];

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *reader_main(void *arg)
{
	reader_arg *a = arg;
	readers *r = a->r;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(a->i + 1), last_rev = 0;
	char key[32];
	hr_owner o;

	/* The first read section registers the thread with liburcu-bp (a
	 * lock, once per thread): not part of what is measured. */
	hr_client_lookup(r->c, "warm-up", 7, &o, NULL);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct rusage ru0, ru1;
		int64_t t0, dt;
		int rc;

		snprintf(key, sizeof key, "user:%" PRIu64, rnd(&s) % 1000000);
		getrusage(RUSAGE_THREAD, &ru0);
		t0 = now_ns();
		rc = hr_client_lookup(r->c, key, strlen(key), &o, NULL);
		if (r->lookups[a->i] % 16 == 0) {
			/* On the ring held too. */
			hr_ring *ring = hr_client_ring(r->c);
			hr_lookup l;
			if (hr_ring_lookup(ring, key, strlen(key), &l, NULL))
				rc = -100;
			hr_ring_release(ring);
		}
		dt = now_ns() - t0;
		getrusage(RUSAGE_THREAD, &ru1);
		/* And the long-hold form, unmeasured: dropping the last
		 * reference frees the ring on this thread, and free() may
		 * wait for the allocator's lock. */
		if (r->lookups[a->i] % 16 == 8)
			hr_ring_release(hr_client_ring(r->c));
		/* On two busy cores the scheduler may take the CPU away in the
		 * middle of a lookup; a lookup that gives it up itself has
		 * blocked. */
		if (ru1.ru_nvcsw != ru0.ru_nvcsw)
			r->blocked[a->i]++;
		if (dt > r->max_ns[a->i])
			r->max_ns[a->i] = dt;
		if (ru1.ru_nivcsw == ru0.ru_nivcsw && dt > r->max_run_ns[a->i])
			r->max_run_ns[a->i] = dt;
		r->lookups[a->i]++;
		if (rc)
			r->failures[a->i]++;
		else if (o.revision < last_rev && !__atomic_load_n(&r->backwards_ok, __ATOMIC_RELAXED))
			r->backwards[a->i]++;
		if (!rc)
			last_rev = o.revision;
		/* Leave the two cores to etcd and the watcher now and then. */
		if (r->lookups[a->i] % 64 == 0)
			hrt_sleep_ms(1);
	}
	return NULL;
}

static void readers_start(readers *r, hr_client *c)
{
	memset(r, 0, sizeof *r);
	r->c = c;
	for (int i = 0; i < READERS; i++) {
		reader_args[i] = (reader_arg){ r, i };
		ck_assert_int_eq(pthread_create(&r->t[i], NULL, reader_main, &reader_args[i]), 0);
	}
}

/* Stops the readers and asserts lookups never failed nor blocked. */
static void readers_check(readers *r)
{
	long lookups = 0, failures = 0, backwards = 0, blocked = 0;
	int64_t max = 0, max_run = 0;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		pthread_join(r->t[i], NULL);
		lookups += r->lookups[i];
		failures += r->failures[i];
		backwards += r->backwards[i];
		blocked += r->blocked[i];
		if (r->max_ns[i] > max)
			max = r->max_ns[i];
		if (r->max_run_ns[i] > max_run)
			max_run = r->max_run_ns[i];
	}
	fprintf(stderr, "faults: readers: %ld lookups, %ld blocked, max %.3f ms"
		" (%.3f ms when not preempted)\n", lookups, blocked, max / 1e6,
		max_run / 1e6);
	ck_assert_int_gt(lookups, 0);
	ck_assert_int_eq(failures, 0);
	ck_assert_int_eq(backwards, 0);
#ifndef __SANITIZE_THREAD__
	/* TSan's runtime takes its own locks inside every instrumented
	 * atomic: there a switch says nothing about the library.  Elsewhere
	 * the library takes no lock on this path, but the kernel may: a page
	 * fault on a just-published ring waits for the memory-map lock while
	 * the watcher maps or unmaps ring memory.  That is rare (at most one
	 * lookup in 100,000 here); a lock of ours would show in most. */
	ck_assert_msg(blocked <= 1 + lookups / 100000,
		      "%ld of %ld lookups gave up the CPU", blocked, lookups);
#endif
	ck_assert_msg(max_run < (int64_t)MAX_LOOKUP_MS * 1000000,
		      "a lookup took %.3f ms", max_run / 1e6);
}

/* ---- set-up --------------------------------------------------------------------- */

static void up1(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
}

static void down(void)
{
	/* Each test runs in its own process: its figures, for the notes. */
	fprintf(stderr, "faults: figures: %ld rings verified covering %ld revisions, "
		"%ld churn operations, %ld etcd restarts survived\n",
		totals.rings_verified, totals.revisions_covered, totals.ops, totals.restarts);
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

static void put_stable(void)
{
	char key[64], val[64];

	for (int i = 0; i < STABLE_KEYS; i++) {
		snprintf(key, sizeof key, PREFIX "s%d", i);
		snprintf(val, sizeof val, "{\"addr\":\"127.8.0.%d:11211\",\"zone\":\"z%d\"}", i, i % 3);
		ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key, val), 0);
	}
}

static hr_client *open_client(const char *endpoints, history *h)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_ring_options ring;
	hr_client *c = NULL;
	hr_error err = { 0 };
	int rc;

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	hr_ring_options_init(&ring);
	ecfg.endpoints = endpoints;
	ecfg.prefix = PREFIX;
	ring.vnodes_per_weight = VNODES;
	ecfg.ring = &ring;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	cfg.on_change = h ? on_change : NULL;
	cfg.on_change_userdata = h;
	cfg.probe_interval_ms = 1000;
	cfg.stale_warn_ms = 1500;
	ecfg.request_timeout_ms = 2000;
	cfg.backoff_max_ms = 1000;
	/* A ring near the point limit takes seconds to build under ASan. */
	cfg.open_timeout_ms = 60000;
	rc = hr_client_open(&ecfg, &cfg, &c, &err);
	ck_assert_msg(rc == 0, "open: %d %s", rc, err.message);
	return c;
}

/* Polls until the client's ring has the digest of etcd's ring now;
 * returns the milliseconds it took, or -1 after `ms`. */
static int64_t wait_converged(hr_client *c, const char *url, int ms)
{
	int64_t t0 = hrt_now_ms();
	uint64_t want = 0, have = 0;
	http h;

	http_init(&h);
	for (;;) {
		int64_t rev = current_revision(&h, url);
		hr_ring *truth = rev > 0 ? ring_at(&h, url, rev) : NULL;
		hr_ring *mine = hr_client_ring(c);

		want = hr_ring_digest(truth);
		have = hr_ring_digest(mine);
		hr_ring_release(truth);
		hr_ring_release(mine);
		if (truth && want == have)
			break;
		if (hrt_now_ms() - t0 > ms) {
			fprintf(stderr, "faults: not converged after %d ms: etcd %016" PRIx64
				" client %016" PRIx64 "\n", ms, want, have);
			http_free(&h);
			return -1;
		}
		hrt_sleep_ms(50);
	}
	http_free(&h);
	return hrt_now_ms() - t0;
}

static void assert_converged(hr_client *c, const char *url, int ms)
{
	int64_t took = wait_converged(c, url, ms);

	ck_assert_msg(took >= 0, "not converged within %d ms", ms);
	fprintf(stderr, "faults: converged in %" PRId64 " ms\n", took);
}

/* Everything a churn scenario checks once its faults are over; closes
 * the client. */
static void finish(hr_client *c, history *h, readers *r, const char *url)
{
	size_t n;
	int bad;

	/* Leases granted by the churn expire within two seconds of its end:
	 * those deletions are changes to verify too. */
	hrt_sleep_ms(2500);
	assert_converged(c, url, CONVERGE_MS);
	readers_check(r);
	hr_client_close(c);
	n = history_len(h);
	bad = verify(h, 0, n, url);
	fprintf(stderr, "faults: %zu rings verified (revisions %" PRIu64 "..%" PRIu64
		"), %d wrong, %d out of order, %d chain breaks\n", n,
		n ? h->e[0].revision : 0, n ? h->e[n - 1].revision : 0, bad,
		h->out_of_order, h->broken_chain);
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(h->out_of_order, 0);
	ck_assert_int_eq(h->broken_chain, 0);
}

/* The common start of a scenario: stable records, a client recording
 * every ring it publishes (the log holds its lines only), and the reader
 * threads. */
static hr_client *scenario_start(const char *endpoints, history *h,
				 readers *r)
{
	hr_client *c;

	history_init(h);
	put_stable();
	hrt_log_clear(&logbuf);
	c = open_client(endpoints, h);
	readers_start(r, c);
	return c;
}

/* scenario_start() with the client reaching member 0 through the fault
 * proxy, started in *px. */
static hr_client *proxied_start(hrt_proxy **px, history *h, readers *r)
{
	*px = hrt_proxy_start(hrt_etcd_client_port(etcd, 0));
	ck_assert_ptr_nonnull(*px);
	return scenario_start(hrt_proxy_url(*px), h, r);
}

/* ---- scenarios ------------------------------------------------------------------ */

START_TEST(churn_every_ring_verified)
{
	history h;
	readers r;
	churn ch;
	hr_client *c;

	c = scenario_start(hrt_etcd_endpoints(etcd), &h, &r);
	churn_start(&ch, scaled(3000), 300);
	churn_wait(&ch, 60000);
	ck_assert_int_ge(ch.ops_done, ch.ops_wanted);
	finish(c, &h, &r, hrt_etcd_client_url(etcd, 0));
	/* Thousands of changes make many rings; a batch is one ring. */
	ck_assert_uint_gt(history_len(&h), (size_t)scaled(3000) / 4);
	history_free(&h);
}
END_TEST

START_TEST(kill_restart_and_freeze_during_churn)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	int kills = scaled(6) < 3 ? 3 : scaled(6);
	history h;
	readers r;
	churn ch;
	hr_client *c;
	hr_client_status st;

	c = scenario_start(hrt_etcd_endpoints(etcd), &h, &r);
	churn_start(&ch, 1000000, 200);
	for (int i = 0; i < kills; i++) {
		hrt_sleep_ms(800);
		ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
		hrt_sleep_ms(300);
		ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
		totals.restarts++;
	}
	/* A hung member: frozen long enough for stale warnings. */
	hrt_log_clear(&logbuf);
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 0), 0);
	hrt_log_wait(&logbuf, 1, 10000, 50, "level=warn", "event=stale", NULL);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stale", "unconfirmed_ms=", NULL), 1);
	/* The status counts a quiet stream as confirmed for two probe
	 * intervals (2 s here), the log warns after stale_warn_ms (1.5 s). */
	int64_t t0 = hrt_now_ms();
	do {
		hr_client_status_get(c, &st, NULL);
		if (st.unconfirmed_ms == 0)
			hrt_sleep_ms(50);
	} while (st.unconfirmed_ms == 0 && hrt_now_ms() - t0 < 3000);
	ck_assert_int_gt(st.unconfirmed_ms, 0);
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 0), 0);
	hrt_sleep_ms(1500);
	churn_stop(&ch);
	ck_assert_int_gt(ch.ops_done, 500 * DEFAULT_SCALE / 100);
	hr_client_status_get(c, &st, NULL);
	ck_assert_uint_ge(st.reconnects, (uint64_t)kills);
	finish(c, &h, &r, url);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stale_recovered", NULL), 1);
	history_free(&h);
}
END_TEST

/* The member whose id is the leader's, by asking each one for its status. */
static int find_leader(http *c)
{
	for (int i = 0; i < hrt_etcd_size(etcd); i++) {
		if (!hrt_etcd_pid(etcd, i))
			continue;
		if (http_post(c, hrt_etcd_client_url(etcd, i), "/maintenance/status", "{}") != 200)
			continue;
		/* Member ids use all 64 bits: compare them as strings. */
		cJSON *root = cJSON_Parse(c->body);
		const cJSON *leader = cJSON_GetObjectItemCaseSensitive(root, "leader");
		const cJSON *me = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(root, "header"), "member_id");
		int is_leader = cJSON_IsString(leader) && cJSON_IsString(me) &&
				!strcmp(leader->valuestring, me->valuestring);
		cJSON_Delete(root);
		if (is_leader)
			return i;
	}
	return -1;
}

static int member_in_use(hr_client *c)
{
	hr_client_status st;

	hr_client_status_get(c, &st, NULL);
	for (int i = 0; i < hrt_etcd_size(etcd); i++)
		if (!strcmp(st.endpoint, hrt_etcd_client_url(etcd, i)))
			return i;
	return -1;
}

START_TEST(three_members_lose_leader_and_member_in_use)
{
	history h;
	readers r;
	churn ch;
	hr_client *c;
	http hc;
	int victim;

	hrt_etcd_destroy(etcd);
	etcd = hrt_etcd_start(3, NULL);
	ck_assert_ptr_nonnull(etcd);
	http_init(&hc);
	c = scenario_start(hrt_etcd_endpoints(etcd), &h, &r);
	churn_start(&ch, 1000000, 150);
	for (int round = 0; round < 4; round++) {
		hrt_sleep_ms(1500);
		/* Even rounds take the leader down, odd ones the member the
		 * client streams from (sometimes the same one). */
		victim = round % 2 ? member_in_use(c) : find_leader(&hc);
		ck_assert_int_ge(victim, 0);
		ck_assert_int_eq(hrt_etcd_kill_member(etcd, victim), 0);
		ck_assert_int_eq(hrt_etcd_wait_cluster_healthy(etcd, 15000), 0);
		hrt_sleep_ms(1000);
		ck_assert_int_eq(hrt_etcd_restart_member(etcd, victim), 0);
		totals.restarts++;
	}
	hrt_sleep_ms(1000);
	churn_stop(&ch);
	ck_assert_int_gt(ch.ops_done, 300 * DEFAULT_SCALE / 100);
	http_free(&hc);
	finish(c, &h, &r, hrt_etcd_client_url(etcd, 0));
	history_free(&h);
}
END_TEST

START_TEST(compaction_while_disconnected)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	hrt_proxy *px;
	history h;
	readers r;
	churn ch;
	hr_client *c;
	http hc;
	size_t before;
	int64_t rev;

	http_init(&hc);
	c = proxied_start(&px, &h, &r);
	churn_start(&ch, scaled(600), 300);
	churn_wait(&ch, 30000);
	assert_converged(c, url, CONVERGE_MS);
	/* Rings so far are checked now: compaction erases their history. */
	before = history_len(&h);
	ck_assert_int_eq(verify(&h, 0, before, url), 0);

	ck_assert_int_eq(hrt_proxy_refuse(px), 0);
	hrt_log_clear(&logbuf);
	churn_start(&ch, scaled(300), 300);
	churn_wait(&ch, 30000);
	/* Rings published until the proxy refused (leases expiring). */
	hrt_sleep_ms(500);
	ck_assert_int_eq(verify(&h, before, history_len(&h), url), 0);
	before = history_len(&h);
	rev = current_revision(&hc, url);
	char body[64];
	snprintf(body, sizeof body, "{\"revision\":\"%" PRId64 "\"}", rev);
	ck_assert_int_eq(http_post(&hc, url, "/kv/compaction", body), 200);
	ck_assert_int_eq(hrt_proxy_pass(px), 0);
	hrt_sleep_ms(2500);
	assert_converged(c, url, CONVERGE_MS);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=compacted", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=synced", NULL), 1);
	readers_check(&r);
	hr_client_close(c);
	/* Rings after the compaction, at revisions etcd still has. */
	ck_assert_int_eq(verify(&h, before, history_len(&h), url), 0);
	ck_assert_int_eq(h.out_of_order, 0);
	ck_assert_int_eq(h.broken_chain, 0);
	http_free(&hc);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

/* The log's lines in order, decoded; the caller frees the array. */
static cJSON *log_lines(void)
{
	cJSON *all;

	pthread_mutex_lock(&logbuf.mu);
	all = hrt_logfmt_decode(logbuf.text ? logbuf.text : "", logbuf.len);
	pthread_mutex_unlock(&logbuf.mu);
	ck_assert_msg(all != NULL, "the logfmt decoder did not run");
	return all;
}

/* A stale client whose watch comes back compacted: the stream's first
 * message proves etcd alive, not the ring current, so the warning is taken
 * back only once the resync has published the ring at etcd's revision. */
START_TEST(compaction_while_stale_recovers_after_the_resync)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	int ring_at = -1, recovered_at = -1, compacted_at = -1, i = 0;
	hrt_proxy *px;
	history h;
	readers r;
	hr_client *c;
	http hc;
	cJSON *all, *line;
	int64_t rev;
	char body[64];

	http_init(&hc);
	c = proxied_start(&px, &h, &r);
	hrt_log_clear(&logbuf);
	ck_assert_int_eq(hrt_proxy_refuse(px), 0);
	ck_assert_int_ge(hrt_log_wait(&logbuf, 1, 10000, 50, "level=warn", "event=stale", NULL),
			 1);
	/* Two writes: the watch's next revision is then below the
	 * compaction's. */
	ck_assert_int_gt(hrt_put(url, PREFIX "while-stale", "127.6.0.3:1"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "while-stale", "127.6.0.4:1"), 0);
	rev = current_revision(&hc, url);
	snprintf(body, sizeof body, "{\"revision\":\"%" PRId64 "\"}", rev);
	ck_assert_int_eq(http_post(&hc, url, "/kv/compaction", body), 200);
	ck_assert_int_eq(hrt_proxy_pass(px), 0);
	ck_assert_int_ge(wait_converged(c, url, CONVERGE_MS), 0);
	ck_assert_int_ge(hrt_log_wait(&logbuf, 1, 10000, 50, "event=stale_recovered", NULL), 1);

	all = log_lines();
	cJSON_ArrayForEach(line, all) {
		const char *ev = hrt_logfmt_get(line, "event");
		const char *lrev = hrt_logfmt_get(line, "revision");

		if (ev && !strcmp(ev, "compacted") && compacted_at < 0)
			compacted_at = i;
		if (ev && !strcmp(ev, "ring") && ring_at < 0 && lrev &&
		    strtoll(lrev, NULL, 10) >= rev)
			ring_at = i;
		if (ev && !strcmp(ev, "stale_recovered") && recovered_at < 0) {
			recovered_at = i;
			ck_assert(lrev && strtoll(lrev, NULL, 10) >= rev);
		}
		i++;
	}
	cJSON_Delete(all);
	ck_assert_int_ge(compacted_at, 0);
	ck_assert_int_gt(ring_at, compacted_at);
	ck_assert_int_gt(recovered_at, ring_at);
	readers_check(&r);
	hr_client_close(c);
	http_free(&hc);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

/* A wiped etcd restarted as a new cluster: its revisions start again at
 * 1, below what the client confirmed.  The client must notice, say so
 * loudly, and take the new cluster's state. */
START_TEST(wiped_data_new_cluster)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	history h;
	readers r;
	hr_client *c;
	char key[64];

	history_init(&h);
	put_stable();
	for (int i = 0; i < 30; i++) {
		key_of(key, sizeof key, i);
		ck_assert_int_gt(hrt_put(url, key, "127.7.0.1:1"), 0);
	}
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	ck_assert_int_eq(hrt_wait_nodes(c, 30 + STABLE_KEYS, 5000), 0);
	readers_start(&r, c);
	__atomic_store_n(&r.backwards_ok, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&h.mu);
	h.backwards_ok = 1;
	size_t before = h.n;
	pthread_mutex_unlock(&h.mu);
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(etcd), 0);
	totals.restarts++;
	put_stable();
	ck_assert_int_gt(hrt_put(url, PREFIX "fresh", "127.7.0.2:1"), 0);
	assert_converged(c, url, CONVERGE_MS);
	ck_assert_int_eq(hrt_wait_nodes(c, STABLE_KEYS + 1, 1000), 0);
	/* One line says so, and how it was seen: the new cluster id. */
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=cluster_replaced", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", "event=cluster_replaced",
				       "detected_by=cluster_id", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "revision_backwards", NULL), 0);
	readers_check(&r);
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, before, history_len(&h), url), 0);
	history_free(&h);
}
END_TEST

/* The new cluster's revision passes the old one before the client looks:
 * no revision goes backwards, so only the changed cluster id shows that the
 * old data is gone; a node that existed only there must leave the ring. */
START_TEST(wiped_data_new_cluster_overtakes)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	history h;
	hr_client *c;
	char key[64];

	history_init(&h);
	put_stable();
	ck_assert_int_gt(hrt_put(url, PREFIX "old-only", "127.7.0.9:1"), 0);
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	h.backwards_ok = 1;
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(etcd), 0);
	put_stable();
	for (int i = 0; i < 20; i++) {
		key_of(key, sizeof key, i);
		ck_assert_int_gt(hrt_put(url, key, "127.7.0.1:1"), 0);
	}
	assert_converged(c, url, CONVERGE_MS);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=cluster_replaced", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", "event=cluster_replaced",
				       "detected_by=cluster_id", NULL), 1);
	hr_client_close(c);
	history_free(&h);
}
END_TEST

/*
 * A wiped etcd given back the same records: the membership, and so the
 * digest, is what it was, but the data is new and its revisions started
 * again.  The client must say so in one line, saying how it saw it, and
 * publish a ring at the new cluster's revision at once (watchers and
 * on_change see the new epoch), not wait for the next change.
 */
static void wipe_with_same_records(int same_cluster_id)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	const char *how = same_cluster_id ? "detected_by=revision" : "detected_by=cluster_id";
	history h;
	hr_client *c;
	size_t before;
	uint64_t old_rev, old_digest;
	int64_t new_rev, t0;

	history_init(&h);
	put_stable();
	/* Churn that ends where it began: the old data's revision is past
	 * what the new data will reach. */
	for (int i = 0; i < 6; i++)
		ck_assert_int_gt(hrt_put(url, PREFIX "s0", i % 2 ? "{\"addr\":\"127.8.0.0:11211\",\"zone\":\"z0\"}" :
					 "127.8.0.99:1"), 0);
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	pthread_mutex_lock(&h.mu);
	h.backwards_ok = 1;
	before = h.n;
	old_rev = h.e[before - 1].revision;
	old_digest = h.e[before - 1].digest;
	pthread_mutex_unlock(&h.mu);
	ck_assert_int_eq(same_cluster_id ? hrt_etcd_wipe_and_restart_same_id(etcd) :
			 hrt_etcd_wipe_and_restart(etcd), 0);
	totals.restarts++;
	put_stable();
	{
		http hc;

		http_init(&hc);
		new_rev = current_revision(&hc, url);
		http_free(&hc);
	}
	ck_assert_int_gt(new_rev, 0);
	ck_assert_uint_lt((uint64_t)new_rev, old_rev);
	/* Published at once: within the probe interval and a resync. */
	t0 = hrt_now_ms();
	while (history_len(&h) == before && hrt_now_ms() - t0 < CONVERGE_MS)
		hrt_sleep_ms(20);
	ck_assert_msg(history_len(&h) > before, "no ring published after the wipe");
	fprintf(stderr, "faults: wiped (%s): new epoch published %" PRId64 " ms after the data came back\n",
		how, hrt_now_ms() - t0);
	pthread_mutex_lock(&h.mu);
	ck_assert_uint_eq(h.e[before].revision, (uint64_t)new_rev);
	ck_assert_uint_eq(h.e[before].digest, old_digest);
	pthread_mutex_unlock(&h.mu);
	hrt_log_wait(&logbuf, 1, 1000, 20, "event=cluster_replaced", NULL);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=cluster_replaced", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", "event=cluster_replaced", how,
				       NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "revision_backwards", NULL), 0);
	{
		hr_client_status st;

		ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
		ck_assert_uint_eq(st.revision, (uint64_t)new_rev);
		ck_assert_uint_ge(st.confirmed_revision, (uint64_t)new_rev);
		ck_assert_uint_lt(st.confirmed_revision, old_rev);
	}
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, before, history_len(&h), url), 0);
	history_free(&h);
}

START_TEST(wiped_data_same_records_new_cluster_id)
{
	wipe_with_same_records(0);
}
END_TEST

START_TEST(wiped_data_same_records_same_cluster_id)
{
	wipe_with_same_records(1);
}
END_TEST

/* ---- through the fault proxy ----------------------------------------------------- */

START_TEST(proxy_cuts_mid_message)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	hrt_proxy *px;
	uint64_t s = 12345;
	history h;
	readers r;
	churn ch;
	hr_client *c;

	c = proxied_start(&px, &h, &r);
	churn_start(&ch, 1000000, 250);
	/* Cut every open connection after a random number of reply bytes:
	 * inside headers, chunk sizes, messages, between them.  A cut lands
	 * only where that many bytes still flow: go on until enough did. */
	int64_t t0 = hrt_now_ms();
	while ((churn_ops(&ch) < scaled(2000) || hrt_proxy_get_stats(px).cut < 8) &&
	       hrt_now_ms() - t0 < 60000) {
		hrt_sleep_ms(150 + (int)(rnd(&s) % 300));
		ck_assert_int_eq(hrt_proxy_cut_once(px, (size_t)(rnd(&s) % 1500)), 0);
	}
	churn_stop(&ch);
	hrt_proxy_stats ps = hrt_proxy_get_stats(px);
	fprintf(stderr, "faults: proxy: %" PRIu64 " connections cut\n", ps.cut);
	ck_assert_uint_ge(ps.cut, 8);
	finish(c, &h, &r, url);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stream_ended", NULL) +
			 hrt_log_count(&logbuf, "event=bad_message", NULL), 5);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

START_TEST(proxy_stall_stale_then_recovers)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	hrt_proxy *px;
	history h;
	readers r;
	hr_client *c;
	hr_client_status st;
	int64_t took;

	c = proxied_start(&px, &h, &r);
	hrt_log_clear(&logbuf);
	ck_assert_int_eq(hrt_proxy_stall(px), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "during", "127.6.0.1:1"), 0);
	/* The bound is the point: warnings while the stall lasts, repeated.
	 * stale_warn_ms is 1.5 s: the first warning within it plus a probe
	 * interval and timeout, then one per 1.5 s, about 5 s for two.  One
	 * cap, generous for a loaded machine: a client that did not probe a
	 * stalled stream would never warn at all. */
	ck_assert_int_ge(hrt_log_wait(&logbuf, 2, 10000, 50, "level=warn", "event=stale", NULL),
			 2);
	hr_client_status_get(c, &st, NULL);
	ck_assert_int_gt(st.unconfirmed_ms, 1000);
	ck_assert_ptr_null(hr_ring_find(h.e[h.n - 1].ring, "during"));
	ck_assert_int_eq(hrt_proxy_pass(px), 0);
	took = wait_converged(c, url, CONVERGE_MS);
	ck_assert_int_ge(took, 0);
	fprintf(stderr, "faults: stall: converged %" PRId64 " ms after the network came back\n", took);
	hrt_log_wait(&logbuf, 1, 5000, 50, "event=stale_recovered", NULL);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stale_recovered", NULL), 1);
	readers_check(&r);
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, 0, history_len(&h), url), 0);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

START_TEST(proxy_trickles_bytes)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	hrt_proxy *px;
	history h;
	readers r;
	churn ch;
	hr_client *c;

	c = proxied_start(&px, &h, &r);
	hrt_log_clear(&logbuf);
	/* 20 kB/s: a watch message arrives in hundreds of reads. */
	ck_assert_int_eq(hrt_proxy_trickle(px, 50), 0);
	churn_start(&ch, scaled(200), 20);
	churn_wait(&ch, 30000);
	assert_converged(c, url, 20000);
	ck_assert_int_eq(hrt_proxy_pass(px), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_message", NULL), 0);
	ck_assert_uint_gt(history_len(&h), 10);
	finish(c, &h, &r, url);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

/* Waits until the proxy carries a watch stream the client is using. */
static void wait_watching(hrt_proxy *px, hr_client *c, int ms)
{
	(void)c;

	hrt_log_wait(&logbuf, 1, ms, 20, "event=watching", NULL);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=watching", NULL), 1);
	ck_assert_uint_ge(hrt_proxy_get_stats(px).watch_streams, 1);
}

/* Injects `body` into the watch stream, expects a log line holding
 * `event`, then a new stream and a ring equal to etcd's. */
static void inject_and_recover(hrt_proxy *px, hr_client *c, const char *url,
			       const char *body, const char *event)
{
	uint64_t injected = hrt_proxy_get_stats(px).injected;

	hrt_log_clear(&logbuf);
	ck_assert_int_ge(hrt_proxy_inject(px, body), 1);
	hrt_log_wait(&logbuf, 1, 5000, 20, event, NULL);
	ck_assert_msg(hrt_log_count(&logbuf, event, NULL) >= 1, "no %s after: %s", event, body);
	ck_assert_uint_gt(hrt_proxy_get_stats(px).injected, injected);
	wait_watching(px, c, 5000);
	assert_converged(c, url, CONVERGE_MS);
}

START_TEST(proxy_injects_errors_and_hostile_messages)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	hrt_proxy *px;
	history h;
	readers r;
	hr_client *c;
	char big[8192], ghost[512], k64[64], v64[64];

	c = proxied_start(&px, &h, &r);
	wait_watching(px, c, 5000);

	/* etcd 3.4's own error chunk (no leader), and 3.6's shape. */
	inject_and_recover(px, c, url,
		"{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\","
		"\"http_status\":\"Service Unavailable\"}}", "event=stream_error");
	inject_and_recover(px, c, url, "{\"error\":{\"code\":14,\"message\":\"unavailable\"}}",
			   "event=stream_error");
	/* Bad base64, a revision out of range, not JSON, nesting too deep. */
	inject_and_recover(px, c, url,
		"{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":{\"key\":\"Pz8-\","
		"\"mod_revision\":\"9999\"}}]}}", "event=bad_message");
	inject_and_recover(px, c, url,
		"{\"result\":{\"header\":{\"revision\":\"99999999999999999999\"}}}",
		"event=bad_message");
	inject_and_recover(px, c, url, "\x01\xff garbage \xc3\x28", "event=bad_message");
	memset(big, '[', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	inject_and_recover(px, c, url, big, "event=bad_message");
	/* An unexpected cancel: resync. */
	inject_and_recover(px, c, url, "{\"result\":{\"header\":{\"revision\":\"1\"},\"canceled\":true}}",
			   "event=watch_canceled");

	/* A replayed old event (a duplicate delivery, twice in one message
	 * even): at or below the applied revision, it must be ignored. */
	hrt_log_clear(&logbuf);
	b64(k64, sizeof k64, PREFIX "ghost", strlen(PREFIX "ghost"));
	b64(v64, sizeof v64, "127.6.6.6:1", strlen("127.6.6.6:1"));
	snprintf(ghost, sizeof ghost,
		 "{\"result\":{\"header\":{\"revision\":\"2\"},\"events\":["
		 "{\"kv\":{\"key\":\"%s\",\"mod_revision\":\"2\",\"value\":\"%s\"}},"
		 "{\"kv\":{\"key\":\"%s\",\"mod_revision\":\"2\",\"value\":\"%s\"}}]}}",
		 k64, v64, k64, v64);
	ck_assert_int_ge(hrt_proxy_inject(px, ghost), 1);
	ck_assert_int_gt(hrt_put(url, PREFIX "after-ghost", "127.6.0.2:1"), 0);
	assert_converged(c, url, CONVERGE_MS);
	hr_ring *ring = hr_client_ring(c);
	ck_assert_ptr_null(hr_ring_find(ring, "ghost"));
	ck_assert_ptr_nonnull(hr_ring_find(ring, "after-ghost"));
	hr_ring_release(ring);

	readers_check(&r);
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, 0, history_len(&h), url), 0);
	ck_assert_int_eq(h.out_of_order, 0);
	history_free(&h);
	hrt_proxy_stop(px);
}
END_TEST

/* ---- hostile data in etcd ---------------------------------------------------------- */

static void restart_with_big_requests(void)
{
	static const char *const big[] = { "--max-request-bytes=12582912", NULL };
	hrt_etcd_opts o = { .extra_args = big };

	hrt_etcd_destroy(etcd);
	etcd = hrt_etcd_start(1, &o);
	ck_assert_ptr_nonnull(etcd);
}

#define INJECTED_ID "q\" level=error event=cluster_replaced x=\""

/* Every line reads back, with a real logfmt parser, as the fields the
 * library wrote: level and event first, and the injected key's line names
 * the key whole, with no second level or event. */
static void assert_logfmt(const char *text, size_t len)
{
	cJSON *all = hrt_logfmt_decode(text, len), *line;
	int injected = 0;

	ck_assert_msg(all != NULL, "the logfmt decoder did not run");
	cJSON_ArrayForEach(line, all) {
		const cJSON *k0 = cJSON_GetArrayItem(cJSON_GetArrayItem(line, 0), 0);
		const cJSON *k1 = cJSON_GetArrayItem(cJSON_GetArrayItem(line, 1), 0);
		int levels = 0, events = 0;
		const cJSON *kv;

		ck_assert_msg(cJSON_IsArray(line), "a log line does not parse: %s",
			      cJSON_PrintUnformatted(line));
		ck_assert_str_eq(cJSON_GetStringValue(k0), "level");
		ck_assert_str_eq(cJSON_GetStringValue(k1), "event");
		cJSON_ArrayForEach(kv, line) {
			const char *k = cJSON_GetStringValue(cJSON_GetArrayItem(kv, 0));
			levels += strcmp(k, "level") == 0;
			events += strcmp(k, "event") == 0;
		}
		ck_assert_int_eq(levels, 1);
		ck_assert_int_eq(events, 1);
		const char *key = hrt_logfmt_get(line, "key");
		if (key && strcmp(key, PREFIX INJECTED_ID) == 0) {
			ck_assert_str_eq(hrt_logfmt_get(line, "event"), "bad_record");
			ck_assert_str_eq(hrt_logfmt_get(line, "level"), "warn");
			injected++;
		}
	}
	ck_assert_int_ge(injected, 1);
	cJSON_Delete(all);
}

START_TEST(hostile_records_beside_good)
{
	const char *url;
	history h;
	hr_client *c;
	http hc;
	char k64[128], body[512];
	char *huge;
	size_t huge_len = 5u << 20;

	restart_with_big_requests();
	url = hrt_etcd_client_url(etcd, 0);
	history_init(&h);
	http_init(&hc);
	put_stable();
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	hrt_log_clear(&logbuf);

	/* A value of 5 MB: refused as a record, and a 7 MB watch message on
	 * the way (base64) that the stream parser must take whole. */
	huge = malloc(huge_len + 1);
	memset(huge, 'x', huge_len);
	huge[huge_len] = '\0';
	ck_assert_int_gt(hrt_put(url, PREFIX "huge", huge), 0);
	free(huge);
	/* Ids with a control character, invalid UTF-8, a blank. */
	ck_assert_int_gt(hrt_put(url, PREFIX "ctl\x01id", "127.5.0.1:1"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "caf\xc3", "127.5.0.2:1"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "two words", "127.5.0.3:1"), 0);
	/* A key made to look like more fields of its log line. */
	ck_assert_int_gt(hrt_put(url, PREFIX INJECTED_ID, "127.5.0.3:2"), 0);
	/* Numbers out of range, invalid UTF-8 and control bytes in fields. */
	ck_assert_int_gt(hrt_put(url, PREFIX "w-inf", "{\"addr\":\"127.5.0.4:1\",\"weight\":1e400}"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "w-neg", "{\"addr\":\"127.5.0.5:1\",\"weight\":-1e308}"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "zone-ctl", "{\"addr\":\"127.5.0.6:1\",\"zone\":\"a\\u0007b\"}"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "nul", "{\"addr\":\"127.5.0.7:1\\u0000evil\"}"), 0);
	/* Deeply nested JSON. */
	{
		char deep[20010];
		strcpy(deep, "{\"addr\":\"127.5.0.8:1\",\"x\":");
		size_t o = strlen(deep);
		memset(deep + o, '[', 20000 - o);
		deep[20000] = '\0';
		ck_assert_int_gt(hrt_put(url, PREFIX "deep", deep), 0);
	}
	/* Duplicate keys in one transaction: etcd refuses the whole txn. */
	b64(k64, sizeof k64, PREFIX "dup", strlen(PREFIX "dup"));
	snprintf(body, sizeof body,
		 "{\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"eDox\"}},"
		 "{\"request_put\":{\"key\":\"%s\",\"value\":\"eDoy\"}}]}", k64, k64);
	ck_assert_int_eq(http_post(&hc, url, "/kv/txn", body), 400);
	ck_assert_ptr_nonnull(strstr(hc.body, "duplicate key"));
	/* And good records after all of it. */
	ck_assert_int_gt(hrt_put(url, PREFIX "good-after", "{\"addr\":\"127.5.1.1:1\",\"zone\":\"z9\"}"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "utf8-addr", "{\"addr\":\"h\xc3\xa9te:1\"}"), 0);

	assert_converged(c, url, CONVERGE_MS);
	hr_ring *ring = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_node_count(ring), STABLE_KEYS + 2);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "good-after"));
	ck_assert_ptr_nonnull(hr_ring_find(ring, "utf8-addr"));
	hr_ring_release(ring);
	/* Each bad record is one clear warning naming its key, escaped. */
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "huge", "exceeds", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "ctl\\u0001id", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "caf\\udcc3", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "two words", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "w-inf", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "w-neg", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "zone-ctl", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "nul", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "deep", NULL), 1);
	/* No raw control byte ever reaches a log line. */
	pthread_mutex_lock(&logbuf.mu);
	for (size_t i = 0; i < logbuf.len; i++)
		ck_assert_msg((unsigned char)logbuf.text[i] >= 0x20 || logbuf.text[i] == '\n',
			      "control byte 0x%02x in the log", (unsigned char)logbuf.text[i]);
	assert_logfmt(logbuf.text, logbuf.len);
	pthread_mutex_unlock(&logbuf.mu);
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, 0, history_len(&h), url), 0);
	http_free(&hc);
	history_free(&h);
}
END_TEST

/* A record whose weight is valid on its own but gives more points than
 * HR_POINTS_MAX is a bad record: it must not stop later changes. */
START_TEST(huge_weight_blocks_later_changes)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	history h;
	hr_client *c;
	hr_ring *ring;

	history_init(&h);
	put_stable();
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	ck_assert_int_gt(hrt_put(url, PREFIX "heavy", "{\"addr\":\"127.5.0.9:1\",\"weight\":1e290}"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "later", "127.5.0.10:1"), 0);
	hrt_sleep_ms(2000);
	ring = hr_client_ring(c);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "later"));
	ck_assert_ptr_null(hr_ring_find(ring, "heavy"));
	hr_ring_release(ring);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "heavy", NULL), 1);
	hr_client_close(c);
	history_free(&h);
}
END_TEST

/* Its rings hold 2^24 points: half a minute a build under TSan and several
 * seconds under ASan, where six of them took longer than the test's timeout
 * on two loaded cores.  Neither has anything to find in them that the other
 * scenarios do not reach (test_ring builds rings of 20 M points under ASan):
 * the plain build runs it. */
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
/*
 * Records valid one by one but over the ring's point limit together (two of
 * HR_POINTS_MAX / 2 points and a little more): the ring keeps following
 * etcd; the newer heavy record is the one left out, with a bad_record line
 * naming the limit; a later node still joins and a deleted one leaves; a
 * fresh client opens with the valid nodes (never an empty ring at revision
 * 0); and when room frees up the left-out record comes back.
 */
START_TEST(over_point_limit_keeps_following)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	/* At VNODES points per weight, a little over half the limit each. */
	char heavy[128];
	history h;
	hr_client *c, *fresh;
	hr_ring *ring;
	int64_t rev;

	snprintf(heavy, sizeof heavy, "{\"addr\":\"127.5.1.1:1\",\"weight\":%u}",
		 HR_POINTS_MAX / 2 / VNODES + 1);
	history_init(&h);
	put_stable();
	ck_assert_int_gt(hrt_put(url, PREFIX "good", "127.5.0.1:1"), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "good2", "127.5.0.2:1"), 0);
	c = open_client(hrt_etcd_endpoints(etcd), &h);
	ck_assert_int_gt(hrt_put(url, PREFIX "heavy1", heavy), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "heavy2", heavy), 0);
	ck_assert_int_gt(hrt_put(url, PREFIX "good3", "127.5.0.3:1"), 0);
	ck_assert_int_gt(hrt_del(url, PREFIX "good"), 0);
	assert_converged(c, url, 30000);
	ring = hr_client_ring(c);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "heavy1"));
	ck_assert_ptr_null(hr_ring_find(ring, "heavy2"));
	ck_assert_ptr_nonnull(hr_ring_find(ring, "good3"));
	ck_assert_ptr_null(hr_ring_find(ring, "good"));
	ck_assert_uint_le(hr_ring_point_count(ring), HR_POINTS_MAX);
	hr_ring_release(ring);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_record", "key=" PREFIX "heavy2",
				       "limit of 33554432 points", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=build_failed", NULL), 0);

	/* A new client: the same ring at once, not an empty one. */
	fresh = open_client(hrt_etcd_endpoints(etcd), NULL);
	ring = hr_client_ring(fresh);
	ck_assert_uint_gt(hr_ring_revision(ring), 0);
	ck_assert_uint_eq(hr_ring_node_count(ring), STABLE_KEYS + 3);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "heavy1"));
	ck_assert_ptr_null(hr_ring_find(ring, "heavy2"));
	hr_ring_release(ring);
	hr_client_close(fresh);

	/* Room again: heavy2 comes back. */
	rev = hrt_del(url, PREFIX "heavy1");
	ck_assert_int_gt(rev, 0);
	assert_converged(c, url, 30000);
	ring = hr_client_ring(c);
	ck_assert_uint_ge(hr_ring_revision(ring), (uint64_t)rev);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "heavy2"));
	ck_assert_ptr_null(hr_ring_find(ring, "heavy1"));
	hr_ring_release(ring);
	hr_client_close(c);
	ck_assert_int_eq(verify(&h, 0, history_len(&h), url), 0);
	ck_assert_int_eq(h.out_of_order, 0);
	history_free(&h);
}
END_TEST
#endif

/* ---- API misuse and re-entrant callbacks ----------------------------------------- */

typedef struct reentry {
	hr_client *client;        /* atomic: NULL until open returned */
	int calls, lookups_ok, acquired, status_ok, strerror_ok;
} reentry;

static void reentrant_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	reentry *re = ud;
	hr_client *c = __atomic_load_n(&re->client, __ATOMIC_ACQUIRE);
	hr_client_status st;
	hr_owner o;

	(void)old;
	__atomic_fetch_add(&re->calls, 1, __ATOMIC_RELAXED);
	if (!c)
		return;   /* the first ring is published inside hr_client_open() */
	/* Every client call but close is allowed here, and sees the ring
	 * just published. */
	if (hr_client_lookup(c, "k", 1, &o, NULL) == 0 && o.revision == hr_ring_revision(ring))
		__atomic_fetch_add(&re->lookups_ok, 1, __ATOMIC_RELAXED);
	hr_ring *r = hr_client_ring(c);
	if (r == ring)
		__atomic_fetch_add(&re->acquired, 1, __ATOMIC_RELAXED);
	hr_ring_release(r);
	if (hr_client_status_get(c, &st, NULL) == 0 && st.revision == hr_ring_revision(ring))
		__atomic_fetch_add(&re->status_ok, 1, __ATOMIC_RELAXED);
}

static void reentrant_log(void *ud, hr_log_level level, const char *line)
{
	reentry *re = ud;

	(void)line;
	if (!strcmp(hr_strerror(HR_ECONNECT), hr_strerror(HR_ECONNECT)) &&
	    hr_log_level_name(level))
		__atomic_fetch_add(&re->strerror_ok, 1, __ATOMIC_RELAXED);
}

START_TEST(callbacks_call_back_into_the_library)
{
	const char *url = hrt_etcd_client_url(etcd, 0);
	reentry re = { 0 };
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	put_stable();
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	cfg.on_change = reentrant_change;
	cfg.on_change_userdata = &re;
	ecfg.log = reentrant_log;
	ecfg.log_userdata = &re;
	ecfg.log_level = HR_LOG_DEBUG;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	__atomic_store_n(&re.client, c, __ATOMIC_RELEASE);
	for (int i = 0; i < 20; i++) {
		char key[32];
		snprintf(key, sizeof key, PREFIX "r%d", i);
		ck_assert_int_gt(hrt_put(url, key, "127.4.0.1:1"), 0);
	}
	ck_assert_int_eq(hrt_wait_nodes(c, STABLE_KEYS + 20, 5000), 0);
	hrt_sleep_ms(200);
	/* Closed first: no callback runs while the counts are compared. */
	hr_client_close(c);
	ck_assert_int_ge(__atomic_load_n(&re.calls, __ATOMIC_RELAXED), 2);
	/* All but the rings published before open returned. */
	ck_assert_int_ge(__atomic_load_n(&re.lookups_ok, __ATOMIC_RELAXED), 1);
	ck_assert_int_eq(__atomic_load_n(&re.lookups_ok, __ATOMIC_RELAXED),
			 __atomic_load_n(&re.acquired, __ATOMIC_RELAXED));
	ck_assert_int_eq(__atomic_load_n(&re.lookups_ok, __ATOMIC_RELAXED),
			 __atomic_load_n(&re.status_ok, __ATOMIC_RELAXED));
	ck_assert_int_gt(__atomic_load_n(&re.strerror_ok, __ATOMIC_RELAXED), 0);
}
END_TEST

START_TEST(null_arguments_everywhere)
{
	hr_client *c;
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_error err = { 0 };
	hr_owner o;
	hr_replica rep[2];
	hr_client_status st;
	hr_record_update active = { .size = sizeof active, .fields = HR_UPDATE_STATE,
				    .state = HR_STATE_ACTIVE };
	hr_record_update weight1 = { .size = sizeof weight1, .fields = HR_UPDATE_WEIGHT,
				     .weight = 1 };
	uint64_t rev;

	put_stable();
	hr_etcd_config_init_size(NULL, sizeof ecfg);
	hr_client_config_init_size(NULL, sizeof cfg);
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EINVAL);
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, NULL), 0);

	ck_assert_int_eq(hr_client_lookup(NULL, "k", 1, &o, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_lookup(c, NULL, 1, &o, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_lookup(c, NULL, 0, &o, NULL), 0);   /* the empty key */
	ck_assert_int_eq(hr_client_replicas(NULL, "k", 1, HR_VIEW_READ, rep, 2, &rev, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_READ, NULL, 2, &rev, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, NULL, 1, HR_VIEW_READ, rep, 2, &rev, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, (hr_view)7, rep, 2, &rev, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_READ, rep, 65, &rev, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_READ, rep, 2, NULL, NULL), 2);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_READ, NULL, 0, NULL, NULL), 0);
	ck_assert_int_eq(hr_client_status_get(NULL, &st, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_status_get_size(c, NULL, sizeof st, NULL), HR_EINVAL);
	ck_assert_ptr_null(hr_client_ring(NULL));

	ck_assert_int_eq(hr_registrar_open(NULL, NULL, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_node_update(NULL, "a", &active, &err), HR_EINVAL);
	ck_assert_int_eq(hr_node_update(&ecfg, NULL, &active, &err), HR_EINVAL);
	ck_assert_int_eq(hr_node_update(&ecfg, NULL, &weight1, &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_update(NULL, &active, &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_update(NULL, &weight1, &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_lease(NULL), 0);
	ck_assert_int_eq(hr_registrar_deregister(NULL, &err), HR_EINVAL);
	hr_registrar_close(NULL);
	hr_registration_init_size(NULL, sizeof(hr_registration));

	/* The defined part of closing: NULL is a no-op.  Closing a client
	 * twice is undefined, like free(); it is not exercised here. */
	hr_client_close(c);
	hr_client_close(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_checked_fixture(tc, up1, down);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, null_arguments_everywhere);
	tcase_add_test(tc, callbacks_call_back_into_the_library);
	tcase_add_test(tc, churn_every_ring_verified);
	tcase_add_test(tc, kill_restart_and_freeze_during_churn);
	tcase_add_test(tc, three_members_lose_leader_and_member_in_use);
	tcase_add_test(tc, compaction_while_disconnected);
	tcase_add_test(tc, compaction_while_stale_recovers_after_the_resync);
	tcase_add_test(tc, wiped_data_new_cluster);
	tcase_add_test(tc, proxy_cuts_mid_message);
	tcase_add_test(tc, proxy_stall_stale_then_recovers);
	tcase_add_test(tc, proxy_trickles_bytes);
	tcase_add_test(tc, proxy_injects_errors_and_hostile_messages);
	tcase_add_test(tc, hostile_records_beside_good);
	tcase_add_test(tc, wiped_data_new_cluster_overtakes);
	tcase_add_test(tc, wiped_data_same_records_new_cluster_id);
	tcase_add_test(tc, wiped_data_same_records_same_cluster_id);
	tcase_add_test(tc, huge_weight_blocks_later_changes);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
	tcase_add_test(tc, over_point_limit_keeps_following);
#endif
	suite_add_tcase(s, tc);
	rc = hrt_run(s);
	curl_global_cleanup();
	return rc;
}
