/* SPDX-License-Identifier: MIT */
/* test_share.c - clients sharing a watcher (hr_share) against a real etcd:
 * one thread, one watch stream and one ring per revision for clients of
 * equal settings, a watcher each for settings that differ, each client's
 * own callbacks and counts, late joiners, closing in any order, clients
 * opened and closed from several threads, and an etcd that is not there.
 *
 * Sharing is seen from outside: the process's threads (/proc/self/task)
 * and sockets (/proc/self/fd), etcd's own count of its watchers (its
 * /metrics), the watcher's log lines, and ring references. */
#include "etcd_fixture.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PREFIX "/ring/nodes/"
#define OTHER_PREFIX "/ring/other/"

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;

static void up1(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

/* The suites without etcd still collect the library's lines. */
static void up_offline(void)
{
	hrt_log_init(&logbuf);
}

static void down_offline(void)
{
	hrt_log_free(&logbuf);
}

static const char *url(void)
{
	return hrt_etcd_client_url(etcd, 0);
}

static int64_t put_node(const char *prefix, const char *id, const char *value)
{
	char key[300];
	int64_t rev;

	snprintf(key, sizeof key, "%s%s", prefix, id);
	rev = hrt_put(url(), key, value);
	ck_assert_int_gt(rev, 0);
	return rev;
}

/* The settings every client of a test starts from: the same endpoints,
 * prefix and log sink, so that clients of one share follow one watcher
 * unless a test changes a setting. */
static void config(hr_etcd_config *e, hr_client_config *c, const char *prefix,
		   hr_share *share)
{
	hr_etcd_config_init(e);
	hr_client_config_init(c);
	e->endpoints = etcd ? hrt_etcd_endpoints(etcd) : NULL;
	e->prefix = prefix;
	e->log = hrt_log_fn;
	e->log_userdata = &logbuf;
	c->share = share;
}

static hr_client *open_ok(const hr_etcd_config *e, const hr_client_config *c)
{
	hr_client *cl = NULL;
	hr_error err = { 0 };
	int rc = hr_client_open(e, c, &cl, &err);

	ck_assert_msg(rc == 0, "open: %d %s", rc, err.message);
	ck_assert_ptr_nonnull(cl);
	return cl;
}

/* Whether two rings are one ring's memory: clients of one watcher get a
 * ring object each (an alias), over the nodes and points built once. */
static bool one_ring(const hr_ring *a, const hr_ring *b)
{
	return hr_ring_node_count(a) > 0 && hr_ring_node(a, 0) == hr_ring_node(b, 0) &&
	       hr_ring_revision(a) == hr_ring_revision(b);
}

static hr_client_status status(hr_client *c)
{
	hr_client_status st;

	memset(&st, 0xff, sizeof st);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	return st;
}

/* Polls until the client's published ring is at `rev` or later. */
static int wait_revision(hr_client *c, uint64_t rev, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	hr_client_status st;

	for (;;) {
		hr_client_status_get(c, &st, NULL);
		if (st.revision >= rev)
			return 0;
		if (hrt_now_ms() > until) {
			fprintf(stderr, "test_share: revision %" PRIu64 ", want %" PRIu64 "\n",
				st.revision, rev);
			return -1;
		}
		hrt_sleep_ms(10);
	}
}

static uint64_t ring_revision(hr_client *c)
{
	hr_ring *r = hr_client_ring(c);
	uint64_t rev = hr_ring_revision(r);

	hr_ring_release(r);
	return rev;
}

/* wait_revision() through the ring alone, never the watcher's status. */
static int wait_ring_revision(hr_client *c, uint64_t rev, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;

	while (ring_revision(c) < rev) {
		if (hrt_now_ms() > until)
			return -1;
		hrt_sleep_ms(10);
	}
	return 0;
}

static int has_node(hr_client *c, const char *id)
{
	hr_ring *r = hr_client_ring(c);
	int found = hr_ring_find(r, id) != NULL;

	hr_ring_release(r);
	return found;
}

/* ---- what the process holds ------------------------------------------ */

static int count_dir(const char *path, int sockets_only)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char link[300], target[128];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		if (!sockets_only) {
			n++;
			continue;
		}
		snprintf(link, sizeof link, "%s/%s", path, de->d_name);
		len = readlink(link, target, sizeof target - 1);
		if (len > 0) {
			target[len] = '\0';
			if (strncmp(target, "socket:", 7) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

/* The count once it held still for a few samples: threads and
 * connections of a client just closed take a moment to go. */
static int stable_count(int sockets_only)
{
	const char *path = sockets_only ? "/proc/self/fd" : "/proc/self/task";
	int64_t until = hrt_now_ms() + 3000;
	int last = count_dir(path, sockets_only), same = 0;

	while (same < 3 && hrt_now_ms() < until) {
		int now;

		hrt_sleep_ms(50);
		now = count_dir(path, sockets_only);
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

static int threads_now(void)
{
	return stable_count(0);
}

static int sockets_now(void)
{
	return stable_count(1);
}

/* Polls until the process has `want` threads; the last count. */
static int wait_threads(int want, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	int n;

	while ((n = count_dir("/proc/self/task", 0)) != want && hrt_now_ms() < until)
		hrt_sleep_ms(20);
	return n;
}

/* ---- what etcd sees ----------------------------------------------------- */

typedef struct body {
	char *text;
	size_t len, cap;
} body;

static size_t body_sink(char *p, size_t size, size_t n, void *ud)
{
	body *b = ud;

	hrt_text_append(&b->text, &b->len, &b->cap, p, size * n);
	return size * n;
}

/* etcd's gauge of the watchers it serves (one per watch stream of the
 * library), or -1. */
static long etcd_watchers(void)
{
	static const char gauge[] = "\netcd_debugging_mvcc_watcher_total ";
	char full[300];
	const char *line;
	body b = { 0 };
	long n = -1;
	CURL *h = curl_easy_init();

	ck_assert_ptr_nonnull(h);
	snprintf(full, sizeof full, "%s/metrics", url());
	curl_easy_setopt(h, CURLOPT_URL, full);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(h) == CURLE_OK && b.text && (line = strstr(b.text, gauge)))
		n = strtol(line + strlen(gauge), NULL, 10);
	curl_easy_cleanup(h);
	free(b.text);
	return n;
}

/* Polls until etcd serves `want` watchers; the last count.  A stream a
 * client closed is dropped by etcd's gateway a moment later. */
static long wait_etcd_watchers(long want, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	long n;

	while ((n = etcd_watchers()) != want && hrt_now_ms() < until)
		hrt_sleep_ms(50);
	return n;
}

/* Opens and closes one client, so that what a process sets up once (the
 * library's globals, libcurl's) is not counted as a client's. */
static void warm_up(void)
{
	hr_etcd_config e;
	hr_client_config c;

	config(&e, &c, PREFIX, NULL);
	hr_client_close(open_ok(&e, &c));
	ck_assert_int_eq(wait_etcd_watchers(0, 5000), 0);
}

/* ---- on_change, per client ------------------------------------------------ */

#define MAX_CHANGES 16

/* Every call is counted and chained; the first MAX_CHANGES are kept. */
typedef struct changes {
	pthread_mutex_t mu;
	int n;
	uint64_t old_rev[MAX_CHANGES], old_digest[MAX_CHANGES];
	size_t old_nodes[MAX_CHANGES];
	uint64_t new_rev[MAX_CHANGES], new_digest[MAX_CHANGES];
	uint64_t last_rev, last_digest;	/* of the last call's new ring */
	/* Each call's old ring is the previous call's new one. */
	int chained;
} changes;

static void changes_init(changes *ch)
{
	memset(ch, 0, sizeof *ch);
	pthread_mutex_init(&ch->mu, NULL);
	ch->chained = 1;
}

static void record_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	changes *ch = ud;

	pthread_mutex_lock(&ch->mu);
	if (ch->n > 0 && (hr_ring_revision(old) != ch->last_rev ||
			  hr_ring_digest(old) != ch->last_digest))
		ch->chained = 0;
	if (ch->n < MAX_CHANGES) {
		ch->old_rev[ch->n] = hr_ring_revision(old);
		ch->old_digest[ch->n] = hr_ring_digest(old);
		ch->old_nodes[ch->n] = hr_ring_node_count(old);
		ch->new_rev[ch->n] = hr_ring_revision(ring);
		ch->new_digest[ch->n] = hr_ring_digest(ring);
	}
	ch->last_rev = hr_ring_revision(ring);
	ch->last_digest = hr_ring_digest(ring);
	ch->n++;
	pthread_mutex_unlock(&ch->mu);
}

static int changes_count(changes *ch)
{
	int n;

	pthread_mutex_lock(&ch->mu);
	n = ch->n;
	pthread_mutex_unlock(&ch->mu);
	return n;
}

static void count_diff(void *ud, const hr_diff *write_diff, const hr_diff *read_diff)
{
	(void)write_diff;
	(void)read_diff;
	__atomic_fetch_add((int *)ud, 1, __ATOMIC_RELAXED);
}

/* Polls until on_change was called with a ring at `rev` or later (for
 * rev 0: called at all). */
static int wait_change(changes *ch, uint64_t rev, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;

	for (;;) {
		int n;
		uint64_t last;

		pthread_mutex_lock(&ch->mu);
		n = ch->n;
		last = ch->last_rev;
		pthread_mutex_unlock(&ch->mu);
		if (n > 0 && last >= rev)
			return 0;
		if (hrt_now_ms() > until)
			return -1;
		hrt_sleep_ms(10);
	}
}

/* ---- 1. one watcher for equal settings ------------------------------------ */

START_TEST(equal_settings_follow_one_watcher)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *shared[3], *alone[3];
	changes ch[3];
	hr_error err = { 0 };
	char needle[64];

	put_node(PREFIX, "a", "127.0.0.1:1");
	warm_up();
	int threads0 = threads_now(), sockets0 = sockets_now();

	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	ck_assert_ptr_nonnull(share);
	for (int i = 0; i < 3; i++) {
		changes_init(&ch[i]);
		config(&e, &c, PREFIX, share);
		c.on_change = record_change;
		c.on_change_userdata = &ch[i];
		shared[i] = open_ok(&e, &c);
	}
	/* Every client hears of the first ring, the joiners too. */
	for (int i = 0; i < 3; i++)
		ck_assert_msg(wait_change(&ch[i], 1, 5000) == 0, "client %d: no first ring", i);
	/* A put the clients see through their stream: it is open now. */
	uint64_t rev1 = (uint64_t)put_node(PREFIX, "b", "127.0.0.2:1");
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(wait_revision(shared[i], rev1, 5000), 0);
	ck_assert_int_eq(wait_etcd_watchers(1, 5000), 1);
	int threads1 = threads_now(), sockets1 = sockets_now();

	/* The same settings without the share: a watcher each. */
	for (int i = 0; i < 3; i++) {
		config(&e, &c, PREFIX, NULL);
		alone[i] = open_ok(&e, &c);
	}
	uint64_t rev2 = (uint64_t)put_node(PREFIX, "c", "127.0.0.3:1");
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wait_revision(shared[i], rev2, 5000), 0);
		ck_assert_int_eq(wait_revision(alone[i], rev2, 5000), 0);
	}
	ck_assert_int_eq(wait_etcd_watchers(4, 5000), 4);
	int threads2 = threads_now(), sockets2 = sockets_now();

	int shared_threads = threads1 - threads0, alone_threads = threads2 - threads1;
	int shared_sockets = sockets1 - sockets0, alone_sockets = sockets2 - sockets1;
	fprintf(stderr, "test_share: 3 shared clients: +%d threads +%d sockets; "
		"3 unshared: +%d threads +%d sockets\n",
		shared_threads, shared_sockets, alone_threads, alone_sockets);
	ck_assert_int_ge(shared_threads, 1);
	ck_assert_int_ge(shared_sockets, 1);
	/* Three shared clients cost what one client does; three unshared
	 * ones three times that. */
	ck_assert_int_eq(alone_threads, 3 * shared_threads);
	ck_assert_int_lt(2 * shared_sockets, alone_sockets);

	hr_ring *ring0 = hr_client_ring(shared[0]);
	ck_assert_uint_eq(hr_ring_revision(ring0), rev2);
	ck_assert_uint_eq(hr_ring_node_count(ring0), 3);
	for (int i = 0; i < 3; i++) {
		hr_client_status st = status(shared[i]);
		hr_ring *r = hr_client_ring(shared[i]);

		ck_assert_uint_eq(st.watcher_clients, 3);
		ck_assert_uint_eq(st.revision, rev2);
		ck_assert_uint_eq(st.digest, hr_ring_digest(ring0));
		/* One ring per revision, whichever client it is read through. */
		ck_assert(one_ring(r, ring0));
		hr_ring_release(r);

		st = status(alone[i]);
		r = hr_client_ring(alone[i]);
		ck_assert_uint_eq(st.watcher_clients, 1);
		ck_assert_uint_eq(st.revision, rev2);
		ck_assert_uint_eq(st.digest, hr_ring_digest(ring0));
		ck_assert_uint_eq(hr_ring_digest(r), hr_ring_digest(ring0));
		ck_assert_ptr_ne(r, ring0);
		hr_ring_release(r);
	}

	/* The watcher logs each ring once: one line for the shared clients,
	 * one for each unshared one. */
	snprintf(needle, sizeof needle, " revision=%" PRIu64 " ", rev2);
	hrt_log_wait(&logbuf, 4, 3000, 20, "event=ring", needle, NULL);
	hrt_sleep_ms(200);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=ring", needle, NULL), 4);

	/* Each client's on_change saw every ring once: the first one (the
	 * joiners with the empty ring as the old one), then b, then c. */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(wait_change(&ch[i], rev2, 5000), 0);
	hrt_sleep_ms(200);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(changes_count(&ch[i]), 3);
		ck_assert_uint_eq(ch[i].old_rev[0], 0);
		ck_assert_uint_eq(ch[i].old_nodes[0], 0);
		ck_assert_uint_eq(ch[i].new_rev[0], ch[0].new_rev[0]);
		ck_assert_uint_eq(ch[i].new_digest[0], ch[0].new_digest[0]);
		ck_assert_uint_eq(ch[i].new_rev[1], rev1);
		ck_assert_uint_eq(ch[i].new_rev[2], rev2);
		ck_assert_uint_eq(ch[i].new_digest[2], hr_ring_digest(ring0));
		ck_assert_msg(ch[i].chained, "client %d: a change's old ring was not the last new one", i);
	}
	hr_ring_release(ring0);

	for (int i = 0; i < 3; i++) {
		hr_client_close(alone[i]);
		hr_client_close(shared[i]);
	}
	hr_share_free(share);
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
	ck_assert_int_eq(wait_etcd_watchers(0, 5000), 0);
}
END_TEST

