/* SPDX-License-Identifier: MIT */
/*
 * test_cli_etcd.c - the `hashring` command against a real etcd: a reader
 * that goes away, write errors, what one-shot commands log, the metrics of
 * a client, retries while etcd is down, lease ids in hex, records with
 * allocated tokens put with etcdctl, a lookup in a prefix with no node.
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/cli/nodes/"

static hrt_etcd_cluster *etcd;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
}

static void put(const char *id, const char *value)
{
	char key[256];

	snprintf(key, sizeof key, PREFIX "%s", id);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key, value), 0);
}

/* Waits for `ch`, which must end by SIGPIPE without a word on stderr. */
static void assert_silent_sigpipe(hrt_child *ch)
{
	hrt_cli_run run;

	hrt_cli_wait(ch, &run);
	ck_assert_msg(run.signal == SIGPIPE, "exit %d, signal %d, stderr: %s", run.status,
		      run.signal, run.err);
	ck_assert_str_eq(run.err, "");
}

/* `watch | head -1`, then a change: the watch ends by SIGPIPE, silently,
 * once the line of that change finds no reader. */
START_TEST(watch_reader_goes_away)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_child ch;
	int p[2];
	char c;

	put("a", "127.0.0.1:1");
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ch = hrt_cli_spawn_to((const char *const[]){ "watch", "--endpoints", eps, "--prefix",
					PREFIX, "--log-level", "warn", NULL }, NULL, p[1]);
	while (read(p[0], &c, 1) == 1 && c != '\n')
		;
	close(p[0]);
	put("b", "127.0.0.2:1");
	assert_silent_sigpipe(&ch);

	/* A one-shot command whose reader is gone before it writes. */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	close(p[0]);
	ch = hrt_cli_spawn_to((const char *const[]){ "nodes", "--endpoints", eps, "--prefix",
					PREFIX, NULL }, NULL, p[1]);
	assert_silent_sigpipe(&ch);
}
END_TEST

/* A write error other than a closed pipe: its own errno, exit 1. */
START_TEST(watch_write_error)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_cli_run run;
	hrt_child ch;

	put("a", "127.0.0.1:1");
	ch = hrt_cli_spawn_to((const char *const[]){ "watch", "--endpoints", eps, "--prefix",
					PREFIX, "--log-level", "error", NULL }, NULL,
			      open("/dev/full", O_WRONLY));
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 1, "exit %d, signal %d", run.status, run.signal);
	ck_assert_str_eq(run.err, "hashring: watch: cannot write the output: No space left on device\n");
}
END_TEST

/* One-shot commands log at warn: a skipped record says why. */
START_TEST(one_shot_commands_show_bad_records)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_cli_run run;

	put("good", "{\"addr\":\"127.0.0.1:1\",\"zone\":\"z\xc3\xbcrich\"}");
	put("bad", "{\"addr\":");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--prefix", PREFIX, "--json", NULL });
	ck_assert_msg(run.status == 0, "nodes: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "\"zone\":\"z\xc3\xbcrich\""));
	ck_assert_ptr_nonnull(strstr(run.err, "event=bad_record key=" PREFIX "bad"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps,
		"--prefix", PREFIX, "k", NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_ptr_nonnull(strstr(run.err, "event=bad_record"));

	/* The classic slip: every record is bad, and both the warning and
	 * the reasons show. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--prefix", "/cli/nodes", NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_ptr_nonnull(strstr(run.out, "# 0 nodes"));
	ck_assert_ptr_nonnull(strstr(run.err, "warning: --prefix '/cli/nodes' does not end in '/'"));
	ck_assert_ptr_nonnull(strstr(run.err, "id must not contain '/'"));
	fprintf(stderr, "%s", run.err);
}
END_TEST

/* A lookup where there is no node says where it looked and when: a wrong
 * --prefix is the usual cause.  The revision is etcd's, the last put's. */
START_TEST(lookup_with_no_node_names_the_prefix)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	char want[160];
	hrt_cli_run run;
	int64_t rev;

	put("a", "127.0.0.1:1");
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), "/cli/other", "x");
	ck_assert_int_gt(rev, 0);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps,
		"--prefix", "/cli/nodes-typo/", "k", NULL });
	ck_assert_int_eq(run.status, 1);
	snprintf(want, sizeof want,
		 "hashring: lookup: no node under /cli/nodes-typo/ at revision %" PRId64 "\n", rev);
	ck_assert_str_eq(run.err, want);
	ck_assert_str_eq(run.out, "");
	/* The default prefix, named as such. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps, "k", NULL });
	ck_assert_int_eq(run.status, 1);
	snprintf(want, sizeof want,
		 "hashring: lookup: no node under /hashring/nodes/ at revision %" PRId64 "\n", rev);
	ck_assert_str_eq(run.err, want);
	/* A control byte in the prefix stays escaped: one line. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps,
		"--prefix", "/cli/x\ny/", "k", NULL });
	ck_assert_int_eq(run.status, 1);
	ck_assert_ptr_nonnull(strstr(run.err, "no node under /cli/x"));
	ck_assert_ptr_eq(strchr(run.err, '\n'), run.err + strlen(run.err) - 1);
}
END_TEST

/* `hashring metrics` against etcd: the client's metrics after its first
 * sync, at the revision etcd gave the last put, with the endpoint it used;
 * no etcd: one error line after --timeout. */
