/* SPDX-License-Identifier: MIT */
/*
 * json.c - JSON texts into cJSON values, refusing what cJSON would take
 * wrongly (a \u0000 escape), and giving each error its reason and byte.
 */
#include "json.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>

#if CJSON_NESTING_LIMIT != HR_JSON_DEPTH_MAX
#error "cJSON's nesting limit is not the documented HR_JSON_DEPTH_MAX"
#endif

/* What one pass over a JSON text outside cJSON tells. */
struct scan {
	size_t nul;		/* offset of the first \u0000 escape, or
				   SIZE_MAX                                 */
	size_t deep;		/* offset of the bracket opening level
				   HR_JSON_DEPTH_MAX + 1, or SIZE_MAX       */
	size_t string_start;	/* of the string the text ends in, if any   */
	bool in_string;		/* the text ends inside a string            */
	bool blank;		/* nothing but blanks                       */
	size_t depth;		/* arrays and objects open at the end       */
};

/*
 * cJSON turns a \u0000 escape into a NUL that silently cuts the string, so a
 * document holding one is refused before parsing; and its errors give a
 * position only, which this pass turns into a reason: too deep, or cut off.
 */
static void scan_json(const char *s, size_t len, struct scan *sc)
{
	*sc = (struct scan){ .nul = SIZE_MAX, .deep = SIZE_MAX, .blank = true };
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (sc->in_string) {
			if (c == '"') {
				sc->in_string = false;
			} else if (c == '\\' && i + 1 < len) {
				if (s[i + 1] == 'u' && i + 5 < len &&
				    memcmp(s + i + 2, "0000", 4) == 0 && sc->nul == SIZE_MAX)
					sc->nul = i;
				i++;
			}
			continue;
		}
		sc->blank = sc->blank && hr__json_blank(c);
		if (c == '"') {
			sc->in_string = true;
			sc->string_start = i;
		} else if (c == '{' || c == '[') {
			if (++sc->depth > HR_JSON_DEPTH_MAX && sc->deep == SIZE_MAX)
				sc->deep = i;
		} else if ((c == '}' || c == ']') && sc->depth) {
			sc->depth--;
		}
	}
}

/* Whether cJSON, given one more byte, fails past the end of `s`: then what
 * it refused was the end itself (a document cut short), not a byte in it. */
static bool cut_short(const char *s, size_t len)
{
	char *more = malloc(len + 1);
	const char *end = NULL;
	cJSON *json;
	bool cut;

	if (!more)
		return false;
	memcpy(more, s, len);
	more[len] = 'x';
	json = cJSON_ParseWithLengthOpts(more, len + 1, &end, 0);
	cut = !json && end && end >= more + len;
	cJSON_Delete(json);
	free(more);
	return cut;
}

/* The reason cJSON refused s[0..len), the position it gave being `at`. */
static void parse_error(const char *s, size_t len, size_t at,
			const struct scan *sc, const char *what, hr_error *err)
{
	if (sc->deep <= at)
		hr__error_set(err, HR_EPARSE,
			      "%s: nested deeper than %d levels of arrays and objects (byte %zu)",
			      what, HR_JSON_DEPTH_MAX, sc->deep);
	else if (sc->blank)
		hr__error_set(err, HR_EPARSE, "%s: no JSON value (%zu bytes of blanks)",
			      what, len);
	else if (sc->in_string ? sc->string_start <= at :
		 sc->depth && at + 1 >= len && cut_short(s, len))
		hr__error_set(err, HR_EPARSE,
			      "%s: unexpected end of the document at byte %zu%s", what,
			      len, sc->in_string ? " (inside a string)" : "");
	else
		hr__error_set(err, HR_EPARSE, "%s: malformed JSON near byte %zu",
			      what, at);
}

cJSON *hr__json_parse(const char *s, size_t len, const char *what,
		      hr_error *err)
{
	const char *end = NULL;
	struct scan sc;
	cJSON *json;

	scan_json(s, len, &sc);
	if (sc.nul != SIZE_MAX) {
		hr__error_set(err, HR_EPARSE,
			      "%s: \\u0000 is not allowed in a string (byte %zu)",
			      what, sc.nul);
		return NULL;
	}
	json = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	if (!json) {
		size_t at = end && end >= s && end <= s + len ? (size_t)(end - s) : 0;

		parse_error(s, len, at, &sc, what, err);
		return NULL;
	}
	for (; end < s + len; end++) {
		if (!hr__json_blank(*end)) {
			hr__error_set(err, HR_EPARSE,
				      "%s: unexpected data after the JSON value (byte %zu)",
				      what, (size_t)(end - s));
			cJSON_Delete(json);
			return NULL;
		}
	}
	return json;
}
