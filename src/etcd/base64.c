/* SPDX-License-Identifier: MIT */
/* base64.c - RFC 4648 base64 with padding, over libcrypto's codec.
 *
 * EVP_DecodeBlock() alone is too lenient for bytes from etcd: it skips
 * blanks around the text, reads '=' anywhere as zero bits and counts the
 * padding as data.  Input is checked here first, so that only canonical
 * padded base64 ever reaches it. */
#include "base64.h"

#include <openssl/evp.h>
#include <stdlib.h>

/* The codec takes int lengths: longer input goes through in slices, each a
 * whole number of 3-byte groups (encode) or 4-character quads (decode). */
#define ENCODE_SLICE ((size_t)3 << 28)
#define DECODE_SLICE ((size_t)4 << 28)

size_t hr__base64_encoded_size(size_t n)
{
	return (n + 2) / 3 * 4 + 1;
}

void hr__base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *s = in;

	out[0] = '\0';
	for (size_t i = 0; i < n; i += ENCODE_SLICE) {
		size_t take = n - i < ENCODE_SLICE ? n - i : ENCODE_SLICE;
		/* Writes the NUL after what it encoded. */
		EVP_EncodeBlock((unsigned char *)out + i / 3 * 4, s + i, (int)take);
	}
}

static int in_alphabet(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* The number of '=' at the end of `in` if it is canonical padded base64
 * (whole quads, the alphabet only, at most two '=' and only at the very
 * end), else -1. */
static int padding_of(const char *in, size_t n)
{
	size_t pad = 0;

	if (n % 4)
		return -1;
	while (pad < 2 && pad < n && in[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		if (!in_alphabet((unsigned char)in[i]))
			return -1;
	return (int)pad;
}

int hr__base64_decode(const char *in, size_t n, char **out, size_t *out_len)
{
	int pad = padding_of(in, n);
	size_t o = 0;
	char *buf;

	if (pad < 0)
		return -1;
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -1;
	for (size_t i = 0; i < n; i += DECODE_SLICE) {
		size_t take = n - i < DECODE_SLICE ? n - i : DECODE_SLICE;
		int got = EVP_DecodeBlock((unsigned char *)buf + o,
					  (const unsigned char *)in + i, (int)take);
		if (got < 0) {
			free(buf);
			return -1;
		}
		o += (size_t)got;
	}
	/* The codec decodes each '=' as a zero byte. */
	o -= (size_t)pad;
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
}
