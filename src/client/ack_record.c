/* SPDX-License-Identifier: MIT */
/* ack_record.c - the acknowledgement record: writing, parsing, and the
 * rules for client ids and ack prefixes (docs/handoff.md). */
#include "ack_record.h"

#include "error.h"
#include "json.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX_MAX 4096

int hr__ack_client_id_check(const char *id, hr_error *err)
{
	size_t len;

	if (!id || !id[0])
		return hr__error_set(err, HR_EINVAL, "ack client id is empty");
	len = strnlen(id, HR_ID_MAX + 1);
	if (len > HR_ID_MAX)
		return hr__error_set(err, HR_ELIMIT, "ack client id is longer than %d bytes",
				     HR_ID_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)id[i];

		if (c == '/' || c < 0x21 || c > 0x7e)
			return hr__error_set(err, HR_EINVAL,
					     "ack client id \"%.*s\": must be printable ASCII"
					     " without blanks or '/' (byte 0x%02x at offset %zu)",
					     (int)i, id, c, i);
	}
	return 0;
}

hr__overlap hr__prefixes_overlap(const char *ack_prefix, const char *ring_prefix)
{
	size_t a = strlen(ack_prefix), r = strlen(ring_prefix);

	if (strncmp(ack_prefix, ring_prefix, a < r ? a : r))
		return HR__APART;
	return a == r ? HR__SAME : a < r ? HR__ACKS_HOLD_RING : HR__RING_HOLDS_ACKS;
}

int hr__ack_prefix_check(const char *ack_prefix, const char *ring_prefix,
			 hr_error *err)
{
	if (!ack_prefix || !ack_prefix[0])
		return hr__error_set(err, HR_EINVAL, "ack prefix must be set and not empty");
	if (strnlen(ack_prefix, PREFIX_MAX + 1) > PREFIX_MAX)
		return hr__error_set(err, HR_EINVAL, "ack prefix longer than %d bytes",
				     PREFIX_MAX);
	switch (hr__prefixes_overlap(ack_prefix, ring_prefix)) {
	case HR__APART:
		return 0;
	case HR__SAME:
		return hr__error_set(err, HR_EINVAL,
				     "the ack prefix is the ring prefix \"%.200s\": acks and node"
				     " records would be read as each other; use a prefix of its own",
				     ring_prefix);
	case HR__ACKS_HOLD_RING:
		return hr__error_set(err, HR_EINVAL,
				     "the ack prefix \"%.200s\" contains the ring prefix \"%.200s\":"
				     " node records would be read as acks; use a prefix of its own",
				     ack_prefix, ring_prefix);
	default:
		return hr__error_set(err, HR_EINVAL,
				     "the ring prefix \"%.200s\" contains the ack prefix \"%.200s\":"
				     " acks would be read as node records; use a prefix of its own",
				     ring_prefix, ack_prefix);
	}
}

/* RFC 3339 in UTC with milliseconds: "2026-12-01T12:34:56.789Z". */
static void format_time(char *buf, size_t size, int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char head[32];

	if (!gmtime_r(&s, &tm) || !strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(head, sizeof head, "1970-01-01T00:00:00");
	snprintf(buf, size, "%s.%03dZ", head, (int)(ms % 1000));
}

static int parse_time(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	int ms = 0, n = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &n) != 7 || s[n])
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}

