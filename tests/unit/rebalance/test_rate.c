/* SPDX-License-Identifier: MIT */
/*
 * test_rate.c - the rebalancer's rate cap and its reading of memcached's
 * metadump lines, offline.  The cap runs on a fake clock: a copier that
 * always has a key ready takes one as soon as the buckets let it (plus a
 * random scheduling delay), and over every 1 s window the keys and bytes
 * that passed stay within 10% of the cap, above and below.  The real-clock
 * wait built on it waits, and stops when told.
 */
#include "hrt_check.h"
#include "hrt_rand.h"

#include "memcache.h"
#include "rate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull

typedef struct sent {
	uint64_t at_ns;
	size_t bytes;
} sent;

/* Runs a greedy copier for `seconds` of fake time: each key of a random
 * size in [min_bytes, max_bytes] goes as soon as the cap allows, plus a
 * random 0..jitter_ns late (a sleep's overshoot).  Returns the keys sent. */
static sent *run(hr__rate *r, double seconds, size_t min_bytes, size_t max_bytes,
		 uint64_t jitter_ns, uint64_t seed, size_t *n_out)
{
	uint64_t now = 1000 * NS, end = now + (uint64_t)(seconds * NS), rng = seed;
	size_t n = 0, cap = 1024;
	sent *s = malloc(cap * sizeof *s);

	hr__rate_init(r, r->keys.rate, r->bytes.rate, now);
	while (now < end) {
		size_t bytes = min_bytes + (size_t)(splitmix64(&rng) % (max_bytes - min_bytes + 1));
		uint64_t w;

		while ((w = hr__rate_wait_ns(r, now, bytes)) > 0)
			now += w + (jitter_ns ? splitmix64(&rng) % jitter_ns : 0);
		hr__rate_take(r, now, bytes);
		if (n == cap)
			s = realloc(s, (cap *= 2) * sizeof *s);
		s[n++] = (sent){ now, bytes };
	}
	*n_out = n;
	return s;
}

/* The fewest and most keys and bytes in any window [t, t + 1 s) starting
 * at a send, among the windows that end before the last send. */
static void windows(const sent *s, size_t n, double *min_keys, double *max_keys,
		    double *min_bytes, double *max_bytes)
{
	size_t j = 0;
	double bytes = 0;

	*min_keys = *min_bytes = 1e300;
	*max_keys = *max_bytes = 0;
	for (size_t i = 0; i < n && s[i].at_ns + NS <= s[n - 1].at_ns; i++) {
		while (j < n && s[j].at_ns < s[i].at_ns + NS)
			bytes += (double)s[j++].bytes;
		if ((double)(j - i) < *min_keys)
			*min_keys = (double)(j - i);
		if ((double)(j - i) > *max_keys)
			*max_keys = (double)(j - i);
		if (bytes < *min_bytes)
			*min_bytes = bytes;
		if (bytes > *max_bytes)
			*max_bytes = bytes;
		bytes -= (double)s[i].bytes;
	}
}

/* The key cap binds (small values): every 1 s window holds 90..110% of it. */
START_TEST(key_cap_holds_in_every_window)
{
	static const double caps[] = { 10, 100, 1000, 25000 };

	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
		hr__rate r = { .keys.rate = caps[c] };
		double kmin, kmax, bmin, bmax;
		size_t n;
		sent *s = run(&r, 20, 10, 100, 2000000, 7 + c, &n);

		windows(s, n, &kmin, &kmax, &bmin, &bmax);
		fprintf(stderr, "cap %.0f keys/s: 1 s windows of %.0f..%.0f keys (%+.1f%%..%+.1f%%)\n",
			caps[c], kmin, kmax, 100 * (kmin / caps[c] - 1), 100 * (kmax / caps[c] - 1));
		ck_assert_msg(kmax <= 1.1 * caps[c] && kmin >= 0.9 * caps[c],
			      "cap %.0f keys/s: windows of %.0f..%.0f keys", caps[c], kmin, kmax);
		free(s);
	}
}
END_TEST

/* The byte cap binds: with values up to a twentieth of it every 1 s window
 * holds 90..110% of it; with values up to a tenth (larger than the bucket,
 * which then goes into debt) never more than 110%. */
START_TEST(byte_cap_holds_in_every_window)
{
	hr__rate r = { .keys.rate = 100000, .bytes.rate = 1000000 };
	double kmin, kmax, bmin, bmax;
	size_t n;
	sent *s = run(&r, 30, 100, 50000, 1000000, 3, &n);

	windows(s, n, &kmin, &kmax, &bmin, &bmax);
	fprintf(stderr, "cap 1000000 B/s: 1 s windows of %.0f..%.0f bytes\n", bmin, bmax);
	ck_assert_msg(bmax <= 1.1e6 && bmin >= 0.9e6, "windows of %.0f..%.0f bytes", bmin, bmax);
	ck_assert_msg(kmax < 100000, "the key cap did not bind: %.0f keys", kmax);
	free(s);

	s = run(&r, 30, 100, 100000, 1000000, 4, &n);
	windows(s, n, &kmin, &kmax, &bmin, &bmax);
	ck_assert_msg(bmax <= 1.1e6, "windows of up to %.0f bytes", bmax);
	free(s);
}
END_TEST

/* A value larger than the byte bucket still goes (after a full bucket),
 * and the average stays at the cap. */
