/* SPDX-License-Identifier: MIT */
/*
 * tokens.h - allocated tokens (docs/placement.md section 16): a node's
 * points are the positions its record lists, chosen when it joined so
 * that its share is its fair share by weight (internal).
 *
 * A record's tokens travel beside the node, not in it (hr_node keeps its
 * 1.0 layout): record.c parses them into an hr__tokens, the nodeset keeps
 * it with the member, and the ring build copies it into the ring's node.
 */
#ifndef HR_TOKENS_H
#define HR_TOKENS_H

#include "hashring.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* A node's tokens: distinct, ascending, malloc'd (NULL when n == 0). */
typedef struct hr__tokens {
	uint64_t *v;
	size_t n;
} hr__tokens;

/* Frees the tokens and zeroes `t`.  Accepts NULL. */
void hr__tokens_clear(hr__tokens *t);

/*
 * Parses the "tokens" field of node `id`'s record: an array of 1 to
 * HR_TOKENS_MAX JSON strings, each a decimal number from 0 to 2^64 - 1
 * without sign or leading zeros, all distinct.  Errors: HR_EPARSE (not an
 * array of such strings), HR_EINVAL (empty, or a token given twice),
 * HR_ELIMIT (too many), HR_ENOMEM; the message names the node.
 */
int hr__tokens_parse(const char *id, const cJSON *field, hr__tokens *out,
		     hr_error *err);

/*
 * Checks and copies `n` tokens of node `id` given by a program: sorted
 * into `out`.  HR_EINVAL (NULL with n > 0, a token given twice),
 * HR_ELIMIT (more than HR_TOKENS_MAX), HR_ENOMEM.
 */
int hr__tokens_copy(const char *id, const uint64_t *v, size_t n,
		    hr__tokens *out, hr_error *err);

/* Orders two tokens (uint64_t) ascending: for qsort and bsearch. */
int hr__token_cmp(const void *a, const void *b);

/* Writes `v` in decimal into buf (room for 21 bytes); returns the length. */
size_t hr__token_format(char *buf, uint64_t v);

#endif
