/* SPDX-License-Identifier: MIT */
/*
 * snapshot_write.c - a ring written as a snapshot file (snapshot.h): the
 * layout computed from the ring's counts, then every section written in
 * file order through one buffer that also feeds the checksum, so a ring
 * of millions of points is never copied whole.
 */
#include "snapshot.h"

#include "error.h"
#include "ring_build.h"
#include "ring_impl.h"
#include "ring_views.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t align_up(uint64_t v)
{
	return (v + HR__SNAP_ALIGN - 1) / HR__SNAP_ALIGN * HR__SNAP_ALIGN;
}

/* ---- the layout ------------------------------------------------------- */

/* Bytes of one node's strings, NULs included. */
static size_t node_string_bytes(const struct ring_node *rn)
{
	return (size_t)rn->id_len + rn->addr_len + rn->zone_len + 3;
}

/* A flat view's description and sizes as written: `v` itself when flat
 * or a table; a paged view as the flat view of the same points. */
static void describe_view(const hr_ring *ring, const struct view *v,
			  struct hr__snap_view *d)
{
	memset(d, 0, sizeof *d);
	/* An empty view has no arrays (a reader checks npoints first). */
	if (!v->npoints)
		return;
	d->npoints = v->npoints;
	d->nnodes = v->nnodes;
	d->nzones = v->nzones;
	if (v->kind == VIEW_SCORES) {
		d->kind = VIEW_SCORES;
		d->wide = 1;
		d->pos.bytes = v->npoints * sizeof(struct rdv_member);
		d->node.bytes = v->npoints * sizeof(uint32_t);
		return;
	}
	d->kind = v->kind == VIEW_TABLE ? VIEW_TABLE : VIEW_FLAT;
	d->table = v->kind == VIEW_TABLE ? v->table : 0;
	d->wide = v->kind == VIEW_PAGED ? ring_wide(ring) : v->wide;
	d->shift = v->kind == VIEW_PAGED ?
		   64 - hr__view_index_bits(v->npoints, d->wide) : v->shift;
	d->pos.bytes = (v->npoints + POS_PAD) * sizeof(uint64_t);
	d->index.bytes = ((uint64_t)1 << (64 - d->shift)) * sizeof(uint32_t);
	d->node.bytes = (v->npoints + POS_PAD) *
			(d->wide ? sizeof(uint32_t) : sizeof(uint16_t));
}

/* Every offset of the file, and its size, into `h`. */
static void layout(const hr_ring *ring, struct hr__snap_header *h)
{
	size_t strings = COPY_CHUNK, tokens = 0;
	uint64_t at = HR__SNAP_HEADER;
	int nviews = h->flags & HR__SNAP_SHARED ? 1 : 2;

	for (size_t i = 0; i < ring->nnodes; i++) {
		strings += node_string_bytes(&ring->nodes[i]);
		tokens += ring->nodes[i].ntokens;
	}
	h->section[HR__SNAP_NODES].bytes = ring->nnodes * sizeof(struct ring_node);
	h->section[HR__SNAP_STRINGS].bytes = strings;
	h->section[HR__SNAP_TOKENS].bytes = tokens * sizeof(uint64_t);
	h->section[HR__SNAP_LINES].bytes = (ring->nnodes + 1) * sizeof(struct ring_line);
	for (int s = 0; s < HR__SNAP_SECTIONS; s++) {
		h->section[s].off = at;
		at = align_up(at + h->section[s].bytes);
	}
	for (int v = 0; v < nviews; v++) {
		struct hr__snap_view *d = &h->view[v];

		describe_view(ring, &ring->views[v], d);
		if (!d->npoints)
			continue;
		d->pos.off = at;
		at = align_up(at + d->pos.bytes);
		if (d->index.bytes) {
			d->index.off = at;
			at = align_up(at + d->index.bytes);
		}
		d->node.off = at;
		at = align_up(at + d->node.bytes);
	}
	if (nviews == 1)
		h->view[HR_VIEW_READ] = h->view[HR_VIEW_WRITE];
	h->file_bytes = at;
}

/* ---- writing through one buffer ---------------------------------------- */

#define OUT_BUF ((size_t)1 << 16)

struct out {
	int fd;
	uint64_t at;		/* bytes written to the file so far */
	size_t n;		/* in buf */
	int error;		/* errno of the first failure; 0 */
	XXH3_state_t *sum;
	unsigned char buf[OUT_BUF];
};

