/* SPDX-License-Identifier: MIT */
/* watch_stream.c - newline framing and message classification for the
 * gateway's watch stream (see the table in etcd's clientv3 watch.go). */
#include "watch_stream.h"

#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hr__linebuf_feed(hr__linebuf *b, const char *p, size_t n, hr__line_fn fn,
		     void *userdata)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;
		int rc;

		if (b->max && b->part.len + take > b->max)
			return HR_ELIMIT;
		if (nl && b->part.len == 0) {
			/* The common case: a whole line inside one read. */
			rc = take ? fn(userdata, p, take) : 0;
		} else {
			rc = hr__buffer_append(&b->part, p, take, 0);
			if (!rc && nl) {
				size_t len = b->part.len;
				b->part.len = 0;
				rc = fn(userdata, b->part.data, len);
			}
		}
		if (rc)
			return rc;
		if (!nl)
			break;
		p = nl + 1;
		n -= take + 1;
	}
	return 0;
}

int hr__linebuf_finish(hr__linebuf *b, hr__line_fn fn, void *userdata)
{
	size_t len = b->part.len;
	int blank = 1;

	b->part.len = 0;
	for (size_t i = 0; i < len; i++)
		if (b->part.data[i] != ' ' && b->part.data[i] != '\r' && b->part.data[i] != '\t')
			blank = 0;
	return blank ? 0 : fn(userdata, b->part.data, len);
}

void hr__linebuf_reset(hr__linebuf *b)
{
	b->part.len = 0;
}

void hr__linebuf_free(hr__linebuf *b)
{
	if (b)
		hr__buffer_free(&b->part);
}

void hr__wmsg_clear(hr__wmsg *m)
{
	if (!m)
		return;
	hr__kvs_free(m->events, m->n_events);
	memset(m, 0, sizeof *m);
	m->code = -1;
}

static void copy_reason(hr__wmsg *m, const cJSON *s)
{
	if (cJSON_IsString(s)) {
		snprintf(m->reason, sizeof m->reason, "%s", s->valuestring);
		for (char *p = m->reason; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
	}
}

/* etcd's refusals by gRPC code, or by description (the same texts without
 * the status around them). */
static const struct refusal {
	const char *code, *desc;
	hr__wcancel why;
} refusals[] = {
	{ "PermissionDenied", NULL, HR__WCANCEL_DENIED },
	{ "Unauthenticated", NULL, HR__WCANCEL_UNAUTHENTICATED },
	{ NULL, "etcdserver: permission denied", HR__WCANCEL_DENIED },
	{ NULL, "etcdserver: invalid auth token", HR__WCANCEL_UNAUTHENTICATED },
	{ NULL, "etcdserver: user name is empty", HR__WCANCEL_UNAUTHENTICATED },
};

hr__wcancel hr__wcancel_of(const char *reason)
{
	static const char status[] = "rpc error: code = ", sep[] = " desc = ";
	const char *code = "", *desc = reason;
	size_t code_len = 0;

	if (!strncmp(reason, status, sizeof status - 1)) {
		const char *end = strstr(reason + sizeof status - 1, sep);
		if (end) {
			code = reason + sizeof status - 1;
			code_len = (size_t)(end - code);
			desc = end + sizeof sep - 1;
		}
	}
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		const struct refusal *r = &refusals[i];
		if (r->code ? strlen(r->code) == code_len && !memcmp(r->code, code, code_len) :
			      !strcmp(r->desc, desc))
			return r->why;
	}
	return HR__WCANCEL_OTHER;
}

static int parse_error(const cJSON *e, hr__wmsg *out)
{
	out->kind = HR__WMSG_ERROR;
	if (cJSON_IsObject(e)) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "grpc_code");
		if (!code)
			code = cJSON_GetObjectItemCaseSensitive(e, "code");
		if (cJSON_IsNumber(code))
			out->code = code->valueint;
		copy_reason(out, cJSON_GetObjectItemCaseSensitive(e, "message"));
	} else {
		copy_reason(out, e);
	}
	if (!out->reason[0])
		snprintf(out->reason, sizeof out->reason, "stream error");
	return 0;
}

