/* SPDX-License-Identifier: MIT */
/* hrt_logfmt.h - log lines read back by a real logfmt parser (tests only).
 *
 * HR_LOGFMT_DECODER is tests/tools/logfmt_decode.go built by CMake: the
 * go-logfmt decoder, which prints one JSON array of [key, value] pairs per
 * line, or {"error": "..."} for a line it cannot parse. */
#ifndef HRT_LOGFMT_H
#define HRT_LOGFMT_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Decodes `len` bytes of newline-separated lines.  Returns a cJSON array
 * with one item per line (cJSON_Delete it), or NULL if the decoder could
 * not run. */
static inline cJSON *hrt_logfmt_decode(const char *text, size_t len)
{
	char in[] = "/tmp/hrt-logfmt-in-XXXXXX", cmd[512];
	int fd = mkstemp(in);
	cJSON *all = NULL;
	FILE *p;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		unlink(in);
		return NULL;
	}
	close(fd);
	snprintf(cmd, sizeof cmd, "'%s' < '%s'", HR_LOGFMT_DECODER, in);
	p = popen(cmd, "r");
	if (p) {
		all = cJSON_CreateArray();
		while ((n = getline(&line, &cap, p)) > 0)
			cJSON_AddItemToArray(all, cJSON_ParseWithLength(line, (size_t)n));
		if (pclose(p) != 0) {
			cJSON_Delete(all);
			all = NULL;
		}
	}
	free(line);
	unlink(in);
	return all;
}

/* The value of `key` in a decoded line (an array of pairs), or NULL. */
static inline const char *hrt_logfmt_get(const cJSON *pairs, const char *key)
{
	const cJSON *kv;

	cJSON_ArrayForEach(kv, pairs) {
		const cJSON *k = cJSON_GetArrayItem(kv, 0);
		if (cJSON_IsString(k) && strcmp(k->valuestring, key) == 0)
			return cJSON_GetStringValue(cJSON_GetArrayItem(kv, 1));
	}
	return NULL;
}

#endif
