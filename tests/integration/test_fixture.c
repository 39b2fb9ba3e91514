/* SPDX-License-Identifier: MIT */
/*
 * test_fixture.c - proves the etcd test fixture does what it promises, so
 * the integration suites built on it can trust it: members start healthy
 * on loopback, keep their data across a crash, freeze and thaw, come back
 * empty after a wipe, survive the loss of one member in three, and never
 * outlive the test.
 */
#define _GNU_SOURCE

#include "hrt_check.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etcd_fixture.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A process is gone once kill() cannot find it or only its zombie is
 * left (an orphan's zombie may linger until some reaper collects it). */
static bool process_alive(pid_t pid)
{
	char st;

	if (pid <= 0 || kill(pid, 0) != 0)
		return false;
	st = hrt_proc_state(pid);
	return st != '?' && st != 'Z';
}

static bool path_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* The number after "name": in etcdctl's or the gateway's JSON (etcdctl
 * prints int64s bare, the gateway as strings); -1 when absent. */
static long long json_int(const char *json, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(json, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	if (*p == '"')
		p++;
	return strtoll(p, NULL, 10);
}

/* The unsigned form, for ids that use all 64 bits. */
static unsigned long long json_uint(const char *json, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", name);
	p = strstr(json, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	if (*p == '"')
		p++;
	return strtoull(p, NULL, 10);
}

/* The store's current revision, as seen through member i. */
static long long revision_of(const hrt_etcd_cluster *c, int i)
{
	char out[512];

	ck_assert_int_eq(hrt_etcdctl_member(c, i, out, sizeof(out),
					    "get --write-out=json no-such-key"),
			 0);
	return json_int(out, "revision");
}

static unsigned long long cluster_id_of(const hrt_etcd_cluster *c)
{
	char out[512];

	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --write-out=json no-such-key"), 0);
	return json_uint(out, "cluster_id");
}

/* A loopback port bound but not listening, so connecting is refused
 * for as long as `*fd` stays open. */
static int refusing_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(*fd, 0);
	ck_assert_int_eq(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(*fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

/* ------------------------------------------------------------------ */

START_TEST(test_bad_input)
{
	const hrt_etcd_opts half_tls = { .cert_file = "/nonexistent.crt" };
	const char *too_many[HRT_ETCD_MAX_EXTRA_ARGS + 2];
	hrt_etcd_opts many = { 0 };
	char url[64], out[64] = "untouched";
	long status = 123;
	int fd;

	ck_assert_ptr_null(hrt_etcd_start(0, NULL));
	ck_assert_ptr_null(hrt_etcd_start(-1, NULL));
	ck_assert_ptr_null(hrt_etcd_start(HRT_ETCD_MAX_MEMBERS + 1, NULL));
	ck_assert_ptr_null(hrt_etcd_start(1, &half_tls));
	for (int k = 0; k < HRT_ETCD_MAX_EXTRA_ARGS + 1; k++)
		too_many[k] = "--log-level=info";
	too_many[HRT_ETCD_MAX_EXTRA_ARGS + 1] = NULL;
	many.extra_args = too_many;
	ck_assert_ptr_null(hrt_etcd_start(1, &many));

	/* Every entry point takes NULL without crashing. */
	hrt_etcd_destroy(NULL);
	ck_assert_int_eq(hrt_etcd_size(NULL), 0);
	ck_assert_ptr_null(hrt_etcd_client_url(NULL, 0));
	ck_assert_ptr_null(hrt_etcd_endpoints(NULL));
	ck_assert_ptr_null(hrt_etcd_dir(NULL));
	ck_assert_ptr_null(hrt_etcd_data_dir(NULL, 0));
	ck_assert_ptr_null(hrt_etcd_log_path(NULL, 0));
	ck_assert_int_eq(hrt_etcd_pid(NULL, 0), 0);
	ck_assert_int_eq(hrt_etcd_client_port(NULL, 0), 0);
	ck_assert_int_eq(hrt_etcd_stop_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_kill_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_restart_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_spawn_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_freeze_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_thaw_member(NULL, 0), -1);
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(NULL), -1);
	ck_assert(!hrt_etcd_member_healthy(NULL, 0));
	ck_assert_int_eq(hrt_etcd_wait_healthy(NULL, 0, 10), -1);
	ck_assert_int_eq(hrt_etcd_wait_cluster_healthy(NULL, 10), -1);
	ck_assert_int_eq(hrt_etcdctl(NULL, out, sizeof(out), "get a"), -1);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(hrt_etcdctl_stdin(NULL, "", NULL, 0, "txn"), -1);
	ck_assert_int_eq(hrt_etcdctl_member(NULL, 0, NULL, 0, "get a"), -1);
	ck_assert_int_eq(hrt_remove_tree(NULL), -1);
	ck_assert_int_eq(hrt_remove_tree("/nonexistent/hrt-nothing"), 0);

	/* HTTP to nothing fails quickly and says so. */
	ck_assert_int_eq(hrt_http_post(NULL, "{}", out, sizeof(out), &status),
			 -1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v3/kv/range",
		 refusing_port(&fd));
	ck_assert_int_eq(hrt_http_post(url, "{}", out, sizeof(out), &status),
			 -1);
	ck_assert_int_eq(status, 0);
	close(fd);
}
END_TEST

START_TEST(test_single_member)
{
	int64_t t0 = now_ms();
	hrt_etcd_cluster *c = hrt_etcd_start(1, NULL);
	char out[4096], url[128], dir[4096];
	long status = 0;
	pid_t pid;

	ck_assert_ptr_nonnull(c);
	fprintf(stderr, "fixture: 1-member start took %lld ms\n",
		(long long)(now_ms() - t0));

	ck_assert_int_eq(hrt_etcd_size(c), 1);
	pid = hrt_etcd_pid(c, 0);
	ck_assert(process_alive(pid));
	ck_assert(hrt_etcd_member_healthy(c, 0));
	ck_assert_str_eq(hrt_etcd_endpoints(c), hrt_etcd_client_url(c, 0));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d",
		 hrt_etcd_client_port(c, 0));
	ck_assert_str_eq(hrt_etcd_client_url(c, 0), url);
	ck_assert_ptr_null(hrt_etcd_client_url(c, 1));
	ck_assert_ptr_null(hrt_etcd_client_url(c, -1));
	ck_assert_int_eq(hrt_etcd_pid(c, 1), 0);
	ck_assert(path_exists(hrt_etcd_data_dir(c, 0)));
	ck_assert(path_exists(hrt_etcd_log_path(c, 0)));
	ck_assert(strncmp(hrt_etcd_data_dir(c, 0), hrt_etcd_dir(c),
			  strlen(hrt_etcd_dir(c))) == 0);

	/* put/get, with words quoted the way a shell would take them. */
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "put /ring/nodes/a '%s'",
				     "{\"addr\": \"127.0.0.1:11211\", \"weight\": 100}"),
			 0);
	ck_assert_str_eq(out, "OK\n");
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --print-value-only /ring/nodes/a"), 0);
	ck_assert_str_eq(out, "{\"addr\": \"127.0.0.1:11211\", \"weight\": 100}\n");
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "put \"/k 2\" \"say \\\"hi\\\"\""), 0);
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out), "get /k\\ 2"), 0);
	ck_assert_str_eq(out, "/k 2\nsay \"hi\"\n");
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out), "put /empty ''"), 0);
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --print-value-only /empty"), 0);
	ck_assert_str_eq(out, "\n");

	/* Truncation keeps the buffer terminated. */
	ck_assert_int_eq(hrt_etcdctl(c, out, 4, "get /ring/nodes/a"), 0);
	ck_assert_str_eq(out, "/ri");

	/* Bad input: an unterminated quote never runs; a bad flag fails. */
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out), "put a 'oops"), -1);
	ck_assert_int_gt(hrt_etcdctl(c, NULL, 0, "get --no-such-flag a"), 0);

	/* A transaction through stdin: both puts at one revision. */
	ck_assert_int_eq(hrt_etcdctl_stdin(c, "\nput /t/a 1\nput /t/b \"x y\"\n\n\n",
					   out, sizeof(out), "txn"), 0);
	ck_assert_str_eq(out, "SUCCESS\n\nOK\n\nOK\n");
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --prefix /t/ --write-out=fields"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"Value\" : \"x y\""));
	ck_assert_ptr_nonnull(strstr(out, "\"Count\" : 2"));
	ck_assert_int_gt(hrt_etcdctl_stdin(c, "garbage\n", NULL, 0, "txn"), 0);

	/* The raw gateway: "foo" -> "bar" in base64. */
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put foo bar"), 0);
	snprintf(url, sizeof(url), "%s/v3/kv/range", hrt_etcd_client_url(c, 0));
	ck_assert_int_eq(hrt_http_post(url, "{\"key\":\"Zm9v\"}", out,
				       sizeof(out), &status), 0);
	ck_assert_int_eq(status, 200);
	ck_assert_ptr_nonnull(strstr(out, "\"value\":\"YmFy\""));
	ck_assert_int_eq(hrt_http_post(url, "{\"key\":\"Zm9v\"}", NULL, 0,
				       NULL), 0);
	snprintf(url, sizeof(url), "%s/v3/no/such/path",
		 hrt_etcd_client_url(c, 0));
	ck_assert_int_eq(hrt_http_post(url, "{}", out, sizeof(out), &status),
			 0);
	ck_assert_int_eq(status, 404);

	/* destroy leaves neither a process nor a directory. */
	snprintf(dir, sizeof(dir), "%s", hrt_etcd_dir(c));
	hrt_etcd_destroy(c);
	ck_assert_int_eq(kill(pid, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert(!path_exists(dir));
}
END_TEST

START_TEST(test_kill_restart_keeps_data)
{
	hrt_etcd_cluster *c = hrt_etcd_start(1, NULL);
	char out[256], url[256], port_url[128];
	long long rev;
	int64_t t0;
	pid_t old;

	ck_assert_ptr_nonnull(c);
	snprintf(port_url, sizeof(port_url), "%s", hrt_etcd_client_url(c, 0));
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put /keep me"), 0);
	rev = revision_of(c, 0);
	ck_assert_int_ge(rev, 2);

	/* A crash: the process is gone and the port refuses at once. */
	old = hrt_etcd_pid(c, 0);
	ck_assert_int_eq(hrt_etcd_kill_member(c, 0), 0);
	ck_assert_int_eq(hrt_etcd_pid(c, 0), 0);
	ck_assert(!process_alive(old));
	ck_assert(!hrt_etcd_member_healthy(c, 0));
	snprintf(url, sizeof(url), "%s/v3/kv/range", port_url);
	ck_assert_int_eq(hrt_http_post(url, "{}", NULL, 0, NULL), -1);
	ck_assert_int_eq(hrt_etcd_kill_member(c, 0), -1);	/* not running */
	ck_assert_int_eq(hrt_etcd_freeze_member(c, 0), -1);

	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_restart_member(c, 0), 0);
	fprintf(stderr, "fixture: 1-member restart took %lld ms\n",
		(long long)(now_ms() - t0));
	ck_assert_int_ne(hrt_etcd_pid(c, 0), 0);
	ck_assert_int_ne(hrt_etcd_pid(c, 0), old);
	ck_assert_str_eq(hrt_etcd_client_url(c, 0), port_url);
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --print-value-only /keep"), 0);
	ck_assert_str_eq(out, "me\n");
	ck_assert_int_eq(revision_of(c, 0), rev);

	/* A graceful stop, then a restart of a running member. */
	old = hrt_etcd_pid(c, 0);
	ck_assert_int_eq(hrt_etcd_stop_member(c, 0), 0);
	ck_assert(!process_alive(old));
	ck_assert_int_eq(hrt_etcd_stop_member(c, 0), -1);
	ck_assert_int_eq(hrt_etcd_restart_member(c, 0), 0);
	old = hrt_etcd_pid(c, 0);
	ck_assert_int_eq(hrt_etcd_restart_member(c, 0), 0);
	ck_assert(!process_alive(old));
	ck_assert_int_eq(hrt_etcd_spawn_member(c, 0), -1);	/* running */
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --print-value-only /keep"), 0);
	ck_assert_str_eq(out, "me\n");
	hrt_etcd_destroy(c);
}
END_TEST