/* ---- 2. a late joiner ----------------------------------------------------- */

START_TEST(late_joiner_gets_the_ring_at_once)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b = NULL;
	changes cha, chb;
	int diffs_b = 0;
	hr_error err = { 0 };

	put_node(PREFIX, "a", "127.0.0.1:1");
	put_node(PREFIX, "b", "127.0.0.2:1");
	put_node(PREFIX, "c", "{\"addr\":\"127.0.0.3:1\",\"zone\":\"z2\"}");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	changes_init(&cha);
	changes_init(&chb);
	config(&e, &c, PREFIX, share);
	c.on_change = record_change;
	c.on_change_userdata = &cha;
	a = open_ok(&e, &c);
	ck_assert_int_eq(hrt_wait_nodes(a, 3, 5000), 0);
	ck_assert_int_eq(wait_change(&cha, 1, 5000), 0);
	hr_ring *ra = hr_client_ring(a);

	/* With etcd frozen, only a client that takes the ring it joins can
	 * open: a watcher of its own would wait for its first sync in vain. */
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 0), 0);
	config(&e, &c, PREFIX, share);
	c.on_change = record_change;
	c.on_change_userdata = &chb;
	c.on_diff = count_diff;
	c.on_diff_userdata = &diffs_b;
	c.open_timeout_ms = 2000;
	int64_t t0 = hrt_now_ms();
	int rc = hr_client_open(&e, &c, &b, &err);
	int64_t took = hrt_now_ms() - t0;
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 0), 0);
	ck_assert_msg(rc == 0, "open of the joiner: %d %s", rc, err.message);
	ck_assert_msg(took < 1000, "the joiner's open took %" PRId64 " ms", took);

	hr_ring *rb = hr_client_ring(b);
	ck_assert(one_ring(rb, ra));
	ck_assert_uint_eq(hr_ring_revision(rb), hr_ring_revision(ra));
	ck_assert_uint_eq(hr_ring_digest(rb), hr_ring_digest(ra));
	for (int i = 0; i < 200; i++) {
		char key[32];
		hr_owner oa, ob;
		int n = snprintf(key, sizeof key, "key-%d", i);

		EXPECT(hr_client_lookup(a, key, (size_t)n, &oa, NULL) == 0);
		EXPECT(hr_client_lookup(b, key, (size_t)n, &ob, NULL) == 0);
		EXPECT(strcmp(oa.node, ob.node) == 0);
		EXPECT(strcmp(oa.read_node, ob.read_node) == 0);
		EXPECT(oa.revision == ob.revision && oa.digest == ob.digest);
	}
	hr_client_status sa = status(a), sb = status(b);
	ck_assert_uint_eq(sa.watcher_clients, 2);
	ck_assert_uint_eq(sb.watcher_clients, 2);
	/* The watcher's figures, whichever client asks. */
	ck_assert_uint_eq(sb.rings_published, sa.rings_published);
	ck_assert_uint_eq(sb.confirmed_revision, sa.confirmed_revision);
	ck_assert_str_eq(sb.endpoint, sa.endpoint);

	/* The joiner's on_change hears of the ring it was given, as if it
	 * replaced the empty ring. */
	ck_assert_msg(wait_change(&chb, hr_ring_revision(ra), 3000) == 0,
		      "the joiner's on_change was not called");
	ck_assert_int_eq(changes_count(&chb), 1);
	ck_assert_uint_eq(chb.old_rev[0], 0);
	ck_assert_uint_eq(chb.old_nodes[0], 0);
	ck_assert_uint_eq(chb.new_rev[0], hr_ring_revision(ra));
	ck_assert_uint_eq(chb.new_digest[0], hr_ring_digest(ra));
	/* The first client was not told again. */
	ck_assert_int_eq(changes_count(&cha), 1);

	/* Then both follow etcd. */
	uint64_t rev = (uint64_t)put_node(PREFIX, "d", "127.0.0.4:1");
	ck_assert_int_eq(wait_revision(a, rev, 5000), 0);
	ck_assert_int_eq(wait_revision(b, rev, 5000), 0);
	ck_assert_int_eq(wait_change(&cha, rev, 5000), 0);
	ck_assert_int_eq(wait_change(&chb, rev, 5000), 0);
	ck_assert_int_eq(changes_count(&cha), 2);
	ck_assert_int_eq(changes_count(&chb), 2);
	ck_assert(chb.chained);
	ck_assert_uint_eq(chb.old_rev[1], hr_ring_revision(ra));
	/* on_diff too is the joiner's alone, once per ring. */
	ck_assert_int_eq(__atomic_load_n(&diffs_b, __ATOMIC_RELAXED), 2);
	ck_assert(has_node(b, "d"));
	ck_assert_uint_eq(status(a).digest, status(b).digest);
	hr_ring_release(ra);
	hr_ring_release(rb);
	hr_client_close(a);
	hr_client_close(b);
	hr_share_free(share);
}
END_TEST

