/* SPDX-License-Identifier: MIT */
/* escape.h - arbitrary bytes written as the inside of a double-quoted JSON
 * or logfmt string (internal; the tools of src/cli/ may use it too); where
 * valid UTF-8 ends.
 *
 * One escaping for log lines and the CLI's JSON, so that any JSON or logfmt
 * parser reads back exactly what was written:
 *   - valid UTF-8 passes through as it is (no overlong forms, no
 *     surrogates, nothing above U+10FFFF);
 *   - '"' and '\' get a backslash; \n, \r and \t are written so; every
 *     other control byte and DEL is \u00XX;
 *   - a byte that is not part of valid UTF-8 is \udcXX, XX being the byte
 *     (0x80-0xff): the lone low surrogate of PEP 383's "surrogateescape",
 *     so that Python and JavaScript decoders can recover the bytes
 *     exactly, and other decoders see U+FFFD instead of failing.
 */
#ifndef HR_ESCAPE_H
#define HR_ESCAPE_H

#include <stddef.h>

/* Longest escape of one input unit (a UTF-8 sequence or a byte). */
#define HR__ESCAPE_UNIT_MAX 6

/*
 * Escapes the unit at the start of s[0..n) (n > 0) into `out` (not
 * NUL-terminated) and returns the bytes written there; *used gets the input
 * bytes consumed (1 to 4).
 */
size_t hr__escape_unit(const char *s, size_t n, size_t *used,
		       char out[HR__ESCAPE_UNIT_MAX]);

/* Length of the valid UTF-8 sequence at the start of s[0..n) (n > 0): 1
 * for an ASCII byte, 2 to 4, or 0 when no valid sequence starts there.
 * (The Prometheus exposition, which must be UTF-8, needs it too.) */
size_t hr__utf8_len(const char *s, size_t n);

/* Whether a logfmt value must be quoted: it is empty, or holds a byte
 * outside 0x21-0x7e, or '"', '=' or '\'. */
int hr__logfmt_needs_quotes(const char *s, size_t n);

/* The value of the hex digit c (either case), or -1 when c is none; for the
 * %XX escapes of endpoint URLs and of metadump's keys. */
int hr__hex_digit(char c);

#endif
