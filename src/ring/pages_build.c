/* SPDX-License-Identifier: MIT */
/*
 * pages_build.c - a big ring's points sorted into pages from scratch
 * (see pages.h): every point placed into one slab by the top bits of its
 * position, then each group of pages sorted, half of them on a second
 * thread.  A first sync's points may be placed ahead, while its nodes
 * arrive (hr__pages_pre, fed by ring_stream.c): the build then only sorts.
 */
#include "pages.h"

#include "error.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK HR__PAGES_CHUNK

/* Sorts the points of each crowded bucket of page `pg` (its index set):
 * a few in place, more through `scratch`. */
static void page_sort_buckets(struct vpage *pg, const struct view *v,
			      struct point *scratch)
{
	size_t buckets = (size_t)v->bucket_mask + 1;

	for (size_t k = 0; k < buckets; k++) {
		size_t from = pg->index[k], to = k + 1 < buckets ? pg->index[k + 1] : pg->n;

		if (to - from > 16) {
			for (size_t i = from; i < to; i++)
				scratch[i - from] = (struct point){ pg->pos[i], pg->node[i] };
			qsort(scratch, to - from, sizeof *scratch, hr__point_cmp);
			for (size_t i = from; i < to; i++) {
				pg->pos[i] = scratch[i - from].pos;
				pg->node[i] = scratch[i - from].node;
			}
			continue;
		}
		for (size_t i = from + 1; i < to; i++) {
			struct point t = { pg->pos[i], pg->node[i] };
			size_t j = i;

			for (; j > from; j--) {
				struct point q = { pg->pos[j - 1], pg->node[j - 1] };

				if (!point_less(&t, &q))
					break;
				pg->pos[j] = q.pos;
				pg->node[j] = q.node;
			}
			pg->pos[j] = t.pos;
			pg->node[j] = t.node;
		}
	}
}

/*
 * Sorts in[0 .. m), the points of a group of 2^sub pages starting at page
 * p0, into those pages (set up, n counted) by position, then slot (=
 * handle in a full build): a counting sort on the page and bucket of each
 * position at once, which gives each page's index, then the crowded
 * buckets one by one.  `count` has room for 2^(sub + bucket bits) + 1
 * counts and 2^sub page starts.
 */
static void group_sort(struct view *v, size_t p0, unsigned sub,
		       const struct point *in, size_t m, uint32_t *count,
		       struct point *scratch)
{
	size_t nb = (size_t)v->bucket_mask + 1, keys = nb << sub, mask = keys - 1;
	unsigned bb = v->page_shift - v->bucket_shift;
	uint32_t *base = count + keys + 1;

	memset(count, 0, (keys + 1) * sizeof *count);
	for (size_t i = 0; i < m; i++)
		count[((in[i].pos >> v->bucket_shift) & mask) + 1]++;
	for (size_t k = 0; k < keys; k++)
		count[k + 1] += count[k];
	for (size_t q = 0; q < (size_t)1 << sub; q++) {
		struct vpage *pg = v->pages[p0 + q];

		base[q] = count[q * nb];
		for (size_t b = 0; b < nb; b++)
			pg->index[b] = count[q * nb + b] - base[q];
	}
	for (size_t i = 0; i < m; i++) {
		size_t key = (in[i].pos >> v->bucket_shift) & mask;
		struct vpage *pg = v->pages[p0 + (key >> bb)];
		uint32_t at = count[key]++ - base[key >> bb];

		pg->pos[at] = in[i].pos;
		pg->node[at] = in[i].node;
	}
	for (size_t q = 0; q < (size_t)1 << sub; q++)
		page_sort_buckets(v->pages[p0 + q], v, scratch);
}

/* Runs the statement that follows `chunk` with `pt` at every point of
 * `ring`, placed a chunk of a node's vnodes at a time. */
#define EACH_POINT(ring, chunk, ...) do {					\
		for (uint32_t j_ = 0; j_ < (ring)->nnodes; j_++) {		\
			unsigned vn_ = (ring)->nodes[j_].vnodes;		\
									\
			for (unsigned from_ = 0; from_ < vn_; from_ += CHUNK) {	\
				unsigned to_ = vn_ - from_ > CHUNK ? from_ + CHUNK : vn_; \
									\
				ring_points_of((ring), j_, from_, to_, (chunk));	\
				for (unsigned k_ = 0; k_ < to_ - from_; k_++) {	\
					const struct point *pt = &(chunk)[k_];	\
					__VA_ARGS__;				\
				}						\
			}							\
		}								\
	} while (0)