int hr__wmsg_parse(const char *line, size_t len, hr__wmsg *out, hr_error *err)
{
	cJSON *root;
	const cJSON *res, *hdr, *events, *ev;
	int rc = 0;

	memset(out, 0, sizeof *out);
	out->code = -1;
	root = cJSON_ParseWithLength(line, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return hr__error_set(err, HR_EPARSE, "watch message is not a JSON object");
	}
	res = cJSON_GetObjectItemCaseSensitive(root, "result");
	if (!res) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
		if (e) {
			rc = parse_error(e, out);
		} else {
			rc = hr__error_set(err, HR_EPARSE,
					   "watch message has neither result nor error");
		}
		cJSON_Delete(root);
		return rc;
	}
	if (!cJSON_IsObject(res)) {
		cJSON_Delete(root);
		return hr__error_set(err, HR_EPARSE, "watch result is not an object");
	}
	hdr = cJSON_GetObjectItemCaseSensitive(res, "header");
	if ((hdr && !cJSON_IsObject(hdr)) ||
	    hr__json_int64(hdr, "revision", 0, &out->header_revision) ||
	    hr__json_int64(res, "compact_revision", 0, &out->compact_revision) ||
	    hr__json_int64(res, "watch_id", 0, &out->watch_id)) {
		cJSON_Delete(root);
		return hr__error_set(err, HR_EPARSE, "watch result has a malformed integer field");
	}
	/* Revisions near INT64_MAX would overflow the watcher's "+ 1". */
	if (out->header_revision < 0 || out->header_revision == INT64_MAX ||
	    out->compact_revision < 0 || out->compact_revision == INT64_MAX) {
		cJSON_Delete(root);
		return hr__error_set(err, HR_EPARSE, "watch result has a revision out of range");
	}
	out->cluster_id = hr__json_cluster_id(res);
	out->fragment = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "fragment"));
	events = cJSON_GetObjectItemCaseSensitive(res, "events");

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "canceled"))) {
		copy_reason(out, cJSON_GetObjectItemCaseSensitive(res, "cancel_reason"));
		if (out->compact_revision) {
			out->kind = HR__WMSG_COMPACTED;
			out->cancel = HR__WCANCEL_COMPACTED;
		} else {
			out->kind = HR__WMSG_CANCELED;
			out->cancel = hr__wcancel_of(out->reason);
		}
	} else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "created"))) {
		out->kind = HR__WMSG_CREATED;
	} else if (events) {
		int n = cJSON_GetArraySize(events);
		if (!cJSON_IsArray(events)) {
			cJSON_Delete(root);
			return hr__error_set(err, HR_EPARSE, "watch events is not an array");
		}
		out->kind = HR__WMSG_EVENTS;
		out->events = calloc(n ? (size_t)n : 1, sizeof *out->events);
		if (!out->events) {
			cJSON_Delete(root);
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		}
		cJSON_ArrayForEach(ev, events) {
			const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
			hr__kv *kv = &out->events[out->n_events];
			int deleted = 0;

			if (type) {
				if (cJSON_IsString(type) && !strcmp(type->valuestring, "DELETE"))
					deleted = 1;
				else if (cJSON_IsNumber(type) && type->valueint == 1)
					deleted = 1;
				else if (!(cJSON_IsString(type) && !strcmp(type->valuestring, "PUT")) &&
					 !(cJSON_IsNumber(type) && type->valueint == 0)) {
					rc = hr__error_set(err, HR_EPARSE, "unknown watch event type");
					break;
				}
			}
			rc = hr__kv_from_json(cJSON_GetObjectItemCaseSensitive(ev, "kv"), kv, err);
			if (rc)
				break;
			kv->deleted = deleted;
			out->n_events++;
			if (kv->mod_revision <= 0 || kv->mod_revision == INT64_MAX) {
				rc = hr__error_set(err, HR_EPARSE,
						   "watch event without a valid mod_revision");
				break;
			}
		}
	} else if (out->header_revision > 0) {
		out->kind = HR__WMSG_PROGRESS;
	} else {
		rc = hr__error_set(err, HR_EPARSE, "unrecognised watch message");
	}
	cJSON_Delete(root);
	if (rc)
		hr__wmsg_clear(out);
	return rc;
}
