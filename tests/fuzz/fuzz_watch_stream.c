/* SPDX-License-Identifier: MIT */
/* fuzz_watch_stream.c - libFuzzer target for the watch stream's framing
 * and message parser: the bytes a gateway (or anything pretending to be
 * one) sends after HTTP 200.
 *
 * The first input byte picks how the rest is cut into reads (1..16 bytes,
 * or all at once), so messages that span reads, lines split at every
 * offset and a last line without '\n' all get exercised.  Each line is
 * also classified as a cancel reason, as the text it is. */
#include "watch_stream.h"

#include <stdint.h>
#include <string.h>

/* Small enough that the HR_ELIMIT path is reached by the fuzzer. */
#define LINE_MAX_BYTES 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(void *ud, const char *line, size_t len)
{
	size_t *lines = ud;
	hr__wmsg m;
	hr_error err = { 0 };
	char text[512];

	(*lines)++;
	if (len < sizeof text) {
		hr__wcancel c;
		memcpy(text, line, len);
		text[len] = '\0';
		c = hr__wcancel_of(text);
		if (c != HR__WCANCEL_DENIED && c != HR__WCANCEL_UNAUTHENTICATED &&
		    c != HR__WCANCEL_OTHER)
			__builtin_trap();
	}
	if (hr__wmsg_parse(line, len, &m, &err) == 0) {
		/* Touch what a watcher would read: ASan sees any bad pointer. */
		for (size_t i = 0; i < m.n_events; i++) {
			const hr__kv *kv = &m.events[i];
			if (kv->key_len && kv->key[kv->key_len] != '\0')
				__builtin_trap();
			if (kv->value_len && kv->value[kv->value_len] != '\0')
				__builtin_trap();
		}
		if (memchr(m.reason, '\0', sizeof m.reason) == NULL)
			__builtin_trap();
		/* A class exactly for cancels, compaction exactly by kind. */
		if ((m.cancel != HR__WCANCEL_NONE) !=
		    (m.kind == HR__WMSG_CANCELED || m.kind == HR__WMSG_COMPACTED) ||
		    (m.cancel == HR__WCANCEL_COMPACTED) != (m.kind == HR__WMSG_COMPACTED))
			__builtin_trap();
	} else if (!err.message[0] || m.n_events || m.events) {
		/* A failed parse names its reason and leaves nothing behind. */
		__builtin_trap();
	}
	hr__wmsg_clear(&m);
	/* Some lines stop the feed, as the watcher does on a bad message. */
	return len == 3 && line[0] == 'S' ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hr__linebuf lb = { .max = LINE_MAX_BYTES };
	size_t lines = 0, step;
	int rc = 0;

	if (size == 0)
		return 0;
	step = data[0] % 17;    /* 0: one read */
	data++;
	size--;
	for (size_t off = 0; off < size && rc == 0;) {
		size_t n = step ? step : size;
		if (n > size - off)
			n = size - off;
		rc = hr__linebuf_feed(&lb, (const char *)data + off, n, on_line, &lines);
		off += n;
	}
	if (rc == 0)
		hr__linebuf_finish(&lb, on_line, &lines);
	hr__linebuf_free(&lb);
	return 0;
}
