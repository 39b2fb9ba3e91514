/* SPDX-License-Identifier: MIT */
/* log.c - one logfmt line per event, through the user's callback. */
#include "log.h"

#include "escape.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

const char *hr_log_level_name(hr_log_level level)
{
	switch (level) {
	case HR_LOG_ERROR: return "error";
	case HR_LOG_WARN: return "warn";
	case HR_LOG_INFO: return "info";
	case HR_LOG_DEBUG: return "debug";
	}
	return NULL;
}

int hr__log_enabled(const hr__log *log, hr_log_level level)
{
	return log && level <= log->max;
}

static void log_to_stderr(hr_log_level level, const char *line)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	(void)level;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	/* One fprintf call per line keeps lines whole between threads. */
	fprintf(stderr, "ts=%s.%03ldZ %s\n", when, ts.tv_nsec / 1000000L, line);
}

/* ---- the line ------------------------------------------------------------- */

/* A line being written.  Once something does not fit, `full` is set and
 * nothing more is added, so a cut line still ends at a field boundary or
 * after a closed quote. */
struct line {
	char buf[HR__LOG_LINE_MAX];
	size_t len;
	int full;
};

static void put_text(struct line *l, const char *s, size_t n)
{
	if (l->full)
		return;
	if (l->len + n >= sizeof l->buf) {
		/* Dropped whole: the line keeps ending at a field boundary. */
		l->full = 1;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

/* A string value: bare when logfmt allows, else quoted and escaped. */
static void put_value(struct line *l, const char *s, size_t n)
{
	char unit[HR__ESCAPE_UNIT_MAX];

	if (l->full)
		return;
	if (!hr__logfmt_needs_quotes(s, n)) {
		put_text(l, s, n);
		return;
	}
	/* Room for the opening and closing quotes and the NUL. */
	if (l->len + 3 > sizeof l->buf) {
		l->full = 1;
		return;
	}
	l->buf[l->len++] = '"';
	for (size_t i = 0; i < n;) {
		size_t used, k = hr__escape_unit(s + i, n - i, &used, unit);
		if (l->len + k + 2 > sizeof l->buf) {
			l->full = 1;
			break;
		}
		memcpy(l->buf + l->len, unit, k);
		l->len += k;
		i += used;
	}
	l->buf[l->len++] = '"';
}

/* ---- the format --------------------------------------------------------- */

/*
 * A printf subset: flags, width and precision (digits or '*'), the length
 * modifiers hh h l ll z j t L, and the conversions d i u o x X c e E f F g G
 * a A p %.  %s writes a logfmt value (put_value); with a precision, %.*s
 * takes exactly that many bytes, NULs included.
 */
static void put_formatted(struct line *l, const char *fmt, va_list ap)
{
	while (*fmt && !l->full) {
		const char *pct = strchr(fmt, '%');
		char spec[48], out[128];
		size_t sl = 1;
		int prec = -1, n = 0;
		char len1 = 0, len2 = 0, conv;

		if (!pct) {
			put_text(l, fmt, strlen(fmt));
			return;
		}
		put_text(l, fmt, (size_t)(pct - fmt));
		fmt = pct + 1;
		spec[0] = '%';
		while (*fmt && strchr("-+ #0", *fmt) && sl < 8)
			spec[sl++] = *fmt++;
		if (*fmt == '*') {
			sl += (size_t)snprintf(spec + sl, sizeof spec - sl, "%d", va_arg(ap, int));
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9' && sl < 16)
			spec[sl++] = *fmt++;
		if (*fmt == '.') {
			fmt++;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				prec = 0;
				while (*fmt >= '0' && *fmt <= '9')
					prec = prec * 10 + (*fmt++ - '0');
			}
			if (prec >= 0)
				sl += (size_t)snprintf(spec + sl, sizeof spec - sl, ".%d", prec);
		}
		if (*fmt && strchr("hlzjtL", *fmt)) {
			len1 = *fmt++;
			if ((len1 == 'h' || len1 == 'l') && *fmt == len1)
				len2 = *fmt++;
		}
		conv = *fmt;
		if (!conv)
			return;
		fmt++;
		if (len1)
			spec[sl++] = len1;
		if (len2)
			spec[sl++] = len2;
		spec[sl++] = conv;
		spec[sl] = '\0';

		switch (conv) {
		case '%':
			put_text(l, "%", 1);
			continue;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "";
			put_value(l, s, prec >= 0 ? (size_t)prec : strlen(s));
			continue;
		}
		case 'd':
		case 'i':
			if (len1 == 'l' && len2)
				n = snprintf(out, sizeof out, spec, va_arg(ap, long long));
			else if (len1 == 'l')
				n = snprintf(out, sizeof out, spec, va_arg(ap, long));
			else if (len1 == 'z')
				n = snprintf(out, sizeof out, spec, va_arg(ap, ssize_t));
			else if (len1 == 'j')
				n = snprintf(out, sizeof out, spec, va_arg(ap, intmax_t));
			else if (len1 == 't')
				n = snprintf(out, sizeof out, spec, va_arg(ap, ptrdiff_t));
			else
				n = snprintf(out, sizeof out, spec, va_arg(ap, int));
			break;
		case 'u':
		case 'o':
		case 'x':
		case 'X':
			if (len1 == 'l' && len2)
				n = snprintf(out, sizeof out, spec, va_arg(ap, unsigned long long));
			else if (len1 == 'l')
				n = snprintf(out, sizeof out, spec, va_arg(ap, unsigned long));
			else if (len1 == 'z')
				n = snprintf(out, sizeof out, spec, va_arg(ap, size_t));
			else if (len1 == 'j')
				n = snprintf(out, sizeof out, spec, va_arg(ap, uintmax_t));
			else if (len1 == 't')
				n = snprintf(out, sizeof out, spec, va_arg(ap, ptrdiff_t));
			else
				n = snprintf(out, sizeof out, spec, va_arg(ap, unsigned));
			break;
		case 'c':
			n = snprintf(out, sizeof out, spec, va_arg(ap, int));
			break;
		case 'e': case 'E': case 'f': case 'F':
		case 'g': case 'G': case 'a': case 'A':
			if (len1 == 'L')
				n = snprintf(out, sizeof out, spec, va_arg(ap, long double));
			else
				n = snprintf(out, sizeof out, spec, va_arg(ap, double));
			break;
		case 'p':
			n = snprintf(out, sizeof out, spec, va_arg(ap, void *));
			break;
		default:
			/* Not a conversion this subset knows: written as it is. */
			put_text(l, spec, sl);
			continue;
		}
		if (n > 0)
			put_text(l, out, (size_t)n < sizeof out ? (size_t)n : sizeof out - 1);
	}
}

/* Writes the line for `fn` (NULL: stderr); the level is checked. */
static void emit(hr_log_fn fn, void *userdata, hr_log_level level,
		 const char *event, const char *fmt, va_list ap)
{
	struct line l;

	l.len = 0;
	l.full = 0;
	put_text(&l, "level=", 6);
	put_text(&l, hr_log_level_name(level), strlen(hr_log_level_name(level)));
	put_text(&l, " event=", 7);
	put_value(&l, event, strlen(event));
	if (fmt && *fmt) {
		put_text(&l, " ", 1);
		put_formatted(&l, fmt, ap);
	}
	l.buf[l.len] = '\0';
	if (fn)
		fn(userdata, level, l.buf);
	else
		log_to_stderr(level, l.buf);
}

void hr__log_emit(const hr__log *log, hr_log_level level, const char *event,
		  const char *fmt, ...)
{
	va_list ap;

	if (!hr__log_enabled(log, level))
		return;
	va_start(ap, fmt);
	emit(log->fn, log->userdata, level, event, fmt, ap);
	va_end(ap);
}

void hr_log_write(hr_log_fn log, void *userdata, hr_log_level max,
		  hr_log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;

	if (level > max || !hr_log_level_name(level) || !event)
		return;
	va_start(ap, fmt);
	emit(log, userdata, level, event, fmt, ap);
	va_end(ap);
}
