/* SPDX-License-Identifier: MIT */
/*
 * test_host.c - an agent's directory (hr_host) and the clients attached
 * to it (hr_client_config.agent_dir), without etcd: the test publishes
 * rings it builds.  A reader's lookups answer from the last published
 * ring and move to the next at their next lookup, in the process and in
 * 16 children forked after attaching; generations count on across an
 * agent's restart; old snapshots go; a second agent is refused, naming
 * the first's pid; a refused snapshot keeps the reader on its ring; and
 * the bad directories and settings each get their error.
 */
#define _GNU_SOURCE
#include "hashring.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/hrt-host-XXXXXX");
	ck_assert(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			ck_assert(unlinkat(dirfd(d), e->d_name, 0) == 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Ring `gen` of hrt_ring_generation(): every answer names its ring. */
static hr_ring *ring_gen(unsigned gen)
{
	return hrt_ring_generation("g", gen, 20);
}

static hr_host *agent(void)
{
	hr_host *h = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr_host_open(dir, NULL, &h, &err) == HR_OK, "%s", err.message);
	return h;
}

static hr_client *reader(int nonblocking)
{
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	cfg.open_nonblocking = nonblocking;
	cfg.open_timeout_ms = 2000;
	ck_assert_msg(hr_client_open(NULL, &cfg, &c, &err) == HR_OK, "%s", err.message);
	return c;
}

/* The client answers every key as `ring` does. */
static bool answers_as(hr_client *c, const hr_ring *ring)
{
	for (int k = 0; k < 500; k++) {
		char key[16];
		int len = snprintf(key, sizeof key, "key-%d", k);
		hr_owner o;
		hr_lookup l;

		if (hr_client_lookup(c, key, (size_t)len, &o, NULL) ||
		    hr_ring_lookup(ring, key, (size_t)len, &l, NULL) ||
		    o.revision != hr_ring_revision(ring) || strcmp(o.node, l.node->id) ||
		    strcmp(o.read_node, l.read_node->id) || strcmp(o.addr, l.node->addr))
			return false;
	}
	return true;
}

static int count_snapshots(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strncmp(e->d_name, "ring-", 5) == 0;
	if (d)
		closedir(d);
	return n;
}

START_TEST(test_follows)
{
	hr_ring *a = ring_gen(1), *b = ring_gen(2), *held;
	hr_client_status st;
	hr_host *h;
	hr_client *c;
	struct stat sb;
	char path[128];

	make_dir();
	h = agent();
	ck_assert_int_eq(hr_host_publish(h, a, NULL), 1);
	hr_host_beat(h, 0);
	c = reader(0);
	ck_assert(answers_as(c, a));
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert(st.revision == hr_ring_revision(a) && st.rings_published == 1);
	ck_assert(strncmp(st.endpoint, "agent:", 6) == 0 && st.unconfirmed_ms < 1000);
	held = hr_client_ring(c);
	ck_assert(hr_ring_digest(held) == hr_ring_digest(a));
	/* The next lookup after a publish answers from the new ring. */
	ck_assert_int_eq(hr_host_publish(h, b, NULL), 2);
	ck_assert(answers_as(c, b));
	/* A ring held before stays valid. */
	ck_assert(hr_ring_node_count(held) == hr_ring_node_count(a));
	hr_ring_release(held);
	ck_assert_int_eq(hr_client_wait_synced(c, 0, NULL), 0);
	/* The directory: set-group-ID 0750, files 0640. */
	ck_assert(stat(dir, &sb) == 0 && (sb.st_mode & 07777) == 02750);
	snprintf(path, sizeof path, "%s/ring-%020d.snap", dir, 2);
	ck_assert(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640);
	snprintf(path, sizeof path, "%s/control", dir);
	ck_assert(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640);
	hr_client_close(c);
	hr_host_close(h);
	hr_ring_release(a);
	hr_ring_release(b);
	remove_dir();
}
END_TEST

START_TEST(test_fork)
{
	/* 16 children forked after attaching, each checked before and after
	 * a ring change (a pre-forking server's workers). */
	enum { CHILDREN = 16 };
	hr_ring *a = ring_gen(3), *b = ring_gen(4);
	int go[2], done[2];
	pid_t pids[CHILDREN];
	hr_host *h;
	hr_client *c;

	make_dir();
	h = agent();
	ck_assert(hr_host_publish(h, a, NULL) > 0);
	c = reader(0);
	ck_assert(answers_as(c, a));
	ck_assert(pipe(go) == 0 && pipe(done) == 0);
	for (int i = 0; i < CHILDREN; i++) {
		pids[i] = fork();
		ck_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			char x;
			int ok = answers_as(c, a);

			ck_assert(write(done[1], "x", 1) == 1);
			ok = ok && read(go[0], &x, 1) == 1 && answers_as(c, b);
			hr_client_close(c);
			_exit(ok ? 0 : 1);
		}
	}
	for (int i = 0; i < CHILDREN; i++) {
		char x;

		ck_assert(read(done[0], &x, 1) == 1);
	}
	ck_assert(hr_host_publish(h, b, NULL) > 0);
	for (int i = 0; i < CHILDREN; i++)
		ck_assert(write(go[1], "x", 1) == 1);
	for (int i = 0; i < CHILDREN; i++) {
		int status;

		ck_assert(waitpid(pids[i], &status, 0) == pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d", i);
	}
	ck_assert(answers_as(c, b));
	hr_client_close(c);
	hr_host_close(h);
	hr_ring_release(a);
	hr_ring_release(b);
	remove_dir();
}
END_TEST

/* A reader thread: lookups until told to stop, each answer of one ring
 * (hrt_ring_generation's node names carry their ring's revision). */
struct looker {
	hr_client *c;
	int stop;		/* atomic */
	uint64_t lookups, bad, newest;
};

static void *look(void *p)
{
	struct looker *l = p;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		char key[16], want[32];
		int len = snprintf(key, sizeof key, "k%" PRIu64, l->lookups++ % 1000);
		hr_owner o;

		if (hr_client_lookup(l->c, key, (size_t)len, &o, NULL)) {
			l->bad++;
			continue;
		}
		snprintf(want, sizeof want, "g%" PRIu64 "-", o.revision);
		l->bad += strncmp(o.node, want, strlen(want)) != 0;
		l->newest = o.revision > l->newest ? o.revision : l->newest;
	}
	return NULL;
}

