/* SPDX-License-Identifier: MIT */
/* view_batch.h - batch searches of a ring's two views, software-pipelined
 * (internal; the entry points are hr_ring_lookup_batch(), ring_batch.c,
 * and the client's). */
#ifndef HR_VIEW_BATCH_H
#define HR_VIEW_BATCH_H

#include "view.h"

/* The largest pipeline distance hr__views_batch() takes. */
#define HR__BATCH_DIST_MAX 32

/* A key's position on the circle (placement.h's key_pos); NULL: the native
 * key hash, inline. */
typedef uint64_t (*hr__key_pos_fn)(const void *key, size_t len);

/*
 * The owners of keys[0 .. n) (lens[i] bytes each) in write view `w` and
 * read view `r` of one ring, not both empty, into out[] (slots, HR_NO_NODE
 * for an empty view): key j is hashed while key j - dist has its points
 * prefetched and key j - 2 * dist is answered (0: one key at a time, no
 * overlap; at most HR__BATCH_DIST_MAX).  Answers as view_find_slot().
 */
void hr__views_batch(const struct view *w, const struct view *r, hr__key_pos_fn key_pos,
		     const void *const *keys, const size_t *lens, size_t n,
		     hr_batch_owner *out, size_t dist);

#endif
