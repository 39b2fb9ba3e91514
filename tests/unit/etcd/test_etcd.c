/* SPDX-License-Identifier: MIT */
/*
 * test_etcd.c - endpoints as the library reads them (credentials in URLs,
 * which never show again) and hr_client_wait_synced(), without an etcd:
 * every endpoint here is a closed loopback port.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "etcd.h"
#include "hashring.h"

#define SECRET "s3cr%65t-Pw" /* percent-encoded "s3cret-Pw" */
#define SECRET_PLAIN "s3cret-Pw"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void assert_clean(const char *text)
{
	ck_assert_msg(!strstr(text, SECRET_PLAIN) && !strstr(text, "s3cr"),
		      "password shown in: %s", text);
}

/* The endpoints an hr__etcd ends up with, comma-joined into buf. */
static int endpoints_of(const char *in, const char *user, const char *pw,
			char *buf, size_t size, hr_error *err)
{
	hr__etcd_opts o = { .endpoints = in, .username = user, .password = pw };
	hr__etcd *e = NULL;
	int rc;

	memset(err, 0, sizeof *err);
	buf[0] = '\0';
	rc = hr__etcd_new(&o, &e, err);
	if (rc)
		return rc;
	/* The first endpoint, then each next one until it comes round. */
	for (const char *first = NULL;;) {
		const char *ep = hr__etcd_endpoint(e);

		if (first && !strcmp(ep, first))
			break;
		if (!first)
			first = strdupa(ep);
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? "," : "", ep);
		hr__etcd_next_endpoint(e);
	}
	hr__etcd_free(e);
	return 0;
}

START_TEST(endpoint_userinfo_is_taken_and_stripped)
{
	char buf[1024];
	hr_error err;

	ck_assert_int_eq(endpoints_of("http://u:" SECRET "@127.0.0.1:1", NULL, NULL, buf,
				      sizeof buf, &err), 0);
	ck_assert_str_eq(buf, "http://127.0.0.1:1");
	ck_assert_int_eq(endpoints_of("u:" SECRET "@127.0.0.1:1/,https://u:" SECRET
				      "@127.0.0.1:2/base", NULL, NULL, buf, sizeof buf, &err), 0);
	ck_assert_str_eq(buf, "http://127.0.0.1:1,https://127.0.0.1:2/base");
	/* The same user given both ways, with or without the password. */
	ck_assert_int_eq(endpoints_of("http://u:" SECRET "@127.0.0.1:1", "u", SECRET_PLAIN, buf,
				      sizeof buf, &err), 0);
	ck_assert_int_eq(endpoints_of("http://u@127.0.0.1:1", "u", SECRET_PLAIN, buf,
				      sizeof buf, &err), 0);
	ck_assert_str_eq(buf, "http://127.0.0.1:1");
	/* An '@' in the path is not a user. */
	ck_assert_int_eq(endpoints_of("http://127.0.0.1:1/a@b", NULL, NULL, buf, sizeof buf,
				      &err), 0);
	ck_assert_str_eq(buf, "http://127.0.0.1:1/a@b");
}
END_TEST

START_TEST(endpoint_userinfo_errors_never_show_the_password)
{
	static const struct {
		const char *endpoints, *user, *password, *needle;
	} bad[] = {
		{ "http://u:" SECRET "@127.0.0.1:1", "v", NULL, "differs from the configured user" },
		{ "http://u:" SECRET "@127.0.0.1:1", "u", "other", "password" },
		{ "http://u:" SECRET "@127.0.0.1:1,http://w:" SECRET "@127.0.0.1:2", NULL, NULL,
		  "different users" },
		{ "http://u:" SECRET "@127.0.0.1:1,http://127.0.0.1:2", NULL, NULL, NULL },
		{ "http://:" SECRET "@127.0.0.1:1", NULL, NULL, "empty user" },
		{ "http://u:" SECRET "@", NULL, NULL, "no host" },
		{ "http://u:s3cr%zzt@127.0.0.1:1", NULL, NULL, "%-escape" },
		{ "http://u:s3cr%00t@127.0.0.1:1", NULL, NULL, "%-escape" },
		{ "ftp://u:" SECRET "@127.0.0.1:1", NULL, NULL, "ftp://u:***@127.0.0.1:1" },
		{ "http://u:" SECRET "@[::1", NULL, NULL, "malformed URL \"http://u:***@[::1\"" },
	};
	char buf[1024];
	hr_error err;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = endpoints_of(bad[i].endpoints, bad[i].user, bad[i].password, buf,
				      sizeof buf, &err);

		if (!bad[i].needle) {
			/* An endpoint without credentials beside one with them:
			 * the one set applies to the cluster. */
			ck_assert_int_eq(rc, 0);
			continue;
		}
		ck_assert_msg(rc == HR_EINVAL, "%s: %d %s", bad[i].endpoints, rc, err.message);
		ck_assert_msg(strstr(err.message, bad[i].needle), "%s: %s", bad[i].endpoints,
			      err.message);
		assert_clean(err.message);
	}
}
END_TEST