START_TEST(test_freeze_thaw)
{
	hrt_etcd_cluster *c = hrt_etcd_start(1, NULL);
	char out[256];
	int64_t t0;
	pid_t pid;

	ck_assert_ptr_nonnull(c);
	pid = hrt_etcd_pid(c, 0);
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put /f 1"), 0);

	ck_assert_int_eq(hrt_etcd_freeze_member(c, 0), 0);
	ck_assert_int_eq(hrt_proc_state(pid), 'T');
	ck_assert(process_alive(pid));
	t0 = now_ms();
	ck_assert(!hrt_etcd_member_healthy(c, 0));	/* hangs, then times out */
	ck_assert_int_ge(now_ms() - t0, 900);

	ck_assert_int_eq(hrt_etcd_thaw_member(c, 0), 0);
	ck_assert_int_ne(hrt_proc_state(pid), 'T');
	ck_assert_int_eq(hrt_etcd_wait_healthy(c, 0, 10000), 0);
	ck_assert_int_eq(hrt_etcd_pid(c, 0), pid);
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out),
				     "get --print-value-only /f"), 0);
	ck_assert_str_eq(out, "1\n");

	/* A frozen member still stops on request, without the 5 s grace. */
	ck_assert_int_eq(hrt_etcd_freeze_member(c, 0), 0);
	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_stop_member(c, 0), 0);
	ck_assert_int_lt(now_ms() - t0, 4000);
	ck_assert(!process_alive(pid));
	hrt_etcd_destroy(c);
}
END_TEST