/* ---- 3. settings that differ ---------------------------------------------- */

START_TEST(different_settings_get_a_watcher_each)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a1, *a2, *other, *probing, *logging;
	changes ch;
	hrt_log logbuf2;
	hr_error err = { 0 };
	/* Equal by content, not by pointer. */
	char *prefix_copy = strdup(PREFIX);
	char *endpoints_copy = strdup(hrt_etcd_endpoints(etcd));

	hrt_log_init(&logbuf2);
	put_node(PREFIX, "x", "127.0.0.1:1");
	put_node(OTHER_PREFIX, "y", "127.0.0.2:1");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);

	changes_init(&ch);
	config(&e, &c, PREFIX, share);
	c.on_change = record_change;
	c.on_change_userdata = &ch;
	a1 = open_ok(&e, &c);
	/* A client's own settings (callbacks, hot keys, open timeout) do not
	 * keep it from sharing. */
	config(&e, &c, prefix_copy, share);
	e.endpoints = endpoints_copy;
	c.hot_key_sample = 1;
	c.open_timeout_ms = 4000;
	a2 = open_ok(&e, &c);
	config(&e, &c, OTHER_PREFIX, share);
	other = open_ok(&e, &c);
	config(&e, &c, PREFIX, share);
	c.probe_interval_ms = 2000;
	probing = open_ok(&e, &c);
	config(&e, &c, PREFIX, share);
	e.log_userdata = &logbuf2;
	logging = open_ok(&e, &c);
	free(prefix_copy);
	free(endpoints_copy);

	ck_assert_uint_eq(status(a1).watcher_clients, 2);
	ck_assert_uint_eq(status(a2).watcher_clients, 2);
	ck_assert_uint_eq(status(other).watcher_clients, 1);
	ck_assert_uint_eq(status(probing).watcher_clients, 1);
	ck_assert_uint_eq(status(logging).watcher_clients, 1);
	ck_assert_int_eq(wait_etcd_watchers(4, 5000), 4);

	hr_ring *r1 = hr_client_ring(a1), *r2 = hr_client_ring(a2);
	hr_ring *rp = hr_client_ring(probing);
	ck_assert(one_ring(r1, r2));
	ck_assert(!one_ring(r1, rp));
	ck_assert_uint_eq(hr_ring_digest(r1), hr_ring_digest(rp));
	hr_ring_release(r1);
	hr_ring_release(r2);
	hr_ring_release(rp);

	uint64_t rev_x2 = (uint64_t)put_node(PREFIX, "x2", "127.0.0.3:1");
	uint64_t rev_y2 = (uint64_t)put_node(OTHER_PREFIX, "y2", "127.0.0.4:1");
	hr_client *of_prefix[] = { a1, a2, probing, logging };
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(wait_revision(of_prefix[i], rev_x2, 5000), 0);
		ck_assert_int_eq(hrt_wait_nodes(of_prefix[i], 2, 5000), 0);
		ck_assert(has_node(of_prefix[i], "x") && has_node(of_prefix[i], "x2"));
		ck_assert(!has_node(of_prefix[i], "y") && !has_node(of_prefix[i], "y2"));
	}
	ck_assert_int_eq(wait_revision(other, rev_y2, 5000), 0);
	ck_assert_int_eq(hrt_wait_nodes(other, 2, 5000), 0);
	ck_assert(has_node(other, "y") && has_node(other, "y2"));
	ck_assert(!has_node(other, "x") && !has_node(other, "x2"));
	/* The put under the other prefix published nothing to the first. */
	hrt_sleep_ms(200);
	ck_assert_uint_eq(ring_revision(a1), rev_x2);
	ck_assert_int_eq(wait_change(&ch, rev_x2, 5000), 0);
	ck_assert_int_eq(changes_count(&ch), 2);
	/* Each watcher logs through its own settings. */
	ck_assert_int_ge(hrt_log_wait(&logbuf2, 1, 3000, 20, "event=ring", "nodes=2", NULL), 1);

	hr_client_close(a1);
	hr_client_close(a2);
	hr_client_close(other);
	hr_client_close(probing);
	hr_client_close(logging);
	hr_share_free(share);
	hrt_log_free(&logbuf2);
}
END_TEST

