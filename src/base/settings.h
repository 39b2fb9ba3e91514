/* SPDX-License-Identifier: MIT */
/* settings.h - the size protocol of the public settings structs
 * (internal; hashring.h, "Structs that grow"; docs/abi.md).
 *
 * Every struct a caller fills in starts with its size.  The layer that
 * owns a struct reads it once (ring_options.c, etcd_config.c,
 * client_config.c, cluster_config.c, metrics_options.c): each reader
 * checks the size here, takes the fields that lie within it and the
 * defaults for the others, and checks the values, so that every function
 * taking the struct accepts and refuses the same settings with the same
 * messages.  What a reader fills is complete and trusted: the rest of the
 * library reads it directly. */
#ifndef HR_SETTINGS_H
#define HR_SETTINGS_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

/* The longest etcd prefix (or ack prefix) a struct may name. */
#define HR__PREFIX_MAX 4096

/* The end of field `f` of T, and whether the caller's struct `p` holds it. */
#define HR__END(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))
#define HR__HAS(T, p, f) ((p)->size >= HR__END(T, f))
/* Takes field `f` from the caller's `in` when its struct holds it. */
#define HR__TAKE(T, in, out, f)              \
	do {                                 \
		if (HR__HAS(T, in, f))       \
			(out)->f = (in)->f;  \
	} while (0)

/*
 * A release that appends fields must make the size grow, or an older
 * library could not tell that they are set: no struct ends in padding
 * that a later field could slip into.  (Checked where pointers are 64
 * bits; other ABIs pad doubles differently.)
 */
#if UINTPTR_MAX == UINT64_MAX
#define HR__NO_TAIL_PADDING(T, last) \
	_Static_assert(sizeof(T) == HR__END(T, last), #T " ends in padding")
#else
#define HR__NO_TAIL_PADDING(T, last) _Static_assert(1, "")
#endif

/* Writes the caller's `size` bytes of `p` and no more: the defaults of
 * the fields this library knows, zeros for those of a later release. */
void hr__settings_init(void *p, size_t size, const void *defaults, size_t known);

/*
 * Checks the size of the caller's struct `p` of type `type`, of which this
 * library knows `known` bytes and whose first field ends at `first_end`.
 * Bytes past `known` are those of fields of a later release: all zero
 * unless the program set one, which this library cannot honour.
 */
int hr__settings_check(const void *p, size_t known, size_t first_end,
		       const char *type, hr_error *err);

#define HR__CHECK_SIZE(T, in, first, err) \
	hr__settings_check((in), sizeof(T), HR__END(T, first), #T, (err))

#endif
