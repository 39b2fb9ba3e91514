/* SPDX-License-Identifier: MIT */
/*
 * test_serve_json.c - serve_json_number(), the writer of every double in
 * `hashring serve`'s JSON (src/cli/serve/serve_json.c, linked in): null for
 * NaN and infinities, valid JSON numbers of bounded length for every other
 * double, the digits asked for, and the exact ones reading back.
 */
#define _GNU_SOURCE
#include "hrt_check.h"
#include "hrt_rand.h"

#include "serve.h"

#include <cjson/cJSON.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x as serve_json_number() writes it (valid until the next call). */
static const char *num(double x, int digits)
{
	static char *text;
	size_t len;
	FILE *f;

	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	serve_json_number(f, x, digits);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

/* RFC 8259's number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int json_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return 0;
	if (*p == '.') {
		if (!(*++p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

/* The significant digits of a number as written. */
static int digits_of(const char *s)
{
	int n = 0, lead = 1;

	for (; *s && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (lead && *s == '0')
			continue;
		lead = 0;
		n++;
	}
	return n;
}

/* What every finite x written with `digits` must be: a JSON number,
 * cJSON's too, of at most `digits` significant digits and 24 bytes, as
 * close to x as that many digits allow, x itself when exact. */
static void check_finite(double x, int digits)
{
	const char *s = num(x, digits);
	double back = strtod(s, NULL);
	cJSON *j;

	ck_assert_msg(json_number(s), "%a with %d digits: \"%s\" is no JSON number", x, digits, s);
	ck_assert_msg(strlen(s) <= 24, "%a with %d digits: \"%s\" is too long", x, digits, s);
	/* More digits only where fewer would round past DBL_MAX. */
	if (digits_of(s) > digits) {
		char fewer[512]; /* the compiler cannot bound the precision */

		snprintf(fewer, sizeof fewer, "%.*g", digits, x);
		ck_assert_msg(isinf(strtod(fewer, NULL)), "%a with %d digits: \"%s\"", x, digits, s);
	}
	ck_assert_msg(isfinite(back), "%a with %d digits: \"%s\" reads back infinite", x, digits, s);
	if (digits == SERVE_DIGITS_EXACT)
		ck_assert_msg(back == x, "%a: \"%s\" reads back as %a", x, s, back);
	else
		/* Half a unit of the last digit, and the double nearest it. */
		ck_assert_msg(fabs(back - x) <= fabs(x) * (0.5 * pow(10, 1 - digits) + DBL_EPSILON) +
					       DBL_TRUE_MIN,
			      "%a with %d digits: \"%s\"", x, digits, s);
	j = cJSON_Parse(s);
	ck_assert_msg(cJSON_IsNumber(j), "cJSON does not read \"%s\"", s);
	cJSON_Delete(j);
}

static const int all_digits[] = { 1, 3, SERVE_DIGITS_SHARE, SERVE_DIGITS_PLACE, SERVE_DIGITS_RATE,
				   15, 16, SERVE_DIGITS_EXACT };
#define ALL_DIGITS (sizeof all_digits / sizeof all_digits[0])

START_TEST(not_finite_is_null)
{
	for (size_t d = 0; d < ALL_DIGITS; d++) {
		ck_assert_str_eq(num(NAN, all_digits[d]), "null");
		ck_assert_str_eq(num(-NAN, all_digits[d]), "null");
		ck_assert_str_eq(num(INFINITY, all_digits[d]), "null");
		ck_assert_str_eq(num(-INFINITY, all_digits[d]), "null");
	}
	/* What a subnormal fair share used to make of a load. */
	ck_assert_str_eq(num(0.25 / 4.9e-324, SERVE_DIGITS_SHARE), "null");
}
END_TEST

/* The forms the page and scripts see. */
START_TEST(forms)
{
	ck_assert_str_eq(num(0, SERVE_DIGITS_EXACT), "0");
	ck_assert_str_eq(num(1, SERVE_DIGITS_EXACT), "1");
	ck_assert_str_eq(num(0.1, SERVE_DIGITS_EXACT), "0.1");
	ck_assert_str_eq(num(2.5, SERVE_DIGITS_EXACT), "2.5");
	ck_assert_str_eq(num(1e-6, SERVE_DIGITS_EXACT), "1e-06");
	ck_assert_str_eq(num(1e290, SERVE_DIGITS_EXACT), "1e+290");
	ck_assert_str_eq(num(1.0 / 3, SERVE_DIGITS_EXACT), "0.3333333333333333");
	ck_assert_str_eq(num(0.1 + 0.2, SERVE_DIGITS_EXACT), "0.30000000000000004");
	ck_assert_str_eq(num(DBL_MAX, SERVE_DIGITS_EXACT), "1.7976931348623157e+308");
	ck_assert_str_eq(num(-DBL_MAX, SERVE_DIGITS_EXACT), "-1.7976931348623157e+308");
	ck_assert_str_eq(num(1.0 / 3, SERVE_DIGITS_SHARE), "0.333333");
	ck_assert_str_eq(num(2.0 / 3, SERVE_DIGITS_SHARE), "0.666667");
	ck_assert_str_eq(num(1, SERVE_DIGITS_SHARE), "1");
	ck_assert_str_eq(num(0.5, SERVE_DIGITS_PLACE), "0.5");
	ck_assert_str_eq(num(0.12345678, SERVE_DIGITS_PLACE), "0.1234568");
	ck_assert_str_eq(num(1234567.891, SERVE_DIGITS_RATE), "1234567.89");
	ck_assert_str_eq(num(12.3456, SERVE_DIGITS_RATE), "12.3456");
	/* A share of 1e-12 (weight 1e-6 beside 1e6) is not 0.000000, and a
	 * load of 3e288 no 300 digits. */
	ck_assert_str_eq(num(1e-12, SERVE_DIGITS_SHARE), "1e-12");
	ck_assert_str_eq(num(1.0 / 3 * 1e-290, SERVE_DIGITS_SHARE), "3.33333e-291");
	ck_assert_str_eq(num(3e288, SERVE_DIGITS_SHARE), "3e+288");
	ck_assert_str_eq(num(4.9e-324, SERVE_DIGITS_SHARE), "4.94066e-324");
	ck_assert_str_eq(num(DBL_MAX, 1), "1.79769e+308");
	ck_assert_str_eq(num(DBL_MAX, SERVE_DIGITS_SHARE), "1.79769e+308");
	/* Digits outside 1 to 17 are taken as the nearest of them. */
	ck_assert_str_eq(num(1.0 / 3, 0), "0.3");
	ck_assert_str_eq(num(1.0 / 3, -5), "0.3");
	ck_assert_str_eq(num(1.0 / 3, 40), "0.3333333333333333");
}
END_TEST

/* Edges of the doubles, and random ones of every exponent, shares of the
 * circle and rates: valid, bounded, close, exact where asked. */
START_TEST(every_double)
{
	static const double edges[] = { 0.0, -0.0, DBL_MIN, -DBL_MIN, 4.9e-324, DBL_MAX,
					1 - DBL_EPSILON, 1 + DBL_EPSILON, 0.1, 1e-6, 1e290,
					9.999999999999999e22, 5e-324, 123456789012345678.0 };
	uint64_t seed = 20261207;

	for (size_t d = 0; d < ALL_DIGITS; d++)
		for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
			check_finite(edges[i], all_digits[d]);
	for (int i = 0; i < 2000; i++) {
		uint64_t bits = splitmix64(&seed);
		double x, share = (double)(splitmix64(&seed) >> 11) * 0x1p-53;
		double rate = share * 1e7;

		memcpy(&x, &bits, sizeof x);
		for (size_t d = 0; d < ALL_DIGITS; d++) {
			if (isfinite(x))
				check_finite(x, all_digits[d]);
			else
				ck_assert_str_eq(num(x, all_digits[d]), "null");
			check_finite(share, all_digits[d]);
			check_finite(rate, all_digits[d]);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("serve_json");
	TCase *tc = tcase_create("numbers");

	tcase_add_test(tc, not_finite_is_null);
	tcase_add_test(tc, forms);
	tcase_add_test(tc, every_double);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
