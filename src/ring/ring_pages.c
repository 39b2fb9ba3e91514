/*
 * ring_pages.c - paged views.  A ring of millions of points rebuilt after a
 * one-node change would write all of them again (hundreds of megabytes) to
 * move a few hundred.  A big ring's points are instead cut into pages by
 * the top bits of their positions, about 2,000 points each; the ring after
 * a small change copies the table of pages and rebuilds only the pages
 * where a point comes or goes, sharing the others with the previous ring
 * (each page counts its rings).  Points name their node by a handle that
 * stays with the node from ring to ring, so that a node that joins or
 * leaves, which shifts every slot after its id, changes no page but its
 * own points' pages.  Lookups pay two more reads than in a flat view: the
 * page, and the slot of the handle.
 */
#include "ring_pages.h"

#include "error.h"
#include "ring_match.h"
#include "ring_view.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Average points per page aimed at (2^11) when a ring is paged from
 * scratch; a derived ring keeps its pages while that stays within a
 * factor of two or so.  Smaller pages make a one-node change copy less
 * but share more pages (one locked increment each): at 20,000,000 points
 * the two costs meet about here. */
#define PAGE_POINTS_LOG 11

/* Bits of a position that group pages while a ring is built. */
#define GROUP_BITS 8

/* A page's mark while a view is derived: shared, with fresh points only,
 * or with points to drop. */
enum { SHARED = 0, FRESH = 1, DROPS = 2 };

/* Pages ahead whose counts are fetched while sharing a table's pages. */
#define PREFETCH_AHEAD 64

/* A slab's regions start on cache lines. */
#define SLAB_ALIGN 64

/* Point positions computed at a time. */
#define CHUNK 64

bool hr__pages_wanted(const hr_ring *ring)
{
	/* A view without points is flat (and empty). */
	if (!ring->npoints)
		return false;
	if (ring->layout != HR__LAYOUT_AUTO)
		return ring->layout == HR__LAYOUT_PAGED;
	return ring->npoints * sizeof(struct point) >= HR__BIG_BLOCK;
}

static unsigned log2_floor(size_t n)
{
	unsigned b = 0;

	while (n >>= 1)
		b++;
	return b;
}

/* Page bits for a ring of `npoints`: about 2^PAGE_POINTS_LOG points a
 * page, and one group of pages or more per value of a position's top
 * GROUP_BITS bits (a full build places by them). */
static unsigned page_bits_for(size_t npoints)
{
	unsigned lg = log2_floor(npoints);

	return lg > PAGE_POINTS_LOG + GROUP_BITS ? lg - PAGE_POINTS_LOG : GROUP_BITS;
}

/* ---- pages ---------------------------------------------------------------- */

/* A page: its header, then index, positions and handles (ring_impl.h,
 * paged_handle). */
static size_t page_bytes(size_t n, const struct view *v)
{
	return sizeof(struct vpage) + ((size_t)v->bucket_mask + 1) * sizeof(uint32_t) +
	       (n + POS_PAD) * sizeof(uint64_t) + n * sizeof(uint32_t);
}

_Static_assert(sizeof(struct vpage) % sizeof(uint64_t) == 0 && POS_PAD % 2 == 0,
	       "a page's positions are aligned");

/*
 * The memory of a full build's pages, and of the pages that replace them:
 * one block of equal regions, each room for a page of the build and some
 * more.  Fresh memory costs a page fault per 4 KiB first touched, which
 * would be most of a one-node change: a page that dies leaves its region
 * for the next change's pages, so rings derived one from another reuse
 * the same memory.  Counted: the pages in it and the rings that cut pages
 * from it; freed with the last.
 */
struct vslab {
	pthread_mutex_t mu;
	size_t users;		/* under mu */
	size_t region;		/* bytes of a region */
	void *free;		/* dead regions, linked by their first word */
};

/* Where a slab's first region starts. */
#define SLAB_FIRST ((sizeof(struct vslab) + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1))

