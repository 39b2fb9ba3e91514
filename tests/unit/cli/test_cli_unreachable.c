/* SPDX-License-Identifier: MIT */
/*
 * test_cli_unreachable.c - the `hashring` command, run as a program:
 * commands against an etcd that is not there (a closed loopback port):
 * signals end the wait, time limits, no password shown, prefixes.
 *
 * Expected answers come from the library itself (the same members file
 * loaded in-process), so these tests check what the CLI prints, not the
 * placement, which the ring suites cover.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "hashring.h"

#include "cli_test.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts `args`, sends `sig` after `after_ms`, and returns the wait status;
 * *took gets the time from the signal to the end. */
/* Whether `pid` handles `sig` rather than meeting the default action: its
 * main thread blocks or catches it (/proc/PID/status: SigBlk, SigCgt), or
 * waits for it in sigtimedwait(), which takes the waited signals out of
 * SigBlk for the time of the call (/proc/PID/wchan). */
static int handles_signal(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask, masks = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1 ||
		    sscanf(line, "SigCgt: %llx", &mask) == 1)
			masks |= mask;
	fclose(f);
	if ((masks >> (sig - 1)) & 1)
		return 1;
	snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	line[0] = '\0';
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	fclose(f);
	return strstr(line, "sigtimedwait") != NULL;
}

/* Starts `args`, sends `sig` after `after_ms` (and, with `when_handled`,
 * once the command blocks or catches it, so that a slow start on a loaded machine
 * does not meet the default action), and returns the wait status; *took
 * gets the time from the signal to the end. */
static int signal_after_ex(const char *const *args, int sig, int after_ms, int when_handled,
			   int64_t *took)
{
	pid_t pid = spawn_argv(args, -1);
	int64_t t0;
	int wstatus;

	usleep((useconds_t)after_ms * 1000);
	for (t0 = mono_ms(); when_handled && !handles_signal(pid, sig) &&
			     mono_ms() - t0 < 20000;)
		usleep(10 * 1000);
	ck_assert_msg(waitpid(pid, &wstatus, WNOHANG) == 0, "%s ended before the signal (status %#x)",
		      args[0], wstatus);
	t0 = mono_ms();
	kill(pid, sig);
	wstatus = wait_child(pid, 20000);
	*took = mono_ms() - t0;
	return wstatus;
}

static int signal_after(const char *const *args, int sig, int after_ms, int64_t *took)
{
	return signal_after_ex(args, sig, after_ms, 0, took);
}

