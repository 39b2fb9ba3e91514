/* SPDX-License-Identifier: MIT */
/*
 * view.c - the parts of the view interface (view.h) that are not inline:
 * shares of a view's nodes, and a view's memory: flat arrays and their
 * index, Maglev tables, score inputs, their size and release, and the
 * allocation and sorting that every build of a view uses.
 */
#include "view.h"

#include "hashring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- shares ----------------------------------------------------------------- */

/*
 * The arcs of every node summed in one pass, in `out` itself (a sum is as
 * wide as a double) modulo 2^64: no node's sum reaches 2^64 unless it owns
 * the whole circle, which leaves every sum 0, so the sums are exact.
 */
static inline void add_arc_at(double *out, uint32_t node, uint64_t len)
{
	uint64_t s;

	memcpy(&s, &out[node], sizeof s);
	s += len;
	memcpy(&out[node], &s, sizeof s);
}

#define SUM_ARCS(type) do {						\
		const type *nd = v->node;					\
									\
		for (size_t i = 0; i < v->npoints; i++) {			\
			add_arc_at(out, nd[i], v->pos[i] - prev);		\
			prev = v->pos[i];					\
		}							\
	} while (0)

/*
 * Moves each handle h's share, out[h] (h < nhandles <= nslots), to
 * out[handle_slot[h]], in place: a chain of moves starts at each handle
 * not moved yet, leaves NaN there (vacated) and stops at a vacated place
 * or one past the handles.  A share put in its place is marked by its
 * sign (shares are >= 0) until the last pass; a vacated place nothing
 * moved to is 0.  A handle without a slot (a node gone) has no points.
 */
static void shares_to_slots(const struct view *v, double *out, size_t nslots)
{
	for (uint32_t h = 0; h < v->nhandles; h++) {
		double carry;
		uint32_t p = h;

		if (isnan(out[h]) || signbit(out[h]))
			continue;
		carry = out[h];
		out[h] = NAN;
		while ((p = v->handle_slot[p]) != NO_NODE) {
			double was = out[p];

			out[p] = -carry;
			if (p >= v->nhandles || isnan(was))
				break;
			carry = was;
		}
	}
	for (size_t j = 0; j < nslots; j++)
		out[j] = isnan(out[j]) ? 0 : fabs(out[j]);
}

void hr__view_shares(const struct view *v, double *out, size_t nslots)
{
	uint64_t prev;
	bool any = false, by_handle = false;

	memset(out, 0, nslots * sizeof *out);	/* 0.0 and sums of 0 alike */
	if (v->kind == VIEW_SCORES) {
		double w = hr__rdv_weight(v->rdv, v->npoints);

		for (size_t i = 0; i < v->npoints; i++)
			out[view_node(v, i)] = v->rdv[i].weight / w;
		return;
	}
	prev = view_last_pos(v);
	/* Summed by handle where the handles fit in `out` (always after a
	 * full build, where they are the slots): the handle_slot[] read per
	 * point, a second random access, doubled the time at 20 M points. */
	by_handle = v->kind == VIEW_PAGED && v->nhandles <= nslots;
	if (by_handle) {
		for (size_t p = 0; p < v->npages; p++) {
			const struct vpage *pg = v->pages[p];

			for (size_t i = 0; i < pg->n; i++) {
				add_arc_at(out, pg->node[i], pg->pos[i] - prev);
				prev = pg->pos[i];
			}
		}
	} else if (v->kind == VIEW_PAGED) {
		for (size_t p = 0; p < v->npages; p++) {
			const struct vpage *pg = v->pages[p];

			for (size_t i = 0; i < pg->n; i++) {
				add_arc_at(out, v->handle_slot[pg->node[i]], pg->pos[i] - prev);
				prev = pg->pos[i];
			}
		}
	} else if (v->wide) {
		SUM_ARCS(uint32_t);
	} else {
		SUM_ARCS(uint16_t);
	}
	for (size_t j = 0; j < nslots; j++) {
		uint64_t s;

		memcpy(&s, &out[j], sizeof s);
		any = any || s;
		out[j] = ldexp((double)s, -64);	/* rounded once */
	}
	if (by_handle)
		shares_to_slots(v, out, nslots);
	/* One node owns everything (all points at one position, or every
	 * other arc empty): the node of the first point, whose arc is the
	 * circle. */
	if (!any)
		out[view_slot(v, view_first(v))] = 1.0;
}

