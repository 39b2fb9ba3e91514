/* SPDX-License-Identifier: MIT */
/*
 * serve_json.c - the numbers `hashring serve` writes into its JSON.  Every
 * double of every answer goes through serve_json_number(), so that each
 * answer is valid JSON of a sane length whatever the records it was
 * computed from hold: JSON has no infinity and no NaN (a share over a
 * subnormal fair share once gave "inf"), and a fixed number of decimals
 * writes a large value with hundreds of digits and a small one as 0.
 */
#include "serve.h"

#include <math.h>
#include <stdlib.h>

void serve_json_number(FILE *out, double x, int digits)
{
	/* "%.17g" of a double: sign, 17 digits, point, "e-308", NUL. */
	char text[32];
	int p;

	if (!isfinite(x)) {
		fputs("null", out);
		return;
	}
	if (digits < 1)
		digits = 1;
	if (digits > SERVE_DIGITS_EXACT)
		digits = SERVE_DIGITS_EXACT;
	/* 15 digits read most doubles back already; %g drops the zeros at
	 * the end, so 0.1 stays 0.1.  Rounded up past DBL_MAX, a number would
	 * read back as infinite: more digits then.  The C locale's decimal
	 * point: the program sets LC_CTYPE alone (cli_locale_init). */
	for (p = digits < 15 ? digits : 15;; p++) {
		double back;

		snprintf(text, sizeof text, "%.*g", p, x);
		back = strtod(text, NULL);
		if (back == x || (p >= digits && isfinite(back)) || p >= SERVE_DIGITS_EXACT)
			break;
	}
	fputs(text, out);
}