START_TEST(metrics_of_a_client)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	char want[512];
	int64_t rev;
	hrt_cli_run run;

	put("a", "{\"addr\":\"127.0.0.1:1\",\"zone\":\"z1\"}");
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "b", "{\"addr\":\"127.0.0.2:1\","
		      "\"state\":\"warming\",\"weight\":2}");
	ck_assert_int_gt(rev, 0);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "metrics", "--endpoints", eps,
		"--prefix", PREFIX, "--label", "instance_id=t1", NULL });
	ck_assert_msg(run.status == 0, "metrics: %d %s", run.status, run.err);
	ck_assert_str_eq(run.err, "");
	snprintf(want, sizeof want, "\nhashring_ring_revision{instance_id=\"t1\"} %" PRId64 "\n",
		 rev);
	ck_assert_msg(strstr(run.out, want), "no %s in %s", want, run.out);
	snprintf(want, sizeof want, "\nhashring_confirmed_revision{instance_id=\"t1\"} %" PRId64
		 "\n", rev);
	ck_assert_msg(strstr(run.out, want), "no %s in %s", want, run.out);
	snprintf(want, sizeof want, "\nhashring_etcd_endpoint_info{instance_id=\"t1\","
		 "endpoint=\"%s\"} 1\n", hrt_etcd_client_url(etcd, 0));
	ck_assert_msg(strstr(run.out, want), "no %s in %s", want, run.out);
	ck_assert_ptr_nonnull(strstr(run.out, "\nhashring_rings_published_total{instance_id=\"t1\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(run.out, "\nhashring_node_info{instance_id=\"t1\",node=\"a\","
				     "addr=\"127.0.0.1:1\",zone=\"z1\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(run.out, "\nhashring_node_state{instance_id=\"t1\",node=\"b\","
				     "state=\"warming\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(run.out, "\nhashring_ring_nodes{instance_id=\"t1\","
				     "state=\"active\"} 1\n"));

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "metrics", "--endpoints", "127.0.0.1:1",
		"--timeout", "1", NULL });
	ck_assert_int_eq(run.status, 1);
	ck_assert_str_eq(run.out, "");
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: metrics: "));
}
END_TEST

/* The lease etcdctl lists for the key (hex, as it prints leases). */
static void etcd_lease_of(const char *id, char *hex, size_t len)
{
	char out[4096], *p;
	long long lease = 0;

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "%s -w json", id), 0);
	p = strstr(out, "\"lease\":");
	ck_assert_msg(p, "no lease in %s", out);
	lease = strtoll(p + 8, NULL, 10);
	snprintf(hex, len, "%016llx", (unsigned long long)lease);
}

/* etcd is down when `register` and `state` start; they retry within
 * --timeout and succeed once it is back.  `register` prints its lease in
 * hex, as etcdctl does. */
