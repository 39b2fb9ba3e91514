/* node.h - one node's validity: the rules of hr_node (hashring.h), checked
 * the same way wherever a node enters (internal). */
#ifndef HR_NODE_H
#define HR_NODE_H

#include "hashring.h"

#include <stdbool.h>

/* Room for hr__show() of any string. */
#define HR__SHOW_SIZE (64 * 4 + 8)

/* Writes `s` (`len` bytes, not yet validated) into buf for a message:
 * printable ASCII as is, anything else (and '"', '\\') as \xNN, cut after
 * 64 bytes with "...".  Returns buf. */
const char *hr__show(char *buf, size_t size, const char *s, size_t len);

/* A byte no text field may hold. */
static inline bool hr__is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Checks a node id (`len` bytes).  HR_EINVAL or HR_ELIMIT with a reason. */
int hr__id_validate(const char *id, size_t len, hr_error *err);

/* Checks an address of `len` bytes for the node `id` (valid): the addr rule
 * of hr__node_validate().  HR_EINVAL or HR_ELIMIT. */
int hr__addr_validate(const char *id, const char *addr, size_t len,
		      hr_error *err);

/* Checks one node against the rules in hashring.h; the message names the
 * node and the field.  HR_EINVAL or HR_ELIMIT. */
int hr__node_validate(const hr_node *node, hr_error *err);

#endif
