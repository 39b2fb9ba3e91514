/* SPDX-License-Identifier: MIT */
/*
 * test_version.c - the version macros, the library and the CLI agree.
 *
 * Linked with the shared library, so hr_version() answers from the very
 * libhashring.so that gets installed, not from a copy of the objects.
 */
#define _GNU_SOURCE /* dladdr */
#include "hrt_check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashring.h"

#if !defined(HR_PROJECT_VERSION) || !defined(HR_CLI_PATH) || !defined(HR_SOVERSION)
#error "HR_PROJECT_VERSION, HR_SOVERSION and HR_CLI_PATH come from the build"
#endif

/* The macros must work in #if, where a bad definition fails the build. */
#if !HR_VERSION_AT_LEAST(HR_VERSION_MAJOR, HR_VERSION_MINOR, HR_VERSION_PATCH)
#error "HR_VERSION_AT_LEAST is false for the version itself"
#endif
#if HR_VERSION_AT_LEAST(HR_VERSION_MAJOR + 1, 0, 0)
#error "HR_VERSION_AT_LEAST is true for the next major version"
#endif

START_TEST(test_string_matches_numbers)
{
	char expect[32];

	snprintf(expect, sizeof(expect), "%d.%d.%d", HR_VERSION_MAJOR,
		 HR_VERSION_MINOR, HR_VERSION_PATCH);
	ck_assert_str_eq(HR_VERSION_STRING, expect);
	/* The build names the project, the .pc and the packages from it. */
	ck_assert_str_eq(HR_VERSION_STRING, HR_PROJECT_VERSION);
}
END_TEST

START_TEST(test_number_orders_versions)
{
	ck_assert_int_ge(HR_VERSION_MINOR, 0);
	ck_assert_int_lt(HR_VERSION_MINOR, 100);
	ck_assert_int_ge(HR_VERSION_PATCH, 0);
	ck_assert_int_lt(HR_VERSION_PATCH, 100);
	ck_assert_int_eq(HR_VERSION_NUMBER, HR_VERSION_MAJOR * 10000 +
			 HR_VERSION_MINOR * 100 + HR_VERSION_PATCH);
}
END_TEST

START_TEST(test_at_least_boundaries)
{
	const int ma = HR_VERSION_MAJOR, mi = HR_VERSION_MINOR,
		  pa = HR_VERSION_PATCH;

	ck_assert(HR_VERSION_AT_LEAST(ma, mi, pa));
	ck_assert(HR_VERSION_AT_LEAST(0, 0, 0));
	ck_assert(!HR_VERSION_AT_LEAST(ma, mi, pa + 1));
	ck_assert(!HR_VERSION_AT_LEAST(ma, mi + 1, 0));
	ck_assert(!HR_VERSION_AT_LEAST(ma + 1, 0, 0));
	if (pa > 0)
		ck_assert(HR_VERSION_AT_LEAST(ma, mi, pa - 1));
	if (mi > 0)
		ck_assert(HR_VERSION_AT_LEAST(ma, mi - 1, 99));
	if (ma > 0)
		ck_assert(HR_VERSION_AT_LEAST(ma - 1, 99, 99));
}
END_TEST

START_TEST(test_library_matches_header)
{
	ck_assert_ptr_nonnull(hr_version());
	ck_assert_str_eq(hr_version(), HR_VERSION_STRING);
	ck_assert_int_eq(hr_version_number(), HR_VERSION_NUMBER);
}
END_TEST

START_TEST(test_runs_with_the_shared_library)
{
	Dl_info info;
	char soname[64];

	ck_assert_int_ne(dladdr((void *)hr_version, &info), 0);
	ck_assert_ptr_nonnull(info.dli_fname);
	snprintf(soname, sizeof(soname), "libhashring.so.%d", HR_SOVERSION);
	ck_assert_msg(strstr(info.dli_fname, soname) != NULL,
		      "hr_version comes from %s, not %s", info.dli_fname,
		      soname);
	ck_assert_int_eq(HR_SOVERSION, HR_VERSION_MAJOR);
}
END_TEST

START_TEST(test_cli_reports_library_version)
{
	char line[128], expect[128];
	FILE *p;

	p = popen("'" HR_CLI_PATH "' --version", "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_ptr_null(fgets(expect, sizeof(expect), p)); /* one line */
	ck_assert_int_eq(pclose(p), 0);
	snprintf(expect, sizeof(expect), "hashring %s\n", hr_version());
	ck_assert_str_eq(line, expect);
}
END_TEST

static Suite *version_suite(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");

	tcase_add_test(tc, test_string_matches_numbers);
	tcase_add_test(tc, test_number_orders_versions);
	tcase_add_test(tc, test_at_least_boundaries);
	tcase_add_test(tc, test_library_matches_header);
	tcase_add_test(tc, test_runs_with_the_shared_library);
	tcase_add_test(tc, test_cli_reports_library_version);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(version_suite());
}
