/*
 * ring_batch.c - batch lookups: the owners of many keys from one ring,
 * software-pipelined.
 *
 * On a ring that does not fit the caches a single lookup is its cache
 * misses, one after the other: the key's index bucket, then the points the
 * bucket names and their node numbers.  A batch keeps three keys in
 * flight, `dist` apart: it hashes key j and prefetches its buckets; reads
 * the bucket of key j - dist, which has arrived by then, and prefetches
 * that key's points and node numbers; and finishes key j - 2 * dist, whose
 * lines are in cache.  The misses of 2 * dist keys overlap.  The search is
 * ring_impl.h's own (view_scan), so the answers are hr_ring_lookup()'s.
 */
#include "ring_batch.h"

#include "error.h"
#include "ring_impl.h"

/* Measured with hashring-bench (README, "Performance"): at 1,000 nodes
 * the time per key falls steeply up to a distance of 4, levels off by 8
 * and is flat to 16, rising past it; at 10 and 100 nodes, where the ring
 * is in cache, it is flat from 1 or 2.  8 is in the flat part on every
 * size. */
#define BATCH_DIST 8

/* The keys in flight, by their index modulo SLOTS (> 2 * HR__BATCH_DIST_MAX). */
#define SLOTS 128u
_Static_assert(SLOTS > 2 * HR__BATCH_DIST_MAX, "slots hold every key in flight");

