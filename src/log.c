/* log.c - one key=value line per event, through the user's callback. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

void hr__log_emit(const hr__log *log, hr_log_level level, const char *event,
		  const char *fmt, ...)
{
	char line[HR__LOG_LINE_MAX];
	int n;

	if (!hr__log_enabled(log, level))
		return;
	n = snprintf(line, sizeof line, "level=%s event=%s",
		     hr_log_level_name(level), event);
	if (n > 0 && (size_t)n < sizeof line - 1 && fmt && *fmt) {
		va_list ap;
		line[n++] = ' ';
		va_start(ap, fmt);
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
		va_end(ap);
	}
	if (log->fn)
		log->fn(log->userdata, level, line);
	else
		log_to_stderr(level, line);
}

char *hr__log_quote(char *buf, size_t size, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (size < 3) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* Room for the longest escape, the closing quote and the NUL. */
		if (o + 4 + 2 > size)
			break;
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c > 0x7e) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}