/* ---- 4. each client's counts ----------------------------------------------- */

static uint64_t count_of(const hr_node_lookups *l, int n, const char *id, int read)
{
	for (int i = 0; i < n; i++)
		if (strcmp(l[i].node, id) == 0)
			return read ? l[i].read : l[i].write;
	return 0;
}

static int hot_has(hr_client *c, const char *key)
{
	hr_hot_key hot[16];
	hr_error err = { 0 };
	int n = hr_client_hot_keys(c, hot, 16, &err);

	ck_assert_msg(n >= 0, "hot keys: %d %s", n, err.message);
	for (int i = 0; i < n; i++)
		if (hot[i].len == strlen(key) && memcmp(hot[i].key, key, hot[i].len) == 0)
			return 1;
	return 0;
}

START_TEST(counts_and_hot_keys_stay_each_clients)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b;
	hr_node_lookups la[8], lb[8];
	uint64_t want_a[3][2] = { { 0 } }, want_b[3][2] = { { 0 } };
	const char *ids[3] = { "a", "b", "c" };
	hr_error err = { 0 };
	size_t total;

	put_node(PREFIX, "a", "127.0.0.1:1");
	put_node(PREFIX, "b", "127.0.0.2:1");
	put_node(PREFIX, "c", "127.0.0.3:1");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, PREFIX, share);
	c.hot_key_sample = 1;
	a = open_ok(&e, &c);
	b = open_ok(&e, &c);
	ck_assert_uint_eq(status(b).watcher_clients, 2);

	/* What each client should have counted, from its own answers. */
	for (int i = 0; i < 500; i++) {
		char key[32];
		hr_owner o;
		int n = i < 300 ? snprintf(key, sizeof key, "hot-a") :
				  snprintf(key, sizeof key, "key-%d", i);

		EXPECT(hr_client_lookup(a, key, (size_t)n, &o, NULL) == 0);
		for (int j = 0; j < 3; j++) {
			want_a[j][0] += strcmp(o.node, ids[j]) == 0;
			want_a[j][1] += strcmp(o.read_node, ids[j]) == 0;
		}
	}
	for (int i = 0; i < 120; i++) {
		char key[32];
		hr_owner o;
		int n = snprintf(key, sizeof key, "b-%d", i % 40);

		EXPECT(hr_client_lookup(b, key, (size_t)n, &o, NULL) == 0);
		for (int j = 0; j < 3; j++) {
			want_b[j][0] += strcmp(o.node, ids[j]) == 0;
			want_b[j][1] += strcmp(o.read_node, ids[j]) == 0;
		}
	}
	int na = hr_client_lookup_counts(a, la, 8, &total, &err);
	ck_assert_msg(na == 3, "counts of a: %d %s", na, err.message);
	int nb = hr_client_lookup_counts(b, lb, 8, &total, &err);
	ck_assert_msg(nb == 3, "counts of b: %d %s", nb, err.message);
	uint64_t sum_a = 0, sum_b = 0;
	for (int j = 0; j < 3; j++)
		if (count_of(la, na, ids[j], 0) != want_a[j][0] ||
		    count_of(lb, nb, ids[j], 0) != want_b[j][0])
			fprintf(stderr, "test_share: node %s: a counted %" PRIu64 "/%" PRIu64
			" (want %" PRIu64 "/%" PRIu64 "), b counted %" PRIu64 "/%" PRIu64
			" (want %" PRIu64 "/%" PRIu64 ")\n", ids[j],
			count_of(la, na, ids[j], 0), count_of(la, na, ids[j], 1),
			want_a[j][0], want_a[j][1], count_of(lb, nb, ids[j], 0),
			count_of(lb, nb, ids[j], 1), want_b[j][0], want_b[j][1]);
	for (int j = 0; j < 3; j++) {
		ck_assert_uint_eq(count_of(la, na, ids[j], 0), want_a[j][0]);
		ck_assert_uint_eq(count_of(la, na, ids[j], 1), want_a[j][1]);
		ck_assert_uint_eq(count_of(lb, nb, ids[j], 0), want_b[j][0]);
		ck_assert_uint_eq(count_of(lb, nb, ids[j], 1), want_b[j][1]);
		sum_a += count_of(la, na, ids[j], 0);
		sum_b += count_of(lb, nb, ids[j], 0);
	}
	ck_assert_uint_eq(sum_a, 500);
	ck_assert_uint_eq(sum_b, 120);

	ck_assert(hot_has(a, "hot-a"));
	ck_assert(!hot_has(b, "hot-a"));

	/* A new ring changes nothing of that. */
	uint64_t rev = (uint64_t)put_node(PREFIX, "d", "127.0.0.4:1");
	ck_assert_int_eq(wait_revision(a, rev, 5000), 0);
	ck_assert_int_eq(wait_revision(b, rev, 5000), 0);
	hr_owner o;
	ck_assert_int_eq(hr_client_lookup(b, "after", 5, &o, NULL), 0);
	na = hr_client_lookup_counts(a, la, 8, &total, &err);
	nb = hr_client_lookup_counts(b, lb, 8, &total, &err);
	ck_assert_int_eq(na, 4);
	ck_assert_int_eq(nb, 4);
	sum_a = sum_b = 0;
	for (int j = 0; j < 4; j++) {
		sum_a += la[j].write;
		sum_b += lb[j].write;
	}
	ck_assert_uint_eq(sum_a, 500);
	ck_assert_uint_eq(sum_b, 121);

	hr_client_close(b);
	hr_client_close(a);
	hr_share_free(share);
}
END_TEST