START_TEST(test_threads)
{
	/* Lookups on four threads while the agent publishes 60 rings: every
	 * answer whole, of one ring; each thread ends on the last ring. */
	enum { THREADS = 4, RINGS = 60 };
	struct looker l[THREADS];
	pthread_t t[THREADS];
	hr_ring *r = ring_gen(100);
	hr_host *h;
	hr_client *c;

	make_dir();
	h = agent();
	ck_assert(hr_host_publish(h, r, NULL) > 0);
	hr_ring_release(r);
	c = reader(0);
	for (int i = 0; i < THREADS; i++) {
		l[i] = (struct looker){ .c = c };
		ck_assert(pthread_create(&t[i], NULL, look, &l[i]) == 0);
	}
	for (unsigned g = 101; g <= 100 + RINGS; g++) {
		r = ring_gen(g);
		ck_assert(hr_host_publish(h, r, NULL) > 0);
		hr_ring_release(r);
		nanosleep(&(struct timespec){ 0, 2 * 1000 * 1000 }, NULL);
	}
	nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
	for (int i = 0; i < THREADS; i++) {
		__atomic_store_n(&l[i].stop, 1, __ATOMIC_RELEASE);
		ck_assert(pthread_join(t[i], NULL) == 0);
		ck_assert_msg(l[i].bad == 0, "thread %d: %" PRIu64 " bad of %" PRIu64, i,
			      l[i].bad, l[i].lookups);
		ck_assert_int_eq(l[i].newest, 100 + RINGS);
	}
	hr_client_close(c);
	hr_host_close(h);
	remove_dir();
}
END_TEST