static void out_flush(struct out *o)
{
	size_t done = 0;

	while (!o->error && done < o->n) {
		ssize_t w = write(o->fd, o->buf + done, o->n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->error = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	XXH3_64bits_update(o->sum, o->buf, o->n);
	o->at += o->n;
	o->n = 0;
}

static void out_put(struct out *o, const void *p, size_t len)
{
	const unsigned char *s = p;

	while (len) {
		size_t k = OUT_BUF - o->n < len ? OUT_BUF - o->n : len;

		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
		if (o->n == OUT_BUF)
			out_flush(o);
	}
}

static void out_zeros(struct out *o, size_t len)
{
	static const unsigned char zero[256];

	while (len) {
		size_t k = len < sizeof zero ? len : sizeof zero;

		out_put(o, zero, k);
		len -= k;
	}
}

/* Zeros up to file offset `off` (the next section's). */
static void out_pad_to(struct out *o, uint64_t off)
{
	out_zeros(o, (size_t)(off - (o->at + o->n)));
}

static void put_u16(struct out *o, uint16_t v)
{
	unsigned char b[2] = { (unsigned char)v, (unsigned char)(v >> 8) };

	out_put(o, b, 2);
}

static void put_u32(struct out *o, uint32_t v)
{
	unsigned char b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	out_put(o, b, 4);
}

static void put_u64(struct out *o, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	out_put(o, b, 8);
}

/* ---- the sections ---------------------------------------------------------- */

/* The records: the ring's, with their addresses at `base`.  Built field
 * by field on zeros, so that padding is zero and files are reproducible. */
static void put_nodes(struct out *o, const hr_ring *ring, const struct hr__snap_header *h)
{
	uint64_t s = h->base + h->section[HR__SNAP_STRINGS].off;
	uint64_t t = h->base + h->section[HR__SNAP_TOKENS].off;

	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];
		struct ring_node w;

		memset(&w, 0, sizeof w);
		w.pub.id = (const char *)(uintptr_t)s;
		w.pub.addr = (const char *)(uintptr_t)(s + rn->id_len + 1);
		w.pub.zone = (const char *)(uintptr_t)(s + rn->id_len + 1 + rn->addr_len + 1);
		w.pub.weight = rn->pub.weight;
		w.pub.state = rn->pub.state;
		w.vnodes = rn->vnodes;
		w.zone = rn->zone;
		w.id_len = rn->id_len;
		w.addr_len = rn->addr_len;
		w.zone_len = rn->zone_len;
		w.handle = (uint32_t)i;
		if (rn->ntokens) {
			w.tokens = (const uint64_t *)(uintptr_t)t;
			w.ntokens = rn->ntokens;
			w.pub.tokens = w.tokens;
			w.pub.ntokens = rn->ntokens;
			t += rn->ntokens * sizeof(uint64_t);
		}
		s += node_string_bytes(rn);
		out_put(o, &w, sizeof w);
	}
}

static void put_strings(struct out *o, const hr_ring *ring)
{
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		out_put(o, rn->pub.id, rn->id_len + 1u);
		out_put(o, rn->pub.addr, rn->addr_len + 1u);
		out_put(o, rn->pub.zone, rn->zone_len + 1u);
	}
	out_zeros(o, COPY_CHUNK);
}

static void put_tokens(struct out *o, const hr_ring *ring)
{
	for (size_t i = 0; i < ring->nnodes; i++)
		for (uint32_t k = 0; k < ring->nodes[i].ntokens; k++)
			put_u64(o, ring->nodes[i].tokens[k]);
}

/* The points of a paged view in order, one page after another: their
 * positions, or their node slots. */
#define EACH_PAGED_POINT(v, pos_var, slot_var, body) do {                 \
		for (size_t p_ = 0; p_ < (v)->npages; p_++) {                 \
			const struct vpage *pg_ = (v)->pages[p_];              \
			for (size_t i_ = 0; i_ < pg_->n; i_++) {               \
				uint64_t pos_var = pg_->pos[i_];               \
				uint32_t slot_var = (v)->handle_slot[pg_->node[i_]]; \
				(void)pos_var;                                 \
				(void)slot_var;                                \
				body;                                          \
			}                                                      \
		}                                                              \
	} while (0)

/* A paged view's index, from its positions in order: bucket k's entry
 * is the number of points in buckets below k. */
static void put_paged_index(struct out *o, const struct view *v,
			    const struct hr__snap_view *d)
{
	uint64_t buckets = (uint64_t)1 << (64 - d->shift), next = 0;
	uint32_t seen = 0;

	EACH_PAGED_POINT(v, pos, slot, {
		uint64_t b = pos >> d->shift;

		for (; next <= b; next++)
			put_u32(o, seen);
		seen++;
	});
	for (; next < buckets; next++)
		put_u32(o, seen);
}

static void put_view(struct out *o, const struct view *v, const struct hr__snap_view *d)
{
	if (!d->npoints)
		return;
	out_pad_to(o, d->pos.off);
	if (v->kind == VIEW_SCORES) {
		out_put(o, v->rdv, d->pos.bytes);
		out_pad_to(o, d->node.off);
		out_put(o, v->node, d->node.bytes);
		return;
	}
	if (v->kind != VIEW_PAGED) {
		out_put(o, v->pos, d->pos.bytes);
		out_pad_to(o, d->index.off);
		out_put(o, v->index, d->index.bytes);
		out_pad_to(o, d->node.off);
		out_put(o, v->node, d->node.bytes);
		return;
	}
	EACH_PAGED_POINT(v, pos, slot, put_u64(o, pos));
	for (int i = 0; i < POS_PAD; i++)
		put_u64(o, UINT64_MAX);
	out_pad_to(o, d->index.off);
	put_paged_index(o, v, d);
	out_pad_to(o, d->node.off);
	if (d->wide)
		EACH_PAGED_POINT(v, pos, slot, put_u32(o, slot));
	else
		EACH_PAGED_POINT(v, pos, slot, put_u16(o, (uint16_t)slot));
	out_zeros(o, POS_PAD * (d->wide ? 4u : 2u));
}

