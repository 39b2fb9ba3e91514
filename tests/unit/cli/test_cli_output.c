/* SPDX-License-Identifier: MIT */
/*
 * test_cli_output.c - the `hashring` command, run as a program: output of
 * any bytes as JSON and text; closed pipes and write errors.
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

/*
 * Reads JSON lines back with Python's json module (the reader the man page
 * promises losslessness to) and prints, one per line, the hex of the bytes
 * of field `field` of each object, strings encoded back with
 * surrogateescape.
 */
static char *python_fields(const char *json_path, const char *field)
{
	char script[PATH_MAX + 64];
	struct run r;
	FILE *f;

	snprintf(script, sizeof script, "%s/read.py", tmpdir);
	f = fopen(script, "w");
	ck_assert_ptr_nonnull(f);
	fputs("import json, sys\n"
	      "for line in open(sys.argv[1], 'rb'):\n"
	      "    obj = json.loads(line.decode('utf-8'))\n"
	      "    print(obj[sys.argv[2]].encode('utf-8', 'surrogateescape').hex())\n", f);
	ck_assert_int_eq(fclose(f), 0);
	r = run_prog("/usr/bin/python3", (const char *const[]){ script, json_path, field, NULL });
	ck_assert_msg(r.status == 0, "python3 exited %d: %s", r.status, r.err);
	free(r.err);
	return r.out;
}

static void hex_of(const char *s, char *out)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (unsigned char)*s);
	*out = '\0';
}

/* Every byte string, valid UTF-8 or not, comes back exactly. */
START_TEST(test_json_utf8_roundtrip)
{
	static const char *const zones[] = {
		"z\xc3\xbcrich", "\xe6\x97\xa5\xe6\x9c\xac", "bad\xff\xfe", "\xf0\x9f\x98\x80",
		"blank \"q\" \\", "\xed\xa0\x80surrogate", "\xc0\xafoverlong",
	};
	const size_t n = sizeof zones / sizeof zones[0];
	char members[4096] = "{", expect[4096] = "", hex[256], *got, *path;
	char out_path[PATH_MAX + 64];
	struct run r;

	for (size_t i = 0; i < n; i++) {
		char zone[128], *z = zone;

		/* JSON needs the quote and the backslash escaped. */
		for (const char *c = zones[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				z += sprintf(z, "\\%c", *c);
			else
				*z++ = *c;
		}
		*z = '\0';
		snprintf(members + strlen(members), sizeof members - strlen(members),
			 "%s\"n%zu\":{\"addr\":\"127.0.0.1:%zu\",\"zone\":\"%s\"}",
			 i ? "," : "", i, i + 1, zone);
		hex_of(zones[i], hex);
		strcat(expect, hex);
		strcat(expect, "\n");
	}
	strcat(members, "}");
	path = write_file("members.json", members);

	r = RUN("nodes", "--members", path, "--json");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_null(strstr(r.out, "\\u00c3")); /* the old, broken form */
	ck_assert_ptr_nonnull(strstr(r.out, "\"zone\":\"z\xc3\xbcrich\""));
	ck_assert_ptr_nonnull(strstr(r.out, "\"zone\":\"bad\\udcff\\udcfe\""));
	snprintf(out_path, sizeof out_path, "%s", path_in_tmp("nodes.json"));
	free(write_file("nodes.json", r.out));
	got = python_fields(out_path, "zone");
	ck_assert_str_eq(got, expect);
	free(got);
	run_free(&r);

	/* Keys too. */
	r = RUN("lookup", "--members", path, "--json", "caf\xc3\xa9", "k\xff", "\xe2\x82",
		"\x01\x7f");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	free(write_file("lookup.json", r.out));
	snprintf(out_path, sizeof out_path, "%s", path_in_tmp("lookup.json"));
	got = python_fields(out_path, "key");
	ck_assert_str_eq(got, "636166c3a9\n6bff\ne282\n017f\n");
	free(got);
	run_free(&r);
	free(path);
}
END_TEST

/* A reader that went away: no message, and the end SIGPIPE would give. */
static void assert_pipe_end(const char *const *args, int read_one_line)
{
	int p[2], wstatus;
	pid_t pid;
	char *err;

	/* Close-on-exec: the command must not hold the reader's end. */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = spawn_argv(args, p[1]);
	if (read_one_line) {
		char c;

		while (read(p[0], &c, 1) == 1 && c != '\n')
			;
	}
	close(p[0]);
	wstatus = wait_child(pid, 60000);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_msg(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGPIPE,
		      "%s: wait status %#x, stderr: %s", args[0], wstatus, err);
	ck_assert_str_eq(err, "");
	free(err);
}

START_TEST(test_broken_pipe_offline)
{
	char members[65536] = "{", *path;
	const char *args[MAX_ARGS];
	int m = 0;

	/* 2000 nodes and every one a replica: lines far larger than a pipe
	 * holds, so the writer is still at work when the reader leaves. */
	for (int i = 0; i < 2000; i++)
		snprintf(members + strlen(members), sizeof members - strlen(members),
			 "%s\"n%04d\":\"127.0.0.1:%d\"", i ? "," : "", i, i + 1);
	strcat(members, "}");
	path = write_file("members.json", members);
	args[m++] = "lookup";
	args[m++] = "--members";
	args[m++] = path;
	args[m++] = "--replicas";
	args[m++] = "2000";
	while (m < MAX_ARGS - 2)
		args[m++] = "some-key";
	args[m] = NULL;
	assert_pipe_end(args, 1);
	assert_pipe_end(args, 0);
	free(path);
	path = write_file("small.json", members_zones);
	assert_pipe_end((const char *const[]){ "nodes", "--members", path, NULL }, 0);
	assert_pipe_end((const char *const[]){ "sim", "--keys", "1000", NULL }, 0);
	assert_pipe_end((const char *const[]){ "--help", NULL }, 0);
	assert_pipe_end((const char *const[]){ "lookup", "--help", NULL }, 0);
	free(path);
}
END_TEST

/* Any other write error is one line with its errno's text, and exit 1. */
START_TEST(test_output_error)
{
	char *path = write_file("members.json", members_zones);
	int fd = open("/dev/full", O_WRONLY);
	int wstatus;
	char *err;

	ck_assert_int_ge(fd, 0);
	wstatus = wait_child(spawn_argv((const char *const[]){ "lookup", "--members", path,
							       "k1", "k2", NULL }, fd), 60000);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 1, "status %#x", wstatus);
	ck_assert_str_eq(err, "hashring: lookup: cannot write the output: No space left on device\n");
	free(err);
	free(path);
}
END_TEST

static Suite *cli_output_suite(void)
{
	Suite *s = suite_create("cli_output");
	TCase *tc;

	tc = tcase_create("output");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_json_utf8_roundtrip);
	tcase_add_test(tc, test_broken_pipe_offline);
	tcase_add_test(tc, test_output_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_output_suite());
}
