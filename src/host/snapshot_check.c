/* SPDX-License-Identifier: MIT */
/*
 * snapshot_check.c - what a reader checks of a snapshot before it looks
 * up in it (snapshot.h): every size, offset and count in bounds, every
 * address of a record inside its section, the strings terminated where
 * the records say, the lines equal to the records, the views' arrays of
 * the sizes their counts give, sorted, padded and indexed as a search
 * needs, their node numbers naming nodes.  So that no lookup or walk over
 * the ring can read outside the file or loop, whatever the file holds.
 * What the checks cannot see (a hostile but consistent ring answers
 * wrongly) is kept out by the directory's permissions (docs/agent.md).
 */
#include "snapshot.h"

#include "error.h"
#include "ring_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The first failed check, named. */
#define BAD(...) hr__error_set(err, HR_EPARSE, "snapshot: " __VA_ARGS__)

uint64_t hr__snapshot_checksum(const unsigned char *buf, size_t len)
{
	static const unsigned char zero[8];
	size_t at = offsetof(struct hr__snap_header, checksum);
	XXH3_state_t st;

	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, buf, at);
	XXH3_64bits_update(&st, zero, sizeof zero);
	XXH3_64bits_update(&st, buf + at + 8, len - at - 8);
	return XXH3_64bits_digest(&st);
}

/* Whether [off, off + bytes) is inside a file of `len` bytes, at an
 * offset aligned to `align`. */
static bool span_ok(const struct hr__snap_span *s, size_t len, size_t align)
{
	return s->off >= HR__SNAP_HEADER && s->off <= len && s->bytes <= len - s->off &&
	       s->off % align == 0;
}

/* The offset `addr - base` names inside section `s`, with at least
 * `need` bytes there; false if it does not. */
static bool addr_in(uint64_t addr, uint64_t base, const struct hr__snap_span *s,
		    uint64_t need, uint64_t *off)
{
	uint64_t o = addr - base;

	if (addr < base || o < s->off || o - s->off > s->bytes ||
	    need > s->bytes - (o - s->off))
		return false;
	*off = o;
	return true;
}

/* A string of `len` bytes at file offset `off` in the strings section:
 * NUL-terminated there, no NUL before, and a copy-out chunk of room. */
static bool string_ok(const unsigned char *buf, const struct hr__snap_span *strings,
		      uint64_t base, uint64_t addr, size_t len, size_t max)
{
	uint64_t off;

	if (len > max || !addr_in(addr, base, strings, len + COPY_CHUNK, &off))
		return false;
	return buf[off + len] == 0 && memchr(buf + off, 0, len) == NULL;
}

static int check_nodes(const unsigned char *buf, const struct hr__snap_header *h,
		       hr_error *err)
{
	const struct hr__snap_span *strings = &h->section[HR__SNAP_STRINGS];
	const struct hr__snap_span *tokens = &h->section[HR__SNAP_TOKENS];
	const struct ring_node *nodes =
		(const struct ring_node *)(buf + h->section[HR__SNAP_NODES].off);
	const struct ring_line *lines =
		(const struct ring_line *)(buf + h->section[HR__SNAP_LINES].off);
	uint64_t points = 0;

	for (size_t i = 0; i < h->nnodes; i++) {
		const struct ring_node *rn = &nodes[i];
		const struct ring_line *l = &lines[i];
		uint64_t t;

		if (!string_ok(buf, strings, h->base, (uintptr_t)rn->pub.id, rn->id_len, HR_ID_MAX) ||
		    !rn->id_len ||
		    !string_ok(buf, strings, h->base, (uintptr_t)rn->pub.addr, rn->addr_len,
			       HR_ADDR_MAX) ||
		    !string_ok(buf, strings, h->base, (uintptr_t)rn->pub.zone, rn->zone_len,
			       HR_ZONE_MAX))
			return BAD("node %zu: a string outside its section or not as long "
				   "as its record says", i);
		/* In id order, unique: lookups by id search them. */
		if (i) {
			const struct ring_node *o = &nodes[i - 1];
			const char *a = (const char *)buf + ((uintptr_t)o->pub.id - h->base);
			const char *b = (const char *)buf + ((uintptr_t)rn->pub.id - h->base);

			if (strcmp(a, b) >= 0)
				return BAD("node %zu: ids not in order", i);
		}
		if (rn->pub.state > HR_STATE_DRAINING || !isfinite(rn->pub.weight) ||
		    rn->pub.weight <= 0)
			return BAD("node %zu: a bad state or weight", i);
		if (rn->zone >= h->nzones || rn->handle != i || rn->vnodes > HR_POINTS_MAX)
			return BAD("node %zu: a bad zone, handle or point count", i);
		if (rn->ntokens != rn->pub.ntokens || rn->tokens != rn->pub.tokens ||
		    rn->ntokens > HR_TOKENS_MAX)
			return BAD("node %zu: bad tokens", i);
		if (rn->ntokens) {
			const uint64_t *tk;

			if (!addr_in((uintptr_t)rn->tokens, h->base, tokens,
				     rn->ntokens * sizeof(uint64_t), &t) || t % 8)
				return BAD("node %zu: tokens outside their section", i);
			tk = (const uint64_t *)(buf + t);
			for (uint32_t k = 1; k < rn->ntokens; k++)
				if (tk[k - 1] >= tk[k])
					return BAD("node %zu: tokens not ascending", i);
		} else if (rn->tokens) {
			return BAD("node %zu: bad tokens", i);
		}
		points += rn->vnodes;
		/* The line is what the copy-out hands back: the record's. */
		if (l->state != rn->pub.state || (l->flags & ~LINE_SPILLED))
			return BAD("node %zu: its lookup line is not its record's", i);
		if (!(l->flags & LINE_SPILLED)) {
			const unsigned char *id = buf + ((uintptr_t)rn->pub.id - h->base);
			const unsigned char *addr = buf + ((uintptr_t)rn->pub.addr - h->base);
			static const char zeros[LINE_STR];

			if (rn->id_len >= LINE_STR || rn->addr_len >= LINE_STR ||
			    memcmp(l->id, id, rn->id_len) ||
			    memcmp(l->id + rn->id_len, zeros, LINE_STR - rn->id_len) ||
			    memcmp(l->addr, addr, rn->addr_len) ||
			    memcmp(l->addr + rn->addr_len, zeros, LINE_STR - rn->addr_len))
				return BAD("node %zu: its lookup line is not its record's", i);
		} else if (rn->id_len < LINE_STR && rn->addr_len < LINE_STR) {
			return BAD("node %zu: its lookup line is not its record's", i);
		}
	}
	if (points != h->npoints)
		return BAD("the nodes' points add up to %llu, not %llu",
			   (unsigned long long)points, (unsigned long long)h->npoints);
	{
		const struct ring_line *none = &lines[h->nnodes];
		static const struct ring_line empty = { .flags = LINE_NONE };

		if (memcmp(none, &empty, sizeof empty))
			return BAD("the empty lookup line is not empty");
	}
	return HR_OK;
}

