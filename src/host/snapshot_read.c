/* SPDX-License-Identifier: MIT */
/*
 * snapshot_read.c - a snapshot file mapped and made a ring (snapshot.h):
 * mapped at its base where the range is free, else privately with its
 * records' addresses moved; checked whole before anything reads it as a
 * ring; then a ring header of the reader's own whose arrays are the
 * file's.  The mapping goes with the ring's last reference.
 */
#define _GNU_SOURCE
#include "snapshot.h"

#include "error.h"
#include "node.h"
#include "placements.h"
#include "ring_build.h"
#include "ring_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000	/* Linux 4.17; older kernels take it
					   as a hint, checked below */
#endif

/* A mapped file, freed with the ring (hr_ring's mem_free). */
struct mapping {
	void *addr;
	size_t len;
	bool moved;
};

static void mapping_free(void *arg)
{
	struct mapping *m = arg;

	munmap(m->addr, m->len);
	free(m);
}

enum hr__snap_mapping hr__snapshot_mapping(const hr_ring *ring)
{
	if (!ring || ring->mem_free != mapping_free)
		return HR__SNAP_NOT;
	return ((const struct mapping *)ring->mem_arg)->moved ? HR__SNAP_MOVED :
								HR__SNAP_AT_BASE;
}

/* The header's own checks, on a copy read from the file: enough to know
 * how much to map and where. */
static int check_header(const struct hr__snap_header *h, size_t size,
			const char *what, hr_error *err)
{
	if (memcmp(h->magic, HR__SNAP_MAGIC, sizeof h->magic))
		return hr__error_set(err, HR_EPARSE, "snapshot %s: not a snapshot (bad magic)",
				     what);
	if (h->version != HR__SNAP_VERSION)
		return hr__error_set(err, HR_EPARSE,
				     "snapshot %s: format version %u, this reader reads %u",
				     what, h->version, HR__SNAP_VERSION);
	if (h->header_bytes != HR__SNAP_HEADER || h->record_bytes != sizeof(struct ring_node))
		return hr__error_set(err, HR_EPARSE,
				     "snapshot %s: written for another machine (header of %u "
				     "bytes, records of %u)", what, h->header_bytes,
				     h->record_bytes);
	if (h->base != hr__snap_base(h->generation))
		return hr__error_set(err, HR_EPARSE,
				     "snapshot %s: a base address that is not its generation's",
				     what);
	if (h->file_bytes != size)
		return hr__error_set(err, HR_EPARSE,
				     "snapshot %s: %zu bytes where its header says %llu "
				     "(truncated or grown)", what, size,
				     (unsigned long long)h->file_bytes);
	return HR_OK;
}

/* Maps `len` bytes of `fd` at `base`, or NULL where that range is taken
 * (or the kernel placed it elsewhere: then unmapped). */
