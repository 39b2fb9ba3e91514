/* SPDX-License-Identifier: MIT */
/*
 * cli_output.c - the commands' standard output, and how bytes are shown in
 * it: JSON strings, text fields and their display widths.
 *
 * stdout itself cannot say why a write failed: by the time ferror() is
 * seen, errno belongs to whatever ran since (a closed pipe came out as
 * "No such file or directory").  So the commands write to a stdio stream
 * over a write(2) loop that keeps the first failure's errno, and main()
 * decides from it: EPIPE (the reader went away) ends the process as
 * SIGPIPE would, anything else is an error message.
 */
#define _GNU_SOURCE
#include "cli.h"

#include "escape.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

/* The program has one standard output, hence one of these. */
static struct {
	FILE *file;
	int error;      /* errno of the first failed write; 0: none */
	int utf8;       /* LC_CTYPE is UTF-8: wcwidth() knows the characters */
} out;

static ssize_t out_write(void *cookie, const char *buf, size_t size)
{
	size_t done = 0;

	(void)cookie;
	if (__atomic_load_n(&out.error, __ATOMIC_RELAXED))
		return 0;
	while (done < size) {
		ssize_t n = write(STDOUT_FILENO, buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			__atomic_store_n(&out.error, n < 0 ? errno : EIO, __ATOMIC_RELAXED);
			break;
		}
		done += (size_t)n;
	}
	/* Less than `size` marks the stream as failed. */
	return (ssize_t)done;
}

int cli_out_open(void)
{
	cookie_io_functions_t io = { .write = out_write };

	out.file = fopencookie(NULL, "w", io);
	if (!out.file)
		return -1;
	/* A terminal sees each line as it is made; a pipe or a file gets
	 * full buffers. */
	setvbuf(out.file, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	return 0;
}

FILE *cli_out(void)
{
	return out.file ? out.file : stdout;
}

int cli_out_error(void)
{
	int e = __atomic_load_n(&out.error, __ATOMIC_RELAXED);

	return e ? e : ferror(cli_out()) ? EIO : 0;
}

int cli_out_flush(void)
{
	fflush(cli_out());
	return cli_out_error();
}

void cli_locale_init(void)
{
	setlocale(LC_CTYPE, "");
	if (strcmp(nl_langinfo(CODESET), "UTF-8"))
		setlocale(LC_CTYPE, "C.UTF-8");
	out.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
}

/* ---- JSON ------------------------------------------------------------------ */

void cli_json_string(FILE *f, const char *s, size_t len)
{
	char esc[HR__ESCAPE_UNIT_MAX];

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		size_t used, n = hr__escape_unit(s + i, len - i, &used, esc);

		fwrite(esc, 1, n, f);
		i += used;
	}
	fputc('"', f);
}

/* ---- text -------------------------------------------------------------------- */

/* Room for one unit as shown: a character's four bytes, each as \xNN. */
#define SHOWN_MAX 16

/*
 * The unit at the start of s[0..n) (a character or a byte) as a text field
 * shows it: into shown[0..*shown_len), taking *cols terminal columns.
 * Returns the input bytes it covers.
 */
static size_t text_unit(const char *s, size_t n, char shown[SHOWN_MAX],
			size_t *shown_len, size_t *cols)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c = (unsigned char)s[0];
	char esc[HR__ESCAPE_UNIT_MAX];
	size_t used = 1;
	int width = 1;

	switch (c) {
	case '\\':
		memcpy(shown, "\\\\", *shown_len = *cols = 2);
		return 1;
	case '\t':
		memcpy(shown, "\\t", *shown_len = *cols = 2);
		return 1;
	case '\n':
		memcpy(shown, "\\n", *shown_len = *cols = 2);
		return 1;
	case '\r':
		memcpy(shown, "\\r", *shown_len = *cols = 2);
		return 1;
	}
	if (c >= 0x20 && c < 0x7f) {
		shown[0] = (char)c;
		*shown_len = *cols = 1;
		return 1;
	}
	if (c >= 0x80) {
		/* A valid UTF-8 sequence comes back whole; a stray byte as one
		 * byte (escaped, which is not what we show). */
		hr__escape_unit(s, n, &used, esc);
		if (used > 1) {
			wchar_t wc;
			mbstate_t st;

			memset(&st, 0, sizeof st);
			if (out.utf8 && mbrtowc(&wc, s, used, &st) == used)
				width = wcwidth(wc);
			if (width >= 0) {
				memcpy(shown, s, used);
				*shown_len = used;
				*cols = (size_t)width;
				return used;
			}
		}
	}
	/* Control bytes, DEL, non-printable characters and stray bytes. */
	for (size_t i = 0; i < used; i++) {
		unsigned char b = (unsigned char)s[i];

		shown[4 * i] = '\\';
		shown[4 * i + 1] = 'x';
		shown[4 * i + 2] = hex[b >> 4];
		shown[4 * i + 3] = hex[b & 15];
	}
	*shown_len = *cols = 4 * used;
	return used;
}

void cli_text_string(FILE *f, const char *s, size_t len)
{
	char shown[SHOWN_MAX];
	size_t shown_len, cols;

	for (size_t i = 0; i < len;) {
		i += text_unit(s + i, len - i, shown, &shown_len, &cols);
		fwrite(shown, 1, shown_len, f);
	}
}

size_t cli_text_width(const char *s, size_t len)
{
	char shown[SHOWN_MAX];
	size_t shown_len, cols, width = 0;

	for (size_t i = 0; i < len;) {
		i += text_unit(s + i, len - i, shown, &shown_len, &cols);
		width += cols;
	}
	return width;
}

void cli_text_cell(FILE *f, const char *s, size_t width, int right)
{
	size_t len = strlen(s), w = cli_text_width(s, len);
	size_t pad = w < width ? width - w : 0;

	if (right)
		fprintf(f, "%*s", (int)pad, "");
	cli_text_string(f, s, len);
	if (!right)
		fprintf(f, "%*s", (int)pad, "");
}
