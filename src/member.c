/*
 * member.c - node records: validating nodes, parsing etcd values and
 * members documents into nodes.  The record format is specified in
 * docs/placement.md.
 */
#include "member.h"

#include "error.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A members file larger than this is refused rather than read. */
#define MEMBERS_FILE_MAX ((size_t)256 << 20)

/* Bytes of an id shown in a message; the rest is cut ("..."). */
#define ID_SHOWN 64

/* Writes `s` (len bytes) quoted-safe into buf: printable ASCII as is,
 * anything else as \xNN, cut after ID_SHOWN bytes. */
static const char *show(char *buf, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == ID_SHOWN) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

#define SHOW_SIZE (ID_SHOWN * 4 + 8)

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* ---- validation ---------------------------------------------------------- */

int hr__id_validate(const char *id, size_t len, hr_error *err)
{
	char shown[SHOW_SIZE];

	if (!id)
		return hr__error_set(err, HR_EINVAL, "node id is NULL");
	if (len == 0)
		return hr__error_set(err, HR_EINVAL, "node id is empty");
	if (len > HR_ID_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": id is longer than %d bytes",
				     show(shown, sizeof shown, id, len), HR_ID_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)id[i];

		if (c == '/')
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": id must not contain '/'",
					     show(shown, sizeof shown, id, len));
		if (c < 0x21 || c > 0x7e)
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": id must be printable ASCII without blanks (byte 0x%02x at offset %zu)",
					     show(shown, sizeof shown, id, len), c, i);
	}
	return HR_OK;
}

/* Checks a text field of `len` bytes: no control byte, at most max bytes,
 * at least one byte unless empty_ok. */
static int text_validate(const char *id, const char *field, const char *s,
			 size_t len, size_t max, bool empty_ok, hr_error *err)
{
	if (!empty_ok && len == 0)
		return hr__error_set(err, HR_EINVAL, "node \"%s\": %s is empty",
				     id, field);
	if (len > max)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": %s is longer than %zu bytes",
				     id, field, max);
	for (size_t i = 0; i < len; i++)
		if (is_control((unsigned char)s[i]))
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": %s contains a control character (byte 0x%02x at offset %zu)",
					     id, field, (unsigned char)s[i], i);
	return HR_OK;
}

int hr__node_validate(const hr_node *node, hr_error *err)
{
	size_t len;
	int rc;

	if (!node)
		return hr__error_set(err, HR_EINVAL, "node is NULL");
	if (!node->id)
		return hr__error_set(err, HR_EINVAL, "node id is NULL");
	len = strnlen(node->id, HR_ID_MAX + 1);
	rc = hr__id_validate(node->id, len, err);
	if (rc)
		return rc;
	/* From here on the id is printable and short: show it as it is. */
	if (!node->addr)
		return hr__error_set(err, HR_EINVAL, "node \"%s\": addr is missing",
				     node->id);
	rc = text_validate(node->id, "addr", node->addr,
			   strnlen(node->addr, HR_ADDR_MAX + 1), HR_ADDR_MAX,
			   false, err);
	if (rc)
		return rc;
	if (node->zone) {
		rc = text_validate(node->id, "zone", node->zone,
				   strnlen(node->zone, HR_ZONE_MAX + 1),
				   HR_ZONE_MAX, true, err);
		if (rc)
			return rc;
	}
	if (!isfinite(node->weight) || !(node->weight > 0))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": weight must be a finite number > 0, not %g",
				     node->id, node->weight);
	if (!hr_state_name(node->state))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%s\": invalid state %d", node->id,
				     (int)node->state);
	return HR_OK;
}

/* ---- records ------------------------------------------------------------- */

void hr__record_clear(hr__record *rec)
{
	if (!rec)
		return;
	free(rec->id);
	free(rec->addr);
	free(rec->zone);
	memset(rec, 0, sizeof *rec);
}

