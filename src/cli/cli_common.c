/* cli_common.c - option parsing, error lines and output escaping shared by
 * every command. */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

/* Longest error line kept; longer messages are cut, never split. */
#define CLI_ERROR_MAX 2048

/* ---- errors -------------------------------------------------------------- */

/* Writes `s` with control bytes (and '\' when `escape_backslash`) escaped,
 * so that whatever it holds cannot break the line it is written on. */
static void write_escaped(FILE *out, const char *s, size_t len,
			  int escape_backslash)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\' && escape_backslash)
			fputs("\\\\", out);
		else if (c == '\t')
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

static void verror(const char *cmd, const char *hint, const char *fmt,
		   va_list ap)
{
	char msg[CLI_ERROR_MAX];

	vsnprintf(msg, sizeof msg, fmt, ap);
	fputs("hashring: ", stderr);
	if (cmd && *cmd) {
		write_escaped(stderr, cmd, strlen(cmd), 0);
		fputs(": ", stderr);
	}
	write_escaped(stderr, msg, strlen(msg), 0);
	if (hint)
		fputs(hint, stderr);
	fputc('\n', stderr);
	fflush(stderr);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, NULL, fmt, ap);
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
	verror(cmd, hint, fmt, ap);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, int code, const hr_error *err)
{
	if (err && err->message[0])
		cli_error(cmd, "%s", err->message);
	else
		cli_error(cmd, "%s", hr_strerror(code));
	return CLI_EXIT_ERROR;
}

/* ---- options ------------------------------------------------------------- */

void cli_parser_init(struct cli_parser *p, const char *cmd, int argc,
		     char **argv)
{
	memset(p, 0, sizeof *p);
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->next = 1;
}

static int find_option(const struct cli_option *opts, const char *name,
		       size_t len)
{
	for (int i = 0; opts && opts[i].name; i++) {
		if (strlen(opts[i].name) == len &&
		    memcmp(opts[i].name, name, len) == 0)
			return i;
	}
	return -1;
}

int cli_parser_next(struct cli_parser *p, const struct cli_option *opts)
{
	const char *arg, *name, *eq;
	size_t len;
	int idx;

	p->value = NULL;
	if (p->next >= p->argc)
		return CLI_ARG_END;
	arg = p->argv[p->next++];

	if (p->options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
		p->value = arg;
		return CLI_ARG_POSITIONAL;
	}
	if (strcmp(arg, "--") == 0) {
		p->options_done = 1;
		return cli_parser_next(p, opts);
	}
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
		return CLI_ARG_HELP;
	if (arg[1] != '-') {
		cli_usage(p->cmd, "unknown option '%s' (options are long, as in --name)",
			  arg);
		return CLI_ARG_ERROR;
	}

	name = arg + 2;
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	idx = find_option(opts, name, len);
	if (idx < 0) {
		cli_usage(p->cmd, "unknown option '--%.*s'", (int)len, name);
		return CLI_ARG_ERROR;
	}

	if (!opts[idx].arg) {
		if (eq) {
			cli_usage(p->cmd, "option '--%s' takes no value",
				  opts[idx].name);
			return CLI_ARG_ERROR;
		}
		return idx;
	}
	if (eq) {
		p->value = eq + 1;
		return idx;
	}
	/* A missing value followed by another option is a mistake far more
	 * often than a value that starts with "--"; --opt=--x still works. */
	if (p->next >= p->argc || strncmp(p->argv[p->next], "--", 2) == 0) {
		cli_usage(p->cmd, "option '--%s' needs a value %s",
			  opts[idx].name, opts[idx].arg);
		return CLI_ARG_ERROR;
	}
	p->value = p->argv[p->next++];
	return idx;
}

int cli_parse_ulong(const char *cmd, const char *opt, const char *s,
		    unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	const char *c;

	if (!s || !*s) {
		cli_usage(cmd, "--%s: empty value, expected a number", opt);
		return -1;
	}
	for (c = s; *c; c++) {
		unsigned d;

		if (*c < '0' || *c > '9') {
			cli_usage(cmd, "--%s: '%s' is not a whole number", opt,
				  s);
			return -1;
		}
		d = (unsigned)(*c - '0');
		if (d > max || v > (max - d) / 10) {
			cli_usage(cmd, "--%s: %s is too large (at most %lu)",
				  opt, s, max);
			return -1;
		}
		v = v * 10 + d;
	}
	if (v < min) {
		cli_usage(cmd, "--%s: %s is too small (at least %lu)", opt, s,
			  min);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_ulong_list(const char *cmd, const char *opt, const char *s,
			 unsigned long min, unsigned long max,
			 unsigned long *out, size_t max_count)
{
	char item[32];
	size_t count = 0;
	const char *start = s;

	if (!s || !*s) {
		cli_usage(cmd, "--%s: empty list, expected numbers like 1,10,100",
			  opt);
		return -1;
	}
	for (;;) {
		const char *end = strchr(start, ',');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (len == 0) {
			cli_usage(cmd, "--%s: empty item in '%s'", opt, s);
			return -1;
		}
		if (count == max_count) {
			cli_usage(cmd, "--%s: more than %zu items", opt,
				  max_count);
			return -1;
		}
		if (len >= sizeof item) {
			cli_usage(cmd, "--%s: item '%.*s' is too long", opt,
				  (int)len, start);
			return -1;
		}
		memcpy(item, start, len);
		item[len] = '\0';
		if (cli_parse_ulong(cmd, opt, item, min, max, &out[count]) < 0)
			return -1;
		count++;
		if (!end)
			break;
		start = end + 1;
	}
	return (int)count;
}

/* ---- help ---------------------------------------------------------------- */

void cli_print_help(FILE *out, const char *usage, const char *description,
		    const struct cli_option *opts)
{
	fprintf(out, "Usage: hashring %s\n", usage);
	if (description)
		fprintf(out, "\n%s\n", description);
	fputs("\nOptions:\n", out);
	for (int i = 0; opts && opts[i].name; i++) {
		char left[64];

		if (opts[i].arg)
			snprintf(left, sizeof left, "--%s %s", opts[i].name,
				 opts[i].arg);
		else
			snprintf(left, sizeof left, "--%s", opts[i].name);
		fprintf(out, "  %-22s %s\n", left, opts[i].help);
	}
	fprintf(out, "  %-22s %s\n", "-h, --help", "show this help and exit");
}

/* ---- output -------------------------------------------------------------- */

void cli_json_string(FILE *out, const char *s, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"')
			fputs("\\\"", out);
		else if (c == '\\')
			fputs("\\\\", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void cli_text_string(FILE *out, const char *s, size_t len)
{
	write_escaped(out, s, len, 1);
}
