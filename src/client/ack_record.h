/* SPDX-License-Identifier: MIT */
/* ack_record.h - the acknowledgement record (internal; the tools of
 * src/cli/ may use it too, to check ids and prefixes as the library does):
 * the JSON value a client puts at <ack prefix><client id>
 * (docs/handoff.md), and the rules for client ids and ack prefixes.  Pure:
 * no I/O. */
#ifndef HR_ACK_RECORD_H
#define HR_ACK_RECORD_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

/* Largest revision an ack carries: JSON numbers are exact up to 2^53. */
#define HR__ACK_REVISION_MAX (UINT64_C(1) << 53)
/* Longest hr_version() string kept from a record. */
#define HR__ACK_VERSION_MAX 32

/* One ack as read from its record. */
typedef struct hr__ack_record {
	uint64_t revision;
	uint64_t digest;
	int64_t time_ms;           /* wall clock, ms since the epoch */
	char version[HR__ACK_VERSION_MAX + 1];
} hr__ack_record;

/* Checks a client id: the rules of a node id (1..HR_ID_MAX bytes of
 * printable ASCII, no '/').  HR_EINVAL or HR_ELIMIT naming it. */
int hr__ack_client_id_check(const char *id, hr_error *err);

/* How an ack prefix and a ring prefix overlap: not at all, or one starts
 * with the other (holds the other's keys). */
typedef enum hr__overlap {
	HR__APART,
	HR__SAME,
	HR__ACKS_HOLD_RING,       /* the ack prefix starts the ring prefix */
	HR__RING_HOLDS_ACKS       /* the ring prefix starts the ack prefix */
} hr__overlap;

hr__overlap hr__prefixes_overlap(const char *ack_prefix, const char *ring_prefix);

/* Checks an ack prefix (1..4096 bytes) against the ring's prefix: neither
 * may start with the other, or acks would be read as node records (or
 * records as acks).  HR_EINVAL saying which contains which. */
int hr__ack_prefix_check(const char *ack_prefix, const char *ring_prefix,
			 hr_error *err);

/* The record of client `id` at `revision` with `digest`, written at
 * `time_ms` (wall clock): a malloc'd NUL-terminated string, NULL when out
 * of memory. */
char *hr__ack_record_write(const char *id, uint64_t revision, uint64_t digest,
			   int64_t time_ms);

/* Parses the record under the key of client `id` (`id_len` bytes).
 * HR_EPARSE with the reason: not JSON, a missing or mistyped field, a
 * revision not written as a whole number in 1..2^53 (read from its digits,
 * exactly), a digest not 16 lowercase hex digits, a client that is not the
 * key's.  Unknown fields are ignored. */
int hr__ack_record_parse(const char *id, size_t id_len, const char *value,
			 size_t len, hr__ack_record *out, hr_error *err);

#endif
