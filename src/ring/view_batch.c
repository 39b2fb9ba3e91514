/* SPDX-License-Identifier: MIT */
/*
 * view_batch.c - batch searches: the owners of many keys in a ring's two
 * views, software-pipelined for each layout (view.h).
 *
 * On a ring that does not fit the caches a single lookup is its cache
 * misses, one after the other: the key's index bucket, then the points the
 * bucket names and their node numbers.  A batch keeps three keys in
 * flight, `dist` apart: it hashes key j and prefetches its buckets; reads
 * the bucket of key j - dist, which has arrived by then, and prefetches
 * that key's points and node numbers; and finishes key j - 2 * dist, whose
 * lines are in cache.  The misses of 2 * dist keys overlap.  The search is
 * view.h's own (view_scan), so the answers are view_find_slot()'s.  A table
 * view is searched as a flat one (its slots are points at their
 * positions); a scores view has nothing to prefetch.
 */
#include "view_batch.h"

/* The keys in flight, by their index modulo SLOTS (> 2 * HR__BATCH_DIST_MAX). */
#define SLOTS 128u
_Static_assert(SLOTS > 2 * HR__BATCH_DIST_MAX, "slots hold every key in flight");

struct slot {
	uint64_t pos;
	uint32_t start[2];	/* per view searched: its bucket's first point */
};

/* A key's position: `key_pos`'s, or the native hash, inline. */
static inline __attribute__((always_inline)) uint64_t
key_position(hr__key_pos_fn key_pos, const void *key, size_t len)
{
	if (__builtin_expect(key_pos != NULL, 0))
		return key_pos(key, len);
	return hr__xxh3_key(key, len);
}

/* Always inlined: GCC takes a function that only prefetches for one
 * without side effects, and deletes its calls. */
static inline __attribute__((always_inline)) void
prefetch_points(const struct view *v, uint32_t start)
{
	/* view_scan() reads POS_PAD positions from `start`: two lines at
	 * most.  The node number it ends on is within the same few. */
	__builtin_prefetch(&v->pos[start]);
	__builtin_prefetch(&v->pos[start + POS_PAD - 1]);
	if (v->wide)
		__builtin_prefetch((const uint32_t *)v->node + start);
	else
		__builtin_prefetch((const uint16_t *)v->node + start);
}

/* Stage 1 of key j: its position, and its buckets on their way. */
static inline __attribute__((always_inline)) void
stage_hash(hr__key_pos_fn key_pos, const struct view *const vs[2], int nv,
	   const void *const *keys, const size_t *lens, struct slot *slots,
	   size_t j)
{
	struct slot *s = &slots[j % SLOTS];

	s->pos = key_position(key_pos, keys[j], lens[j]);
	for (int k = 0; k < nv; k++)
		__builtin_prefetch(view_bucket(vs[k], s->pos));
}

/* Stage 2: the buckets read, the points and node numbers on their way. */
static inline __attribute__((always_inline)) void
stage_bucket(const struct view *const vs[2], int nv, struct slot *slots,
	     size_t i)
{
	struct slot *s = &slots[i % SLOTS];

	for (int k = 0; k < nv; k++) {
		s->start[k] = *view_bucket(vs[k], s->pos);
		prefetch_points(vs[k], s->start[k]);
	}
}

/* A key's owners in `nv` views (see pipeline()) into `out`. */
static inline __attribute__((always_inline)) void
answer(int nv, int to_write, int to_read, const uint32_t owner[2],
       hr_batch_owner *out)
{
	if (nv == 2) {
		out->node = owner[0];
		out->read_node = owner[1];
	} else {
		out->node = to_write ? owner[0] : HR_NO_NODE;
		out->read_node = to_read ? owner[0] : HR_NO_NODE;
	}
}

