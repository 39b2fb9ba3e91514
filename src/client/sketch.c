/* SPDX-License-Identifier: MIT */
/* sketch.c - Space-Saving over sampled keys (see sketch.h). */
#include "sketch.h"

#include <string.h>

void hr__sketch_clear(hr__sketch *s)
{
	s->n = 0;
	s->total = 0;
	memset(s->table, 0xff, sizeof s->table);
}

static size_t home(uint64_t id)
{
	/* Ids are hashes; the top bits mix best for any placement's
	 * positions (ketama's are 32-bit: fold them in). */
	return (size_t)((id ^ (id >> 32)) * 0x9e3779b97f4a7c15ull >> 56) &
	       (HR__SKETCH_TABLE - 1);
}

static int table_find(const hr__sketch *s, uint64_t id, size_t *slot)
{
	size_t i = home(id);

	for (;;) {
		int16_t k = s->table[i];

		if (k < 0) {
			*slot = i;
			return -1;
		}
		if (s->e[k].id == id) {
			*slot = i;
			return k;
		}
		i = (i + 1) & (HR__SKETCH_TABLE - 1);
	}
}

/* Linear probing's deletion: later entries of the run move back into the
 * hole when their home does not lie between the hole and them. */
static void table_remove(hr__sketch *s, size_t hole)
{
	size_t i = hole;

	for (;;) {
		i = (i + 1) & (HR__SKETCH_TABLE - 1);
		int16_t k = s->table[i];

		if (k < 0)
			break;
		size_t h = home(s->e[k].id);
		/* Movable unless h is cyclically in (hole, i]. */
		if ((i > hole) ? (h <= hole || h > i) : (h <= hole && h > i)) {
			s->table[hole] = k;
			hole = i;
		}
	}
	s->table[hole] = -1;
}

static void heap_swap(hr__sketch *s, size_t a, size_t b)
{
	uint8_t t = s->heap[a];

	s->heap[a] = s->heap[b];
	s->heap[b] = t;
	s->at[s->heap[a]] = (uint8_t)a;
	s->at[s->heap[b]] = (uint8_t)b;
}

/* Restores the heap below place `i`, whose count grew. */
static void heap_down(hr__sketch *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < s->n && s->e[s->heap[l]].count < s->e[s->heap[m]].count)
			m = l;
		if (l + 1 < s->n && s->e[s->heap[l + 1]].count < s->e[s->heap[m]].count)
			m = l + 1;
		if (m == i)
			return;
		heap_swap(s, i, m);
		i = m;
	}
}

static void keep_key(hr__sketch_entry *e, const void *key, size_t len)
{
	e->len = len;
	memcpy(e->key, key, len < HR_HOT_KEY_MAX ? len : HR_HOT_KEY_MAX);
}

void hr__sketch_add(hr__sketch *s, uint64_t id, const void *key, size_t len)
{
	size_t slot;
	int k = table_find(s, id, &slot);

	s->total++;
	if (k >= 0) {
		s->e[k].count++;
		heap_down(s, s->at[k]);
		return;
	}
	if (s->n < HR__SKETCH_CAP) {
		/* The new entry goes at the heap's end; its count of 1 is
		 * the least there is, so it rises past every larger one. */
		k = (int)s->n;
		s->e[k] = (hr__sketch_entry){ .id = id, .count = 1 };
		keep_key(&s->e[k], key, len);
		s->heap[s->n] = (uint8_t)k;
		s->at[k] = (uint8_t)s->n;
		s->n++;
		for (size_t i = s->at[k]; i > 0; i = (i - 1) / 2) {
			size_t p = (i - 1) / 2;

			if (s->e[s->heap[p]].count <= s->e[s->heap[i]].count)
				break;
			heap_swap(s, i, p);
		}
		s->table[slot] = (int16_t)k;
		return;
	}
	/* Full: the smallest counter is taken over. */
	k = s->heap[0];
	size_t old;

	table_find(s, s->e[k].id, &old);
	table_remove(s, old);
	s->e[k].err = s->e[k].count;
	s->e[k].count++;
	s->e[k].id = id;
	keep_key(&s->e[k], key, len);
	table_find(s, id, &slot);
	s->table[slot] = (int16_t)k;
	heap_down(s, 0);
}