static void slab_hold(struct vslab *slab)
{
	pthread_mutex_lock(&slab->mu);
	slab->users++;
	pthread_mutex_unlock(&slab->mu);
}

/* Drops a user; with `region` (may be NULL), a page's region goes back. */
static void slab_drop(struct vslab *slab, void *region)
{
	bool last;

	pthread_mutex_lock(&slab->mu);
	if (region) {
		*(void **)region = slab->free;
		slab->free = region;
	}
	last = --slab->users == 0;
	pthread_mutex_unlock(&slab->mu);
	if (last) {
		pthread_mutex_destroy(&slab->mu);
		free(slab);
	}
}

void hr__pages_slab_drop(struct vslab *slab)
{
	if (slab)
		slab_drop(slab, NULL);
}

/* A dead region of `slab` (may be NULL) for `bytes`, or NULL. */
static void *slab_take(struct vslab *slab, size_t bytes)
{
	void *r = NULL;

	if (!slab || bytes > slab->region)
		return NULL;
	pthread_mutex_lock(&slab->mu);
	if (slab->free) {
		r = slab->free;
		slab->free = *(void **)r;
		slab->users++;
	}
	pthread_mutex_unlock(&slab->mu);
	return r;
}

/* Sets up page `pg` of `bytes` bytes for `n` points of view `v`:
 * positions and handles to be filled, then its index. */
static struct vpage *page_init(struct vpage *pg, size_t bytes, size_t n,
			       const struct view *v, struct vslab *slab)
{
	atomic_init(&pg->refs, 1);
	pg->n = (uint32_t)n;
	pg->bytes = bytes;
	pg->slab = slab;
	pg->index = (uint32_t *)(pg + 1);
	pg->pos = (uint64_t *)(pg->index + v->bucket_mask + 1);
	pg->node = (uint32_t *)(pg->pos + n + POS_PAD);
	for (size_t i = 0; i < POS_PAD; i++)
		pg->pos[n + i] = UINT64_MAX;
	return pg;
}

/* A page of `n` points: a dead region of `slab` (may be NULL) if it has
 * one, else memory of its own.  NULL when out of memory. */
static struct vpage *page_new(size_t n, const struct view *v, struct vslab *slab)
{
	size_t bytes = page_bytes(n, v);
	struct vpage *pg = slab_take(slab, bytes);

	if (pg)
		return page_init(pg, slab->region, n, v, slab);
	pg = malloc(bytes);
	return pg ? page_init(pg, bytes, n, v, NULL) : NULL;
}

/* The bucket of `pos` in its page. */
static inline size_t bucket(const struct view *v, uint64_t pos)
{
	return (size_t)(pos >> v->bucket_shift) & v->bucket_mask;
}