START_TEST(test_agents)
{
	hr_ring *r[6];
	hr_host *h, *second = NULL;
	hr_client *c;
	hr_error err = { 0 };
	char pid[32];

	for (unsigned i = 0; i < 6; i++)
		r[i] = ring_gen(10 + i);
	make_dir();
	h = agent();
	/* A second agent is refused, naming the first one's pid. */
	ck_assert_int_eq(hr_host_open(dir, NULL, &second, &err), HR_EEXIST);
	snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
	ck_assert_msg(strstr(err.message, pid) != NULL, "%s", err.message);
	ck_assert(second == NULL);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(hr_host_publish(h, r[i], NULL), i + 1);
	/* Old snapshots go. */
	ck_assert_int_eq(count_snapshots(), HR_HOST_KEEP);
	c = reader(0);
	ck_assert(answers_as(c, r[4]));
	/* An agent that comes back counts on; the reader follows it. */
	hr_host_close(h);
	h = agent();
	ck_assert_int_eq(hr_host_generation(h), 5);
	ck_assert_int_eq(hr_host_publish(h, r[5], NULL), 6);
	ck_assert(answers_as(c, r[5]));
	hr_client_close(c);
	hr_host_close(h);
	for (int i = 0; i < 6; i++)
		hr_ring_release(r[i]);
	remove_dir();
}
END_TEST

START_TEST(test_refused_snapshot)
{
	/* A snapshot that fails the reader's checks: the reader keeps its
	 * ring, and takes the next good one. */
	hr_ring *a = ring_gen(20), *b = ring_gen(21), *d = ring_gen(22);
	hr_host *h;
	hr_client *c;
	char path[128];
	int fd;

	make_dir();
	h = agent();
	ck_assert(hr_host_publish(h, a, NULL) == 1);
	c = reader(0);
	ck_assert(answers_as(c, a));
	ck_assert(hr_host_publish(h, b, NULL) == 2);
	/* Damaged after it was published (only its owner could). */
	snprintf(path, sizeof path, "%s/ring-%020d.snap", dir, 2);
	fd = open(path, O_WRONLY);
	ck_assert(fd >= 0 && pwrite(fd, "garbage", 7, 1000) == 7);
	close(fd);
	ck_assert(answers_as(c, a));
	ck_assert(answers_as(c, a));
	ck_assert(hr_host_publish(h, d, NULL) == 3);
	ck_assert(answers_as(c, d));
	hr_client_close(c);
	hr_host_close(h);
	hr_ring_release(a);
	hr_ring_release(b);
	hr_ring_release(d);
	remove_dir();
}
END_TEST

/* The log lines of a reader, kept. */
static char logged[8192];

static void keep_log(void *ud, hr_log_level level, const char *line)
{
	(void)ud;
	(void)level;
	strncat(logged, line, sizeof logged - strlen(logged) - 2);
	strcat(logged, "\n");
}