/* A thread that looks a key up on one client, waits, then on another. */
typedef struct stepper {
	pthread_t thread;
	sem_t go, done;
	hr_client *first, *then;
	int rc_first, rc_then;
} stepper;

static void *stepper_main(void *arg)
{
	stepper *st = arg;
	hr_owner o;

	st->rc_first = hr_client_lookup(st->first, "k", 1, &o, NULL);
	sem_post(&st->done);
	sem_wait(&st->go);
	st->rc_then = 0;
	for (int i = 0; i < 50; i++) {
		char key[16];
		int n = snprintf(key, sizeof key, "k%d", i);
		int rc = hr_client_lookup(st->then, key, (size_t)n, &o, NULL);

		if (rc)
			st->rc_then = rc;
	}
	return NULL;
}

/* The clients of a watcher share one ring's memory: a thread whose last
 * lookup was on a client that has since closed must still count its
 * lookups on another client as that client's. */
START_TEST(lookups_after_a_sibling_closed)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b;
	hr_node_lookups l[8];
	hr_error err = { 0 };
	stepper st;

	put_node(PREFIX, "a", "127.0.0.1:1");
	put_node(PREFIX, "b", "127.0.0.2:1");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, PREFIX, share);
	a = open_ok(&e, &c);
	b = open_ok(&e, &c);
	memset(&st, 0, sizeof st);
	sem_init(&st.go, 0, 0);
	sem_init(&st.done, 0, 0);
	st.first = a;
	st.then = b;
	ck_assert_int_eq(pthread_create(&st.thread, NULL, stepper_main, &st), 0);
	sem_wait(&st.done);
	ck_assert_int_eq(st.rc_first, 0);
	/* The thread is idle: a may close. */
	hr_client_close(a);
	sem_post(&st.go);
	pthread_join(st.thread, NULL);
	ck_assert_int_eq(st.rc_then, 0);
	int n = hr_client_lookup_counts(b, l, 8, NULL, &err);
	ck_assert_msg(n == 2, "counts: %d %s", n, err.message);
	ck_assert_uint_eq(l[0].write + l[1].write, 50);
	ck_assert_uint_eq(l[0].read + l[1].read, 50);
	hr_client_close(b);
	hr_share_free(share);
	sem_destroy(&st.go);
	sem_destroy(&st.done);
}
END_TEST

/* A callback that calls its own client back, as on_change may. */
typedef struct reentry {
	hr_client *client;      /* set once open returned */
	int calls, status_ok, lookups_ok;
	uint64_t watcher_clients;
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
		return;
	int status_ok = hr_client_status_get(c, &st, NULL) == 0;

	if (hr_client_lookup(c, "k", 1, &o, NULL) == 0 && o.revision == hr_ring_revision(ring))
		__atomic_fetch_add(&re->lookups_ok, 1, __ATOMIC_RELAXED);
	/* Last, with release: whoever sees this call's status count sees
	 * its lookup counted too. */
	if (status_ok) {
		__atomic_store_n(&re->watcher_clients, st.watcher_clients, __ATOMIC_RELAXED);
		__atomic_fetch_add(&re->status_ok, 1, __ATOMIC_RELEASE);
	}
}

