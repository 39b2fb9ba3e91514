/* SPDX-License-Identifier: MIT */
/*
 * snapshot.h - a ring as an immutable file that every process of a host
 * maps and looks up in, in place (internal).
 *
 * A host runs one agent that keeps the ring in sync with etcd and writes
 * each ring it builds as a snapshot; the host's other processes map the
 * newest one read-only and shared, so the ring is in memory once per host.
 * What a lookup reads is arrays at offsets in the file (the views' points,
 * index and node numbers, the nodes' lookup lines): the ring a reader gets
 * is an ordinary hr_ring whose arrays are in the mapping, and every lookup
 * and walk of the library runs on it unchanged.
 *
 * The nodes' records (struct ring_node, what hr_ring_node() hands out)
 * hold addresses: of their strings and tokens, base + offset, where base is
 * the address the writer chose for the file (HR__SNAP_BASE_*).  A reader
 * maps the file there when it can (MAP_FIXED_NOREPLACE: a pre-forked
 * worker inherits the mapping, other processes find the range free almost
 * always), and then shares every byte of it with the host's other readers.
 * Where the range is taken, the reader maps the file privately elsewhere
 * and moves the records' addresses to it: its own copy of the pages of the
 * records, the rest shared as before.
 *
 * The format, version 1.  Little-endian, LP64 (x86-64, arm64); every
 * offset from the start of the file, every section 64-byte aligned.
 *
 *   header (HR__SNAP_HEADER bytes, struct hr__snap_header below)
 *   nodes    nnodes records of struct ring_node (ring_impl.h), in id
 *            order, bytewise, unique; the fields id, addr, zone, tokens
 *            (twice: hr_node's and the ring's) hold base + the offset of
 *            their string or first token, 0 for no tokens
 *   strings  every node's id, addr and zone, each NUL-terminated, then
 *            COPY_CHUNK zero bytes (the copy-out reads that far)
 *   tokens   the nodes' tokens, u64 each, ascending per node
 *   lines    nnodes + 1 lookup lines of 64 bytes (struct ring_line)
 *   view     per view (write, then read unless the header's
 *            HR__SNAP_SHARED says both are one): a flat view's positions
 *            (npoints + POS_PAD, padded with UINT64_MAX), its index
 *            (2^(64 - shift) u32) and its node numbers (npoints + POS_PAD,
 *            u16 or, wide, u32, padded with 0); a Maglev table the same
 *            with npoints == its size; rendezvous: npoints score inputs
 *            (struct rdv_member) and their node numbers (u32)
 *
 * A paged view is written flat: the file is written once per ring and
 * never derived from, so pages, which exist to share memory between a
 * ring and the next, have nothing to share.
 *
 * The checksum is XXH3-64 of the whole file with its own 8 bytes read as
 * zero.  Readers check it and every size, offset and count, and refuse
 * a file that fails any check (snapshot_check.c).
 */
#ifndef HR_SNAPSHOT_H
#define HR_SNAPSHOT_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || __SIZEOF_POINTER__ != 8
#error "snapshots are written and read on little-endian 64-bit machines"
#endif

#define HR__SNAP_MAGIC "hrsnap\r\n"	/* the \r\n: a file that went
					   through a text conversion fails */
#define HR__SNAP_VERSION 1u
#define HR__SNAP_HEADER 512u
#define HR__SNAP_ALIGN 64u

/* The address range writers place snapshots in: slot g % HR__SNAP_SLOTS
 * of HR__SNAP_SLOT bytes from HR__SNAP_BASE_FIRST for generation g, so
 * that the snapshots a reader holds at once (the newest and the ones
 * before it, while threads move) never want the same range.  17 TiB up:
 * far from where Linux places a process's own mappings (the program low,
 * libraries and mmap() near the top of the 47-bit space) and above
 * AddressSanitizer's shadow (ThreadSanitizer's programs map moved); a
 * slot holds the largest ring (2^25 points). */
#define HR__SNAP_BASE_FIRST ((uint64_t)17 << 40)
#define HR__SNAP_SLOT ((uint64_t)1 << 36)
#define HR__SNAP_SLOTS 64u

/* The base a writer gives generation `gen`. */
static inline uint64_t hr__snap_base(uint64_t gen)
{
	return HR__SNAP_BASE_FIRST + (gen % HR__SNAP_SLOTS) * HR__SNAP_SLOT;
}

/* Header flags. */
#define HR__SNAP_SHARED 0x1u	/* one view array serves both views */

/* Sections, in file order. */
enum hr__snap_section {
	HR__SNAP_NODES,
	HR__SNAP_STRINGS,
	HR__SNAP_TOKENS,
	HR__SNAP_LINES,
	HR__SNAP_SECTIONS
};

/* Where a section or array is: [off, off + bytes) of the file. */
struct hr__snap_span {
	uint64_t off, bytes;
};