/* The bytes of a region: room for a page of `most` points and some more
 * (the pages of later rings). */
static size_t region_for(size_t most, const struct view *v)
{
	return (hr__page_bytes(most + most / 16 + 16, hr__pages_buckets(v)) +
		HR__SLAB_ALIGN - 1) & ~(size_t)(HR__SLAB_ALIGN - 1);
}

/* The most points of count[0 .. n). */
static size_t fullest(const uint32_t *count, size_t n)
{
	size_t most = 0;

	for (size_t p = 0; p < n; p++)
		most = count[p] > most ? count[p] : most;
	return most;
}

/*
 * Where a full build's points wait in the slab, by group (the top
 * HR__PAGES_GROUP_BITS bits of a position): group g's positions from start[g], its
 * handles from node_at[g] (byte offsets), next[g] of them, inside the
 * regions of its own pages.
 */
struct groups {
	size_t start[1 << HR__PAGES_GROUP_BITS], node_at[1 << HR__PAGES_GROUP_BITS], next[1 << HR__PAGES_GROUP_BITS];
};

/*
 * A full build's points, placed by group into its slab and counted by
 * page, before they are sorted into pages.  Placed ahead (ring_stream.c
 * places them while the nodes arrive): the slab of the layout that an
 * expected count would have, each group given the room of its pages.
 * Placed by the build itself: every point counted first, the regions
 * sized for the fullest page, each group given its exact room.
 */
struct hr__pages_pre {
	struct view shape;	/* page and bucket bits only */
	struct vslab *slab;	/* NULL once given up or taken */
	size_t region, room;	/* bytes; a group's room, in points */
	size_t npoints, most;	/* most: in a page, once all are placed */
	uint32_t *count;	/* per page */
	struct groups g;
};

hr__pages_pre *hr__pages_pre_new(size_t expect)
{
	unsigned page_bits, bucket_bits, sub;
	size_t mean, most, bytes;
	hr__pages_pre *pre;

	if (expect * sizeof(struct point) < HR__BIG_BLOCK)
		return NULL;
	pre = calloc(1, sizeof *pre);
	if (!pre)
		return NULL;
	hr__pages_layout(expect, &page_bits, &bucket_bits);
	hr__pages_shape(&pre->shape, page_bits, bucket_bits);
	sub = page_bits - HR__PAGES_GROUP_BITS;
	/* Uniform positions: the fullest of the pages (about 2^13) is
	 * within six standard deviations of the mean, all but surely. */
	mean = expect >> page_bits;
	most = mean + 16;
	while ((most - mean - 16) * (most - mean - 16) < 36 * mean)
		most += 8;
	pre->region = region_for(most, &pre->shape);
	pre->room = (pre->region << sub) / (sizeof(uint64_t) + sizeof(uint32_t));
	for (size_t k = 0; k < (size_t)1 << HR__PAGES_GROUP_BITS; k++) {
		pre->g.start[k] = HR__SLAB_FIRST + (k << sub) * pre->region;
		pre->g.node_at[k] = pre->g.start[k] + pre->room * sizeof(uint64_t);
	}
	bytes = HR__SLAB_FIRST + (pre->region << page_bits);
	pre->count = calloc((size_t)1 << page_bits, sizeof *pre->count);
	pre->slab = pre->count ? hr__big_alloc_later(bytes) : NULL;
	if (!pre->slab) {
		hr__pages_pre_free(pre);
		return NULL;
	}
	return pre;
}

bool hr__pages_pre_place(hr__pages_pre *pre, const struct point *pts, size_t n)
{
	char *slab = (char *)pre->slab;

	if (!slab)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t g = pts[i].pos >> (64 - HR__PAGES_GROUP_BITS), at = pre->g.next[g]++;

		if (at == pre->room) {
			/* Not the positions of a uniform hash. */
			free(pre->slab);
			pre->slab = NULL;
			return false;
		}
		((uint64_t *)(slab + pre->g.start[g]))[at] = pts[i].pos;
		((uint32_t *)(slab + pre->g.node_at[g]))[at] = pts[i].node;
		pre->count[paged_page(&pre->shape, pts[i].pos)]++;
	}
	pre->npoints += n;
	return true;
}