START_TEST(test_wipe_gives_empty_store)
{
	hrt_etcd_cluster *c = hrt_etcd_start(1, NULL);
	unsigned long long old_id;
	char out[256], url[128];
	int64_t t0;

	ck_assert_ptr_nonnull(c);
	snprintf(url, sizeof(url), "%s", hrt_etcd_client_url(c, 0));
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put /w/%d v", k), 0);
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "lease grant 600"), 0);
	ck_assert_int_eq(revision_of(c, 0), 4);
	old_id = cluster_id_of(c);

	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(c), 0);
	fprintf(stderr, "fixture: 1-member wipe and restart took %lld ms\n",
		(long long)(now_ms() - t0));
	ck_assert_str_eq(hrt_etcd_client_url(c, 0), url);
	ck_assert_int_eq(revision_of(c, 0), 1);
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out), "get --prefix ''"), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(hrt_etcdctl(c, out, sizeof(out), "lease list"), 0);
	ck_assert_str_eq(out, "found 0 leases\n");
	ck_assert(cluster_id_of(c) != old_id);
	hrt_etcd_destroy(c);
}
END_TEST

START_TEST(test_options_reach_etcd)
{
	const char *extra[] = { "--quota-backend-bytes=104857600", NULL };
	const char *bad_extra[] = { "--no-such-etcd-flag", NULL };
	hrt_etcd_opts o = {
		.progress_notify_ms = 300,
		.snapshot_count = 50,
		.auto_compaction_retention = "1000",
		.auto_compaction_mode = "revision",
		.extra_args = extra,
	};
	char path[64], cmdline[8192];
	hrt_etcd_cluster *c;
	size_t n;
	FILE *f;
	int64_t t0;

	c = hrt_etcd_start(1, &o);
	ck_assert_ptr_nonnull(c);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)hrt_etcd_pid(c, 0));
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(cmdline, 1, sizeof(cmdline) - 1, f);
	fclose(f);
	for (size_t k = 0; k < n; k++)
		if (cmdline[k] == '\0')
			cmdline[k] = ' ';
	cmdline[n] = '\0';
	ck_assert_ptr_nonnull(strstr(cmdline,
		"--experimental-watch-progress-notify-interval=300ms"));
	ck_assert_ptr_nonnull(strstr(cmdline, "--snapshot-count=50 "));
	ck_assert_ptr_nonnull(strstr(cmdline, "--auto-compaction-retention=1000 "));
	ck_assert_ptr_nonnull(strstr(cmdline, "--auto-compaction-mode=revision "));
	ck_assert_ptr_nonnull(strstr(cmdline, "--quota-backend-bytes=104857600"));
	ck_assert_ptr_null(strstr(cmdline, "127.0.0.1:0"));
	ck_assert_ptr_null(strstr(cmdline, "localhost"));
	hrt_etcd_destroy(c);

	/* etcd refusing its arguments fails the start at once, no hang. */
	o.extra_args = bad_extra;
	t0 = now_ms();
	ck_assert_ptr_null(hrt_etcd_start(1, &o));
	ck_assert_int_lt(now_ms() - t0, 5000);
}
END_TEST

