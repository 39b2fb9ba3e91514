/* member.h - node records: parsing and validating etcd values and members
 * documents into nodes (internal). */
#ifndef HR_MEMBER_H
#define HR_MEMBER_H

#include "hashring.h"

/* A parsed record; strings are owned (malloc'd) by the record. */
typedef struct hr__record {
	char *id;
	char *addr;
	char *zone;     /* never NULL after a successful parse ("" if absent) */
	double weight;
	hr_state state;
} hr__record;

/*
 * Parses the etcd value of node `id` (`id_len` bytes, not NUL-terminated):
 * a value whose first non-blank byte is '{' is a JSON record, anything else
 * is a bare address (surrounding blanks trimmed).  Validates id and record.
 * On error `out` is left cleared and `err` names the reason.
 * Errors: HR_EPARSE, HR_EINVAL, HR_ELIMIT, HR_ENOMEM.
 */
int hr__record_parse(const char *id, size_t id_len, const char *value,
		     size_t len, hr__record *out, hr_error *err);

/* Frees the strings of `rec` and zeroes it.  Accepts NULL. */
void hr__record_clear(hr__record *rec);

/* Checks one node against the rules in hashring.h; the message names the
 * node and the field.  HR_EINVAL or HR_ELIMIT. */
int hr__node_validate(const hr_node *node, hr_error *err);

/* Checks a node id (`len` bytes).  HR_EINVAL with a reason. */
int hr__id_validate(const char *id, size_t len, hr_error *err);

#endif
