/* SPDX-License-Identifier: MIT */
/*
 * members.c - members documents and files (docs/placement.md section 8,
 * "Members file"): a JSON object mapping node id to record, built into a
 * ring.
 */
#include "error.h"
#include "json.h"
#include "node.h"
#include "record.h"
#include "ring_build.h"
#include "ring_options.h"
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A members file larger than this is refused rather than read. */
#define MEMBERS_FILE_MAX ((size_t)256 << 20)

/* A members document, `what` naming it in messages about the document. */
static int members_parse(const char *json, size_t len, const char *what,
			 const hr_ring_options *opts, hr_ring **out,
			 hr_error *err)
{
	hr__record *recs = NULL;
	const hr_node **nodes = NULL;
	hr__tokens *toks = NULL;
	const hr__tokens **tp = NULL;
	hr_ring_options o;
	const cJSON *item;
	cJSON *doc;
	size_t n = 0, i = 0;
	int rc;

	doc = hr__json_parse(json, len, what, err);
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
	/* The caller's options, read as hr_ring_build() reads them: the
	 * tokens placement reads the records' tokens. */
	rc = hr__ring_options_read(opts, &o, err);
	if (rc)
		goto out;
	recs = calloc(n ? n : 1, sizeof *recs);
	nodes = calloc(n ? n : 1, sizeof *nodes);
	toks = calloc(n ? n : 1, sizeof *toks);
	tp = calloc(n ? n : 1, sizeof *tp);
	if (!recs || !nodes || !toks || !tp) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(item, doc) {
		rc = hr__record_from_item_tokens(item, &recs[i],
						 o.placement == HR_PLACEMENT_TOKENS ?
						 &toks[i] : NULL, err);
		if (rc)
			goto out;
		nodes[i] = &recs[i];
		tp[i] = &toks[i];
		i++;
	}
	/* cJSON keeps both entries of an id given twice: the build refuses
	 * them with HR_EDUPLICATE, naming the id. */
	rc = hr__ring_build_valid(NULL, nodes, tp, n, false, &o, 0, NULL, out, err);
out:
	for (size_t j = 0; recs && j < n; j++) {
		hr__record_clear(&recs[j]);
		if (toks)
			hr__tokens_clear(&toks[j]);
	}
	free(recs);
	free(nodes);
	free(toks);
	free(tp);
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

		if (hr__is_control(c))
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
