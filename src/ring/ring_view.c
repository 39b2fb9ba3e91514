/*
 * ring_view.c - a view's memory and index, and the view of a ring's nodes
 * in one state taken from the points of all of them.  Shared by every
 * placement's fill_views.
 */
#include "ring_view.h"

#include "error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The transparent huge page size of x86-64 and arm64 (4 KiB pages). */
#define HUGE_PAGE ((size_t)2 << 20)

/*
 * Index bits for n points: the largest b >= 1 with 2^b <= n, so one to two
 * points per bucket (four bytes of index per one or two points).  With
 * four-byte node numbers, half as many buckets keep the memory in budget.
 */
static unsigned index_bits(size_t n, bool wide)
{
	unsigned b = 1;

	while (b < 30 && ((size_t)1 << (b + 1)) <= n)
		b++;
	if (wide && b > 1)
		b--;
	return b;
}

/*
 * Rings are rebuilt one after the other with nearly the same number of
 * points.  Asking for a size rounded up to 1/16th (at most 6% more) lets
 * the allocator hand back the block of a ring freed a moment ago instead
 * of fresh pages, whose first touch costs a page fault each.
 */
static size_t block_size(size_t bytes)
{
	size_t grain = 4096;

	while (grain * 16 < bytes)
		grain *= 2;
	return (bytes + grain - 1) / grain * grain;
}

/* The block of a view of `npoints` points: positions (padded), the index
 * of 2^b buckets, the node numbers; its size as asked of malloc. */
static size_t block_bytes(size_t npoints, unsigned b, bool wide)
{
	return block_size((npoints + POS_PAD) * sizeof(uint64_t) +
			  ((size_t)1 << b) * sizeof(uint32_t) +
			  npoints * (wide ? sizeof(uint32_t) : sizeof(uint16_t)));
}

void *hr__big_alloc_later(size_t bytes)
{
	void *mem;

	if (bytes < HR__BIG_BLOCK)
		return malloc(bytes);
	/* Blocks this large are mmap'd by malloc anyway (fresh pages each
	 * time); aligned, the kernel can back them with huge pages. */
	return posix_memalign(&mem, HUGE_PAGE, bytes) ? NULL : mem;
}

void hr__big_advise(void *mem, size_t bytes)
{
	/* A hint: where it is refused, small pages serve. */
#ifdef MADV_HUGEPAGE
	if (mem && bytes >= HR__BIG_BLOCK)
		madvise(mem, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#else
	(void)mem;
	(void)bytes;
#endif
}

void *hr__big_alloc(size_t bytes)
{
	void *mem = hr__big_alloc_later(bytes);

	hr__big_advise(mem, bytes);
	return mem;
}

/* Node numbers take 4 bytes only when the ring has more nodes than 2 bytes
 * can number. */
int hr__view_alloc(const hr_ring *ring, struct view *v, size_t npoints)
{
	bool wide = ring->nnodes > UINT16_MAX + 1u;
	unsigned b = index_bits(npoints, wide);
	size_t buckets = (size_t)1 << b;
	size_t pos_bytes = (npoints + POS_PAD) * sizeof(uint64_t);
	size_t index_bytes = buckets * sizeof(uint32_t);
	char *mem;

	v->bytes = block_bytes(npoints, b, wide);
	mem = hr__big_alloc(v->bytes);
	if (!mem)
		return HR_ENOMEM;
	v->mem = mem;
	v->pos = (uint64_t *)mem;
	v->index = (uint32_t *)(mem + pos_bytes);
	v->node = mem + pos_bytes + index_bytes;
	v->npoints = npoints;
	v->shift = 64 - b;
	v->wide = wide;
	for (size_t i = 0; i < POS_PAD; i++)
		v->pos[npoints + i] = UINT64_MAX;
	return HR_OK;
}

size_t hr__view_bytes(const struct view *v)
{
	return v->pos ? v->bytes : 0;
}

void hr__index_build(const uint64_t *pos, size_t n, uint32_t *index,
		     unsigned shift, uint64_t mask)
{
	uint32_t sum = 0;

	memset(index, 0, (mask + 1) * sizeof *index);
	for (size_t i = 0; i < n; i++)
		index[(pos[i] >> shift) & mask]++;
	for (size_t k = 0; k <= mask; k++) {
		uint32_t c = index[k];

		index[k] = sum;
		sum += c;
	}
}

void hr__view_index(struct view *v)
{
	hr__index_build(v->pos, v->npoints, v->index, v->shift,
			((uint64_t)1 << (64 - v->shift)) - 1);
}

int hr__point_cmp(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return point_less(x, y) ? -1 : point_less(y, x) ? 1 : 0;
}

int hr__view_count(const hr_ring *ring, hr_view which, struct view *v)
{
	bool *zone_seen;

	v->nnodes = v->nzones = 0;
	for (size_t i = 0; i < ring->nnodes; i++)
		v->nnodes += hr__in_view(ring->nodes[i].pub.state, which);
	/* Every node in the view: every zone too. */
	if (v->nnodes == ring->nnodes) {
		v->nzones = ring->nzones;
		return HR_OK;
	}
	zone_seen = calloc(ring->nzones ? ring->nzones : 1, sizeof *zone_seen);
	if (!zone_seen)
		return HR_ENOMEM;
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		if (!hr__in_view(rn->pub.state, which))
			continue;
		if (!zone_seen[rn->zone]) {
			zone_seen[rn->zone] = true;
			v->nzones++;
		}
	}
	free(zone_seen);
	return HR_OK;
}

