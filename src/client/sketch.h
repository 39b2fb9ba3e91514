/* SPDX-License-Identifier: MIT */
/* sketch.h - a Space-Saving heavy-hitter summary over sampled lookups
 * (internal).
 *
 * Space-Saving (Metwally, Agrawal, El Abbadi, 2005) keeps HR__SKETCH_CAP
 * counters.  A key it monitors adds to its own; a new key takes the
 * smallest counter over, its count becoming that count plus one, the old
 * count being its error bound.  Every key more frequent than
 * total / HR__SKETCH_CAP is monitored, and a monitored key's count
 * overestimates its true one by at most its error.  Keys are told apart
 * by a 64-bit id (the ring position of the key: hashed already), and up
 * to HR_HOT_KEY_MAX of their bytes are kept for the report.  A min-heap
 * finds the smallest counter, an open-addressed table a key's counter:
 * an update is O(log HR__SKETCH_CAP).  Not thread safe: one writer.
 */
#ifndef HR_SKETCH_H
#define HR_SKETCH_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

#define HR__SKETCH_CAP 128
#define HR__SKETCH_TABLE 256	/* a power of two, at least twice CAP */

typedef struct hr__sketch_entry {
	uint64_t id;
	uint64_t count;		/* at least the key's true count */
	uint64_t err;		/* count - err is at most the true count */
	size_t len;		/* the key's length */
	unsigned char key[HR_HOT_KEY_MAX];	/* its first bytes */
} hr__sketch_entry;

typedef struct hr__sketch {
	size_t n;			/* entries in use */
	uint64_t total;			/* keys added */
	hr__sketch_entry e[HR__SKETCH_CAP];
	uint8_t heap[HR__SKETCH_CAP];	/* entry numbers, min count first */
	uint8_t at[HR__SKETCH_CAP];	/* an entry's place in heap[] */
	int16_t table[HR__SKETCH_TABLE];/* entry number by id, -1: free */
} hr__sketch;

_Static_assert(HR__SKETCH_CAP <= 256, "entry numbers are bytes");

void hr__sketch_clear(hr__sketch *s);

/* Counts one occurrence of the key `id` (its bytes `key`, `len`). */
void hr__sketch_add(hr__sketch *s, uint64_t id, const void *key, size_t len);

#endif
