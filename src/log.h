/* log.h - the log callback and the key=value line format (internal). */
#ifndef HR_LOG_H
#define HR_LOG_H

#include "hashring.h"

#include <stddef.h>

typedef struct hr__log {
	hr_log_fn fn;        /* NULL: timestamped lines on stderr */
	void *userdata;
	hr_log_level max;    /* most verbose level delivered      */
} hr__log;

/* Longest line handed to the callback (longer ones are cut). */
#define HR__LOG_LINE_MAX 1024

/*
 * Emits `level=<level> event=<event> <fields>` where `fields` is a printf
 * format producing more key=value pairs (or "" for none).  Values that may
 * hold blanks or odd bytes go through hr__log_quote() first.
 */
void hr__log_emit(const hr__log *log, hr_log_level level, const char *event,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* True when `level` would be delivered; lets callers skip costly fields. */
int hr__log_enabled(const hr__log *log, hr_log_level level);

/*
 * Writes `s` (`n` bytes) into `buf` as a double-quoted value with '"', '\\'
 * and every byte outside 0x20-0x7e escaped (\xNN), cut to fit `size`.
 * Returns `buf`.
 */
char *hr__log_quote(char *buf, size_t size, const char *s, size_t n);

#endif