/* Polls until the callback returned from `want` status calls; a watcher
 * stuck in its callback never gets there. */
static int wait_reentry(reentry *re, int want, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;

	while (__atomic_load_n(&re->status_ok, __ATOMIC_ACQUIRE) < want) {
		if (hrt_now_ms() > until)
			return -1;
		hrt_sleep_ms(10);
	}
	return 0;
}

START_TEST(callbacks_call_their_client)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b;
	reentry ra = { 0 }, rb = { 0 };
	hr_error err = { 0 };

	put_node(PREFIX, "a", "127.0.0.1:1");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, PREFIX, share);
	c.on_change = reentrant_change;
	c.on_change_userdata = &ra;
	a = open_ok(&e, &c);
	__atomic_store_n(&ra.client, a, __ATOMIC_RELEASE);
	c.on_change_userdata = &rb;
	b = open_ok(&e, &c);
	__atomic_store_n(&rb.client, b, __ATOMIC_RELEASE);
	/* B's first ring reaches its callback after open returned (unless
	 * it raced ahead of the store above: then a put brings another). */
	uint64_t rev = (uint64_t)put_node(PREFIX, "b", "127.0.0.2:1");
	/* Nothing that could wait for a stuck watcher until it is known not
	 * to be stuck. */
	ck_assert_msg(wait_ring_revision(b, rev, 5000) == 0,
		      "no new ring: the watcher is stuck (on_change calls %d and %d, "
		      "returned from status %d and %d)",
		      __atomic_load_n(&ra.calls, __ATOMIC_RELAXED),
		      __atomic_load_n(&rb.calls, __ATOMIC_RELAXED),
		      __atomic_load_n(&ra.status_ok, __ATOMIC_RELAXED),
		      __atomic_load_n(&rb.status_ok, __ATOMIC_RELAXED));
	if (wait_reentry(&ra, 1, 5000) || wait_reentry(&rb, 1, 5000))
		/* Not closed: the close would wait for the stuck watcher. */
		ck_abort_msg("on_change stuck in hr_client_status_get (calls %d and %d)",
			     __atomic_load_n(&ra.calls, __ATOMIC_RELAXED),
			     __atomic_load_n(&rb.calls, __ATOMIC_RELAXED));
	ck_assert_uint_eq(__atomic_load_n(&rb.watcher_clients, __ATOMIC_RELAXED), 2);
	ck_assert_int_eq(__atomic_load_n(&ra.lookups_ok, __ATOMIC_RELAXED),
			 __atomic_load_n(&ra.status_ok, __ATOMIC_RELAXED));
	hr_client_close(a);
	hr_client_close(b);
	hr_share_free(share);
}
END_TEST

/* ---- 5. closing ------------------------------------------------------------ */

/* A record, a new share and two clients of it; the threads before them. */
static int open_pair(hr_etcd_config *e, hr_client_config *c, hr_share **share,
		     hr_client **a, hr_client **b)
{
	hr_error err = { 0 };
	int threads0;

	put_node(PREFIX, "a", "127.0.0.1:1");
	warm_up();
	threads0 = threads_now();
	ck_assert_int_eq(hr_share_new(share, &err), 0);
	config(e, c, PREFIX, *share);
	*a = open_ok(e, c);
	*b = open_ok(e, c);
	return threads0;
}

START_TEST(closing_the_first_client_keeps_the_watcher)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b;
	int threads0 = open_pair(&e, &c, &share, &a, &b);

	ck_assert_int_eq(wait_etcd_watchers(1, 5000), 1);
	int threads_both = threads_now();
	hr_client_status before = status(b);
	ck_assert_uint_eq(before.watcher_clients, 2);

	/* The client that started the watcher goes; the watcher stays. */
	hr_client_close(a);
	ck_assert_uint_eq(status(b).watcher_clients, 1);
	ck_assert_int_eq(threads_now(), threads_both);
	uint64_t rev = (uint64_t)put_node(PREFIX, "b", "127.0.0.2:1");
	ck_assert_int_eq(wait_revision(b, rev, 5000), 0);
	ck_assert(has_node(b, "b"));
	hr_client_status after = status(b);
	ck_assert_uint_eq(after.rings_published, before.rings_published + 1);
	ck_assert_uint_eq(after.reconnects, before.reconnects);
	ck_assert_uint_eq(after.resyncs, before.resyncs);
	ck_assert_int_eq(etcd_watchers(), 1);

	/* The last one stops it. */
	hr_client_close(b);
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
	ck_assert_int_eq(wait_etcd_watchers(0, 5000), 0);

	/* A share outlives its watchers: the next client starts one. */
	config(&e, &c, PREFIX, share);
	a = open_ok(&e, &c);
	ck_assert_uint_eq(status(a).watcher_clients, 1);
	ck_assert_uint_eq(ring_revision(a), rev);
	ck_assert(has_node(a, "b"));
	hr_client_close(a);
	hr_share_free(share);
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
}
END_TEST

START_TEST(share_freed_before_its_clients)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *a, *b;
	int threads0 = open_pair(&e, &c, &share, &a, &b);

	/* The clients hold it now. */
	hr_share_free(share);
	share = NULL;
	ck_assert_uint_eq(status(a).watcher_clients, 2);

	uint64_t rev = (uint64_t)put_node(PREFIX, "b", "127.0.0.2:1");
	ck_assert_int_eq(wait_revision(a, rev, 5000), 0);
	ck_assert_int_eq(wait_revision(b, rev, 5000), 0);
	hr_client_close(b);
	ck_assert_uint_eq(status(a).watcher_clients, 1);
	rev = (uint64_t)put_node(PREFIX, "c", "127.0.0.3:1");
	ck_assert_int_eq(wait_revision(a, rev, 5000), 0);
	ck_assert(has_node(a, "c"));
	hr_client_close(a);
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
	ck_assert_int_eq(wait_etcd_watchers(0, 5000), 0);
}
END_TEST

/* ---- 6. several threads ---------------------------------------------------- */

#define OPENERS 4
#define ROUNDS 20

typedef struct opener {
	pthread_t thread;
	struct opener *base;    /* the array, for each thread's own pace */
	hr_share *share;
	const char *endpoints;
	hr_client *kept;        /* its last client, left open */
	changes *kept_changes;
	char failure[512];
	int opened;
} opener;

static int openers_done;

