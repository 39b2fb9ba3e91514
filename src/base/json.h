/* SPDX-License-Identifier: MIT */
/* json.h - JSON texts from etcd and files into cJSON, with errors that say
 * why: the byte, too deep, cut short (internal). */
#ifndef HR_JSON_H
#define HR_JSON_H

#include "hashring.h"

#include <cjson/cJSON.h>
#include <stdbool.h>

/* A JSON blank. */
static inline bool hr__json_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * Parses exactly one JSON value from s[0..len), blanks around allowed;
 * `what` names the text in messages ("node \"a\"", a file's path).  A
 * \u0000 escape is refused (cJSON would cut the string there), as is
 * nesting deeper than HR_JSON_DEPTH_MAX.  NULL with HR_EPARSE in `err`.
 * The caller cJSON_Delete()s the value.
 */
cJSON *hr__json_parse(const char *s, size_t len, const char *what,
		      hr_error *err);

#endif