/* Node numbers of a view: each below the ring's node count, the padding
 * zero; and the view's distinct nodes and zones, which its header gives
 * (preference lists stop on them). */
static int numbers_ok(const unsigned char *buf, const struct hr__snap_header *h,
		       const struct hr__snap_view *d, uint64_t pad, hr_error *err)
{
	const struct ring_node *nodes =
		(const struct ring_node *)(buf + h->section[HR__SNAP_NODES].off);
	const unsigned char *p = buf + d->node.off;
	uint64_t nodes_seen = 0, zones_seen = 0;
	unsigned char *seen = calloc(h->nnodes / 8 + h->nzones / 8 + 2, 1);
	unsigned char *zone_seen = seen + h->nnodes / 8 + 1;
	bool ok = true;

	if (!seen)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (uint64_t i = 0; ok && i < d->npoints + pad; i++) {
		uint32_t v;

		if (d->wide)
			memcpy(&v, p + 4 * i, 4);
		else {
			uint16_t s;

			memcpy(&s, p + 2 * i, 2);
			v = s;
		}
		if (i >= d->npoints) {
			ok = v == 0;
		} else if (v >= h->nnodes) {
			ok = false;
		} else if (!(seen[v / 8] & (1u << (v % 8)))) {
			uint32_t z = nodes[v].zone;

			seen[v / 8] |= (unsigned char)(1u << (v % 8));
			nodes_seen++;
			if (!(zone_seen[z / 8] & (1u << (z % 8)))) {
				zone_seen[z / 8] |= (unsigned char)(1u << (z % 8));
				zones_seen++;
			}
		}
	}
	free(seen);
	if (ok && (nodes_seen != d->nnodes || zones_seen != d->nzones))
		ok = false;
	return ok ? HR_OK : BAD("a view's node numbers name no node, or not its count "
				"of nodes and zones");
}

/* The slot positions of a Maglev table of m slots (view.c): slot j at
 * floor(((j + 1) 2^64 - 1) / m). */
static uint64_t table_pos(uint64_t j, uint64_t m)
{
	unsigned __int128 top = ((unsigned __int128)(j + 1) << 64) - 1;

	return (uint64_t)(top / m);
}

