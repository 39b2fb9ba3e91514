/* SPDX-License-Identifier: MIT */
/* escape.c - JSON and logfmt string escaping of arbitrary bytes. */
#include "escape.h"

static const char hex[] = "0123456789abcdef";

/* Length of the valid UTF-8 sequence at s[0..n) that starts with a byte
 * >= 0x80, or 0 if there is none (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */

	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return len;
}

static size_t u_escape(char *out, unsigned hi_byte, unsigned lo_byte)
{
	out[0] = '\\';
	out[1] = 'u';
	out[2] = hex[hi_byte >> 4];
	out[3] = hex[hi_byte & 15];
	out[4] = hex[lo_byte >> 4];
	out[5] = hex[lo_byte & 15];
	return 6;
}

size_t hr__escape_unit(const char *s, size_t n, size_t *used,
		       char out[HR__ESCAPE_UNIT_MAX])
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char c = u[0];
	size_t len;

	*used = 1;
	switch (c) {
	case '"':
	case '\\':
		out[0] = '\\';
		out[1] = (char)c;
		return 2;
	case '\n':
		out[0] = '\\';
		out[1] = 'n';
		return 2;
	case '\r':
		out[0] = '\\';
		out[1] = 'r';
		return 2;
	case '\t':
		out[0] = '\\';
		out[1] = 't';
		return 2;
	}
	if (c < 0x20 || c == 0x7f)
		return u_escape(out, 0x00, c);
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	len = utf8_len(u, n);
	if (!len)
		return u_escape(out, 0xdc, c);
	for (size_t i = 0; i < len; i++)
		out[i] = s[i];
	*used = len;
	return len;
}

size_t hr__utf8_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	return u[0] < 0x80 ? 1 : utf8_len(u, n);
}

int hr__logfmt_needs_quotes(const char *s, size_t n)
{
	if (n == 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '=' || c == '\\')
			return 1;
	}
	return 0;
}

int hr__hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