#undef SUM_ARCS

/* ---- memory ------------------------------------------------------------------ */

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

unsigned hr__view_index_bits(size_t n, bool wide)
{
	return index_bits(n, wide);
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
			  (npoints + POS_PAD) *
				  (wide ? sizeof(uint32_t) : sizeof(uint16_t)));
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

int hr__view_alloc(struct view *v, size_t npoints, bool wide)
{
	unsigned b = index_bits(npoints, wide);
	size_t buckets = (size_t)1 << b;
	size_t pos_bytes = (npoints + POS_PAD) * sizeof(uint64_t);
	size_t index_bytes = buckets * sizeof(uint32_t);
	char *mem;

	v->bytes = block_bytes(npoints, b, wide);
	mem = hr__big_alloc(v->bytes);
	if (!mem)
		return HR_ENOMEM;
	v->kind = VIEW_FLAT;
	v->mem = mem;
	v->pos = (uint64_t *)mem;
	v->index = (uint32_t *)(mem + pos_bytes);
	v->node = mem + pos_bytes + index_bytes;
	v->npoints = npoints;
	v->shift = 64 - b;
	v->wide = wide;
	for (size_t i = 0; i < POS_PAD; i++) {
		v->pos[npoints + i] = UINT64_MAX;
		view_set_node(v, npoints + i, 0);
	}
	return HR_OK;
}

/* The positions of the m slots: slot j at ceil((j + 1) 2^64 / m) - 1,
 * that is floor(((j + 1) 2^64 - 1) / m), stepped by 2^64 / m with its
 * remainder carried. */
static void slot_positions(uint64_t *pos, uint64_t m)
{
	uint64_t step = UINT64_MAX / m, step_rem = UINT64_MAX % m + 1;
	uint64_t p = step, rem = UINT64_MAX % m;

	/* 2^64 = step * m + step_rem (step_rem may equal m) */
	if (step_rem == m) {
		step++;
		step_rem = 0;
	}
	for (uint64_t j = 0; j < m; j++) {
		pos[j] = p;
		rem += step_rem;
		p += step;
		if (rem >= m) {
			rem -= m;
			p++;
		}
	}
}

int hr__view_table(struct view *v, const uint32_t *table, uint64_t m, bool wide)
{
	if (hr__view_alloc(v, m, wide))
		return HR_ENOMEM;
	slot_positions(v->pos, m);
	for (uint64_t j = 0; j < m; j++)
		view_set_node(v, j, table[j]);
	hr__view_index(v);
	v->kind = VIEW_TABLE;
	v->table = m;
	return HR_OK;
}

int hr__view_scores(struct view *v, size_t n, struct rdv_member **members)
{
	size_t bytes = n * (sizeof **members + sizeof(uint32_t));
	char *mem = malloc(bytes ? bytes : 1);

	if (!mem)
		return HR_ENOMEM;
	*members = (struct rdv_member *)mem;
	v->kind = VIEW_SCORES;
	v->mem = mem;
	v->bytes = bytes ? bytes : 1;
	v->rdv = *members;
	v->node = mem + n * sizeof **members;
	v->index = NULL;
	v->wide = true;
	v->npoints = n;
	return HR_OK;
}

size_t hr__view_bytes(const struct view *v)
{
	return v->pos ? v->bytes : 0;
}

void hr__view_release(struct view *v)
{
	if (v->mem && v->kind == VIEW_PAGED) {
		/* A table released half built has NULL past its last page. */
		for (size_t p = 0; p < v->npages; p++)
			if (v->pages[p])
				hr__page_release(v->pages[p]);
	}
	free(v->mem);
	memset(v, 0, sizeof *v);
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

/* ---- sorting ------------------------------------------------------------------- */

int hr__point_cmp(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return point_less(x, y) ? -1 : point_less(y, x) ? 1 : 0;
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
