/* SPDX-License-Identifier: MIT */
/* buffer.h - a growable byte buffer with a bound (internal): what a
 * transfer collects, or a line not yet complete. */
#ifndef HR_BUFFER_H
#define HR_BUFFER_H

#include <stddef.h>

typedef struct hr__buffer {
	char *data;        /* NUL-terminated after `len` bytes once allocated */
	size_t len, cap;
} hr__buffer;

/* Appends `n` bytes.  HR_ELIMIT when `len` would pass `max` (0: no
 * bound), HR_ENOMEM; the buffer is unchanged then. */
int hr__buffer_append(hr__buffer *b, const void *p, size_t n, size_t max);

/* Frees the bytes and empties the buffer.  Accepts NULL. */
void hr__buffer_free(hr__buffer *b);

#endif
