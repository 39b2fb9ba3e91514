/* SPDX-License-Identifier: MIT */
/* cli_errors.c - the one-line error, warning and usage messages of every
 * command. */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

/* Longest message kept; longer ones are cut, never split. */
#define CLI_ERROR_MAX 2048

/* Writes `s` with control bytes escaped, so that whatever it holds cannot
 * break the line it is written on. */
static void write_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\t')
			fputs("\\t", out);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\r')
			fputs("\\r", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

static void verror(const char *cmd, const char *kind, const char *hint,
		   const char *fmt, va_list ap)
{
	char msg[CLI_ERROR_MAX];

	vsnprintf(msg, sizeof msg, fmt, ap);
	fputs("hashring: ", stderr);
	if (cmd && *cmd) {
		write_escaped(stderr, cmd);
		fputs(": ", stderr);
	}
	if (kind)
		fputs(kind, stderr);
	write_escaped(stderr, msg);
	if (hint)
		fputs(hint, stderr);
	fputc('\n', stderr);
	fflush(stderr);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, NULL, NULL, fmt, ap);
	va_end(ap);
}

void cli_note(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, NULL, NULL, fmt, ap);
	va_end(ap);
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, "warning: ", NULL, fmt, ap);
	va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	char hint[128];
	va_list ap;

	if (cmd && *cmd)
		snprintf(hint, sizeof hint, "; see 'hashring %s --help'", cmd);
	else
		snprintf(hint, sizeof hint, "; see 'hashring --help'");
	va_start(ap, fmt);
	verror(cmd, NULL, hint, fmt, ap);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

static const char *message_of(int code, const hr_error *err)
{
	return err && err->message[0] ? err->message : hr_strerror(code);
}

int cli_fail(const char *cmd, int code, const hr_error *err)
{
	cli_error(cmd, "%s", message_of(code, err));
	return CLI_EXIT_ERROR;
}

int cli_fail_input(const char *cmd, int code, const hr_error *err)
{
	if (code == HR_EINVAL)
		return cli_usage(cmd, "%s", message_of(code, err));
	return cli_fail(cmd, code, err);
}
