/* SPDX-License-Identifier: MIT */
/* base64.h - standard padded base64, as etcd's JSON gateway requires for
 * every bytes field (internal). */
#ifndef HR_BASE64_H
#define HR_BASE64_H

#include <stddef.h>

/* Bytes needed to encode `n` bytes, terminating NUL included. */
size_t hr__base64_encoded_size(size_t n);

/* Encodes `n` bytes into `out` (hr__base64_encoded_size(n) bytes). */
void hr__base64_encode(const void *in, size_t n, char *out);

/*
 * Decodes `n` characters of padded base64 into a malloc'd buffer with a NUL
 * after the data (so text values can be used as strings).  Returns 0 and
 * sets *out and *out_len, or -1 for invalid input or out of memory.
 */
int hr__base64_decode(const char *in, size_t n, char **out, size_t *out_len);

#endif