void hr__pages_pre_free(hr__pages_pre *pre)
{
	if (!pre)
		return;
	free(pre->slab);
	free(pre->count);
	free(pre);
}

/* Whether `pre` holds every point of `ring` (its nodes matched by the
 * caller) in the layout of paged view `v`, each page in its region;
 * sets pre->most. */
static bool pre_fits(hr__pages_pre *pre, const hr_ring *ring, const struct view *v)
{
	if (!pre->slab || pre->npoints != ring->npoints ||
	    pre->shape.page_shift != v->page_shift || pre->shape.bucket_shift != v->bucket_shift)
		return false;
	pre->most = fullest(pre->count, v->npages);
	return hr__page_bytes(pre->most, hr__pages_buckets(v)) <= pre->region;
}

/* Every point of `ring` placed by the build itself for paged view `v`
 * (2^sub pages a group): counted by page, then written into a slab sized
 * for the fullest by group, 512 write streams (positions, handles) that
 * the caches keep up with.  NULL when out of memory. */
static hr__pages_pre *pre_placed(hr_ring *ring, const struct view *v, unsigned sub)
{
	hr__pages_pre *pre = calloc(1, sizeof *pre);
	struct point chunk[CHUNK];
	char *slab;

	if (!pre || !(pre->count = calloc(v->npages, sizeof *pre->count))) {
		free(pre);
		return NULL;
	}
	pre->shape.page_shift = v->page_shift;
	pre->shape.bucket_shift = v->bucket_shift;
	pre->shape.bucket_mask = v->bucket_mask;
	EACH_POINT(ring, chunk, pre->count[paged_page(v, pt->pos)]++);
	pre->npoints = ring->npoints;
	pre->most = fullest(pre->count, v->npages);
	pre->region = region_for(pre->most, v);
	for (size_t k = 0; k < (size_t)1 << HR__PAGES_GROUP_BITS; k++) {
		size_t points = 0;

		for (size_t p = k << sub; p < (k + 1) << sub; p++)
			points += pre->count[p];
		pre->g.start[k] = HR__SLAB_FIRST + (k << sub) * pre->region;
		pre->g.node_at[k] = pre->g.start[k] + points * sizeof(uint64_t);
	}
	pre->slab = hr__big_alloc(HR__SLAB_FIRST + v->npages * pre->region);
	if (!pre->slab) {
		hr__pages_pre_free(pre);
		return NULL;
	}
	slab = (char *)pre->slab;
	EACH_POINT(ring, chunk, {
		size_t k = pt->pos >> (64 - HR__PAGES_GROUP_BITS), i = pre->g.next[k]++;

		((uint64_t *)(slab + pre->g.start[k]))[i] = pt->pos;
		((uint32_t *)(slab + pre->g.node_at[k]))[i] = pt->node;
	});
	return pre;
}

/*
 * Sorts groups first, first + step, ... of a full build from where they
 * wait in the slab into their pages (each group copied out first: its
 * pages' regions are where it waits).  Two sorters share the groups.
 */
struct sorter {
	struct view *v;
	char *slab;
	const struct groups *g;
	const uint32_t *count;
	size_t region, first, step;
	unsigned sub;
	struct point *scratch;	/* a group's points, then a page's */
	uint32_t *keys;
};

static void *sort_groups(void *arg)
{
	struct sorter *s = arg;

	for (size_t k = s->first; k < (size_t)1 << HR__PAGES_GROUP_BITS; k += s->step) {
		const uint64_t *pos = (const uint64_t *)(s->slab + s->g->start[k]);
		const uint32_t *node = (const uint32_t *)(s->slab + s->g->node_at[k]);
		size_t m = s->g->next[k];

		for (size_t i = 0; i < m; i++)
			s->scratch[i] = (struct point){ pos[i], node[i] };
		for (size_t p = k << s->sub; p < (k + 1) << s->sub; p++)
			s->v->pages[p] = hr__page_init((struct vpage *)(s->slab + HR__SLAB_FIRST +
									p * s->region),
						       s->region, s->count[p],
						       hr__pages_buckets(s->v),
						       (struct vslab *)s->slab);
		group_sort(s->v, k << s->sub, s->sub, s->scratch, m, s->keys, s->scratch + m);
	}
	return NULL;
}

/* The scratch memory of a sorter (`most`: the fullest page); 0 or
 * HR_ENOMEM. */