static void *opener_main(void *arg)
{
	opener *op = arg;

	for (int round = 0; round < ROUNDS && !op->failure[0]; round++) {
		hr_etcd_config e;
		hr_client_config c;
		hr_client *cl = NULL;
		hr_error err = { 0 };
		hr_client_status st;
		hr_owner o;
		/* Freed right after the close: a callback called after it
		 * would touch freed memory. */
		changes *ch = malloc(sizeof *ch);
		int rc;

		changes_init(ch);
		hr_etcd_config_init(&e);
		hr_client_config_init(&c);
		e.endpoints = op->endpoints;
		e.prefix = PREFIX;
		e.log = hrt_log_fn;
		e.log_userdata = &logbuf;
		c.share = op->share;
		c.on_change = record_change;
		c.on_change_userdata = ch;
		rc = hr_client_open(&e, &c, &cl, &err);
		if (rc) {
			snprintf(op->failure, sizeof op->failure, "round %d: open: %d %s",
				 round, rc, err.message);
			free(ch);
			break;
		}
		op->opened++;
		rc = hr_client_lookup(cl, "k", 1, &o, NULL);
		if (rc)
			snprintf(op->failure, sizeof op->failure, "round %d: lookup: %d", round, rc);
		hr_client_status_get(cl, &st, NULL);
		if (st.watcher_clients < 1 || st.watcher_clients > OPENERS)
			snprintf(op->failure, sizeof op->failure, "round %d: watcher_clients %" PRIu64,
				 round, st.watcher_clients);
		if (round == ROUNDS - 1) {
			op->kept = cl;
			op->kept_changes = ch;
			break;
		}
		/* Closed at once, or after a ring or two. */
		hrt_sleep_ms((round * 7 + (int)(op - op->base)) % 4 * 10);
		hr_client_close(cl);
		pthread_mutex_destroy(&ch->mu);
		free(ch);
	}
	__atomic_fetch_add(&openers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(clients_opened_and_closed_from_threads)
{
	hr_share *share = NULL;
	hr_error err = { 0 };
	opener ops[OPENERS];
	int puts = 0;
	char id[32];

	put_node(PREFIX, "seed", "127.0.0.1:1");
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	memset(ops, 0, sizeof ops);
	openers_done = 0;
	for (int i = 0; i < OPENERS; i++) {
		ops[i].base = ops;
		ops[i].share = share;
		ops[i].endpoints = hrt_etcd_endpoints(etcd);
		ck_assert_int_eq(pthread_create(&ops[i].thread, NULL, opener_main, &ops[i]), 0);
	}
	/* Every put changes the ring. */
	int64_t until = hrt_now_ms() + 60000;
	while (__atomic_load_n(&openers_done, __ATOMIC_ACQUIRE) < OPENERS &&
	       hrt_now_ms() < until) {
		snprintf(id, sizeof id, "p%d", puts);
		put_node(PREFIX, id, "127.0.0.2:1");
		puts++;
	}
	for (int i = 0; i < OPENERS; i++)
		pthread_join(ops[i].thread, NULL);
	for (int i = 0; i < OPENERS; i++) {
		ck_assert_msg(!ops[i].failure[0], "thread %d: %s", i, ops[i].failure);
		ck_assert_int_eq(ops[i].opened, ROUNDS);
		ck_assert_ptr_nonnull(ops[i].kept);
	}
	fprintf(stderr, "test_share: %d puts while %d threads opened %d clients each\n",
		puts, OPENERS, ROUNDS);

	uint64_t last = (uint64_t)put_node(PREFIX, "last", "127.0.0.3:1");
	hr_ring *r0 = NULL;
	for (int i = 0; i < OPENERS; i++) {
		hr_client *cl = ops[i].kept;

		ck_assert_int_eq(wait_revision(cl, last, 10000), 0);
		ck_assert_msg(wait_change(ops[i].kept_changes, last, 5000) == 0,
			      "client of thread %d: on_change did not hear of the last ring", i);
		ck_assert(ops[i].kept_changes->chained);
		hr_client_status st = status(cl);
		hr_ring *r = hr_client_ring(cl);

		ck_assert_uint_eq(st.watcher_clients, OPENERS);
		ck_assert_uint_eq(st.revision, last);
		if (!r0)
			r0 = hr_client_ring(cl);
		ck_assert(one_ring(r, r0));
		ck_assert(hr_ring_find(r, "last") != NULL);
		hr_ring_release(r);
	}
	hr_ring_release(r0);
	ck_assert_int_eq(wait_etcd_watchers(1, 5000), 1);
	ck_assert_int_eq(hrt_wait_converged(ops[0].kept, hrt_etcd_endpoints(etcd), PREFIX, 5000), 0);
	for (int i = 0; i < OPENERS; i++) {
		hr_client_close(ops[i].kept);
		pthread_mutex_destroy(&ops[i].kept_changes->mu);
		free(ops[i].kept_changes);
	}
	hr_share_free(share);
}
END_TEST

/* ---- 7. bad input ---------------------------------------------------------- */

START_TEST(bad_input)
{
	hr_share *share = (hr_share *)1;
	hr_error err = { 0 };
	hr_etcd_config e;
	hr_client_config c;
	hr_client *cl = (hr_client *)1;

	ck_assert_int_eq(hr_share_new(NULL, &err), HR_EINVAL);
	ck_assert_int_eq(err.code, HR_EINVAL);
	hrt_assert_clean_message(err.message);
	ck_assert_int_eq(hr_share_new(NULL, NULL), HR_EINVAL);
	hr_share_free(NULL);

	/* No error struct is needed; a share no client used is freed. */
	ck_assert_int_eq(hr_share_new(&share, NULL), 0);
	ck_assert_ptr_nonnull(share);
	hr_share_free(share);

	/* A client refused for its settings leaves the share as it was. */
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, NULL, share);
	e.endpoints = "http://127.0.0.1:1";
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(hr_client_open(&e, &c, &cl, &err), HR_EINVAL);
	ck_assert_ptr_null(cl);
	ck_assert_ptr_nonnull(strstr(err.message, "prefix"));
	config(&e, &c, PREFIX, share);
	e.endpoints = "http://127.0.0.1:1";
	c.page_size = 0;
	c.open_nonblocking = 1;
	cl = (hr_client *)1;
	ck_assert_int_eq(hr_client_open(&e, &c, &cl, &err), HR_EINVAL);
	ck_assert_ptr_null(cl);
	c.page_size = 1000;
	ck_assert_int_eq(hr_client_open(&e, &c, &cl, &err), 0);
	ck_assert_uint_eq(status(cl).watcher_clients, 1);
	hr_client_close(cl);
	hr_share_free(share);
}
END_TEST

/* ---- 8. an etcd that is not there ------------------------------------------ */

/* A loopback port nothing listens on: the kernel's choice, released. */
static int closed_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

typedef struct failing_open {
	pthread_t thread;
	const hr_etcd_config *e;
	const hr_client_config *c;
	hr_client *cl;
	hr_error err;
	int rc;
} failing_open;

static void *failing_open_main(void *arg)
{
	failing_open *f = arg;

	f->rc = hr_client_open(f->e, f->c, &f->cl, &f->err);
	return NULL;
}

static void assert_unreachable(int rc, const hr_error *err, const char *endpoint)
{
	ck_assert_msg(rc == HR_ETIMEDOUT || rc == HR_ECONNECT, "rc %d %s", rc, err->message);
	ck_assert_msg(strstr(err->message, endpoint) != NULL, "message: %s", err->message);
}

START_TEST(unreachable_etcd)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *cl, *n1, *n2;
	hr_error err = { 0 };
	char endpoint[64], hostport[32];
	failing_open f[2];
	hr_owner o;

	snprintf(hostport, sizeof hostport, "127.0.0.1:%d", closed_port());
	snprintf(endpoint, sizeof endpoint, "http://%s", hostport);
	config(&e, &c, PREFIX, NULL);
	e.endpoints = endpoint;
	c.open_nonblocking = 1;
	hr_client_close(open_ok(&e, &c));
	int threads0 = threads_now(), sockets0 = sockets_now();

	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, PREFIX, share);
	e.endpoints = endpoint;
	c.open_timeout_ms = 300;
	c.backoff_max_ms = 100;
	for (int i = 0; i < 2; i++) {
		cl = (hr_client *)1;
		memset(&err, 0, sizeof err);
		int rc = hr_client_open(&e, &c, &cl, &err);
		assert_unreachable(rc, &err, hostport);
		ck_assert_ptr_null(cl);
	}
	/* Two at once, into one watcher. */
	for (int i = 0; i < 2; i++) {
		memset(&f[i], 0, sizeof f[i]);
		f[i].e = &e;
		f[i].c = &c;
		ck_assert_int_eq(pthread_create(&f[i].thread, NULL, failing_open_main, &f[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(f[i].thread, NULL);
		assert_unreachable(f[i].rc, &f[i].err, hostport);
		ck_assert_ptr_null(f[i].cl);
	}
	/* A failed open leaves nothing running. */
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
	ck_assert_int_eq(sockets_now(), sockets0);

	/* Non-blocking clients wait together; a blocking one that gives up
	 * leaves them their watcher. */
	c.open_nonblocking = 1;
	n1 = open_ok(&e, &c);
	n2 = open_ok(&e, &c);
	ck_assert_uint_eq(status(n1).watcher_clients, 2);
	ck_assert_uint_eq(status(n2).watcher_clients, 2);
	ck_assert_int_eq(threads_now(), threads0 + 1);
	c.open_nonblocking = 0;
	cl = (hr_client *)1;
	int rc = hr_client_open(&e, &c, &cl, &err);
	assert_unreachable(rc, &err, hostport);
	ck_assert_ptr_null(cl);
	ck_assert_uint_eq(status(n1).watcher_clients, 2);
	ck_assert_int_eq(hr_client_lookup(n1, "k", 1, &o, NULL), HR_EEMPTY);
	ck_assert_uint_eq(o.revision, 0);
	ck_assert_int_eq(hr_client_wait_synced(n2, 50, &err), HR_ETIMEDOUT);
	hr_client_close(n1);
	ck_assert_uint_eq(status(n2).watcher_clients, 1);
	hr_share_free(share);
	hr_client_close(n2);
	ck_assert_int_eq(wait_threads(threads0, 5000), threads0);
}
END_TEST

START_TEST(nonblocking_clients_sync_when_etcd_comes)
{
	hr_etcd_config e;
	hr_client_config c;
	hr_share *share = NULL;
	hr_client *n1, *n2;
	hr_error err = { 0 };

	put_node(PREFIX, "a", "127.0.0.1:1");
	ck_assert_int_eq(hrt_etcd_stop_member(etcd, 0), 0);
	ck_assert_int_eq(hr_share_new(&share, &err), 0);
	config(&e, &c, PREFIX, share);
	c.open_nonblocking = 1;
	c.backoff_max_ms = 200;
	n1 = open_ok(&e, &c);
	n2 = open_ok(&e, &c);
	ck_assert_uint_eq(status(n1).watcher_clients, 2);
	ck_assert_uint_eq(ring_revision(n2), 0);
	ck_assert_int_eq(hr_client_wait_synced(n1, 200, &err), HR_ETIMEDOUT);

	ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
	ck_assert_msg(hr_client_wait_synced(n1, 10000, &err) == 0, "wait: %s", err.message);
	ck_assert_msg(hr_client_wait_synced(n2, 1000, &err) == 0, "wait: %s", err.message);
	hr_ring *r1 = hr_client_ring(n1), *r2 = hr_client_ring(n2);
	ck_assert(one_ring(r1, r2));
	ck_assert(hr_ring_find(r1, "a") != NULL);
	hr_ring_release(r1);
	hr_ring_release(r2);
	uint64_t rev = (uint64_t)put_node(PREFIX, "b", "127.0.0.2:1");
	ck_assert_int_eq(wait_revision(n1, rev, 5000), 0);
	ck_assert_int_eq(wait_revision(n2, rev, 5000), 0);
	ck_assert_int_eq(wait_etcd_watchers(1, 5000), 1);
	hr_client_close(n2);
	hr_client_close(n1);
	hr_share_free(share);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("share");
	TCase *tc = tcase_create("etcd");

	tcase_add_checked_fixture(tc, up1, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, equal_settings_follow_one_watcher);
	tcase_add_test(tc, late_joiner_gets_the_ring_at_once);
	tcase_add_test(tc, different_settings_get_a_watcher_each);
	tcase_add_test(tc, counts_and_hot_keys_stay_each_clients);
	tcase_add_test(tc, lookups_after_a_sibling_closed);
	tcase_add_test(tc, callbacks_call_their_client);
	tcase_add_test(tc, closing_the_first_client_keeps_the_watcher);
	tcase_add_test(tc, share_freed_before_its_clients);
	tcase_add_test(tc, clients_opened_and_closed_from_threads);
	tcase_add_test(tc, nonblocking_clients_sync_when_etcd_comes);
	suite_add_tcase(s, tc);
	tc = tcase_create("offline");
	tcase_add_checked_fixture(tc, up_offline, down_offline);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, unreachable_etcd);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