START_TEST(register_and_state_wait_for_etcd)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	char out[4096], lease[32], expect[64];
	hrt_cli_run run, state_run;
	hrt_child side, state;
	int64_t t0;

	put("s", "{\"addr\":\"127.0.0.5:1\",\"state\":\"warming\"}");
	ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
	t0 = hrt_now_ms();
	side = hrt_cli_spawn((const char *const[]){ "register", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "r1", "--addr", "127.0.0.9:1", "--ttl", "5", "--timeout", "30",
		"--log-level", "warn", NULL }, NULL);
	state = hrt_cli_spawn((const char *const[]){ "state", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "s", "active", "--timeout", "30", NULL }, NULL);
	hrt_sleep_ms(1500);
	/* Still trying: not failed at once. */
	ck_assert_int_eq(waitpid(side.pid, NULL, WNOHANG), 0);
	ck_assert_int_eq(waitpid(state.pid, NULL, WNOHANG), 0);
	ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);

	hrt_cli_wait(&state, &state_run);
	ck_assert_msg(state_run.status == 0, "state: %d %s", state_run.status, state_run.err);
	fprintf(stderr, "state done %lld ms after it started against a dead etcd\n",
		(long long)(hrt_now_ms() - t0));
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "s --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"active\""));

	/* Registered: the record is there, under the lease it printed. */
	for (int i = 0; i < 200; i++) {
		if (hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "r1 --print-value-only") == 0 &&
		    strstr(out, "127.0.0.9:1"))
			break;
		hrt_sleep_ms(50);
	}
	etcd_lease_of("r1", lease, sizeof lease);
	kill(side.pid, SIGTERM);
	hrt_cli_wait(&side, &run);
	ck_assert_msg(run.status == 0, "register: %d %s", run.status, run.err);
	snprintf(expect, sizeof expect, "registered r1 lease=%s ttl=5\n", lease);
	ck_assert_msg(!strncmp(run.out, expect, strlen(expect)), "stdout: %s, lease %s", run.out,
		      lease);
	ck_assert_ptr_nonnull(strstr(run.out, "deregistered r1\n"));
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "r1 --print-value-only"), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

/* Nodes join one at a time: `tokens --allocate` against the ring in etcd,
 * its record put with etcdctl; the tokens ring then holds every token, and
 * a bad tokens field is a bad record there only. */
START_TEST(allocated_tokens_put_with_etcdctl)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_cli_run run;
	char out[256];

	for (int i = 0; i < 6; i++) {
		char id[16], addr[32];
		size_t len;

		snprintf(id, sizeof id, "t%d", i);
		snprintf(addr, sizeof addr, "127.0.0.1:%d", 11300 + i);
		hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "tokens", "--allocate",
			"--id", id, "--addr", addr, "--tokens", "8", "--endpoints", eps,
			"--prefix", PREFIX, NULL });
		ck_assert_msg(run.status == 0, "tokens: %d %s", run.status, run.err);
		ck_assert_ptr_nonnull(strstr(run.out, "\"tokens\":[\""));
		len = strlen(run.out);
		ck_assert(len > 0 && run.out[len - 1] == '\n');
		ck_assert_int_eq(hrt_etcdctl_stdin(etcd, run.out, out, sizeof out,
						   "put " PREFIX "%s", id), 0);
	}
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--prefix", PREFIX, "--placement", "tokens", NULL });
	ck_assert_msg(run.status == 0, "nodes: %d %s", run.status, run.err);
	ck_assert_msg(strstr(run.out, "# 6 nodes, 48 points"), "%s", run.out);
	ck_assert_str_eq(run.err, "");

	put("bad", "{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"x\"]}");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--prefix", PREFIX, "--placement", "tokens", NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_msg(strstr(run.out, "# 6 nodes, 48 points"), "%s", run.out);
	ck_assert_ptr_nonnull(strstr(run.err, "event=bad_record key=" PREFIX "bad"));
	ck_assert_ptr_nonnull(strstr(run.err, "token 0 is"));
	/* The native placement ignores the field: 7 nodes of 200 points. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--prefix", PREFIX, NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_msg(strstr(run.out, "# 7 nodes, 1400 points"), "%s", run.out);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "tokens", "--allocate",
		"--id", "z", "--addr", "127.0.0.1:1", "--tokens", "0", "--endpoints", eps,
		NULL });
	ck_assert_int_eq(run.status, 2);
}
END_TEST

/* What a newcomer reads: `state` and `weight` confirm the change in one
 * line (or one JSON object); `diff` says on stderr that it has its
 * baseline and waits; `lookup` gives a header line, and with --json the
 * owners' addresses; `acks` names the newest record's revision for what
 * it is, not a ring's. */