/* A view as the header describes it; its arrays in the file. */
struct hr__snap_view {
	uint32_t kind;		/* enum view_kind: FLAT, TABLE or SCORES */
	uint32_t wide;		/* node numbers of 4 bytes, else 2 */
	uint64_t npoints;
	uint64_t nnodes;	/* distinct nodes with points */
	uint64_t nzones;	/* distinct zones among them */
	uint64_t table;		/* TABLE: its size M */
	uint32_t shift;		/* FLAT, TABLE: 64 - index bits */
	uint32_t spare;
	struct hr__snap_span pos;	/* SCORES: the score inputs */
	struct hr__snap_span index;	/* SCORES: none */
	struct hr__snap_span node;
};

struct hr__snap_header {
	char magic[8];
	uint32_t version;
	uint32_t header_bytes;	/* HR__SNAP_HEADER */
	uint64_t file_bytes;
	uint64_t checksum;
	uint64_t base;		/* where the records' addresses point */
	uint64_t generation;	/* the writer's count of its snapshots */
	uint64_t revision;	/* the ring's */
	uint64_t digest;	/* the ring's (docs/placement.md) */
	uint32_t placement;	/* hr_placement */
	uint32_t vnodes_per_weight;
	uint64_t maglev_size;
	uint64_t nnodes, npoints, nzones;
	uint32_t flags;		/* HR__SNAP_* */
	uint32_t record_bytes;	/* sizeof(struct ring_node): the ABI */
	struct hr__snap_span section[HR__SNAP_SECTIONS];
	struct hr__snap_view view[2];	/* by hr_view */
};

_Static_assert(sizeof(struct hr__snap_header) <= HR__SNAP_HEADER,
	       "the header fits its bytes");
/* Where docs/agent.md says the fields are. */
_Static_assert(offsetof(struct hr__snap_header, checksum) == 24 &&
	       offsetof(struct hr__snap_header, placement) == 64 &&
	       offsetof(struct hr__snap_header, nnodes) == 80 &&
	       offsetof(struct hr__snap_header, flags) == 104 &&
	       offsetof(struct hr__snap_header, section) == 112 &&
	       offsetof(struct hr__snap_header, view) == 176 &&
	       sizeof(struct hr__snap_view) == 96, "the header as docs/agent.md lays it out");

/*
 * Writes `ring` as the snapshot file `name` in directory `dirfd`, its
 * records' addresses relative to `base` (hr__snap_base(generation)):
 * written to a temporary file beside it (mode 0640, never through a
 * symlink), flushed to the disk (fsync), then renamed over `name`, and the
 * directory flushed, so that the name only ever shows a whole file.
 * HR_EINVAL for a ring whose point hash is not the contract's (tests
 * build such rings); HR_EIO with the system's reason; HR_ENOMEM.
 * Thread safe (the ring is only read).
 */
int hr__snapshot_write(const hr_ring *ring, int dirfd, const char *name,
		       uint64_t generation, hr_error *err);

/*
 * Maps the snapshot open on `fd` (kept open by the caller, or closed:
 * the mapping keeps the file) and returns its ring in *out (a reference;
 * hr_ring_release() unmaps the file with the last one).  `what` names
 * the file in messages.  HR_EPARSE for a file that is not a whole,
 * valid snapshot of this version, the message saying what failed (the
 * first check that did); HR_EIO with the system's reason (a failed
 * mapping); HR_ENOMEM.  Thread safe.
 */
int hr__snapshot_map_fd(int fd, const char *what, hr_ring **out,
			hr_error *err);

/* hr__snapshot_map_fd() of the file `name` in `dirfd` (AT_FDCWD: a
 * path), opened without following a symlink.  HR_ENOTFOUND for no such
 * file. */
int hr__snapshot_map(int dirfd, const char *name, hr_ring **out,
		     hr_error *err);

/* Whether `ring` is a mapped snapshot's, and if so whether mapped at its
 * base (shared with the host's other readers) or moved (its records
 * private).  For tests and the agent's figures. */
enum hr__snap_mapping { HR__SNAP_NOT, HR__SNAP_AT_BASE, HR__SNAP_MOVED };
enum hr__snap_mapping hr__snapshot_mapping(const hr_ring *ring);

/* ---- within the layer -------------------------------------------------- */

/*
 * Checks the snapshot in buf[0 .. len) (mapped from its file), whose
 * records' addresses are relative to the header's base: every check of
 * the format but the checksum's (checked before, over the file).
 * HR_EPARSE with what failed.
 */
int hr__snapshot_check(const unsigned char *buf, size_t len, hr_error *err);

/* The checksum of buf[0 .. len) (a whole file, len >= the header). */
uint64_t hr__snapshot_checksum(const unsigned char *buf, size_t len);

#endif
