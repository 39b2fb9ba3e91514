/* SPDX-License-Identifier: MIT */
/* buffer.c - appending with doubling capacity. */
#include "buffer.h"

#include "hashring.h"

#include <stdlib.h>
#include <string.h>

int hr__buffer_append(hr__buffer *b, const void *p, size_t n, size_t max)
{
	if (max && n > max - b->len)
		return HR_ELIMIT;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;
		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return HR_ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

void hr__buffer_free(hr__buffer *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