static char *dup_bytes(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

/* A bare address: surrounding blanks trimmed, control bytes refused before
 * the copy (a NUL inside would otherwise cut the address short). */
static int record_bare(hr__record *rec, const char *s, size_t len,
		       hr_error *err)
{
	int rc;

	while (len && is_blank(*s)) {
		s++;
		len--;
	}
	while (len && is_blank(s[len - 1]))
		len--;
	rc = text_validate(rec->id, "addr", s, len, HR_ADDR_MAX, false, err);
	if (rc)
		return rc;
	rec->addr = dup_bytes(s, len);
	if (!rec->addr)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

static int field_string(const hr__record *rec, const cJSON *item,
			const char *name, hr_error *err)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return hr__error_set(err, HR_EPARSE,
				     "node \"%s\": field \"%s\" must be a string",
				     rec->id, name);
	return HR_OK;
}

/* A JSON object record: addr required, weight, zone, state optional,
 * unknown fields ignored, a known field given twice refused. */
static int record_object(hr__record *rec, const cJSON *obj, hr_error *err)
{
	const cJSON *addr = NULL, *weight = NULL, *zone = NULL, *state = NULL;
	const cJSON *item;
	int rc;

	cJSON_ArrayForEach(item, obj) {
		const cJSON **slot = NULL;

		if (strcmp(item->string, "addr") == 0)
			slot = &addr;
		else if (strcmp(item->string, "weight") == 0)
			slot = &weight;
		else if (strcmp(item->string, "zone") == 0)
			slot = &zone;
		else if (strcmp(item->string, "state") == 0)
			slot = &state;
		if (!slot)
			continue;
		if (*slot)
			return hr__error_set(err, HR_EPARSE,
					     "node \"%s\": field \"%s\" given twice",
					     rec->id, item->string);
		*slot = item;
	}

	if (!addr)
		return hr__error_set(err, HR_EPARSE,
				     "node \"%s\": field \"addr\" is missing",
				     rec->id);
	rc = field_string(rec, addr, "addr", err);
	if (rc)
		return rc;
	rec->addr = strdup(addr->valuestring);
	if (!rec->addr)
		return hr__error_set(err, HR_ENOMEM, "out of memory");

	if (weight) {
		if (!cJSON_IsNumber(weight))
			return hr__error_set(err, HR_EPARSE,
					     "node \"%s\": field \"weight\" must be a number",
					     rec->id);
		rec->weight = weight->valuedouble;
	}
	if (zone) {
		rc = field_string(rec, zone, "zone", err);
		if (rc)
			return rc;
		free(rec->zone);
		rec->zone = strdup(zone->valuestring);
		if (!rec->zone)
			return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	if (state) {
		char shown[SHOW_SIZE];

		rc = field_string(rec, state, "state", err);
		if (rc)
			return rc;
		if (hr_state_parse(state->valuestring, &rec->state))
			return hr__error_set(err, HR_EINVAL,
					     "node \"%s\": state \"%s\" is not active, warming or draining",
					     rec->id,
					     show(shown, sizeof shown, state->valuestring,
						  strlen(state->valuestring)));
	}
	return HR_OK;
}

/* Starts a record for an id already validated: defaults filled in. */
static int record_start(hr__record *rec, const char *id, size_t id_len,
			hr_error *err)
{
	memset(rec, 0, sizeof *rec);
	rec->weight = 1;
	rec->state = HR_STATE_ACTIVE;
	rec->id = dup_bytes(id, id_len);
	rec->zone = strdup("");
	if (!rec->id || !rec->zone)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

static int record_finish(hr__record *rec, hr_error *err)
{
	hr_node node = {
		.id = rec->id,
		.addr = rec->addr,
		.zone = rec->zone,
		.weight = rec->weight,
		.state = rec->state,
	};

	return hr__node_validate(&node, err);
}

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
		sc->blank = sc->blank && is_blank(c);
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

/* Parses exactly one JSON value from s[0..len), blanks around allowed. */
static cJSON *parse_json(const char *s, size_t len, const char *what,
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
		if (!is_blank(*end)) {
			hr__error_set(err, HR_EPARSE,
				      "%s: unexpected data after the JSON value (byte %zu)",
				      what, (size_t)(end - s));
			cJSON_Delete(json);
			return NULL;
		}
	}
	return json;
}

int hr__record_parse(const char *id, size_t id_len, const char *value,
		     size_t len, hr__record *out, hr_error *err)
{
	char shown[SHOW_SIZE];
	size_t i = 0;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "record output is NULL");
	memset(out, 0, sizeof *out);
	if (!value && len)
		return hr__error_set(err, HR_EINVAL, "record value is NULL");
	rc = hr__id_validate(id, id_len, err);
	if (rc)
		return rc;
	if (len > HR_RECORD_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%s\": value of %zu bytes exceeds the limit of %d",
				     show(shown, sizeof shown, id, id_len), len,
				     HR_RECORD_MAX);
	rc = record_start(out, id, id_len, err);
	if (rc)
		goto fail;

	while (i < len && is_blank(value[i]))
		i++;
	if (i < len && value[i] == '{') {
		char what[SHOW_SIZE + 16];
		cJSON *json;

		snprintf(what, sizeof what, "node \"%s\"", out->id);
		json = parse_json(value, len, what, err);
		if (!json) {
			rc = HR_EPARSE;
			goto fail;
		}
		rc = record_object(out, json, err);
		cJSON_Delete(json);
	} else {
		rc = record_bare(out, value, len, err);
	}
	if (!rc)
		rc = record_finish(out, err);
	if (rc)
		goto fail;
	return HR_OK;
fail:
	hr__record_clear(out);
	return rc;
}

/* ---- members documents --------------------------------------------------- */

/* One entry of a members document: an object record or a bare address. */
static int record_from_item(const cJSON *item, hr__record *rec, hr_error *err)
{
	const char *id = item->string;
	int rc;

	rc = hr__id_validate(id, strlen(id), err);
	if (!rc)
		rc = record_start(rec, id, strlen(id), err);
	if (rc)
		return rc;
	if (cJSON_IsObject(item))
		rc = record_object(rec, item, err);
	else if (cJSON_IsString(item) && item->valuestring)
		rc = record_bare(rec, item->valuestring,
				 strlen(item->valuestring), err);
	else
		rc = hr__error_set(err, HR_EPARSE,
				   "node \"%s\": record must be an object or a string",
				   id);
	if (!rc)
		rc = record_finish(rec, err);
	return rc;
}

/* A members document, `what` naming it in messages about the document. */
static int members_parse(const char *json, size_t len, const char *what,
			 const hr_ring_options *opts, hr_ring **out,
			 hr_error *err)
{
	hr__record *recs = NULL;
	hr_node *nodes = NULL;
	const cJSON *item;
	cJSON *doc;
	size_t n = 0, i = 0;
	int rc;

	doc = parse_json(json, len, what, err);
	if (!doc)
		return HR_EPARSE;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return hr__error_set(err, HR_EPARSE,
				     "%s: must be a JSON object mapping node id to record",
				     what);
	}
	cJSON_ArrayForEach(item, doc)
		n++;
	if (n > HR_NODES_MAX) {
		rc = hr__error_set(err, HR_ELIMIT, "%s: %zu nodes exceed the limit of %d",
				   what, n, HR_NODES_MAX);
		goto out;
	}
	recs = calloc(n ? n : 1, sizeof *recs);
	nodes = calloc(n ? n : 1, sizeof *nodes);
	if (!recs || !nodes) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(item, doc) {
		rc = record_from_item(item, &recs[i], err);
		if (rc)
			goto out;
		nodes[i] = (hr_node){
			.id = recs[i].id,
			.addr = recs[i].addr,
			.zone = recs[i].zone,
			.weight = recs[i].weight,
			.state = recs[i].state,
		};
		i++;
	}
	/* cJSON keeps both entries of an id given twice: the build refuses
	 * them with HR_EDUPLICATE, naming the id. */
	rc = hr_ring_build(nodes, n, opts, 0, out, err);
out:
	for (size_t j = 0; recs && j < n; j++)
		hr__record_clear(&recs[j]);
	free(recs);
	free(nodes);
	cJSON_Delete(doc);
	return rc;
}