static int check_flat(const unsigned char *buf, const struct hr__snap_header *h,
		      const struct hr__snap_view *d, int which, hr_error *err)
{
	unsigned bits = 64 - d->shift;
	uint64_t buckets, n = d->npoints;
	const uint64_t *pos;
	const uint32_t *index;

	if (d->wide != (h->nnodes > UINT16_MAX + 1u) ||
	    bits != hr__view_index_bits(n, d->wide))
		return BAD("view %d: node numbers or index of the wrong size", which);
	buckets = (uint64_t)1 << bits;
	if (d->pos.bytes != (n + POS_PAD) * 8 || d->index.bytes != buckets * 4 ||
	    d->node.bytes != (n + POS_PAD) * (d->wide ? 4 : 2))
		return BAD("view %d: arrays not of the sizes its counts give", which);
	pos = (const uint64_t *)(buf + d->pos.off);
	index = (const uint32_t *)(buf + d->index.off);
	for (uint64_t i = 0; i < n; i++) {
		if (i && pos[i - 1] > pos[i])
			return BAD("view %d: positions not in order", which);
		if (d->kind == VIEW_TABLE && pos[i] != table_pos(i, n))
			return BAD("view %d: a Maglev slot at the wrong position", which);
	}
	for (int k = 0; k < POS_PAD; k++)
		if (pos[n + k] != UINT64_MAX)
			return BAD("view %d: positions not padded", which);
	/* Bucket k starts at the first point whose top bits are k or more. */
	for (uint64_t k = 0; k < buckets; k++) {
		uint32_t s = index[k];

		if (s > n || (k && s < index[k - 1]) ||
		    (s < n && (pos[s] >> d->shift) < k) ||
		    (s > 0 && (pos[s - 1] >> d->shift) >= k))
			return BAD("view %d: its index does not match its positions", which);
	}
	return numbers_ok(buf, h, d, POS_PAD, err);
}

static int check_scores(const unsigned char *buf, const struct hr__snap_header *h,
			const struct hr__snap_view *d, int which, hr_error *err)
{
	const struct rdv_member *m = (const struct rdv_member *)(buf + d->pos.off);

	if (d->pos.bytes != d->npoints * sizeof *m || d->node.bytes != d->npoints * 4 ||
	    d->index.bytes || !d->wide)
		return BAD("view %d: arrays not of the sizes its counts give", which);
	for (uint64_t i = 0; i < d->npoints; i++)
		if (!isfinite(m[i].weight) || m[i].weight <= 0)
			return BAD("view %d: a bad score weight", which);
	return numbers_ok(buf, h, d, 0, err);
}

static int check_view(const unsigned char *buf, size_t len, const struct hr__snap_header *h,
		      int which, hr_error *err)
{
	const struct hr__snap_view *d = &h->view[which];

	if (d->nnodes > h->nnodes || d->nzones > h->nzones || d->npoints > HR_POINTS_MAX ||
	    (d->nnodes == 0) != (d->npoints == 0))
		return BAD("view %d: bad counts", which);
	if (!d->npoints)
		return d->pos.bytes || d->index.bytes || d->node.bytes ?
		       BAD("view %d: arrays in an empty view", which) : HR_OK;
	if (!span_ok(&d->pos, len, 64) || !span_ok(&d->node, len, 64) ||
	    (d->index.bytes && !span_ok(&d->index, len, 64)))
		return BAD("view %d: an array outside the file", which);
	switch (d->kind) {
	case VIEW_FLAT:
		if (d->table)
			return BAD("view %d: a flat view with a table size", which);
		return check_flat(buf, h, d, which, err);
	case VIEW_TABLE:
		if (d->table != d->npoints || d->table != h->maglev_size)
			return BAD("view %d: a table not of the ring's size", which);
		return check_flat(buf, h, d, which, err);
	case VIEW_SCORES:
		return check_scores(buf, h, d, which, err);
	default:
		return BAD("view %d: unknown kind %u", which, d->kind);
	}
}

int hr__snapshot_check(const unsigned char *buf, size_t len, hr_error *err)
{
	const struct hr__snap_header *h = (const struct hr__snap_header *)buf;
	static const size_t align[HR__SNAP_SECTIONS] = { 8, 1, 8, 64 };

	if (h->nnodes > HR_NODES_MAX || h->npoints > HR_POINTS_MAX || h->nzones > h->nnodes ||
	    (h->nnodes && !h->nzones))
		return BAD("bad node, point or zone counts");
	if (h->flags & ~HR__SNAP_SHARED)
		return BAD("unknown flags 0x%x", h->flags);
	for (int s = 0; s < HR__SNAP_SECTIONS; s++)
		if (!span_ok(&h->section[s], len, align[s]))
			return BAD("section %d outside the file", s);
	if (h->section[HR__SNAP_NODES].bytes != h->nnodes * sizeof(struct ring_node) ||
	    h->section[HR__SNAP_LINES].bytes != (h->nnodes + 1) * sizeof(struct ring_line) ||
	    h->section[HR__SNAP_STRINGS].bytes < COPY_CHUNK ||
	    h->section[HR__SNAP_TOKENS].bytes % 8)
		return BAD("sections not of the sizes the counts give");
	/* Only in the snapshots' range (snapshot.h): never where the
	 * reader's own memory may grow. */
	if (h->base != hr__snap_base(h->generation))
		return BAD("a base address that is not its generation's");
	int rc = check_nodes(buf, h, err);

	for (int v = 0; !rc && v < 2; v++)
		rc = check_view(buf, len, h, v, err);
	if (rc)
		return rc;
	if ((h->flags & HR__SNAP_SHARED) &&
	    memcmp(&h->view[0], &h->view[1], sizeof h->view[0]))
		return BAD("views said to be one differ");
	return HR_OK;
}
