/*
 * test_etcd.c - hr_client_wait_synced() without an etcd: every endpoint
 * here is a closed loopback port.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hashring.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
	hr_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_config_init(&cfg);
	cfg.endpoints = endpoints;
	cfg.prefix = "/p/";
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 10;
	cfg.backoff_max_ms = 50;
	cfg.log = log_fn;
	cfg.log_userdata = &logs;
	cfg.log_level = HR_LOG_DEBUG;
	ck_assert_msg(hr_client_open(&cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

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
	TCase *tc = tcase_create("client");

	tcase_add_test(tc, wait_synced_times_out_with_the_cause);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
