/* SPDX-License-Identifier: MIT */
/*
 * control.h - an agent's control page and the names of its directory's
 * files (internal): the page every reader maps to learn, with one load,
 * whether there is a newer snapshot.
 *
 * The file `control` is one page (HR__CONTROL_BYTES), written in place by
 * the agent through a shared mapping and never replaced, so a reader's
 * mapping stays the live one across agent restarts.  The agent stores a
 * snapshot's revision before its generation, and then adds one to
 * `changes` (release), as it does when its ring turns stale or current
 * again: a reader's lookup loads `changes` (acquire), and when it moved,
 * opens a new generation's file or logs the staleness.  Version 1:
 *
 *   magic[8]            "hrctl\r\n" and a NUL
 *   version             u32, 1
 *   bytes               u32, HR__CONTROL_BYTES
 *   generation          u64, the current snapshot's (0: none yet)
 *   revision            u64, its ring's
 *   pid                 u64, the agent's (0: none since it closed)
 *   heartbeat_ms        i64, CLOCK_MONOTONIC of the agent's last beat
 *   confirmed_ms        i64, CLOCK_MONOTONIC when its ring was last known
 *                       to match etcd
 *   changes             u64, one more at each publish and each staleness
 *                       notice
 *   stale               u32, 1 while the agent's ring cannot be confirmed
 *                       current (for HR__HOST_STALE_MS and more)
 *
 * CLOCK_MONOTONIC is one clock for every process of a host.
 */
#ifndef HR_CONTROL_H
#define HR_CONTROL_H

#include <stdint.h>

/* "hrctl\r\n" and a NUL, as the little-endian u64 it is stored as. */
#define HR__CONTROL_MAGIC 0x000a0d6c74637268ull
#define HR__CONTROL_VERSION 1u
#define HR__CONTROL_BYTES 4096u

#define HR__CONTROL_FILE "control"
#define HR__LOCK_FILE "agent.lock"
/* "ring-" and 20 digits and ".snap", and the NUL. */
#define HR__SNAP_NAME_MAX 32

struct hr__control {
	uint64_t magic;		/* atomic: written last when made */
	uint32_t version;
	uint32_t bytes;
	uint64_t generation;	/* atomic */
	uint64_t revision;	/* atomic */
	uint64_t pid;		/* atomic */
	int64_t heartbeat_ms;	/* atomic */
	int64_t confirmed_ms;	/* atomic */
	uint64_t changes;	/* atomic */
	uint32_t stale;		/* atomic */
};

/* How long an agent's ring may go unconfirmed before it is stale, and how
 * often it says so again while it stays stale (a client's default
 * stale_warn_ms). */
#define HR__HOST_STALE_MS 10000

_Static_assert(sizeof(struct hr__control) <= HR__CONTROL_BYTES, "one page");

/* The snapshot file of generation `gen` into name[HR__SNAP_NAME_MAX]. */
void hr__snap_name(char *name, uint64_t gen);

/* Whether `name` is a snapshot file's, and its generation. */
int hr__snap_name_parse(const char *name, uint64_t *gen);

#endif