START_TEST(test_signal_ends_the_wait)
{
	char *err;
	int64_t took;
	int st;

	/* One-shot commands end by the signal, at once, without a word. */
	st = signal_after((const char *const[]){ "nodes", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", NULL }, SIGINT, 1000, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %#x", st);
	ck_assert_int_lt(took, 500);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_str_eq(err, "");
	free(err);
	st = signal_after((const char *const[]){ "lookup", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", "k", NULL }, SIGTERM, 300, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after((const char *const[]){ "state", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", "--id", "x", "active", NULL },
			  SIGINT, 300, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %#x", st);
	ck_assert_int_lt(took, 500);

	/* Commands that run until stopped exit 0, even before they start. */
	st = signal_after_ex((const char *const[]){ "watch", "--endpoints", "127.0.0.1:1",
						    "--timeout", "10", NULL }, SIGINT, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after_ex((const char *const[]){ "register", "--endpoints", "127.0.0.1:1",
						    "--timeout", "10", "--id", "x", "--addr", "a:1",
						    "--log-level", "error", NULL }, SIGTERM, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after_ex((const char *const[]){ "diff", "--endpoints", "127.0.0.1:1",
						    "--timeout", "0", NULL }, SIGTERM, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
END_TEST

/* Whether `word` is in `text` as a word of its own. */
static int has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
		if ((p == text || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]))
			return 1;
	return 0;
}

/* `hashring --help` names the commands that exit 0 when SIGINT or SIGTERM
 * end them, and says every other one ends by the signal: each command of
 * its list, waiting for an etcd that is not there, does as it says. */
START_TEST(test_signal_exit_as_help_says)
{
	/* What makes each command wait for etcd. */
	static char agent_dir[64];
	static const char *const cases[][8] = {
		{ "lookup", "k", NULL },
		{ "nodes", NULL },
		{ "watch", NULL },
		{ "agent", "--dir", agent_dir, "--log-level", "error", NULL },
		{ "register", "--id", "x", "--addr", "127.0.0.9:1", "--log-level", "error", NULL },
		{ "state", "--id", "x", "active", NULL },
		{ "weight", "--id", "x", "2", NULL },
		{ "acks", "--wait-revision", "5", NULL },
		{ "rebalance", "--log-level", "error", NULL },
		{ "serve", "--listen", "127.0.0.1:0", "--log-level", "error", NULL },
		{ "diff", "--log-level", "error", NULL },
		{ "metrics", NULL },
		{ "tokens", "--allocate", "--id", "x", "--addr", "127.0.0.9:1", NULL },
	};
	static const char *const offline[] = { "sim" }; /* no etcd to wait for */
	struct run help = RUN("--help");
	char *flat, *clause, *end, *line, *save = NULL;
	int zero = 0, commands = 0;

	snprintf(agent_dir, sizeof agent_dir, "/tmp/hrt-cli-agent-%ld", (long)getpid());

	ck_assert_int_eq(help.status, 0);
	/* "SIGINT or SIGTERM end watch, ..., with exit 0; any other ...",
	 * over several lines. */
	flat = strdup(help.out);
	ck_assert_ptr_nonnull(flat);
	for (char *p = flat; *p; p++)
		if (*p == '\n')
			*p = ' ';
	clause = strstr(flat, "SIGINT or SIGTERM end ");
	ck_assert_ptr_nonnull(clause);
	end = strstr(clause, "with exit 0;");
	ck_assert_ptr_nonnull(end);
	ck_assert_ptr_nonnull(strstr(end, "any other command cleans up and ends by that"));
	clause = strndup(clause, (size_t)(end - clause));
	line = strstr(help.out, "Commands:\n");
	ck_assert_ptr_nonnull(line);
	for (line = strtok_r(line + strlen("Commands:\n"), "\n", &save);
	     line && strncmp(line, "  ", 2) == 0; line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		const char *const *args = NULL;
		const char *argv[16];
		int n = 0, known = 0, st, exits_zero;
		int64_t took;

		ck_assert_int_eq(sscanf(line, "%31s", name), 1);
		commands++;
		for (size_t i = 0; i < sizeof offline / sizeof *offline; i++)
			known |= strcmp(name, offline[i]) == 0;
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
			if (strcmp(name, cases[i][0]) == 0)
				args = cases[i];
		ck_assert_msg(known || args, "--help lists '%s', which this test does not know", name);
		ck_assert_msg(!known || !has_word(clause, name),
			      "--help says %s exits 0 on a signal, offline", name);
		if (!args)
			continue;
		exits_zero = has_word(clause, name);
		zero += exits_zero;
		argv[n++] = name;
		for (const char *const *a = args + 1; *a; a++)
			argv[n++] = *a;
		argv[n++] = "--endpoints";
		argv[n++] = "127.0.0.1:1";
		argv[n++] = "--timeout";
		argv[n++] = "30";
		argv[n] = NULL;
		/* Those that exit 0 handle the signal: sent once they do. */
		st = signal_after_ex(argv, SIGTERM, 300, exits_zero, &took);
		if (exits_zero)
			ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				      "%s: --help says exit 0 on SIGTERM; status %#x", name, st);
		else
			ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
				      "%s: --help says it ends by SIGTERM; status %#x", name, st);
	}
	ck_assert_int_eq(commands, (int)(sizeof cases / sizeof *cases + sizeof offline / sizeof *offline));
	ck_assert_int_eq(zero, 5); /* watch, agent, diff, register, serve */
	{
		char path[128];

		/* The agent's directory: its lock and control page. */
		snprintf(path, sizeof path, "%s/agent.lock", agent_dir);
		unlink(path);
		snprintf(path, sizeof path, "%s/control", agent_dir);
		unlink(path);
		rmdir(agent_dir);
	}
	free(clause);
	free(flat);
	run_free(&help);
}
END_TEST

/* --timeout bounds the wait of every etcd command, retries included. */
START_TEST(test_timeout)
{
	static const char *const cases[][12] = {
		{ "nodes", "no ring after 1", NULL },
		{ "lookup", "no ring after 1", "k", NULL },
		{ "watch", "no ring after 1", NULL },
		{ "diff", "no ring after 1", NULL },
		{ "state", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x", "active", NULL },
		{ "weight", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x", "2", NULL },
		{ "register", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x",
		  "--addr", "a:1", NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[MAX_ARGS] = { cases[i][0], "--endpoints", "127.0.0.1:1",
					       "--timeout", "1" };
		int m = 5;
		int64_t t0 = mono_ms(), ms;
		struct run r;

		for (int k = 2; cases[i][k]; k++)
			args[m++] = cases[i][k];
		if (!strcmp(cases[i][0], "register")) {
			args[m++] = "--log-level";
			args[m++] = "error";
		}
		args[m] = NULL;
		r = run_argv(args);
		ms = mono_ms() - t0;
		ck_assert_msg(r.status == 1, "%s: exit %d, %s", cases[i][0], r.status, r.err);
		/* watch logs at info: its error is the last line. */
		if (strcmp(cases[i][0], "watch"))
			assert_one_error_line(&r, cases[i][0]);
		ck_assert_msg(strstr(r.err, cases[i][1]), "%s: %s", cases[i][0], r.err);
		ck_assert_msg(ms >= 950 && ms < 2900, "%s took %lld ms", cases[i][0], (long long)ms);
		run_free(&r);
	}
	assert_usage_error((const char *const[]){ "nodes", "--timeout", "86401", NULL },
			   "nodes", "at most 86400");
	assert_usage_error((const char *const[]){ "state", "--timeout", "-1", "--id", "x", "active", NULL },
			   "state", "--timeout");
}
END_TEST

#define URL_PW "url-Pw-7f3e"

START_TEST(test_endpoint_password_never_shown)
{
	static const char *const cmds[][8] = {
		{ "nodes", NULL },
		{ "lookup", "k", NULL },
		{ "watch", NULL },
		{ "state", "--id", "x", "draining", NULL },
		{ "register", "--id", "x", "--addr", "a:1", NULL },
	};
	struct run r;

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		const char *args[MAX_ARGS] = { cmds[i][0], "--endpoints",
					       "http://ring-user:" URL_PW "@127.0.0.1:1",
					       "--timeout", "1", "--log-level", "debug" };
		int m = 7;

		for (int k = 1; cmds[i][k]; k++)
			args[m++] = cmds[i][k];
		args[m] = NULL;
		r = run_argv(args);
		ck_assert_int_eq(r.status, 1);
		ck_assert_msg(!strstr(r.err, URL_PW) && !strstr(r.out, URL_PW), "%s leaks: %s",
			      cmds[i][0], r.err);
		ck_assert_msg(strstr(r.err, "http://127.0.0.1:1"), "%s: %s", cmds[i][0], r.err);
		run_free(&r);
	}
	/* Two different users: a usage error that shows neither password. */
	r = RUN("nodes", "--endpoints", "http://ring-user:" URL_PW "@127.0.0.1:1", "--user",
		"other:pw-2");
	ck_assert_int_eq(r.status, 2);
	assert_one_error_line(&r, "nodes");
	ck_assert_ptr_nonnull(strstr(r.err, "differs from the configured user"));
	ck_assert_ptr_null(strstr(r.err, URL_PW));
	ck_assert_ptr_null(strstr(r.err, "pw-2"));
	run_free(&r);
	r = RUN("state", "--endpoints", "ftp://ring-user:" URL_PW "@127.0.0.1:1", "--id", "x",
		"active");
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "ftp://ring-user:***@127.0.0.1:1"));
	ck_assert_ptr_null(strstr(r.err, URL_PW));
	run_free(&r);
}
END_TEST

START_TEST(test_prefix_without_slash)
{
	struct run r = RUN("nodes", "--endpoints", "127.0.0.1:1", "--timeout", "1", "--prefix",
			   "/hashring/nodes");
	const char *nl = strchr(r.err, '\n');

	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(!strncmp(r.err, "hashring: nodes: warning: --prefix '/hashring/nodes' does not end in '/'",
			       71), "%s", r.err);
	/* The warning, then the error: two lines. */
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq(count_lines(r.err), 2);
	run_free(&r);
}
END_TEST

static Suite *cli_unreachable_suite(void)
{
	Suite *s = suite_create("cli_unreachable");
	TCase *tc;

	tc = tcase_create("etcd_unreachable");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_signal_ends_the_wait);
	tcase_add_test(tc, test_signal_exit_as_help_says);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_endpoint_password_never_shown);
	tcase_add_test(tc, test_prefix_without_slash);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_unreachable_suite());
}