static int sorter_alloc(struct sorter *s, size_t most, unsigned bucket_bits)
{
	s->scratch = malloc((((size_t)1 << s->sub) * most + most + 1) * sizeof *s->scratch);
	s->keys = malloc((((size_t)1 << (s->sub + bucket_bits)) + 1 + ((size_t)1 << s->sub)) *
			 sizeof *s->keys);
	return s->scratch && s->keys ? HR_OK : HR_ENOMEM;
}

static void sorter_free(struct sorter *s)
{
	free(s->scratch);
	free(s->keys);
}

/* Sorts every group into its pages: of a ring paged for its size, half of
 * them on a second thread when one can be had (the copies and the sorts
 * are most of what a full build does after placing), else all on this
 * one. */
static void sort_all(struct sorter *one, size_t npoints, size_t most, unsigned bucket_bits)
{
	struct sorter two = *one;
	pthread_t helper;
	bool helped;

	two.scratch = NULL;
	two.keys = NULL;
	two.first = 1;
	two.step = one->step = 2;
	helped = npoints * sizeof(struct point) >= HR__BIG_BLOCK &&
		 sorter_alloc(&two, most, bucket_bits) == HR_OK &&
		 pthread_create(&helper, NULL, sort_groups, &two) == 0;
	if (!helped)
		one->step = 1;
	sort_groups(one);
	if (helped)
		pthread_join(helper, NULL);
	sorter_free(&two);
}

int hr__pages_build(hr_ring *ring, hr_error *err)
{
	struct view *v = &ring->all;
	hr__pages_pre *pre = ring->pre;
	unsigned page_bits, bucket_bits;
	struct sorter sorter = { .first = 0, .step = 1 };
	struct vslab *slab;

	ring->pre = NULL;
	hr__pages_layout(ring->npoints, &page_bits, &bucket_bits);
	sorter.sub = page_bits - HR__PAGES_GROUP_BITS;	/* pages per group: 2^sub */
	if (hr__pages_table(v, page_bits, bucket_bits))
		goto nomem;
	ring->handle_slot = malloc((ring->nnodes ? ring->nnodes : 1) * sizeof *ring->handle_slot);
	if (!ring->handle_slot)
		goto nomem;
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		ring->handle_slot[j] = j;
		ring->nodes[j].handle = j;
	}
	ring->nhandles = (uint32_t)ring->nnodes;
	/*
	 * The pages are regions of one slab (huge pages: fresh memory is most
	 * of a big build's cost), each room for the largest page and a
	 * sixteenth more, so that the pages of later rings fit the regions
	 * their dead pages leave.  Points placed ahead are in their slab by
	 * group already; else the build places them there.  Then each group
	 * is copied out and sorted into its pages.
	 */
	if (pre && !pre_fits(pre, ring, v)) {
		hr__pages_pre_free(pre);
		pre = NULL;
	}
	if (pre) {
		hr__big_advise(pre->slab, HR__SLAB_FIRST + v->npages * pre->region);
		ring->placed_ahead = true;
	} else if (!(pre = pre_placed(ring, v, sorter.sub))) {
		goto nomem;
	}
	if (sorter_alloc(&sorter, pre->most, bucket_bits))
		goto nomem;
	/* Nothing fails from here on: the slab is the ring's. */
	slab = pre->slab;
	pre->slab = NULL;
	/* Its users: its pages, and this ring. */
	hr__slab_init(slab, v->npages + 1, pre->region);
	ring->slab = slab;
	v->bytes += HR__SLAB_FIRST + v->npages * pre->region;
	sorter.v = v;
	sorter.slab = (char *)slab;
	sorter.g = &pre->g;
	sorter.count = pre->count;
	sorter.region = pre->region;
	sort_all(&sorter, ring->npoints, pre->most, bucket_bits);
	sorter_free(&sorter);
	memcpy(v->count, pre->count, v->npages * sizeof *v->count);
	hr__pages_pre_free(pre);
	v->npoints = ring->npoints;
	v->nnodes = ring->nnodes;
	v->handle_slot = ring->handle_slot;
	v->nhandles = ring->nhandles;
	hr__pages_after_all(v);
	return HR_OK;
nomem:
	sorter_free(&sorter);
	hr__pages_pre_free(pre);
	hr__view_release(v);
	return hr__error_set(err, HR_ENOMEM, "out of memory");
}