START_TEST(endpoint_urls_curl_cannot_read_are_refused)
{
	static const char *const bad[] = {
		"http://[::1", "[::1", "http://[::1:2379", "https://[::1/v3",
		"http://127.0.0.1:99999", "http://127.0.0.1:2379,http://[::1",
	};
	char buf[1024];
	hr_error err;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = endpoints_of(bad[i], NULL, NULL, buf, sizeof buf, &err);

		ck_assert_msg(rc == HR_EINVAL, "%s: %d %s", bad[i], rc, err.message);
		ck_assert_msg(strstr(err.message, "endpoints: malformed URL"), "%s: %s", bad[i],
			      err.message);
	}
	ck_assert_int_eq(endpoints_of("http://[::1]:2379,[::1]:2380/v3", NULL, NULL, buf,
				      sizeof buf, &err), 0);
	ck_assert_str_eq(buf, "http://[::1]:2379,http://[::1]:2380/v3");
}
END_TEST

/* ---- through a client -------------------------------------------------------- */

struct logbuf {
	pthread_mutex_t mu;
	char text[65536];
};

static void log_fn(void *ud, hr_log_level level, const char *line)
{
	struct logbuf *l = ud;

	(void)level;
	pthread_mutex_lock(&l->mu);
	snprintf(l->text + strlen(l->text), sizeof l->text - strlen(l->text), "%s\n", line);
	pthread_mutex_unlock(&l->mu);
}

static struct logbuf logs = { PTHREAD_MUTEX_INITIALIZER, "" };

static hr_client *open_closed_port(const char *endpoints)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_etcd_config_init(&etcd);
	hr_client_config_init(&cfg);
	etcd.endpoints = endpoints;
	etcd.prefix = "/p/";
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 10;
	cfg.backoff_max_ms = 50;
	etcd.log = log_fn;
	etcd.log_userdata = &logs;
	etcd.log_level = HR_LOG_DEBUG;
	ck_assert_msg(hr_client_open(&etcd, &cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

START_TEST(client_status_and_logs_without_password)
{
	hr_client *c = open_closed_port("http://u:" SECRET "@127.0.0.1:1");
	hr_client_status st;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_client_wait_synced(c, 300, &err), HR_ETIMEDOUT);
	assert_clean(err.message);
	ck_assert_ptr_nonnull(strstr(err.message, "http://127.0.0.1:1"));
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	assert_clean(st.endpoint);
	hr_client_close(c);
	pthread_mutex_lock(&logs.mu);
	ck_assert_ptr_nonnull(strstr(logs.text, "endpoint=http://127.0.0.1:1"));
	assert_clean(logs.text);
	pthread_mutex_unlock(&logs.mu);
}
END_TEST

START_TEST(wait_synced_times_out_with_the_cause)
{
	hr_client *c = open_closed_port("127.0.0.1:1");
	hr_error err = { 0 };
	int64_t t0 = now_ms(), ms;
	long long since = 0;

	/* 0: a check that does not wait. */
	ck_assert_int_eq(hr_client_wait_synced(c, 0, &err), HR_ETIMEDOUT);
	ck_assert_int_lt(now_ms() - t0, 100);
	ck_assert_ptr_nonnull(strstr(err.message, "no ring after"));

	/* Several short waits: the message counts from the open, and names
	 * the last failure once. */
	for (int i = 0; i < 4; i++) {
		t0 = now_ms();
		ck_assert_int_eq(hr_client_wait_synced(c, 100, &err), HR_ETIMEDOUT);
		ms = now_ms() - t0;
		ck_assert_int_ge(ms, 90);
		ck_assert_int_lt(ms, 1000);
	}
	ck_assert_int_eq(sscanf(err.message, "no ring after %lld ms", &since), 1);
	ck_assert_int_ge(since, 390);
	ck_assert_msg(strstr(err.message, "ms: http://127.0.0.1:1: "), "%s", err.message);
	ck_assert_ptr_null(strstr(strstr(err.message, "ms:") + 3, "no ring after"));
	ck_assert_int_eq(err.code, HR_ETIMEDOUT);

	ck_assert_int_eq(hr_client_wait_synced(c, -1, &err), HR_EINVAL);
	ck_assert_int_eq(hr_client_wait_synced(NULL, 0, &err), HR_EINVAL);
	hr_client_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("etcd");
	TCase *tc = tcase_create("endpoints");

	tcase_add_test(tc, endpoint_userinfo_is_taken_and_stripped);
	tcase_add_test(tc, endpoint_userinfo_errors_never_show_the_password);
	tcase_add_test(tc, endpoint_urls_curl_cannot_read_are_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("client");
	tcase_add_test(tc, client_status_and_logs_without_password);
	tcase_add_test(tc, wait_synced_times_out_with_the_cause);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