char *hr__ack_record_write(const char *id, uint64_t revision, uint64_t digest,
			   int64_t time_ms)
{
	cJSON *o = cJSON_CreateObject();
	char hex[17], when[40], rev[24];
	char *s = NULL;

	/* Digits, not a double's shortest form, which may round. */
	snprintf(rev, sizeof rev, "%" PRIu64, revision);
	snprintf(hex, sizeof hex, "%016" PRIx64, digest);
	format_time(when, sizeof when, time_ms);
	if (o && cJSON_AddStringToObject(o, "client", id) &&
	    cJSON_AddRawToObject(o, "revision", rev) &&
	    cJSON_AddStringToObject(o, "digest", hex) &&
	    cJSON_AddStringToObject(o, "version", hr_version()) &&
	    cJSON_AddStringToObject(o, "time", when))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static int parse_digest(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (strlen(s) != 16)
		return -1;
	for (int i = 0; i < 16; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			     c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* Past the JSON string that starts at s[i] (a '"'). */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i + 1;
}

/* Past the JSON value that starts at s[i]: at the ',', '}' or blank
 * after it. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	size_t depth = 0;

	while (i < len) {
		char c = s[i];

		if (c == '"') {
			i = skip_string(s, len, i);
		} else if (c == '{' || c == '[') {
			depth++;
			i++;
		} else if (c == '}' || c == ']') {
			if (!depth)
				break;
			depth--;
			i++;
		} else if (!depth && (c == ',' || hr__json_blank(c))) {
			break;
		} else {
			i++;
		}
	}
	return i;
}

/*
 * The text of the value of member `index` of the JSON object s[0..len),
 * which cJSON parsed (its children are the members in document order):
 * cJSON keeps numbers as doubles only, and a revision must be read
 * exactly.
 */
static void member_text(const char *s, size_t len, size_t index, const char **text,
			size_t *text_len)
{
	size_t i = 0;

	while (i < len && s[i] != '{')
		i++;
	for (size_t m = 0; ++i < len; m++) {
		size_t start;

		while (i < len && s[i] != '"')
			i++;
		i = skip_string(s, len, i);
		while (i < len && (s[i] == ':' || hr__json_blank(s[i])))
			i++;
		start = i;
		i = skip_value(s, len, i);
		if (m == index) {
			*text = s + start;
			*text_len = i - start;
			return;
		}
		while (i < len && s[i] != ',' && s[i] != '}')
			i++;
		if (i >= len || s[i] == '}')
			break;
	}
	*text = "";
	*text_len = 0;
}

/* A revision written as digits, exactly; NULL, or why it is not one. */
static const char *parse_revision(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || s[0] == '0')
		return "not a whole number in 1..2^53";
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return "not a whole number in 1..2^53";
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	/* 2^53 has 16 digits; past 20, v has wrapped. */
	if (len > 16 || v > HR__ACK_REVISION_MAX)
		return "above 2^53 (9007199254740992), the largest a JSON number holds exactly";
	*out = v;
	return NULL;
}

int hr__ack_record_parse(const char *id, size_t id_len, const char *value,
			 size_t len, hr__ack_record *out, hr_error *err)
{
	cJSON *o = cJSON_ParseWithLength(value, len);
	const cJSON *client, *rev, *digest, *version, *when, *it;
	const char *why = NULL, *rev_text = "", *rev_why = NULL;
	size_t rev_len = 0, index = 0;
	uint64_t revision = 0;

	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return hr__error_set(err, HR_EPARSE, "not a JSON object");
	}
	client = cJSON_GetObjectItemCaseSensitive(o, "client");
	rev = cJSON_GetObjectItemCaseSensitive(o, "revision");
	digest = cJSON_GetObjectItemCaseSensitive(o, "digest");
	version = cJSON_GetObjectItemCaseSensitive(o, "version");
	when = cJSON_GetObjectItemCaseSensitive(o, "time");
	for (it = o->child; it && it != rev; it = it->next)
		index++;
	if (cJSON_IsNumber(rev)) {
		member_text(value, len, index, &rev_text, &rev_len);
		rev_why = parse_revision(rev_text, rev_len, &revision);
	}
	if (!cJSON_IsString(client) || strlen(client->valuestring) != id_len ||
	    memcmp(client->valuestring, id, id_len))
		why = "\"client\" is not the client id of its key";
	else if (!cJSON_IsNumber(rev))
		why = "\"revision\" is not a whole number in 1..2^53";
	else if (rev_why)
		why = rev_why;
	else if (!cJSON_IsString(digest) || parse_digest(digest->valuestring, &out->digest))
		why = "\"digest\" is not 16 lowercase hex digits";
	else if (!cJSON_IsString(version) || strlen(version->valuestring) > HR__ACK_VERSION_MAX)
		why = "\"version\" is not a version string";
	else if (!cJSON_IsString(when) || parse_time(when->valuestring, &out->time_ms))
		why = "\"time\" is not a UTC time like 2026-12-01T12:34:56.789Z";
	if (!why) {
		out->revision = revision;
		snprintf(out->version, sizeof out->version, "%s", version->valuestring);
	}
	cJSON_Delete(o);
	if (why && why == rev_why)
		return hr__error_set(err, HR_EPARSE, "\"revision\" %.*s is %s",
				     (int)(rev_len < 40 ? rev_len : 40), rev_text, why);
	return why ? hr__error_set(err, HR_EPARSE, "%s", why) : 0;
}
