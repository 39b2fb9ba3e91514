/* SPDX-License-Identifier: MIT */
/*
 * tokens.c - a node's tokens (docs/placement.md section 16), from its
 * record or from a program, checked the same way: distinct, sorted,
 * bounded in count.
 */
#include "tokens.h"

#include "decimal.h"
#include "error.h"
#include "node.h"

#include <stdlib.h>
#include <string.h>

void hr__tokens_clear(hr__tokens *t)
{
	if (!t)
		return;
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

size_t hr__token_format(char *buf, uint64_t v)
{
	size_t n = hr__decimal(buf, v);

	buf[n] = '\0';
	return n;
}

/* A decimal from 0 to 2^64 - 1, no sign, no leading zero, nothing else. */
static int token_scan(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t len = strlen(s);

	if (len == 0 || len > 20 || (s[0] == '0' && len > 1))
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int hr__token_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts t and refuses a token given twice. */
static int sort_distinct(const char *id, hr__tokens *t, hr_error *err)
{
	char buf[21];

	qsort(t->v, t->n, sizeof *t->v, hr__token_cmp);
	for (size_t i = 1; i < t->n; i++)
		if (t->v[i] == t->v[i - 1]) {
			hr__token_format(buf, t->v[i]);
			return hr__error_set(err, HR_EINVAL,
					     "node \"%.*s\": token %s given twice",
					     HR__ID_SHOWN, id, buf);
		}
	return HR_OK;
}

/* Room for `n` tokens in out->v (out->n stays 0), once `n` is checked:
 * what parsing a record's tokens and copying a caller's both need. */
static int tokens_alloc(const char *id, size_t n, hr__tokens *out, hr_error *err)
{
	if (n == 0)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": field \"tokens\" is empty",
				     HR__ID_SHOWN, id);
	if (n > HR_TOKENS_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%.*s\": %zu tokens exceed the limit of %d",
				     HR__ID_SHOWN, id, n, HR_TOKENS_MAX);
	out->v = malloc(n * sizeof *out->v);
	if (!out->v)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

int hr__tokens_parse(const char *id, const cJSON *field, hr__tokens *out,
		     hr_error *err)
{
	const cJSON *item;
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof *out);
	if (!cJSON_IsArray(field))
		return hr__error_set(err, HR_EPARSE,
				     "node \"%.*s\": field \"tokens\" must be an array of decimal strings",
				     HR__ID_SHOWN, id);
	cJSON_ArrayForEach(item, field)
		n++;
	rc = tokens_alloc(id, n, out, err);
	if (rc)
		return rc;
	cJSON_ArrayForEach(item, field) {
		if (!cJSON_IsString(item) || !item->valuestring ||
		    token_scan(item->valuestring, &out->v[out->n]) != 0) {
			char shown[HR__SHOW_SIZE];
			const char *s = cJSON_IsString(item) && item->valuestring ?
				item->valuestring : "(not a string)";

			hr__error_set(err, HR_EPARSE,
				      "node \"%.*s\": token %zu is \"%s\", not a decimal string from 0 to 18446744073709551615",
				      HR__ID_SHOWN, id, out->n,
				      hr__show(shown, sizeof shown, s, strlen(s)));
			hr__tokens_clear(out);
			return HR_EPARSE;
		}
		out->n++;
	}
	rc = sort_distinct(id, out, err);
	if (rc)
		hr__tokens_clear(out);
	return rc;
}

int hr__tokens_copy(const char *id, const uint64_t *v, size_t n,
		    hr__tokens *out, hr_error *err)
{
	int rc;

	memset(out, 0, sizeof *out);
	if (!v && n)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": tokens are NULL", HR__ID_SHOWN, id);
	rc = tokens_alloc(id, n, out, err);
	if (rc)
		return rc;
	memcpy(out->v, v, n * sizeof *v);
	out->n = n;
	rc = sort_distinct(id, out, err);
	if (rc)
		hr__tokens_clear(out);
	return rc;
}
