/* SPDX-License-Identifier: MIT */
/*
 * pages_table.c - the layout of a ring's pages (how many, how many index
 * buckets each) and the table of a paged view: the pages, and after each
 * the handle owning the positions past its last point (see pages.h).
 */
#include "pages.h"

#include <stdlib.h>
#include <string.h>

/* Average points per page aimed at (2^11) when a ring is paged from
 * scratch; a derived ring keeps its pages while that stays within a
 * factor of two or so.  Smaller pages make a one-node change copy less
 * but share more pages (one locked increment each): at 20,000,000 points
 * the two costs meet about here. */
#define PAGE_POINTS_LOG 11

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

unsigned hr__pages_bits(size_t npoints)
{
	unsigned lg = log2_floor(npoints);

	return lg > PAGE_POINTS_LOG + HR__PAGES_GROUP_BITS ? lg - PAGE_POINTS_LOG :
							    HR__PAGES_GROUP_BITS;
}

void hr__pages_layout(size_t npoints, unsigned *page_bits, unsigned *bucket_bits)
{
	unsigned lg = log2_floor(npoints);

	*page_bits = hr__pages_bits(npoints);
	*bucket_bits = lg > *page_bits ? lg - *page_bits : 1;
}

void hr__pages_shape(struct view *v, unsigned page_bits, unsigned bucket_bits)
{
	v->page_shift = 64 - page_bits;
	v->bucket_shift = v->page_shift - bucket_bits;
	v->bucket_mask = (uint32_t)(((size_t)1 << bucket_bits) - 1);
}

int hr__pages_table(struct view *v, unsigned page_bits, unsigned bucket_bits)
{
	size_t npages = (size_t)1 << page_bits;
	/* Zeroed: a table released half built has NULL past its last page. */
	size_t entry = sizeof *v->pages + sizeof *v->after + sizeof *v->count;
	char *mem = calloc(npages, entry);

	if (!mem)
		return HR_ENOMEM;
	memset(v, 0, sizeof *v);
	v->kind = VIEW_PAGED;
	v->mem = mem;
	v->pages = (struct vpage **)mem;
	v->after = (uint32_t *)(mem + npages * sizeof *v->pages);
	v->count = v->after + npages;
	v->npages = npages;
	hr__pages_shape(v, page_bits, bucket_bits);
	v->wide = true;
	v->bytes = npages * entry;
	return HR_OK;
}

int hr__pages_table_like(struct view *v, const struct view *from)
{
	return hr__pages_table(v, 64 - from->page_shift,
			       from->page_shift - from->bucket_shift);
}

/* The handle of the first point at or after the start of page p,
 * wrapping (the view has a point). */
static uint32_t first_handle_from(const struct view *v, size_t p)
{
	size_t at = paged_wrap(v, paged_from(v, p));

	return v->pages[PAGED_PAGE(at)]->node[0];
}

void hr__pages_after_all(struct view *v)
{
	uint32_t next = first_handle_from(v, 0);

	for (size_t p = v->npages; p-- > 0;) {
		v->after[p] = next;
		if (v->pages[p]->n)
			next = v->pages[p]->node[0];
	}
}

void hr__pages_after_fix(struct view *v, size_t p)
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
