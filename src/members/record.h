/* SPDX-License-Identifier: MIT */
/* record.h - node records: an etcd value, or an entry of a members
 * document, parsed into a valid node (internal).  docs/placement.md
 * section 8 is the format. */
#ifndef HR_RECORD_H
#define HR_RECORD_H

#include "hashring.h"

#include <cjson/cJSON.h>

/*
 * A parsed record is a node that owns its strings (malloc'd; zone never
 * NULL, "" if absent): the one representation of a node from the record
 * through the nodeset to the ring build, which takes it as it is.
 */
typedef hr_node hr__record;

/*
 * Parses the etcd value of node `id` (`id_len` bytes, not NUL-terminated):
 * a value whose first non-blank byte is '{' is a JSON record, anything else
 * is a bare address (surrounding blanks trimmed).  Validates id and record
 * (hr__node_validate).  On error `out` is left cleared and `err` names
 * the reason.  Errors: HR_EPARSE, HR_EINVAL, HR_ELIMIT, HR_ENOMEM.
 */
int hr__record_parse(const char *id, size_t id_len, const char *value,
		     size_t len, hr__record *out, hr_error *err);

/* One entry of a members document: `item` is the record (an object or a
 * string holding a bare address), its name the id.  As hr__record_parse(),
 * `out` left cleared on error. */
int hr__record_from_item(const cJSON *item, hr__record *out, hr_error *err);

struct hr__tokens;

/* hr__record_parse() and hr__record_from_item() that also read the
 * record's "tokens" field into `tokens` (none: n == 0), for the tokens
 * placement; the others ignore the field, as any unknown one.  A bad
 * tokens field makes the record bad (hr__tokens_parse); on error both
 * outputs are left cleared. */
int hr__record_parse_tokens(const char *id, size_t id_len, const char *value,
			    size_t len, hr__record *out,
			    struct hr__tokens *tokens, hr_error *err);
int hr__record_from_item_tokens(const cJSON *item, hr__record *out,
				struct hr__tokens *tokens, hr_error *err);

/* "<prefix><id>", malloc'd; NULL when out of memory. */
char *hr__record_key(const char *prefix, const char *id);

/*
 * `value` (`len` bytes), node `id`'s record, with the fields `upd` names
 * replaced, every other field kept; a bare address becomes an object.
 * Malloc'd; NULL with `err` set if the value is not a record (HR_EPARSE)
 * or out of memory.
 */
char *hr__record_modify(const char *id, const char *value, size_t len,
			const hr_record_update *upd, hr_error *err);

/* hr_node_check() with `opts` on record `value` of node `id`, read as the
 * clients read it: 0, or why they would refuse it. */
int hr__record_check(const hr_ring_options *opts, const char *id,
		     const char *value, hr_error *err);

/* Frees the strings of `rec` and zeroes it.  Accepts NULL. */
void hr__record_clear(hr__record *rec);

#endif