int hr__view_subset(hr_ring *ring, const struct view *all, hr_view which,
		    hr_error *err)
{
	struct view *v = &ring->views[which];
	struct view counted;
	size_t npoints = 0, j = 0;

	if (hr__view_count(ring, which, &counted))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (counted.nnodes == ring->nnodes) {
		*v = *all;
		v->mem = NULL;
		v->nnodes = counted.nnodes;
		v->nzones = counted.nzones;
		return HR_OK;
	}
	for (size_t i = 0; i < ring->nnodes; i++)
		if (hr__in_view(ring->nodes[i].pub.state, which))
			npoints += ring->nodes[i].vnodes;
	if (hr__view_alloc(ring, v, npoints) != HR_OK)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < all->npoints; i++) {
		uint32_t nd = view_node(all, i);

		if (!hr__in_view(ring->nodes[nd].pub.state, which))
			continue;
		v->pos[j] = all->pos[i];
		view_set_node(v, j, nd);
		j++;
	}
	hr__view_index(v);
	v->nnodes = counted.nnodes;
	v->nzones = counted.nzones;
	return HR_OK;
}

/*
 * A byte-wise radix sort: hashed positions are uniform, so eight counting
 * passes beat a comparison sort from a few hundred records on.
 */
#define RECORD 16

_Static_assert(sizeof(struct point) == RECORD, "points sort as records");

void hr__sort_records(void *base, void *tmp, size_t n)
{
	unsigned char *from = base, *to = tmp;

	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[257] = { 0 };
		unsigned char *t;

		for (size_t i = 0; i < n; i++) {
			uint64_t key;

			memcpy(&key, from + i * RECORD, sizeof key);
			count[((key >> shift) & 0xff) + 1]++;
		}
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++) {
			uint64_t key;

			memcpy(&key, from + i * RECORD, sizeof key);
			memcpy(to + count[(key >> shift) & 0xff]++ * RECORD,
			       from + i * RECORD, RECORD);
		}
		t = from;
		from = to;
		to = t;
	}
	/* Eight passes: the records are back in `base`. */
}

int hr__view_fill_each(hr_ring *ring,
		       int (*build_view)(hr_ring *ring, hr_view which, hr_error *err),
		       hr_error *err)
{
	bool all_active = true;
	int rc;

	for (size_t i = 0; i < ring->nnodes; i++)
		all_active = all_active && ring->nodes[i].pub.state == HR_STATE_ACTIVE;
	rc = build_view(ring, HR_VIEW_WRITE, err);
	if (!rc && all_active) {
		ring->shared = ring->views[HR_VIEW_WRITE].mem;
		ring->views[HR_VIEW_WRITE].mem = NULL;
		ring->views[HR_VIEW_READ] = ring->views[HR_VIEW_WRITE];
	} else if (!rc) {
		rc = build_view(ring, HR_VIEW_READ, err);
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < ring->nnodes; i++)
		ring->npoints += ring->nodes[i].vnodes;
	return HR_OK;
}
