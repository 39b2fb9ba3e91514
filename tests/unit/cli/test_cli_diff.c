/* SPDX-License-Identifier: MIT */
/*
 * test_cli_diff.c - the `hashring` command, run as a program: `hashring
 * diff`: the arcs and totals of the library's diff.
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
#include "diff.h"

/* `hashring diff` of two members files prints the arcs and the moved share
 * the library's diff finds, under either placement; `lookup --placement
 * ketama` answers as the ketama ring does. */
START_TEST(test_diff_matches_library)
{
	static const char *old_json =
		"{\"a\":\"127.0.0.1:11211\",\"b\":{\"addr\":\"127.0.0.2:11211\",\"weight\":2},"
		"\"c\":\"127.0.0.3:11212\"}";
	static const char *new_json =
		"{\"a\":\"127.0.0.1:11211\",\"b\":{\"addr\":\"127.0.0.2:11211\",\"weight\":2},"
		"\"d\":\"127.0.0.4\"}";
	char *f1 = write_file("old.json", old_json), *f2 = write_file("new.json", new_json);
	char want[64];
	const char *last;
	struct run r;

	for (int k = 0; k < 2; k++) {
		hr_ring_options o = { .size = sizeof o, .placement = k ? HR_PLACEMENT_KETAMA : HR_PLACEMENT_XXH3 };
		hr_ring *a, *b;
		hr_diff *d;
		size_t arcs = 0;

		ck_assert_int_eq(hr_ring_load_file(f1, &o, &a, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_load_file(f2, &o, &b, NULL), HR_OK);
		ck_assert_int_eq(hr_diff_new(a, b, HR_VIEW_WRITE, &d, NULL), HR_OK);
		r = RUN("diff", "--placement", k ? "ketama" : "xxh3", f1, "--members", f2);
		ck_assert_int_eq(r.status, 0);
		for (const char *l = r.out; (l = strstr(l, "arc\t")); l++)
			arcs += l == r.out || l[-1] == '\n';
		ck_assert_uint_eq(arcs, hr_diff_arc_count(d));
		snprintf(want, sizeof want, "moved\t%.6f\t%zu\n",
			 hr__diff_moved_share(d), hr_diff_arc_count(d));
		last = strstr(r.out, "moved\t");
		ck_assert_ptr_nonnull(last);
		ck_assert_str_eq(last, want);
		run_free(&r);
		hr_diff_free(d);
		hr_ring_release(a);
		hr_ring_release(b);
	}
	r = RUN("diff", "--json", "--view", "read", f1, f2);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strncmp(r.out, "{\"old_revision\":0,\"new_revision\":0,\"view\":\"read\"", 48) == 0);
	run_free(&r);
	/* Usage errors. */
	assert_usage_error((const char *const[]){ "diff", f1, NULL }, "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", f1, f2, f1, NULL }, "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--view", "both", f1, f2, NULL },
			   "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--placement", "md5", f1, f2, NULL },
			   "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--count", "2", f1, f2, NULL },
			   "diff", NULL);
	r = RUN("diff", f1, "/nonexistent/members.json");
	ck_assert_int_eq(r.status, 1);
	run_free(&r);
	{
		hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_KETAMA };
		hr_ring *ring;
		hr_lookup res;

		ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
		r = RUN("lookup", "--placement", "ketama", "--members", f1, "user:42");
		ck_assert_int_eq(r.status, 0);
		hr_ring_lookup(ring, "user:42", 7, &res, NULL);
		snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
		ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
		run_free(&r);
		hr_ring_release(ring);
	}
	free(f1);
	free(f2);
}
END_TEST

static Suite *cli_diff_suite(void)
{
	Suite *s = suite_create("cli_diff");
	TCase *tc;

	tc = tcase_create("lookup");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_diff_matches_library);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_diff_suite());
}