static void page_release(struct vpage *pg)
{
	if (atomic_fetch_sub_explicit(&pg->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (pg->slab)
		slab_drop(pg->slab, pg);
	else
		free(pg);
}

/* ---- the table ------------------------------------------------------------ */

/* The shifts and mask of 2^page_bits pages of 2^bucket_bits buckets. */
static void shape_set(struct view *v, unsigned page_bits, unsigned bucket_bits)
{
	v->page_shift = 64 - page_bits;
	v->bucket_shift = v->page_shift - bucket_bits;
	v->bucket_mask = (uint32_t)(((size_t)1 << bucket_bits) - 1);
}

/* Sets up paged view `v` of 2^page_bits pages (the table's memory, no
 * page yet) with 2^bucket_bits buckets a page.  HR_ENOMEM. */
static int table_alloc(struct view *v, unsigned page_bits, unsigned bucket_bits)
{
	size_t npages = (size_t)1 << page_bits;
	/* Zeroed: a table released half built has NULL past its last page. */
	size_t entry = sizeof *v->pages + sizeof *v->after + sizeof *v->count;
	char *mem = calloc(npages, entry);

	if (!mem)
		return HR_ENOMEM;
	memset(v, 0, sizeof *v);
	v->mem = mem;
	v->pages = (struct vpage **)mem;
	v->after = (uint32_t *)(mem + npages * sizeof *v->pages);
	v->count = v->after + npages;
	v->npages = npages;
	shape_set(v, page_bits, bucket_bits);
	v->wide = true;
	v->bytes = npages * entry;
	return HR_OK;
}

/* A table like `from`'s, its pages not set. */
static int table_like(struct view *v, const struct view *from)
{
	return table_alloc(v, 64 - from->page_shift, from->page_shift - from->bucket_shift);
}

void hr__pages_release(struct view *v)
{
	if (!v->pages)
		return;
	if (v->mem) {
		for (size_t p = 0; p < v->npages; p++)
			if (v->pages[p])
				page_release(v->pages[p]);
		free(v->mem);
	}
	memset(v, 0, sizeof *v);
}

/* The handle of the first point at or after the start of page p,
 * wrapping (the view has a point). */
static uint32_t first_handle_from(const struct view *v, size_t p)
{
	size_t at = paged_first_from(v, p);

	return v->pages[PAGED_PAGE(at)]->node[0];
}

/* after[] of every page. */
static void after_all(struct view *v)
{
	uint32_t next = first_handle_from(v, 0);

	for (size_t p = v->npages; p-- > 0;) {
		v->after[p] = next;
		if (v->pages[p]->n)
			next = v->pages[p]->node[0];
	}
}

/* after[] once page p changed: the pages before it up to the first with a
 * point (wrapping, p itself last) now end at its first point. */
static void after_fix(struct view *v, size_t p)
{
	uint32_t x = first_handle_from(v, p);
	size_t n = v->npages, q = p;

	for (size_t k = 0; k < n; k++) {
		q = q ? q - 1 : n - 1;
		v->after[q] = x;
		if (v->pages[q]->n)
			break;
	}
}

/* ---- a full build ---------------------------------------------------------- */

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
				(ring)->pl->point_positions((ring), j_, from_, to_, (chunk)); \
				for (unsigned k_ = 0; k_ < to_ - from_; k_++) {	\
					const struct point *pt = &(chunk)[k_];	\
					__VA_ARGS__;				\
				}						\
			}							\
		}								\
	} while (0)

/* A full build's layout for `npoints` points: its page and bucket bits. */
static void layout_for(size_t npoints, unsigned *page_bits, unsigned *bucket_bits)
{
	unsigned lg = log2_floor(npoints);

	*page_bits = page_bits_for(npoints);
	*bucket_bits = lg > *page_bits ? lg - *page_bits : 1;
}

/* The bytes of a region: room for a page of `most` points and some more
 * (the pages of later rings). */
static size_t region_for(size_t most, const struct view *v)
{
	return (page_bytes(most + most / 16 + 16, v) + SLAB_ALIGN - 1) &
	       ~(size_t)(SLAB_ALIGN - 1);
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
 * GROUP_BITS bits of a position): group g's positions from start[g], its
 * handles from node_at[g] (byte offsets), next[g] of them, inside the
 * regions of its own pages.
 */
