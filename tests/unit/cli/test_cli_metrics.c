/* SPDX-License-Identifier: MIT */
/*
 * test_cli_metrics.c - the `hashring` command, run as a program: `hashring
 * metrics --members`, and members files' errors named once.
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

struct text_buf {
	char *data;
	size_t len;
};

static int text_buf_write(void *userdata, const char *data, size_t len)
{
	struct text_buf *t = userdata;

	t->data = realloc(t->data, t->len + len + 1);
	ck_assert_ptr_nonnull(t->data);
	memcpy(t->data + t->len, data, len);
	t->len += len;
	t->data[t->len] = '\0';
	return 0;
}

/* `hashring metrics --members` prints what hr_ring_metrics_write() writes,
 * byte for byte, with the options its flags name; bad ones are usage
 * errors, found before anything is read. */
START_TEST(test_metrics_members)
{
	static const hr_metrics_label labels[] = { { "client", "x\"y" }, { "env", "a=b" } };
	hr_metrics_options opts = { .size = sizeof opts };
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct text_buf want = { 0 }, want2 = { 0 };
	struct run r = RUN("metrics", "--members", path);

	ck_assert_int_eq(hr_ring_metrics_write(ring, text_buf_write, &want, NULL, NULL), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_str_eq(r.out, want.data);
	ck_assert_ptr_nonnull(strstr(r.out, "\nhashring_node_weight{node=\"w\"} 3\n"));
	run_free(&r);

	opts.name_prefix = "app_";
	opts.labels = labels;
	opts.label_count = 2;
	opts.omit = HR_METRICS_OMIT_NODES;
	ck_assert_int_eq(hr_ring_metrics_write(ring, text_buf_write, &want2, &opts, NULL), 0);
	r = RUN("metrics", "--members", path, "--name-prefix", "app_", "--label", "client=x\"y",
		"--label=env=a=b", "--omit-nodes");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want2.data);
	ck_assert_ptr_null(strstr(r.out, "hashring_node_"));
	run_free(&r);

	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "novalue",
						  NULL }, "metrics", "--label wants NAME=VALUE (got \"novalue\")");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "=v",
						  NULL }, "metrics", "NAME=VALUE");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "node=a",
						  NULL }, "metrics", "name \"node\" is one the library's");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--name-prefix",
						  "my-app_", NULL }, "metrics", "--name-prefix: \"my-app_\" is not");
	/* Checked before etcd is asked: no wait for a closed port. */
	assert_usage_error((const char *const[]){ "metrics", "--endpoints", "127.0.0.1:1",
						  "--label", "__x=1", NULL }, "metrics", "\"__\"");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--prefix", "/x/",
						  NULL }, "metrics", "--members and --prefix");
	assert_usage_error((const char *const[]){ "metrics", "extra", NULL }, "metrics", "extra");
	free(want.data);
	free(want2.data);
	hr_ring_release(ring);
	free(path);
}
END_TEST

/* A load error names the file once, whatever the library's message. */
START_TEST(test_members_errors_name_the_file_once)
{
	static const char *const bad[] = {
		"{\"a\": ", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":-1}}", "[1]",
	};
	struct run r;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char name[32], *path, *first;

		snprintf(name, sizeof name, "bad-%zu.json", i);
		path = write_file(name, bad[i]);
		r = RUN("nodes", "--members", path);
		ck_assert_int_eq(r.status, 1);
		assert_one_error_line(&r, "nodes");
		first = strstr(r.err, name);
		ck_assert_msg(first && !strstr(first + 1, name), "%s", r.err);
		run_free(&r);
		free(path);
	}
#ifndef HR_SANITIZED
	/* Larger than the library reads (256 MiB): the library's message
	 * names the file already. */
	r = RUN("lookup", "--members", "/dev/zero", "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, "larger than"));
	ck_assert_msg(!strstr(strstr(r.err, "/dev/zero") + 1, "/dev/zero"), "%s", r.err);
	run_free(&r);
#endif
}
END_TEST

static Suite *cli_metrics_suite(void)
{
	Suite *s = suite_create("cli_metrics");
	TCase *tc;

	tc = tcase_create("output");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_metrics_members);
	tcase_add_test(tc, test_members_errors_name_the_file_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_metrics_suite());
}
