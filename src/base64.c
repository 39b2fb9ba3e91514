/* base64.c - RFC 4648 base64 with padding. */
#include "base64.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t hr__base64_encoded_size(size_t n)
{
	return (n + 2) / 3 * 4 + 1;
}

void hr__base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *s = in;
	size_t i = 0, o = 0;

	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
}

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int hr__base64_decode(const char *in, size_t n, char **out, size_t *out_len)
{
	size_t pad = 0, o = 0;
	char *buf;

	if (n % 4)
		return -1;
	if (n && in[n - 1] == '=')
		pad++;
	if (n > 1 && in[n - 2] == '=')
		pad++;
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int d[4];
		int last = i + 4 == n;
		for (int k = 0; k < 4; k++) {
			d[k] = digit((unsigned char)in[i + k]);
			/* '=' is valid only as padding at the very end. */
			if (d[k] < 0 && !(last && in[i + k] == '=' && k >= 4 - (int)pad)) {
				free(buf);
				return -1;
			}
		}
		uint32_t v = (uint32_t)(d[0] & 63) << 18 | (uint32_t)(d[1] & 63) << 12;
		buf[o++] = (char)(v >> 16);
		if (!(last && pad == 2)) {
			v |= (uint32_t)(d[2] & 63) << 6;
			buf[o++] = (char)(v >> 8 & 255);
			if (!(last && pad >= 1)) {
				v |= (uint32_t)(d[3] & 63);
				buf[o++] = (char)(v & 255);
			}
		}
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
}