/* Member i's raft id and the leader it knows, from endpoint status. */
static bool is_leader(const hrt_etcd_cluster *c, int i)
{
	char out[1024];

	ck_assert_int_eq(hrt_etcdctl_member(c, i, out, sizeof(out),
					    "endpoint status --write-out=json"),
			 0);
	return json_uint(out, "member_id") == json_uint(out, "leader");
}

START_TEST(test_three_members_lose_one)
{
	int64_t t0 = now_ms();
	hrt_etcd_cluster *c = hrt_etcd_start(3, NULL);
	char out[256], dir[4096];
	const char *ep;
	pid_t pids[3];
	int leader = -1, commas = 0;

	ck_assert_ptr_nonnull(c);
	fprintf(stderr, "fixture: 3-member start took %lld ms\n",
		(long long)(now_ms() - t0));
	ck_assert_int_eq(hrt_etcd_size(c), 3);
	for (int i = 0; i < 3; i++) {
		pids[i] = hrt_etcd_pid(c, i);
		ck_assert(process_alive(pids[i]));
		ck_assert(hrt_etcd_member_healthy(c, i));
		ck_assert_ptr_nonnull(strstr(hrt_etcd_endpoints(c),
					     hrt_etcd_client_url(c, i)));
		for (int j = 0; j < i; j++) {
			ck_assert_int_ne(hrt_etcd_client_port(c, i),
					 hrt_etcd_client_port(c, j));
			ck_assert_str_ne(hrt_etcd_data_dir(c, i),
					 hrt_etcd_data_dir(c, j));
		}
		if (is_leader(c, i))
			leader = i;
	}
	for (ep = hrt_etcd_endpoints(c); *ep; ep++)
		commas += *ep == ',';
	ck_assert_int_eq(commas, 2);
	ck_assert_int_ge(leader, 0);

	/* One put is seen through every member. */
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put /c before"), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(hrt_etcdctl_member(c, i, out, sizeof(out),
				 "get --print-value-only /c"), 0);
		ck_assert_str_eq(out, "before\n");
	}

	/* Kill the leader: the other two elect a new one and serve. */
	ck_assert_int_eq(hrt_etcd_kill_member(c, leader), 0);
	ck_assert(!process_alive(pids[leader]));
	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_wait_cluster_healthy(c, 10000), 0);
	fprintf(stderr, "fixture: new leader after %lld ms\n",
		(long long)(now_ms() - t0));
	ck_assert_int_eq(hrt_etcdctl(c, NULL, 0, "put /c after"), 0);
	for (int i = 0; i < 3; i++) {
		if (i == leader)
			continue;
		ck_assert_int_eq(hrt_etcdctl_member(c, i, out, sizeof(out),
				 "get --print-value-only /c"), 0);
		ck_assert_str_eq(out, "after\n");
	}

	/* It comes back with its data and catches up. */
	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_restart_member(c, leader), 0);
	fprintf(stderr, "fixture: 3-member rejoin took %lld ms\n",
		(long long)(now_ms() - t0));
	ck_assert_int_eq(hrt_etcdctl_member(c, leader, out, sizeof(out),
					    "get --print-value-only /c"), 0);
	ck_assert_str_eq(out, "after\n");

	/* A wipe of three members gives three empty, healthy members. */
	t0 = now_ms();
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(c), 0);
	fprintf(stderr, "fixture: 3-member wipe and restart took %lld ms\n",
		(long long)(now_ms() - t0));
	for (int i = 0; i < 3; i++) {
		ck_assert(hrt_etcd_member_healthy(c, i));
		ck_assert_int_eq(revision_of(c, i), 1);
	}

	for (int i = 0; i < 3; i++)
		pids[i] = hrt_etcd_pid(c, i);
	snprintf(dir, sizeof(dir), "%s", hrt_etcd_dir(c));
	hrt_etcd_destroy(c);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(kill(pids[i], 0), -1);
		ck_assert_int_eq(errno, ESRCH);
	}
	ck_assert(!path_exists(dir));
}
END_TEST