struct groups {
	size_t start[1 << GROUP_BITS], node_at[1 << GROUP_BITS], next[1 << GROUP_BITS];
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
	layout_for(expect, &page_bits, &bucket_bits);
	shape_set(&pre->shape, page_bits, bucket_bits);
	sub = page_bits - GROUP_BITS;
	/* Uniform positions: the fullest of the pages (about 2^13) is
	 * within six standard deviations of the mean, all but surely. */
	mean = expect >> page_bits;
	most = mean + 16;
	while ((most - mean - 16) * (most - mean - 16) < 36 * mean)
		most += 8;
	pre->region = region_for(most, &pre->shape);
	pre->room = (pre->region << sub) / (sizeof(uint64_t) + sizeof(uint32_t));
	for (size_t k = 0; k < (size_t)1 << GROUP_BITS; k++) {
		pre->g.start[k] = SLAB_FIRST + (k << sub) * pre->region;
		pre->g.node_at[k] = pre->g.start[k] + pre->room * sizeof(uint64_t);
	}
	bytes = SLAB_FIRST + (pre->region << page_bits);
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
		size_t g = pts[i].pos >> (64 - GROUP_BITS), at = pre->g.next[g]++;

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
	return page_bytes(pre->most, v) <= pre->region;
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
	for (size_t k = 0; k < (size_t)1 << GROUP_BITS; k++) {
		size_t points = 0;

		for (size_t p = k << sub; p < (k + 1) << sub; p++)
			points += pre->count[p];
		pre->g.start[k] = SLAB_FIRST + (k << sub) * pre->region;
		pre->g.node_at[k] = pre->g.start[k] + points * sizeof(uint64_t);
	}
	pre->slab = hr__big_alloc(SLAB_FIRST + v->npages * pre->region);
	if (!pre->slab) {
		hr__pages_pre_free(pre);
		return NULL;
	}
	slab = (char *)pre->slab;
	EACH_POINT(ring, chunk, {
		size_t k = pt->pos >> (64 - GROUP_BITS), i = pre->g.next[k]++;

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

	for (size_t k = s->first; k < (size_t)1 << GROUP_BITS; k += s->step) {
		const uint64_t *pos = (const uint64_t *)(s->slab + s->g->start[k]);
		const uint32_t *node = (const uint32_t *)(s->slab + s->g->node_at[k]);
		size_t m = s->g->next[k];

		for (size_t i = 0; i < m; i++)
			s->scratch[i] = (struct point){ pos[i], node[i] };
		for (size_t p = k << s->sub; p < (k + 1) << s->sub; p++)
			s->v->pages[p] = page_init((struct vpage *)(s->slab + SLAB_FIRST +
								   p * s->region),
						   s->region, s->count[p], s->v,
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
	layout_for(ring->npoints, &page_bits, &bucket_bits);
	sorter.sub = page_bits - GROUP_BITS;	/* pages per group: 2^sub */
	if (table_alloc(v, page_bits, bucket_bits))
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
		hr__big_advise(pre->slab, SLAB_FIRST + v->npages * pre->region);
		ring->placed_ahead = true;
	} else if (!(pre = pre_placed(ring, v, sorter.sub))) {
		goto nomem;
	}
	if (sorter_alloc(&sorter, pre->most, bucket_bits))
		goto nomem;
	/* Nothing fails from here on: the slab is the ring's. */
	slab = pre->slab;
	pre->slab = NULL;
	pthread_mutex_init(&slab->mu, NULL);
	slab->users = v->npages + 1;	/* its pages, and this ring */
	slab->region = pre->region;
	slab->free = NULL;
	ring->slab = slab;
	v->bytes += SLAB_FIRST + v->npages * pre->region;
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
	after_all(v);
	return HR_OK;
nomem:
	sorter_free(&sorter);
	hr__pages_pre_free(pre);
	hr__pages_release(v);
	return hr__error_set(err, HR_ENOMEM, "out of memory");
}

/* ---- derived from the previous ring --------------------------------------- */

/* Marks in `dirty` the pages of view `v` holding the points of node `slot`
 * of `r` (vnodes from .. to) as DROPS. */
static void mark_points(const hr_ring *r, uint32_t slot, unsigned from,
			unsigned to, const struct view *v, unsigned char *dirty)
{
	struct point p[CHUNK];

	for (; from < to; from += CHUNK) {
		unsigned end = to - from > CHUNK ? from + CHUNK : to;

		r->pl->point_positions(r, slot, from, end, p);
		for (unsigned k = 0; k < end - from; k++)
			dirty[paged_page(v, p[k].pos)] = DROPS;
	}
}

/* Whether the old page's point i, of a node kept, goes before the fresh
 * point `f`: by position, then by slot (in `ring`) as a full build orders
 * them. */
static inline bool old_first(const hr_ring *ring, const struct vpage *old,
			     size_t i, const struct point *f)
{
	return old->pos[i] < f->pos ||
	       (old->pos[i] == f->pos && ring->handle_slot[old->node[i]] < f->node);
}

/*
 * The new page from the old one: its points but those of dropped handles
 * (`drops` of them), and fresh[0 .. nf) merged in (sorted, slots of
 * `ring`), equal positions in slot order as in a full build.  The old
 * points between two events (a point dropped, a fresh one's place, found
 * from the old page's index) are copied as a block.  NULL when out of
 * memory.
 */
static struct vpage *page_merge(const hr_ring *ring, const struct view *v,
				const struct vpage *old, const unsigned char *drop,
				size_t drops, const struct point *fresh, size_t nf)
{
	struct vpage *pg = page_new(old->n - drops + nf, v, ring->slab);
	size_t k = 0, i = 0, f = 0, d = 0;

	if (!pg)
		return NULL;
	for (;;) {
		size_t to = old->n, at = old->n;

		/* The next dropped point, and the next fresh point's place
		 * (a dropped point never decides it: it goes anyway). */
		if (drops)
			for (d = i; d < old->n && !drop[old->node[d]]; d++)
				;
		if (f < nf) {
			at = scan_pos(old->pos, old->index[bucket(v, fresh[f].pos)],
				      fresh[f].pos);
			if (at < i)
				at = i;
			while (at < old->n && (old_first(ring, old, at, &fresh[f]) ||
					       (drops && drop[old->node[at]])))
				at++;
		}
		to = drops && d < at ? d : at;
		memcpy(pg->pos + k, old->pos + i, (to - i) * sizeof *pg->pos);
		memcpy(pg->node + k, old->node + i, (to - i) * sizeof *pg->node);
		k += to - i;
		i = to;
		if (f < nf && at == to) {
			pg->pos[k] = fresh[f].pos;
			pg->node[k++] = ring->nodes[fresh[f++].node].handle;
		} else if (i < old->n) {
			i++;	/* dropped */
		} else {
			break;
		}
	}
	if (drops) {
		hr__index_build(pg->pos, pg->n, pg->index, v->bucket_shift, v->bucket_mask);
	} else {
		/* The old index, each bucket after a fresh point's one
		 * point further on. */
		size_t buckets = (size_t)v->bucket_mask + 1;

		f = 0;
		for (size_t b = 0; b < buckets; b++) {
			while (f < nf && bucket(v, fresh[f].pos) < b)
				f++;
			pg->index[b] = old->index[b] + (uint32_t)f;
		}
	}
	return pg;
}

/* Pages of `v` whose dirty[] is set, from the old view `from`: each
 * merged with the fresh points (sorted) that fall in it; the others shared
 * (counted in v->bytes when `count_shared`).  after[] follows.  HR_ENOMEM,
 * the view's pages released. */
static int pages_rebuild(const hr_ring *ring, struct view *v,
			 const struct view *from, const unsigned char *dirty,
			 const unsigned char *drop, const struct point *fresh,
			 size_t nfresh, bool count_shared)
{
	size_t f = 0;

	for (size_t p = 0; p < v->npages; p++) {
		struct vpage *old = from->pages[p];
		size_t nf = 0;

		v->count[p] = from->count[p];
		while (f + nf < nfresh && paged_page(v, fresh[f + nf].pos) == p)
			nf++;
		/* Bring the page counts to come into the cache now: a locked
		 * increment waits for its line. */
		if (p + PREFETCH_AHEAD < v->npages)
			__builtin_prefetch(&from->pages[p + PREFETCH_AHEAD]->refs, 1);
		/* A page with fresh points is dirty. */
		if (dirty[p] == SHARED) {
			atomic_fetch_add_explicit(&old->refs, 1, memory_order_relaxed);
			v->pages[p] = old;
			v->bytes += count_shared ? old->bytes : 0;
		} else {
			size_t drops = 0;

			for (size_t i = 0; dirty[p] == DROPS && i < old->n; i++)
				drops += drop[old->node[i]];
			v->pages[p] = page_merge(ring, v, old, drop, drops, fresh + f, nf);
			if (!v->pages[p]) {
				hr__pages_release(v);
				return HR_ENOMEM;
			}
			v->bytes += v->pages[p]->bytes;
			v->count[p] = v->pages[p]->n;
		}
		f += nf;
	}
	memcpy(v->after, from->after, v->npages * sizeof *v->after);
	for (size_t p = 0; p < v->npages; p++)
		if (dirty[p])
			after_fix(v, p);
	return HR_OK;
}

/* A node of the new ring whose points from vnode `from` on are placed. */
struct placing {
	uint32_t slot, from;
};

static int cmp_placing(const void *a, const void *b)
{
	const struct placing *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

int hr__pages_derive(hr_ring *ring, const hr_ring *prev, bool *done,
		     hr_error *err)
{
	const struct view *pa = &prev->all;
	size_t cap = (size_t)prev->nhandles + ring->nnodes + 1;
	uint32_t *map = NULL, *hs = NULL, next = 0, top = prev->nhandles;
	unsigned char *matched = NULL, *drop = NULL, *dirty = NULL;
	struct placing *placing = NULL;
	struct point *fresh = NULL;
	size_t nkept = 0, nfresh, nplacing = 0, f = 0;
	int rc = HR_ENOMEM;

	*done = false;
	/* Pages of another size fit the new ring better after it grew or
	 * shrank by half: placed again. */
	if (!pa->pages || !hr__pages_wanted(ring) ||
	    page_bits_for(ring->npoints) + 1 < 64 - pa->page_shift ||
	    page_bits_for(ring->npoints) > 64 - pa->page_shift + 1)
		return HR_OK;
	/* New pages go into the regions the previous rings' pages leave. */
	if (prev->slab) {
		ring->slab = prev->slab;
		slab_hold(ring->slab);
	}
	map = hr__ring_slot_map(prev, ring);
	matched = calloc(ring->nnodes ? ring->nnodes : 1, 1);
	drop = calloc(prev->nhandles ? prev->nhandles : 1, 1);
	dirty = calloc(pa->npages, 1);
	placing = malloc((ring->nnodes ? ring->nnodes : 1) * sizeof *placing);
	ring->handle_slot = hs = malloc(cap * sizeof *hs);
	if (!map || !matched || !drop || !dirty || !placing || !hs)
		goto out;
	for (uint32_t h = 0; h < prev->nhandles; h++)
		hs[h] = NO_NODE;
	/* One pass over the previous nodes: a node keeps its handle, and its
	 * points unless it lost vnodes (then all are placed again); the
	 * pages of the points that go are marked. */
	for (uint32_t i = 0; i < prev->nnodes; i++) {
		const struct ring_node *pn = &prev->nodes[i];
		uint32_t j = map[i];
		struct ring_node *rn;

		if (j == NO_NODE) {
			drop[pn->handle] = 1;
			mark_points(prev, i, 0, pn->vnodes, pa, dirty);
			continue;
		}
		rn = &ring->nodes[j];
		matched[j] = 1;
		rn->handle = pn->handle;
		hs[pn->handle] = j;
		if (pn->vnodes > rn->vnodes) {
			drop[pn->handle] = 1;
			mark_points(prev, i, 0, pn->vnodes, pa, dirty);
			placing[nplacing++] = (struct placing){ j, 0 };
		} else {
			nkept += pn->vnodes;
			if (pn->vnodes < rn->vnodes)
				placing[nplacing++] = (struct placing){ j, pn->vnodes };
		}
	}
	nfresh = ring->npoints - nkept;
	if (nfresh > ring->npoints / 4) {
		rc = HR_OK;
		goto out;
	}
	/* New nodes take the lowest free handles. */
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		if (matched[j])
			continue;
		while (next < top && hs[next] != NO_NODE)
			next++;
		if (next == top)
			hs[top++] = NO_NODE;
		hs[next] = j;
		ring->nodes[j].handle = next;
		placing[nplacing++] = (struct placing){ j, 0 };
	}
	ring->nhandles = top;
	/* Room was kept for every node to be new. */
	hs = realloc(hs, (top ? top : 1) * sizeof *hs);
	if (hs)
		ring->handle_slot = hs;
	/* In slot order, so that equal positions stay in slot order through
	 * the sort, as a full build orders them.  Twice the room: the second
	 * half is the sort's scratch. */
	qsort(placing, nplacing, sizeof *placing, cmp_placing);
	fresh = malloc((nfresh ? 2 * nfresh : 1) * sizeof *fresh);
	if (!fresh)
		goto out;
	for (size_t k = 0; k < nplacing; k++) {
		uint32_t j = placing[k].slot;
		unsigned vnodes = ring->nodes[j].vnodes;

		ring->pl->point_positions(ring, j, placing[k].from, vnodes, fresh + f);
		f += vnodes - placing[k].from;
	}
	hr__sort_records(fresh, fresh + nfresh, nfresh);
	for (size_t k = 0; k < nfresh; k++)
		if (!dirty[paged_page(pa, fresh[k].pos)])
			dirty[paged_page(pa, fresh[k].pos)] = FRESH;

	if (table_like(&ring->all, pa))
		goto out;
	if (pages_rebuild(ring, &ring->all, pa, dirty, drop, fresh, nfresh, true))
		goto out;
	ring->all.npoints = ring->npoints;
	ring->all.nnodes = ring->nnodes;
	*done = true;
	rc = HR_OK;
out:
	if (!*done) {
		hr__pages_release(&ring->all);
		hr__pages_slab_drop(ring->slab);
		ring->slab = NULL;
		free(ring->handle_slot);
		ring->handle_slot = NULL;
		ring->nhandles = 0;
	}
	free(fresh);
	free(placing);
	free(dirty);
	free(drop);
	free(matched);
	free(map);
	return rc ? hr__error_set(err, rc, "out of memory") : HR_OK;
}

/* ---- the views ------------------------------------------------------------ */

/* View `which`: all's pages without the points of nodes outside it. */
static int view_filtered(hr_ring *ring, hr_view which, struct view *v,
			 size_t npoints)
{
	const struct view *all = &ring->all;
	unsigned char *out = calloc(ring->nhandles ? ring->nhandles : 1, 1);
	unsigned char *dirty = calloc(all->npages, 1);
	size_t outside = all->npoints - npoints;
	int rc = HR_ENOMEM;

	if (!out || !dirty || table_like(v, all))
		goto done;
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		const struct ring_node *rn = &ring->nodes[j];

		if (hr__in_view(rn->pub.state, which))
			continue;
		out[rn->handle] = 1;
		/* Past a quarter of the points every page is copied. */
		if (outside <= all->npoints / 4)
			mark_points(ring, j, 0, rn->vnodes, all, dirty);
	}
	if (outside > all->npoints / 4)
		memset(dirty, DROPS, all->npages);
	/* Nothing fresh: a page is kept or filtered; all counts the kept. */
	rc = pages_rebuild(ring, v, all, dirty, out, NULL, 0, false);
done:
	if (rc && v->mem)
		hr__pages_release(v);
	free(dirty);
	free(out);
	return rc;
}

int hr__pages_views(hr_ring *ring, hr_error *err)
{
	for (hr_view which = HR_VIEW_WRITE; which <= HR_VIEW_READ; which++) {
		struct view *v = &ring->views[which];
		struct view counted;
		size_t npoints = 0;

		if (hr__view_count(ring, which, &counted))
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		if (counted.nnodes == ring->nnodes) {
			*v = ring->all;
			v->mem = NULL;
			npoints = ring->npoints;
		} else {
			for (size_t j = 0; j < ring->nnodes; j++)
				if (hr__in_view(ring->nodes[j].pub.state, which))
					npoints += ring->nodes[j].vnodes;
			if (npoints && view_filtered(ring, which, v, npoints))
				return hr__error_set(err, HR_ENOMEM, "out of memory");
		}
		/* A view without points stays empty (and flat). */
		v->npoints = npoints;
		v->nnodes = counted.nnodes;
		v->nzones = counted.nzones;
	}
	return HR_OK;
}
