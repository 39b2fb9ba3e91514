/* SPDX-License-Identifier: MIT */
/*
 * test_agent.c - `hashring agent` against a real etcd, and the readers of
 * its directory: clients opened with agent_dir and `hashring lookup
 * --agent`, `hashring watch --agent`, which answer as etcd's clients do
 * and follow each change; a second agent refused with the first one's
 * pid; an agent killed (readers keep the ring and report it unconfirmed)
 * and started again (readers follow its new generations).
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_check.h"
#include "hrt_cli.h"
#include "hrt_ring.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/agent/nodes/"

static hrt_etcd_cluster *etcd;
static char dir[96];

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	snprintf(dir, sizeof dir, "%s/agent", hrt_etcd_dir(etcd));
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
}

static int64_t put(const char *id, const char *value)
{
	char key[256];
	int64_t rev;

	snprintf(key, sizeof key, PREFIX "%s", id);
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), key, value);
	ck_assert_int_gt(rev, 0);
	return rev;
}

/* An agent on `dir`, its stdout on a pipe read through *lines. */
static hrt_child agent(FILE **lines)
{
	int p[2];
	hrt_child ch;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ch = hrt_cli_spawn_to((const char *const[]){ "agent", "--dir", dir, "--endpoints",
				hrt_etcd_endpoints(etcd), "--prefix", PREFIX,
				"--log-level", "warn", NULL }, NULL, p[1]);
	*lines = fdopen(p[0], "r");
	ck_assert(*lines != NULL);
	return ch;
}

/* The agent's next line: its generation and the revision published. */
static void next_line(FILE *lines, int64_t *gen, int64_t *rev)
{
	char line[256];

	ck_assert_msg(fgets(line, sizeof line, lines) != NULL, "the agent said nothing");
	ck_assert_msg(sscanf(line, "generation=%" SCNd64 " revision=%" SCNd64, gen, rev) == 2,
		      "%s", line);
}

static hr_client *reader(void)
{
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_client_config_init(&cfg);
	cfg.agent_dir = dir;
	ck_assert_msg(hr_client_open(NULL, &cfg, &c, &err) == 0, "%s", err.message);
	return c;
}

/* Lookups until the reader's ring is at `rev` (the next lookup after a
 * publish gets there; the agent publishes within milliseconds). */
static void wait_revision(hr_client *c, int64_t rev)
{
	int64_t t0 = hrt_now_ms();
	hr_owner o = { 0 };

	while (hrt_now_ms() - t0 < 10000) {
		if (hr_client_lookup(c, "k", 1, &o, NULL) == 0 && (int64_t)o.revision >= rev)
			return;
		hrt_sleep_ms(2);
	}
	ck_abort_msg("the reader is at revision %" PRIu64 ", not %" PRId64, o.revision, rev);
}

static void expect_lookup_same(void)
{
	hrt_cli_run a, b;
	const char *eps = hrt_etcd_endpoints(etcd);

	hrt_cli_run_cmd(&a, NULL, (const char *const[]){ "lookup", "--endpoints", eps, "--prefix",
				  PREFIX, "--replicas", "2", "user:1", "user:2", "user:3", NULL });
	hrt_cli_run_cmd(&b, NULL, (const char *const[]){ "lookup", "--agent", dir, "--replicas",
				  "2", "user:1", "user:2", "user:3", NULL });
	ck_assert_msg(a.status == 0 && b.status == 0, "%s / %s", a.err, b.err);
	ck_assert_str_eq(a.out, b.out);
}

START_TEST(agent_and_readers)
{
	FILE *lines;
	hrt_child ag = agent(&lines);
	int64_t gen, rev, r2;
	hr_client *c;
	hrt_cli_run second, watch;
	hr_client_status st;
	char pid[32];

	put("a", "127.0.0.1:7001");
	put("b", "127.0.0.1:7002");
	do
		next_line(lines, &gen, &rev);
	while (rev < 3);
	expect_lookup_same();
	c = reader();
	wait_revision(c, rev);

	/* A second agent on the directory is refused, naming the first. */
	hrt_cli_run_cmd(&second, NULL, (const char *const[]){ "agent", "--dir", dir,
				"--endpoints", hrt_etcd_endpoints(etcd), "--prefix", PREFIX, NULL });
	snprintf(pid, sizeof pid, "pid %ld", (long)ag.pid);
	ck_assert_int_eq(second.status, 1);
	ck_assert_msg(strstr(second.err, pid) != NULL, "%s", second.err);

	/* A change reaches the readers through the agent. */
	r2 = put("c", "127.0.0.1:7003");
	do
		next_line(lines, &gen, &rev);
	while (rev < r2);
	wait_revision(c, r2);
	expect_lookup_same();
	hrt_cli_run_cmd(&watch, NULL, (const char *const[]){ "watch", "--agent", dir, "--count",
				"1", NULL });
	ck_assert_int_eq(watch.status, 0);
	ck_assert_msg(strstr(watch.out, "nodes=3") != NULL, "%s", watch.out);

	/* The agent killed: the ring stays, unconfirmed once the beat stops. */
	kill(ag.pid, SIGKILL);
	hrt_cli_wait(&ag, &second);
	fclose(lines);
	hrt_sleep_ms(3500);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert_msg(st.unconfirmed_ms >= 3000 && (int64_t)st.revision == r2,
		      "unconfirmed %" PRId64 " ms, revision %" PRIu64, st.unconfirmed_ms,
		      st.revision);
	/* Another agent: its generations count on, the reader follows. */
	ag = agent(&lines);
	{
		int64_t g2;

		next_line(lines, &g2, &rev);
		ck_assert_int_gt(g2, gen);
	}
	r2 = put("d", "127.0.0.1:7004");
	do
		next_line(lines, &gen, &rev);
	while (rev < r2);
	wait_revision(c, r2);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert_int_lt(st.unconfirmed_ms, 3000);
	hr_client_close(c);
	/* SIGTERM: a clean end. */
	kill(ag.pid, SIGTERM);
	hrt_cli_wait(&ag, &second);
	ck_assert_msg(second.status == 0, "exit %d: %s", second.status, second.err);
	fclose(lines);
}
END_TEST