START_TEST(test_stale_notices)
{
	/* The agent's ring unconfirmed for 10 s and more: the reader's next
	 * lookup logs stale, with the age and the revision; current again:
	 * stale_recovered. */
	hr_ring *a = ring_gen(40);
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hr_host *h;
	hr_owner o;

	make_dir();
	h = agent();
	ck_assert(hr_host_publish(h, a, NULL) == 1);
	hr_host_beat(h, 0);
	hr_etcd_config_init(&etcd);
	etcd.prefix = "/unused/";
	etcd.log = keep_log;
	etcd.log_level = HR_LOG_INFO;
	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	ck_assert_msg(hr_client_open(&etcd, &cfg, &c, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert(strstr(logged, "event=stale") == NULL);
	hr_host_beat(h, 12000);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert_msg(strstr(logged, "event=stale unconfirmed_ms=12") != NULL &&
		      strstr(logged, "revision=40") != NULL, "%s", logged);
	/* Once per notice, not per lookup. */
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert(strstr(strstr(logged, "event=stale ") + 1, "event=stale ") == NULL);
	hr_host_beat(h, 0);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert_msg(strstr(logged, "event=stale_recovered revision=40") != NULL, "%s", logged);
	hr_client_close(c);
	hr_host_close(h);
	hr_ring_release(a);
	remove_dir();
}
END_TEST

START_TEST(test_waits)
{
	hr_ring *a = ring_gen(30);
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hr_host *h;
	hr_owner o;

	make_dir();
	h = agent();
	/* Nothing published: a blocking open times out. */
	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	cfg.open_timeout_ms = 100;
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_ETIMEDOUT);
	ck_assert(strstr(err.message, "published none") != NULL && c == NULL);
	/* Nonblocking: an empty ring, then the first one published. */
	c = reader(1);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), HR_EEMPTY);
	ck_assert_int_eq(hr_client_wait_synced(c, 0, &err), HR_ETIMEDOUT);
	ck_assert(hr_host_publish(h, a, NULL) == 1);
	ck_assert_int_eq(hr_client_wait_synced(c, 1000, &err), 0);
	ck_assert(answers_as(c, a));
	hr_client_close(c);
	hr_host_close(h);
	hr_ring_release(a);
	remove_dir();
}
END_TEST

START_TEST(test_bad_input)
{
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_host *h = NULL;
	hr_host_config hc;
	hr_error err = { 0 };
	hr_share *share = NULL;
	char link[96];

	make_dir();
	/* No agent ever ran here; no such directory. */
	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_ENOTFOUND);
	ck_assert(strstr(err.message, "no agent") != NULL);
	cfg.agent_dir = "/nonexistent/hashring";
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_ENOTFOUND);
	/* Settings that need a thread. */
	cfg.agent_dir = dir;
	cfg.ack_client_id = "me";
	cfg.ack_prefix = "/acks/";
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EINVAL);
	ck_assert(strstr(err.message, "agent_dir") != NULL);
	hr_client_config_init(&cfg);
	cfg.agent_dir = "";
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EINVAL);
	ck_assert(hr_share_new(&share, &err) == 0);
	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	cfg.share = share;
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EINVAL);
	hr_share_free(share);
	ck_assert(c == NULL);
	/* Directories an agent refuses. */
	snprintf(link, sizeof link, "%s-link", dir);
	ck_assert(symlink(dir, link) == 0);
	ck_assert_int_eq(hr_host_open(link, NULL, &h, &err), HR_EPERM);
	ck_assert(strstr(err.message, "symlink") != NULL);
	cfg.agent_dir = link;
	cfg.share = NULL;
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EIO);
	unlink(link);
	ck_assert_int_eq(hr_host_open(NULL, NULL, &h, &err), HR_EINVAL);
	ck_assert_int_eq(hr_host_open("/nonexistent/a/b", NULL, &h, &err), HR_EIO);
	hr_host_config_init(&hc);
	hc.group = "no-such-group-here";
	ck_assert_int_eq(hr_host_open(dir, &hc, &h, &err), HR_EINVAL);
	ck_assert(strstr(err.message, "no-such-group-here") != NULL && h == NULL);
	ck_assert_int_eq(hr_host_publish(NULL, NULL, &err), HR_EINVAL);
	hr_host_beat(NULL, 0);
	hr_host_close(NULL);
	remove_dir();
}
END_TEST

static Suite *host_suite(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("host");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_follows);
	tcase_add_test(tc, test_fork);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_agents);
	tcase_add_test(tc, test_refused_snapshot);
	tcase_add_test(tc, test_stale_notices);
	tcase_add_test(tc, test_waits);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(host_suite());
}
