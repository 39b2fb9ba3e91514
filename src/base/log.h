/* SPDX-License-Identifier: MIT */
/* log.h - the log callback and the logfmt line format (internal). */
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
 * Emits `level=<level> event=<event> <fields>`, a logfmt line: `fmt` is a
 * printf format of more key=value pairs whose %s values
 * are written bare when logfmt allows and otherwise quoted and escaped
 * (escape.h), so that a record writer cannot forge fields: write `msg=%s`,
 * never `msg="%s"`.  `%.*s` takes exactly that many bytes, NULs included.
 * Conversions: d i u o x X c e E f F g G a A p s and %, with the usual
 * flags, widths, precisions and length modifiers hh h l ll z j t L.
 * A line longer than HR__LOG_LINE_MAX - 1 bytes is cut at a field
 * boundary.
 */
void hr__log_emit(const hr__log *log, hr_log_level level, const char *event,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* True when `level` would be delivered; lets callers skip costly fields. */
int hr__log_enabled(const hr__log *log, hr_log_level level);

#endif