static size_t gather(char *p, size_t size, size_t n, void *ud)
{
	char **text = ud;
	size_t have = *text ? strlen(*text) : 0, add = size * n;
	char *t = realloc(*text, have + add + 1);

	if (!t)
		return 0;
	memcpy(t + have, p, add);
	t[have + add] = '\0';
	*text = t;
	return add;
}

/* etcd's own count of its open watch streams (its /metrics). */
static long watch_streams(void)
{
	char url[128], *text = NULL, *at;
	CURL *h = curl_easy_init();
	long n = -1;

	snprintf(url, sizeof url, "%s/metrics", hrt_etcd_client_url(etcd, 0));
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &text);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_cleanup(h);
	at = text ? strstr(text, "\netcd_debugging_mvcc_watch_stream_total ") : NULL;
	if (at)
		n = strtol(at + strlen("\netcd_debugging_mvcc_watch_stream_total "), NULL, 10);
	free(text);
	return n;
}

START_TEST(one_watch_stream_per_host)
{
	/* 200 reader processes attached (HRT_AGENT_READERS: another
	 * count, for docs/performance.md's 1,000): etcd serves one watch
	 * stream, the agent's. */
	const char *env = getenv("HRT_AGENT_READERS");
	int READERS = env ? atoi(env) : 200;
	FILE *lines;
	hrt_child ag = agent(&lines);
	pid_t *pids = calloc((size_t)(READERS > 0 ? READERS : 1), sizeof *pids);
	int ready[2];
	int64_t gen, rev;
	hrt_cli_run r;

	put("a", "127.0.0.1:7001");
	next_line(lines, &gen, &rev);
	ck_assert_int_eq(pipe(ready), 0);
	for (int i = 0; i < READERS; i++) {
		pids[i] = fork();
		ck_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			hr_client *c = reader();
			hr_owner o;
			int ok = hr_client_lookup(c, "k", 1, &o, NULL) == 0 && !strcmp(o.node, "a");

			if (write(ready[1], ok ? "y" : "n", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
	}
	for (int i = 0; i < READERS; i++) {
		char x;

		ck_assert(read(ready[0], &x, 1) == 1);
		ck_assert_msg(x == 'y', "reader %d answered wrongly", i);
	}
	ck_assert_int_eq(watch_streams(), 1);
	printf("%d reader processes attached: etcd counts %ld watch stream(s)\n", READERS,
	       watch_streams());
	for (int i = 0; i < READERS; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	free(pids);
	kill(ag.pid, SIGTERM);
	hrt_cli_wait(&ag, &r);
	ck_assert_int_eq(r.status, 0);
	fclose(lines);
}
END_TEST

START_TEST(agent_refuses_bad_directories)
{
	hrt_cli_run r;
	char link[128];

	snprintf(link, sizeof link, "%s/link", hrt_etcd_dir(etcd));
	ck_assert(symlink("/tmp", link) == 0);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "agent", "--dir", link, "--endpoints",
			    hrt_etcd_endpoints(etcd), "--prefix", PREFIX, NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "symlink") != NULL, "%s", r.err);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "agent", "--dir", dir, "--group",
			    "no-such-group-here", NULL });
	ck_assert_int_ne(r.status, 0);
	ck_assert_msg(strstr(r.err, "no-such-group-here") != NULL, "%s", r.err);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "lookup", "--agent", "/nonexistent",
			    "k", NULL });
	ck_assert_int_ne(r.status, 0);
	ck_assert_msg(strstr(r.err, "no agent") != NULL, "%s", r.err);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "lookup", "--agent", dir, "--members",
			    "x.json", "k", NULL });
	ck_assert_int_eq(r.status, 2);
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("agent");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, agent_and_readers);
	tcase_add_test(tc, one_watch_stream_per_host);
	tcase_add_test(tc, agent_refuses_bad_directories);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(agent_suite());
}