/* Stage 3: the answer, from lines in cache. */
static inline __attribute__((always_inline)) void
stage_answer(const struct view *const vs[2], int nv, int to_write, int to_read,
	     const struct slot *slots, hr_batch_owner *out, size_t i)
{
	const struct slot *s = &slots[i % SLOTS];
	uint32_t owner[2];

	for (int k = 0; k < nv; k++) {
		size_t p = view_scan(vs[k], s->start[k], s->pos);

		owner[k] = view_node(vs[k], p == vs[k]->npoints ? 0 : p);
	}
	answer(nv, to_write, to_read, owner, &out[i]);
}

/*
 * The pipeline over the `nv` (1 or 2, a constant once inlined) views in
 * vs[], which are not empty.  With one view its owner goes to the fields
 * `to_write` and `to_read` say, HR_NO_NODE to the other; with two, the
 * first is the write view and the second the read view.  The loops are
 * the filling, the steady state (no test but the loop's) and the
 * draining of the pipeline.
 */
static inline __attribute__((always_inline)) void
pipeline(hr__key_pos_fn key_pos, const struct view *const vs[2], int nv,
	 int to_write, int to_read, const void *const *keys,
	 const size_t *lens, size_t n, hr_batch_owner *out, size_t dist)
{
	struct slot slots[SLOTS];
	size_t j = 0;

	for (; j < n && j < dist; j++)
		stage_hash(key_pos, vs, nv, keys, lens, slots, j);
	for (; j < n && j < 2 * dist; j++) {
		stage_hash(key_pos, vs, nv, keys, lens, slots, j);
		stage_bucket(vs, nv, slots, j - dist);
	}
	for (; j < n; j++) {
		stage_hash(key_pos, vs, nv, keys, lens, slots, j);
		stage_bucket(vs, nv, slots, j - dist);
		stage_answer(vs, nv, to_write, to_read, slots, out, j - 2 * dist);
	}
	for (; j < n + 2 * dist; j++) {
		if (j >= dist && j - dist < n)
			stage_bucket(vs, nv, slots, j - dist);
		if (j >= 2 * dist)
			stage_answer(vs, nv, to_write, to_read, slots, out,
				     j - 2 * dist);
	}
}

/* ---- paged views ----------------------------------------------------------
 * A paged view's search is one more read ahead of the flat one's (the
 * page, and its count, in the view's tables) and one after it (the slot of
 * the handle found): five stages, `dist` keys apart, each reading what the
 * one before prefetched. */

#define PAGED_SLOTS 256u
_Static_assert(PAGED_SLOTS > 4 * HR__BATCH_DIST_MAX, "slots hold every key in flight");

struct pslot {
	uint64_t pos;
	struct {
		const uint32_t *index;	/* the page's */
		const uint64_t *at;	/* its positions */
		uint32_t n, start, handle;
	} k[2];
};

static inline __attribute__((always_inline)) void
pstage(hr__key_pos_fn key_pos, const struct view *const vs[2], int nv, int stage,
       const void *const *keys, const size_t *lens, struct pslot *slots,
       hr_batch_owner *out, int to_write, int to_read, size_t i)
{
	struct pslot *s = &slots[i % PAGED_SLOTS];
	uint32_t owner[2];

	for (int k = 0; k < nv; k++) {
		const struct view *v = vs[k];
		size_t p;

		switch (stage) {
		case 0:
			if (k == 0)
				s->pos = key_position(key_pos, keys[i], lens[i]);
			p = paged_page(v, s->pos);
			__builtin_prefetch(&v->pages[p]);
			__builtin_prefetch(&v->count[p]);
			break;
		case 1:
			p = paged_page(v, s->pos);
			s->k[k].n = v->count[p];
			s->k[k].index = paged_index(v, p);
			s->k[k].at = paged_positions(v, s->k[k].index);
			__builtin_prefetch(&s->k[k].index[paged_bucket(v, s->pos)]);
			break;
		case 2:
			s->k[k].start = s->k[k].index[paged_bucket(v, s->pos)];
			__builtin_prefetch(&s->k[k].at[s->k[k].start]);
			__builtin_prefetch(&s->k[k].at[s->k[k].start + POS_PAD - 1]);
			__builtin_prefetch((const uint32_t *)(s->k[k].at + s->k[k].n + POS_PAD) +
					   s->k[k].start);
			break;
		case 3:
			s->k[k].handle = paged_handle_at(v, paged_page(v, s->pos), s->k[k].at,
							 s->k[k].n,
							 scan_pos(s->k[k].at, s->k[k].start,
								  s->pos));
			__builtin_prefetch(&v->handle_slot[s->k[k].handle]);
			break;
		default:
			owner[k] = v->handle_slot[s->k[k].handle];
		}
	}
	if (stage == 4)
		answer(nv, to_write, to_read, owner, &out[i]);
}