static void *map_at_base(int fd, size_t len, uint64_t base)
{
	void *want = (void *)(uintptr_t)base;
	void *p;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer turns a fixed address outside the ranges it keeps
	 * for programs into 0 and aborts on the result: its builds map
	 * moved. */
	(void)want;
	(void)p;
	(void)fd;
	(void)len;
	return NULL;
#endif
	if (!base)
		return NULL;
	p = mmap(want, len, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (p != want) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/* Moves the records' addresses from the file's base to where it is
 * mapped (a private, writable mapping), then makes it read-only. */
static int move_records(unsigned char *buf, size_t len, const char *what,
			hr_error *err)
{
	const struct hr__snap_header *h = (const struct hr__snap_header *)buf;
	struct ring_node *nodes = (struct ring_node *)(buf + h->section[HR__SNAP_NODES].off);
	uintptr_t delta = (uintptr_t)buf - (uintptr_t)h->base;

	for (size_t i = 0; i < h->nnodes; i++) {
		struct ring_node *rn = &nodes[i];

		rn->pub.id = (const char *)((uintptr_t)rn->pub.id + delta);
		rn->pub.addr = (const char *)((uintptr_t)rn->pub.addr + delta);
		rn->pub.zone = (const char *)((uintptr_t)rn->pub.zone + delta);
		if (rn->tokens) {
			rn->tokens = (const uint64_t *)((uintptr_t)rn->tokens + delta);
			rn->pub.tokens = rn->tokens;
		}
	}
	if (mprotect(buf, len, PROT_READ))
		return hr__error_set(err, HR_EIO, "snapshot %s: mprotect: %s", what,
				     strerror(errno));
	return HR_OK;
}

/* The view of the ring over the file's arrays that `d` describes. */
static void view_of(const unsigned char *buf, const struct hr__snap_view *d,
		    struct view *v)
{
	memset(v, 0, sizeof *v);
	v->kind = (unsigned char)d->kind;
	v->npoints = d->npoints;
	v->nnodes = d->nnodes;
	v->nzones = d->nzones;
	v->wide = d->wide;
	if (!d->npoints) {
		v->kind = VIEW_FLAT;
		return;
	}
	v->node = (void *)(buf + d->node.off);
	if (d->kind == VIEW_SCORES) {
		v->rdv = (const struct rdv_member *)(buf + d->pos.off);
		return;
	}
	v->pos = (uint64_t *)(buf + d->pos.off);
	v->index = (uint32_t *)(buf + d->index.off);
	v->shift = d->shift;
	v->table = d->table;
}

/* The ring over a checked mapping. */
static int ring_of(const unsigned char *buf, struct mapping *m, const char *what,
		   hr_ring **out, hr_error *err)
{
	const struct hr__snap_header *h = (const struct hr__snap_header *)buf;
	hr_ring_options opts;
	const hr__placement *pl;
	hr_ring *ring;

	hr_ring_options_init(&opts);
	opts.placement = (hr_placement)h->placement;
	opts.vnodes_per_weight = h->vnodes_per_weight;
	opts.maglev_size = h->maglev_size;
	if (hr__placement_get(&opts, &pl, NULL))
		return hr__error_set(err, HR_EPARSE, "snapshot %s: unknown placement %u", what,
				     h->placement);
	ring = calloc(1, sizeof *ring);
	if (!ring)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	atomic_init(&ring->refs, 1);
	ring->revision = h->revision;
	ring->digest = h->digest;
	ring->place.vnodes_per_weight = h->vnodes_per_weight;
	ring->place.maglev_size = h->maglev_size;
	ring->place.hash = hr__point_hash_contract;
	ring->pl = pl;
	ring->key_pos = pl->key_pos;
	ring->layout = HR__LAYOUT_FLAT;
	ring->nnodes = h->nnodes;
	ring->npoints = h->npoints;
	ring->nzones = h->nzones;
	ring->nodes = (struct ring_node *)(buf + h->section[HR__SNAP_NODES].off);
	ring->lines = (struct ring_line *)(buf + h->section[HR__SNAP_LINES].off);
	ring->strings = (char *)(buf + h->section[HR__SNAP_STRINGS].off);
	ring->tokens = h->section[HR__SNAP_TOKENS].bytes ?
		       (uint64_t *)(buf + h->section[HR__SNAP_TOKENS].off) : NULL;
	view_of(buf, &h->view[HR_VIEW_WRITE], &ring->views[HR_VIEW_WRITE]);
	if (h->flags & HR__SNAP_SHARED)
		ring->views[HR_VIEW_READ] = ring->views[HR_VIEW_WRITE];
	else
		view_of(buf, &h->view[HR_VIEW_READ], &ring->views[HR_VIEW_READ]);
	/* The records' contents by the rules of any ring's input. */
	for (size_t i = 0; i < ring->nnodes; i++) {
		hr_error why;

		if (hr__node_validate(&ring->nodes[i].pub, &why)) {
			free(ring);
			return hr__error_set(err, HR_EPARSE, "snapshot %s: node %zu: %s", what, i,
					     why.message);
		}
	}
	ring->mem_free = mapping_free;
	ring->mem_arg = m;
	*out = ring;
	return HR_OK;
}

int hr__snapshot_map_fd(int fd, const char *what, hr_ring **out, hr_error *err)
{
	struct hr__snap_header h;
	struct mapping *m;
	struct stat st;
	unsigned char *buf;
	size_t len;
	int rc;

	if (!out || fd < 0)
		return hr__error_set(err, HR_EINVAL, "snapshot: no file or no out");
	*out = NULL;
	if (!what)
		what = "";
	if (fstat(fd, &st))
		return hr__error_set(err, HR_EIO, "snapshot %s: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return hr__error_set(err, HR_EPARSE, "snapshot %s: not a regular file", what);
	if ((uint64_t)st.st_size < HR__SNAP_HEADER || (uint64_t)st.st_size > SIZE_MAX / 2)
		return hr__error_set(err, HR_EPARSE, "snapshot %s: %lld bytes: too short for "
				     "a snapshot", what, (long long)st.st_size);
	len = (size_t)st.st_size;
	if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		return hr__error_set(err, HR_EIO, "snapshot %s: read: %s", what,
				     strerror(errno ? errno : EIO));
	rc = check_header(&h, len, what, err);
	if (rc)
		return rc;
	m = calloc(1, sizeof *m);
	if (!m)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	m->len = len;
	m->addr = map_at_base(fd, len, h.base);
	if (!m->addr) {
		m->moved = true;
		m->addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (m->addr == MAP_FAILED) {
			rc = hr__error_set(err, HR_EIO, "snapshot %s: mmap: %s", what,
					   strerror(errno));
			free(m);
			return rc;
		}
	}
	buf = m->addr;
	/* Checked in the mapping itself: what is checked is what is read. */
	if (hr__snapshot_checksum(buf, len) != ((const struct hr__snap_header *)buf)->checksum)
		rc = hr__error_set(err, HR_EPARSE, "snapshot %s: bad checksum (corrupt)", what);
	else
		rc = hr__snapshot_check(buf, len, err);
	if (rc == HR_EPARSE && err) {
		/* Name the file in the checker's message. */
		char msg[sizeof err->message];

		memcpy(msg, err->message, sizeof msg);
		if (strncmp(msg, "snapshot: ", 10) == 0)
			hr__error_set(err, HR_EPARSE, "snapshot %s: %s", what, msg + 10);
	}
	if (!rc && m->moved)
		rc = move_records(buf, len, what, err);
	if (!rc)
		rc = ring_of(buf, m, what, out, err);
	if (rc)
		mapping_free(m);
	return rc;
}

int hr__snapshot_map(int dirfd, const char *name, hr_ring **out, hr_error *err)
{
	int fd, rc;

	if (!name)
		return hr__error_set(err, HR_EINVAL, "snapshot: no file name");
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		return hr__error_set(err, e == ENOENT ? HR_ENOTFOUND : HR_EIO,
				     "snapshot %s: %s", name,
				     e == ELOOP ? "a symlink (not followed)" : strerror(e));
	}
	rc = hr__snapshot_map_fd(fd, name, out, err);
	close(fd);
	return rc;
}