int hr_ring_from_json(const char *json, size_t len, const hr_ring_options *opts,
		      hr_ring **out, hr_error *err)
{
	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!json)
		return hr__error_set(err, HR_EINVAL, "members document is NULL");
	return members_parse(json, len, "members document", opts, out, err);
}

/* Bytes of a path shown in a message: its end, where the file name is. */
#define PATH_SHOWN 120

/* `path` for a message: control bytes as \xNN, a long one cut at the front. */
static const char *show_path(char *buf, size_t size, const char *path)
{
	size_t len = strlen(path), o = 0, i = 0;

	if (len > PATH_SHOWN) {
		memcpy(buf, "...", 3);
		o = 3;
		i = len - PATH_SHOWN;
	}
	for (; i < len && o + 5 < size; i++) {
		unsigned char c = (unsigned char)path[i];

		if (is_control(c))
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

/* Every message of hr_ring_load_file() starts with the path, once. */
static int name_the_file(hr_error *err, const char *shown, int rc)
{
	size_t n = strlen(shown);
	char msg[HR_ERROR_MSG_MAX + PATH_SHOWN * 4 + 16];

	if (!err || !rc || (strncmp(err->message, shown, n) == 0 &&
			    err->message[n] == ':'))
		return rc;
	snprintf(msg, sizeof msg, "%s: %s", shown, err->message);
	memcpy(err->message, msg, sizeof err->message - 1);
	err->message[sizeof err->message - 1] = '\0';
	return rc;
}

int hr_ring_load_file(const char *path, const hr_ring_options *opts,
		      hr_ring **out, hr_error *err)
{
	char shown[PATH_SHOWN * 4 + 8];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!path)
		return hr__error_set(err, HR_EINVAL, "members file path is NULL");
	show_path(shown, sizeof shown, path);
	f = fopen(path, "rb");
	if (!f)
		return hr__error_set(err, HR_EIO, "%s: cannot open: %s", shown,
				     strerror(errno));
	for (;;) {
		size_t got;

		if (len == cap) {
			char *bigger;

			if (cap >= MEMBERS_FILE_MAX) {
				rc = hr__error_set(err, HR_ELIMIT, "%s: larger than %zu bytes",
						   shown, MEMBERS_FILE_MAX);
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			bigger = realloc(buf, cap + 1);
			if (!bigger) {
				rc = hr__error_set(err, HR_ENOMEM, "%s: out of memory", shown);
				goto out;
			}
			buf = bigger;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		rc = hr__error_set(err, HR_EIO, "%s: cannot read: %s", shown,
				   strerror(errno));
		goto out;
	}
	rc = name_the_file(err, shown,
			   members_parse(buf ? buf : "", len, shown, opts, out, err));
out:
	free(buf);
	fclose(f);
	return rc;
}