START_TEST(commands_say_what_they_did)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	char note[4096] = "", want[256];
	hrt_cli_run run;
	hrt_child diff;
	int64_t rev;

	put("a", "{\"addr\":\"127.0.0.1:1\",\"state\":\"warming\"}");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "state", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "a", "active", NULL });
	ck_assert_msg(run.status == 0, "state: %d %s", run.status, run.err);
	ck_assert_str_eq(run.out, "updated a state=active\n");
	ck_assert_str_eq(run.err, "");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "state", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "a", "draining", "--json", NULL });
	ck_assert_str_eq(run.out, "{\"id\":\"a\",\"state\":\"draining\"}\n");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "weight", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "a", "2.5", NULL });
	ck_assert_str_eq(run.out, "updated a weight=2.5\n");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "weight", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "a", "1", "--json", NULL });
	ck_assert_str_eq(run.out, "{\"id\":\"a\",\"weight\":1}\n");
	/* A failure prints no confirmation. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "weight", "--endpoints", eps, "--prefix",
		PREFIX, "--id", "nobody", "1", NULL });
	ck_assert_int_eq(run.status, 1);
	ck_assert_str_eq(run.out, "");

	rev = hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "b", "127.0.0.2:1");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps, "--prefix",
		PREFIX, "k", NULL });
	ck_assert_msg(run.status == 0, "lookup: %d %s", run.status, run.err);
	snprintf(want, sizeof want, "KEY\tNODE\tREAD_NODE\tREPLICAS\tREVISION\nk\tb\t");
	ck_assert_msg(!strncmp(run.out, want, strlen(want)), "%s", run.out);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "lookup", "--endpoints", eps, "--prefix",
		PREFIX, "--json", "k", NULL });
	ck_assert_int_eq(run.status, 0);
	/* a drains: b owns every write. */
	snprintf(want, sizeof want, "{\"key\":\"k\",\"node\":\"b\",\"addr\":\"127.0.0.2:1\","
		 "\"read_node\":");
	ck_assert_msg(!strncmp(run.out, want, strlen(want)), "%s", run.out);
	ck_assert_msg(strstr(run.out, ",\"read_addr\":\""), "%s", run.out);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
		PREFIX, NULL });
	ck_assert_int_eq(run.status, 0);
	snprintf(want, sizeof want, "# 0 clients, newest record revision %" PRId64 "\n", rev);
	ck_assert_str_eq(run.out, want);

	diff = hrt_cli_spawn((const char *const[]){ "diff", "--endpoints", eps, "--prefix", PREFIX,
		NULL }, NULL);
	for (int i = 0; i < 400 && !strstr(note, "waiting"); i++) {
		hrt_sleep_ms(25);
		hrt_cli_peek_err(&diff, note, sizeof note);
	}
	snprintf(want, sizeof want, "hashring: diff: baseline: the ring at revision %" PRId64
		 " (2 nodes); waiting for the next change\n", rev);
	ck_assert_str_eq(note, want);
	put("c", "127.0.0.3:1");
	hrt_cli_wait(&diff, &run);
	ck_assert_msg(run.status == 0, "diff: %d %s", run.status, run.err);
	ck_assert_str_eq(run.err, want);
	ck_assert_msg(!strncmp(run.out, "ring\t", 5), "%s", run.out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_etcd");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, watch_reader_goes_away);
	tcase_add_test(tc, watch_write_error);
	tcase_add_test(tc, one_shot_commands_show_bad_records);
	tcase_add_test(tc, metrics_of_a_client);
	tcase_add_test(tc, register_and_state_wait_for_etcd);
	tcase_add_test(tc, allocated_tokens_put_with_etcdctl);
	tcase_add_test(tc, commands_say_what_they_did);
	tcase_add_test(tc, lookup_with_no_node_names_the_prefix);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
