/* rb_error.c - the rebalancer's error values and printable keys. */
#include "rb_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int rb_fail(hr_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	/* One line, whatever a server answered. */
	for (char *p = err->message; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			*p = '?';
	return code;
}

const char *rb_key_text(const void *key, size_t len, char *out, size_t size)
{
	const unsigned char *k = key;
	size_t o = 0;

	if (size < 8) {
		if (size)
			out[0] = '\0';
		return out;
	}
	for (size_t i = 0; i < len; i++) {
		if (o + 8 > size) {
			memcpy(out + o, "...", 4);
			return out;
		}
		if (k[i] >= 0x21 && k[i] < 0x7f && k[i] != '\\')
			out[o++] = (char)k[i];
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", k[i]);
	}
	out[o] = '\0';
	return out;
}