START_TEST(large_values_pass_and_average_to_the_cap)
{
	hr__rate r = { .bytes.rate = 100000 };
	size_t n;
	sent *s = run(&r, 60, 20000, 20000, 0, 5, &n);
	double secs = (double)(s[n - 1].at_ns - s[0].at_ns) / NS;
	double rate = (double)(n - 1) * 20000 / secs;

	ck_assert_msg(rate <= 1.1e5 && rate >= 0.9e5, "%.0f B/s", rate);
	free(s);
}
END_TEST

/* No cap: never a wait. */
START_TEST(zero_is_no_cap)
{
	hr__rate r;

	hr__rate_init(&r, 0, 0, 5);
	for (int i = 0; i < 100000; i++) {
		ck_assert_uint_eq(hr__rate_wait_ns(&r, 5, 1 << 20), 0);
		hr__rate_take(&r, 5, 1 << 20);
	}
	hr__rate_init(&r, -1, -1, 5);
	ck_assert_uint_eq(hr__rate_wait_ns(&r, 5, 1), 0);
}
END_TEST

/* A clock that goes back counts as no time, never as a refill. */
START_TEST(clock_going_back_refills_nothing)
{
	hr__rate r;

	hr__rate_init(&r, 10, 0, 10 * NS);
	hr__rate_take(&r, 10 * NS, 1);
	ck_assert_uint_gt(hr__rate_wait_ns(&r, 10 * NS, 1), 0);
	ck_assert_uint_gt(hr__rate_wait_ns(&r, 1 * NS, 1), 0);
	ck_assert_uint_eq(hr__rate_wait_ns(&r, 10 * NS + NS / 10 + 1, 1), 0);
}
END_TEST

/* The real-clock wait: it waits as long as the cap says, and not at all
 * once the stop flag is up (then it takes nothing). */
START_TEST(throttle_waits_and_stops)
{
	atomic_int stop = 0;
	hr__rate r;
	uint64_t t0;
	double tokens;

	hr__rate_init(&r, 20, 0, hr__rate_now_ns());
	hr__rate_take(&r, hr__rate_now_ns(), 0); /* the one key the bucket holds */
	t0 = hr__rate_now_ns();
	hr__rate_throttle(&r, 0, &stop);
	ck_assert_uint_ge(hr__rate_now_ns() - t0, 40 * 1000000ull); /* 1/20 s */
	stop = 1;
	tokens = r.keys.tokens;
	t0 = hr__rate_now_ns();
	hr__rate_throttle(&r, 0, &stop);
	ck_assert_uint_lt(hr__rate_now_ns() - t0, 20 * 1000000ull);
	ck_assert(r.keys.tokens >= tokens); /* refilled a little, nothing taken */
	hr__rate_throttle(NULL, 5, NULL);
}
END_TEST

/* Metadump lines as memcached 1.6.18 prints them, and broken ones. */
START_TEST(dump_lines)
{
	static const char ok[] = "key=a%2520b%C3%A9 exp=1796131638 la=1796131538 cas=7 "
				 "fetch=no cls=1 size=71";
	static const char *const bad[] = {
		"exp=-1 cas=1",          /* no key */
		"key= exp=-1",           /* empty key */
		"key=a%2 exp=-1",        /* short escape */
		"key=a%zz exp=-1",       /* not hex */
		"key=a exp=soon",        /* not a number */
		"key=a cas=-3",          /* negative cas */
		"key=a size=99999999999999999999999", /* overflows */
	};
	hr__mc_item it;
	hr_error err = { 0 };
	char longkey[300 * 3 + 8];

	ck_assert_int_eq(hr__mc_parse_dump_line(ok, strlen(ok), &it, &err), 0);
	ck_assert_uint_eq(it.key_len, 7);
	ck_assert(!memcmp(it.key, "a%20b\xc3\xa9", 7));
	ck_assert_int_eq(it.exp, 1796131638);
	ck_assert_uint_eq(it.cas, 7);
	ck_assert_uint_eq(it.size, 71);
	ck_assert_int_eq(hr__mc_parse_dump_line("key=x exp=-1", 12, &it, &err), 0);
	ck_assert_int_eq(it.exp, -1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		ck_assert_msg(hr__mc_parse_dump_line(bad[i], strlen(bad[i]), &it, &err) == HR_EPARSE,
			      "accepted \"%s\"", bad[i]);
		hrt_assert_clean_message(err.message);
	}
	strcpy(longkey, "key=");
	for (int i = 0; i < 251; i++)
		strcat(longkey, "%41");
	ck_assert_int_eq(hr__mc_parse_dump_line(longkey, strlen(longkey), &it, &err), HR_EPARSE);
	ck_assert_ptr_nonnull(strstr(err.message, "over 250 bytes"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rate");
	TCase *tc = tcase_create("rate");

	tcase_add_test(tc, key_cap_holds_in_every_window);
	tcase_add_test(tc, byte_cap_holds_in_every_window);
	tcase_add_test(tc, large_values_pass_and_average_to_the_cap);
	tcase_add_test(tc, zero_is_no_cap);
	tcase_add_test(tc, clock_going_back_refills_nothing);
	tcase_add_test(tc, throttle_waits_and_stops);
	tcase_add_test(tc, dump_lines);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