/*
 * A test process that dies without calling destroy must not leave etcd
 * behind: a child starts a cluster, reports its PID and directory, and
 * exits; the death signal must then take etcd down.
 */
START_TEST(test_etcd_dies_with_its_parent)
{
	char dir[4096] = "";
	int fds[2], status;
	pid_t child, etcd = 0;
	int64_t deadline;
	FILE *f;

	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		hrt_etcd_cluster *c = hrt_etcd_start(1, NULL);

		close(fds[0]);
		f = fdopen(fds[1], "w");
		if (c && f) {
			fprintf(f, "%d %s\n", (int)hrt_etcd_pid(c, 0),
				hrt_etcd_dir(c));
			fflush(f);
		}
		_exit(c ? 0 : 1);	/* no destroy: a crashed test */
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%d %4095s", &etcd, dir), 2);
	fclose(f);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	deadline = now_ms() + 5000;
	while (process_alive(etcd) && now_ms() < deadline)
		usleep(10000);
	ck_assert(!process_alive(etcd));
	ck_assert_int_eq(hrt_remove_tree(dir), 0);
	ck_assert(!path_exists(dir));
}
END_TEST

static Suite *fixture_suite(void)
{
	Suite *s = suite_create("etcd_fixture");
	TCase *tc = tcase_create("fixture");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_single_member);
	tcase_add_test(tc, test_kill_restart_keeps_data);
	tcase_add_test(tc, test_freeze_thaw);
	tcase_add_test(tc, test_wipe_gives_empty_store);
	tcase_add_test(tc, test_options_reach_etcd);
	tcase_add_test(tc, test_three_members_lose_one);
	tcase_add_test(tc, test_etcd_dies_with_its_parent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(fixture_suite());
}