/* pipeline() for paged views (not empty), the same arguments. */
static void pipeline_paged(hr__key_pos_fn key_pos, const struct view *const vs[2], int nv,
			   int to_write, int to_read, const void *const *keys,
			   const size_t *lens, size_t n, hr_batch_owner *out, size_t dist)
{
	struct pslot slots[PAGED_SLOTS];

	if (!dist)
		dist = 1;
	for (size_t j = 0; j < n + 4 * dist; j++)
		for (int stage = 0; stage < 5; stage++)
			if (j >= stage * dist && j - stage * dist < n)
				pstage(key_pos, vs, nv, stage, keys, lens, slots, out,
				       to_write, to_read, j - stage * dist);
}

/* Scores: no points to prefetch, each key scores the nodes. */
static void each_key(hr__key_pos_fn key_pos, const struct view *w, const struct view *r,
		     const void *const *keys, const size_t *lens, size_t n,
		     hr_batch_owner *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t pos = key_position(key_pos, keys[i], lens[i]);

		out[i].node = w->npoints ? (uint32_t)view_find_slot(w, pos) : HR_NO_NODE;
		out[i].read_node = views_one(w, r) ? out[i].node :
			r->npoints ? (uint32_t)view_find_slot(r, pos) : HR_NO_NODE;
	}
}

/* The pipeline for the views' kind: the views of a ring are all of one
 * kind, or empty (flat). */
static inline __attribute__((always_inline)) void
run(hr__key_pos_fn key_pos, const struct view *const vs[2], int nv, int to_write,
    int to_read, const void *const *keys, const size_t *lens, size_t n,
    hr_batch_owner *out, size_t dist)
{
	if (vs[0]->kind == VIEW_PAGED)
		pipeline_paged(key_pos, vs, nv, to_write, to_read, keys, lens, n, out, dist);
	else
		pipeline(key_pos, vs, nv, to_write, to_read, keys, lens, n, out, dist);
}

/* Flattened: with the hash inlined too (a single lookup calls it) the
 * compiler interleaves the hashing of one key with the searches of the
 * others; about 10-25% per key at every ring size, measured. */
__attribute__((flatten))
void hr__views_batch(const struct view *w, const struct view *r, hr__key_pos_fn key_pos,
		     const void *const *keys, const size_t *lens, size_t n,
		     hr_batch_owner *out, size_t dist)
{
	if (w->kind == VIEW_SCORES || r->kind == VIEW_SCORES) {
		each_key(key_pos, w, r, keys, lens, n, out);
	} else if (views_one(w, r)) {
		/* Without warming or draining nodes both views are one: one
		 * search answers both. */
		const struct view *vs[2] = { w, NULL };

		run(key_pos, vs, 1, 1, 1, keys, lens, n, out, dist);
	} else if (w->npoints && r->npoints) {
		const struct view *vs[2] = { w, r };

		run(key_pos, vs, 2, 1, 1, keys, lens, n, out, dist);
	} else {
		const struct view *vs[2] = { w->npoints ? w : r, NULL };

		run(key_pos, vs, 1, w->npoints != 0, r->npoints != 0, keys, lens, n, out, dist);
	}
}