struct slot {
	uint64_t pos;
	uint32_t start[2];	/* per view searched: its bucket's first point */
};

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
stage_hash(const hr_ring *ring, const struct view *const vs[2], int nv,
	   const void *const *keys, const size_t *lens, struct slot *slots,
	   size_t j)
{
	struct slot *s = &slots[j % SLOTS];

	s->pos = ring_key_pos(ring, keys[j], lens[j]);
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
pipeline(const hr_ring *ring, const struct view *const vs[2], int nv,
	 int to_write, int to_read, const void *const *keys,
	 const size_t *lens, size_t n, hr_batch_owner *out, size_t dist)
{
	struct slot slots[SLOTS];
	size_t j = 0;

	for (; j < n && j < dist; j++)
		stage_hash(ring, vs, nv, keys, lens, slots, j);
	for (; j < n && j < 2 * dist; j++) {
		stage_hash(ring, vs, nv, keys, lens, slots, j);
		stage_bucket(vs, nv, slots, j - dist);
	}
	for (; j < n; j++) {
		stage_hash(ring, vs, nv, keys, lens, slots, j);
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
pstage(const hr_ring *ring, const struct view *const vs[2], int nv, int stage,
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
				s->pos = ring_key_pos(ring, keys[i], lens[i]);
			p = paged_page(v, s->pos);
			__builtin_prefetch(&v->pages[p]);
			__builtin_prefetch(&v->count[p]);
			break;
		case 1:
			p = paged_page(v, s->pos);
			s->k[k].n = v->count[p];
			s->k[k].index = (const uint32_t *)(v->pages[p] + 1);
			s->k[k].at = (const uint64_t *)(s->k[k].index + v->bucket_mask + 1);
			__builtin_prefetch(&s->k[k].index[(s->pos >> v->bucket_shift) &
							  v->bucket_mask]);
			break;
		case 2:
			s->k[k].start = s->k[k].index[(s->pos >> v->bucket_shift) &
						      v->bucket_mask];
			__builtin_prefetch(&s->k[k].at[s->k[k].start]);
			__builtin_prefetch(&s->k[k].at[s->k[k].start + POS_PAD - 1]);
			__builtin_prefetch((const uint32_t *)(s->k[k].at + s->k[k].n + POS_PAD) +
					   s->k[k].start);
			break;
		case 3: {
			size_t at = scan_pos(s->k[k].at, s->k[k].start, s->pos);

			s->k[k].handle = at < s->k[k].n ?
				((const uint32_t *)(s->k[k].at + s->k[k].n + POS_PAD))[at] :
				v->after[paged_page(v, s->pos)];
			__builtin_prefetch(&ring->handle_slot[s->k[k].handle]);
			break;
		}
		default:
			owner[k] = ring->handle_slot[s->k[k].handle];
		}
	}
	if (stage == 4)
		answer(nv, to_write, to_read, owner, &out[i]);
}

/* pipeline() for paged views (not empty), the same arguments. */
static void pipeline_paged(const hr_ring *ring, const struct view *const vs[2], int nv,
			   int to_write, int to_read, const void *const *keys,
			   const size_t *lens, size_t n, hr_batch_owner *out, size_t dist)
{
	struct pslot slots[PAGED_SLOTS];

	if (!dist)
		dist = 1;
	for (size_t j = 0; j < n + 4 * dist; j++)
		for (int stage = 0; stage < 5; stage++)
			if (j >= stage * dist && j - stage * dist < n)
				pstage(ring, vs, nv, stage, keys, lens, slots, out,
				       to_write, to_read, j - stage * dist);
}

/* The pipeline for the views' layout: the views of a ring are all paged
 * or none is (an empty view is neither). */
static inline __attribute__((always_inline)) void
run(const hr_ring *ring, const struct view *const vs[2], int nv, int to_write,
    int to_read, const void *const *keys, const size_t *lens, size_t n,
    hr_batch_owner *out, size_t dist)
{
	if (vs[0]->pages)
		pipeline_paged(ring, vs, nv, to_write, to_read, keys, lens, n, out, dist);
	else
		pipeline(ring, vs, nv, to_write, to_read, keys, lens, n, out, dist);
}

static int check_args(const hr_ring *ring, const void *const *keys,
		      const size_t *lens, size_t n, hr_batch_owner *out,
		      hr_error *err)
{
	if (!ring)
		return hr__error_set(err, HR_EINVAL, "lookup_batch: NULL ring");
	if (n && (!keys || !lens || !out))
		return hr__error_set(err, HR_EINVAL, "lookup_batch: %s is NULL with n = %zu",
				     !keys ? "keys" : !lens ? "lens" : "out", n);
	for (size_t i = 0; i < n; i++)
		if (!keys[i] && lens[i])
			return hr__error_set(err, HR_EINVAL,
					     "lookup_batch: keys[%zu] is NULL with "
					     "lens[%zu] = %zu", i, i, lens[i]);
	return HR_OK;
}

/* Flattened: with the hash inlined too (a single lookup calls it) the
 * compiler interleaves the hashing of one key with the searches of the
 * others; about 10-25% per key at every ring size, measured. */
__attribute__((flatten))
int hr__ring_lookup_batch_dist(const hr_ring *ring, const void *const *keys,
			       const size_t *lens, size_t n,
			       hr_batch_owner *out, size_t dist, hr_error *err)
{
	const struct view *w, *r;
	int rc = check_args(ring, keys, lens, n, out, err);

	if (rc)
		return rc;
	if (dist > HR__BATCH_DIST_MAX)
		return hr__error_set(err, HR_EINVAL, "lookup_batch: distance %zu over %d",
				     dist, HR__BATCH_DIST_MAX);
	w = &ring->views[HR_VIEW_WRITE];
	r = &ring->views[HR_VIEW_READ];
	if (!w->npoints && !r->npoints) {
		for (size_t i = 0; i < n; i++)
			out[i] = (hr_batch_owner){ HR_NO_NODE, HR_NO_NODE };
		return hr__error_set(err, HR_EEMPTY,
				     "lookup_batch: the ring (revision %llu) has no node",
				     (unsigned long long)ring->revision);
	}
	/* Rendezvous has no points to prefetch: each key scores the nodes. */
	if (w->rdv || r->rdv) {
		for (size_t i = 0; i < n; i++) {
			uint64_t pos = ring_key_pos(ring, keys[i], lens[i]);
			const struct ring_node *wn, *rn;

			ring_owners(ring, pos, &wn, &rn);
			out[i].node = wn ? (uint32_t)(wn - ring->nodes) : HR_NO_NODE;
			out[i].read_node = rn ? (uint32_t)(rn - ring->nodes) : HR_NO_NODE;
		}
		return HR_OK;
	}
	/* Without warming or draining nodes both views are one (see
	 * ring_owners()): one search answers both. */
	if (views_one(w, r)) {
		const struct view *vs[2] = { w, NULL };

		run(ring, vs, 1, 1, 1, keys, lens, n, out, dist);
	} else if (w->npoints && r->npoints) {
		const struct view *vs[2] = { w, r };

		run(ring, vs, 2, 1, 1, keys, lens, n, out, dist);
	} else {
		const struct view *vs[2] = { w->npoints ? w : r, NULL };

		run(ring, vs, 1, w->npoints != 0, r->npoints != 0, keys, lens, n, out, dist);
	}
	return HR_OK;
}

int hr_ring_lookup_batch(const hr_ring *ring, const void *const *keys,
			 const size_t *lens, size_t n, hr_batch_owner *out,
			 hr_error *err)
{
	return hr__ring_lookup_batch_dist(ring, keys, lens, n, out, BATCH_DIST,
					  err);
}
