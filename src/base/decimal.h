/* SPDX-License-Identifier: MIT */
/* decimal.h - an unsigned integer in decimal (internal): the text of a
 * vnode's point name and of a token, written often enough in a ring build
 * that snprintf's cost shows. */
#ifndef HR_DECIMAL_H
#define HR_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* Writes `v` in decimal at `buf` (room for its digits: 20 at most), no
 * sign, no leading zero, no NUL; returns the number of bytes written. */
static inline size_t hr__decimal(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

#endif