static void put_all(struct out *o, const hr_ring *ring, const struct hr__snap_header *h)
{
	out_put(o, h, sizeof *h);
	out_pad_to(o, h->section[HR__SNAP_NODES].off);
	put_nodes(o, ring, h);
	out_pad_to(o, h->section[HR__SNAP_STRINGS].off);
	put_strings(o, ring);
	out_pad_to(o, h->section[HR__SNAP_TOKENS].off);
	put_tokens(o, ring);
	out_pad_to(o, h->section[HR__SNAP_LINES].off);
	out_put(o, ring->lines, h->section[HR__SNAP_LINES].bytes);
	put_view(o, &ring->views[HR_VIEW_WRITE], &h->view[HR_VIEW_WRITE]);
	if (!(h->flags & HR__SNAP_SHARED))
		put_view(o, &ring->views[HR_VIEW_READ], &h->view[HR_VIEW_READ]);
	out_pad_to(o, h->file_bytes);
	out_flush(o);
}

/* ---- the file ---------------------------------------------------------------- */

static int io_error(hr_error *err, int e, const char *what, const char *name)
{
	return hr__error_set(err, HR_EIO, "snapshot %s: %s: %s", name, what,
			     strerror(e));
}

/* Writes the whole file on `fd`, then its checksum into its header. */
static int write_file(const hr_ring *ring, struct hr__snap_header *h, int fd,
		      const char *name, hr_error *err)
{
	struct out *o = malloc(sizeof *o);
	unsigned char sum[8];
	uint64_t c;
	int e;

	if (!o)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	*o = (struct out){ .fd = fd, .sum = XXH3_createState() };
	if (!o->sum) {
		free(o);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	XXH3_64bits_reset(o->sum);
	put_all(o, ring, h);
	c = XXH3_64bits_digest(o->sum);
	e = o->error;
	XXH3_freeState(o->sum);
	free(o);
	if (e)
		return io_error(err, e, "write", name);
	for (int i = 0; i < 8; i++)
		sum[i] = (unsigned char)(c >> (8 * i));
	if (pwrite(fd, sum, sizeof sum, offsetof(struct hr__snap_header, checksum)) != 8)
		return io_error(err, errno ? errno : EIO, "write", name);
	if (fsync(fd))
		return io_error(err, errno, "fsync", name);
	return HR_OK;
}

int hr__snapshot_write(const hr_ring *ring, int dirfd, const char *name,
		       uint64_t generation, hr_error *err)
{
	struct hr__snap_header h;
	char tmp[256];
	int fd, rc;

	if (!ring || !name || !*name || strchr(name, '/'))
		return hr__error_set(err, HR_EINVAL, "snapshot: no ring or a bad file name");
	if (ring->place.hash != hr__point_hash_contract)
		return hr__error_set(err, HR_EINVAL,
				     "snapshot: the ring's point hash is not the contract's");
	if ((size_t)snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= sizeof tmp)
		return hr__error_set(err, HR_EINVAL, "snapshot: file name too long");
	memset(&h, 0, sizeof h);
	memcpy(h.magic, HR__SNAP_MAGIC, sizeof h.magic);
	h.version = HR__SNAP_VERSION;
	h.header_bytes = HR__SNAP_HEADER;
	h.base = hr__snap_base(generation);
	h.generation = generation;
	h.revision = ring->revision;
	h.digest = ring->digest;
	{
		hr_ring_options opts;

		hr__ring_options_of(ring, &opts);
		h.placement = (uint32_t)opts.placement;
		h.vnodes_per_weight = opts.vnodes_per_weight;
		h.maglev_size = opts.maglev_size;
	}
	h.nnodes = ring->nnodes;
	h.npoints = ring->npoints;
	h.nzones = ring->nzones;
	h.flags = views_one(&ring->views[HR_VIEW_WRITE], &ring->views[HR_VIEW_READ]) ?
		  HR__SNAP_SHARED : 0;
	h.record_bytes = sizeof(struct ring_node);
	layout(ring, &h);

	/* A leftover of a writer that died is ours to replace. */
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return io_error(err, errno, "create", tmp);
	/* The mode as asked, whatever the umask. */
	if (fchmod(fd, 0640))
		rc = io_error(err, errno, "chmod", tmp);
	else
		rc = write_file(ring, &h, fd, tmp, err);
	if (close(fd) && !rc)
		rc = io_error(err, errno, "close", tmp);
	if (!rc && renameat(dirfd, tmp, dirfd, name))
		rc = io_error(err, errno, "rename", name);
	if (rc) {
		unlinkat(dirfd, tmp, 0);
		return rc;
	}
	/* The rename itself durable: the directory flushed. */
	if (dirfd != AT_FDCWD && fsync(dirfd))
		return io_error(err, errno, "fsync of the directory", name);
	return HR_OK;
}
