/* SPDX-License-Identifier: MIT */
/*
 * cli_options.c - the one option parser of every command, the readers of
 * its value types, and the help printed from the same tables.
 *
 * Not getopt_long(): it accepts any unambiguous abbreviation ("--rep" for
 * "--replicas"), which cannot be turned off and makes every new option a
 * possible break of somebody's script; it reads "-1" as short options where
 * a command wants a negative number as a positional argument (to refuse it
 * for what it is); and it takes "--json" as the value of a "--members"
 * whose file was forgotten.  Working around all three would mean second-
 * guessing its state after each call, which is longer than this loop.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most rows in one table (a table is a command's own options plus the
 * shared ones). */
#define CLI_OPTIONS_MAX 40
#define DEFAULT_MAX 64

/* ---- value readers ----------------------------------------------------------- */

static int read_uint(const char *cmd, const char *label, const char *s,
		     unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*s) {
		cli_usage(cmd, "%s: empty value, expected a number", label);
		return -1;
	}
	for (const char *c = s; *c; c++) {
		unsigned d;

		if (*c < '0' || *c > '9') {
			cli_usage(cmd, "%s: '%s' is not a whole number", label, s);
			return -1;
		}
		d = (unsigned)(*c - '0');
		if (d > max || v > (max - d) / 10) {
			cli_usage(cmd, "%s: %s is too large (at most %lu)", label, s, max);
			return -1;
		}
		v = v * 10 + d;
	}
	if (v < min) {
		cli_usage(cmd, "%s: %s is too small (at least %lu)", label, s, min);
		return -1;
	}
	*out = v;
	return 0;
}

static int read_uints(const char *cmd, const char *label, const char *s,
		      const struct cli_option *o, struct cli_uints *out)
{
	char item[32];
	const char *start = s;
	size_t n = 0;

	if (!*s) {
		cli_usage(cmd, "%s: empty list, expected numbers like 1,10,100", label);
		return -1;
	}
	for (;;) {
		const char *end = strchr(start, ',');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (len == 0) {
			cli_usage(cmd, "%s: empty item in '%s'", label, s);
			return -1;
		}
		if (n == out->max) {
			cli_usage(cmd, "%s: more than %zu items", label, out->max);
			return -1;
		}
		if (len >= sizeof item) {
			cli_usage(cmd, "%s: item '%.*s' is too long", label, (int)len, start);
			return -1;
		}
		memcpy(item, start, len);
		item[len] = '\0';
		if (read_uint(cmd, label, item, o->min, o->max, &out->items[n]) < 0)
			return -1;
		n++;
		if (!end)
			break;
		start = end + 1;
	}
	out->n = n;
	return 0;
}

/* "a, b or c" for a NULL-terminated list. */
static void join_choices(char *buf, size_t size, const char *const *choices)
{
	size_t n = 0, len = 0;

	while (choices[n])
		n++;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
		int w = snprintf(buf + len, size - len, "%s%s", sep, choices[i]);

		len += w > 0 ? (size_t)w : 0;
	}
}

static int read_choice(const char *cmd, const char *label, const char *s,
		       const char *const *choices, int *out)
{
	char names[160];

	for (int i = 0; choices[i]; i++) {
		if (!strcmp(s, choices[i])) {
			*out = i;
			return 0;
		}
	}
	join_choices(names, sizeof names, choices);
	cli_usage(cmd, "%s: '%s' is not %s", label, s, names);
	return -1;
}

/* A plain decimal number: digits, then optionally '.' and digits. */
static int plain_decimal(const char *s)
{
	const char *c = s;

	while (isdigit((unsigned char)*c))
		c++;
	if (c == s)
		return 0;
	if (*c == '.') {
		const char *f = ++c;
		while (isdigit((unsigned char)*c))
			c++;
		if (c == f)
			return 0;
	}
	return *c == '\0';
}

/* A weight > 0, as a plain decimal number: how large it may be is the
 * ring's business (cli_check_node()). */
static int read_weight(const char *cmd, const char *what, const char *s,
		       double *out)
{
	double w;

	if (!*s) {
		cli_usage(cmd, "%s: empty value, expected a number > 0 like 2 or 0.5", what);
		return -1;
	}
	if (s[0] == '-' && plain_decimal(s + 1)) {
		cli_usage(cmd, "%s: %s is not > 0", what, s);
		return -1;
	}
	if (!plain_decimal(s)) {
		cli_usage(cmd, "%s: '%s' is not a plain decimal number (digits with an optional fraction, like 2 or 0.5)",
			  what, s);
		return -1;
	}
	/* LC_NUMERIC stays "C": the point is always '.'. */
	w = strtod(s, NULL);
	if (!(w > 0)) {
		cli_usage(cmd, "%s: %s is not > 0", what, s);
		return -1;
	}
	*out = w;
	return 0;
}

int cli_check_node(const char *cmd, const hr_node *node)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 1 };
	hr_error err = { 0 };
	int rc = hr_node_check(node, &opts, &err);

	if (rc == 0)
		return 0;
	if (rc == HR_ELIMIT && strstr(err.message, "weight"))
		return cli_usage(cmd, "%s (with 1 point per unit of weight, the fewest)",
				 err.message);
	return cli_usage(cmd, "%s", err.message[0] ? err.message : hr_strerror(rc));
}

/* Reads `value` into the row's destination.  `label` names the option in
 * messages ("--ttl"). */
static int read_value(const char *cmd, const struct cli_option *o,
		      const char *label, const char *value)
{
	if ((o->flags & CLI_NONEMPTY) && !*value) {
		cli_usage(cmd, "%s: empty value, expected %s", label, o->arg);
		return -1;
	}
	switch (o->type) {
	case CLI_FLAG:
		*(int *)o->dest = 1;
		return 0;
	case CLI_STRING:
		*(const char **)o->dest = value;
		return 0;
	case CLI_UINT: {
		const char *why;

		if (read_uint(cmd, label, value, o->min, o->max, o->dest) < 0)
			return -1;
		why = o->check ? o->check(*(unsigned long *)o->dest) : NULL;
		if (why) {
			cli_usage(cmd, "%s: %s %s", label, value, why);
			return -1;
		}
		return 0;
	}
	case CLI_UINTS:
		return read_uints(cmd, label, value, o, o->dest);
	case CLI_WEIGHT:
		return read_weight(cmd, label, value, o->dest);
	case CLI_CHOICE:
		return read_choice(cmd, label, value, o->choices, o->dest);
	case CLI_STATE: {
		int i;

		if (read_choice(cmd, label, value, o->choices, &i) < 0)
			return -1;
		return hr_state_parse(o->choices[i], o->dest, NULL) ? -1 : 0;
	}
	case CLI_LIST: {
		struct cli_list *l = o->dest;

		if (l->n == l->max) {
			cli_usage(cmd, "more than %zu %ss", l->max, l->what);
			return -1;
		}
		l->items[l->n++] = value;
		return 0;
	}
	case CLI_CALL:
		return o->call(o->dest, cmd, value);
	}
	return -1;
}

/* ---- help ------------------------------------------------------------------------ */

/* The default a row shows, from the value its destination holds before
 * parsing (so that "--ttl 5 --help" still shows 10). */
static void default_text(const struct cli_option *o, char *buf, size_t size)
{
	buf[0] = '\0';
	if (o->dflt) {
		snprintf(buf, size, "%s", o->dflt);
		return;
	}
	switch (o->type) {
	case CLI_UINT:
		snprintf(buf, size, "%lu", *(const unsigned long *)o->dest);
		break;
	case CLI_UINTS: {
		const struct cli_uints *u = o->dest;
		size_t len = 0;

		for (size_t i = 0; i < u->n && len < size; i++) {
			int w = snprintf(buf + len, size - len, "%s%lu", i ? "," : "",
					 u->items[i]);
			len += w > 0 ? (size_t)w : 0;
		}
		break;
	}
	case CLI_WEIGHT:
		snprintf(buf, size, "%g", *(const double *)o->dest);
		break;
	case CLI_CHOICE:
		snprintf(buf, size, "%s", o->choices[*(const int *)o->dest]);
		break;
	case CLI_STATE:
		snprintf(buf, size, "%s", hr_state_name(*(const hr_state *)o->dest));
		break;
	case CLI_STRING:
		if (*(const char *const *)o->dest)
			snprintf(buf, size, "%s", *(const char *const *)o->dest);
		break;
	default:
		break;
	}
}

/* The row's help with what the parser enforces appended:
 * "lease TTL (2-3600; default 10)". */
static void help_text(const struct cli_option *o, const char *dflt, char *buf,
		      size_t size)
{
	char limits[200] = "";

	switch (o->type) {
	case CLI_UINT:
		if (o->max == ULONG_MAX)
			snprintf(limits, sizeof limits, ">= %lu", o->min);
		else
			snprintf(limits, sizeof limits, "%lu-%lu", o->min, o->max);
		break;
	case CLI_UINTS:
		snprintf(limits, sizeof limits, "up to %zu, each %lu-%lu",
			 ((const struct cli_uints *)o->dest)->max, o->min, o->max);
		break;
	case CLI_WEIGHT:
		snprintf(limits, sizeof limits, "a decimal number > 0, at most %u",
			 HR_POINTS_MAX);
		break;
	case CLI_CHOICE:
	case CLI_STATE:
		join_choices(limits, sizeof limits, o->choices);
		break;
	default:
		break;
	}
	if (limits[0] && dflt[0])
		snprintf(buf, size, "%s (%s; default %s)", o->help, limits, dflt);
	else if (limits[0] || dflt[0])
		snprintf(buf, size, "%s (%s%s)", o->help, dflt[0] ? "default " : "",
			 limits[0] ? limits : dflt);
	else
		snprintf(buf, size, "%s", o->help);
}

#define HELP_WIDTH 79
#define LEFT_MAX 28

/* "  LEFT  text", the text wrapped at HELP_WIDTH and indented under its
 * first line. */
static void help_row(FILE *out, const char *left, size_t left_width,
		     const char *text)
{
	size_t col = left_width + 4, len = strlen(left);
	const char *p = text;

	fprintf(out, "  %s", left);
	if (len > left_width)
		fprintf(out, "\n%*s", (int)col, "");
	else
		fprintf(out, "%*s", (int)(left_width - len + 2), "");
	while (*p) {
		size_t room = HELP_WIDTH - col, n = strlen(p), cut = n;

		if (n > room) {
			cut = room;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = strcspn(p, " ");
		}
		fprintf(out, "%.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(out, "%*s", (int)col, "");
	}
	if (!*text)
		fputc('\n', out);
}

static void left_of(const struct cli_option *o, char *buf, size_t size)
{
	if (o->arg)
		snprintf(buf, size, "--%s %s", o->name, o->arg);
	else
		snprintf(buf, size, "--%s", o->name);
}

static void print_help(FILE *out, const struct cli_spec *spec,
		       char defaults[][DEFAULT_MAX])
{
	const struct cli_option *o;
	size_t width = 10;
	char left[96], text[1024];

	for (o = spec->options; o->name; o++) {
		left_of(o, left, sizeof left);
		if (strlen(left) > width && strlen(left) <= LEFT_MAX)
			width = strlen(left);
	}
	fprintf(out, "Usage: hashring %s\n", spec->usage);
	if (spec->description)
		fprintf(out, "\n%s\n", spec->description);
	if (spec->positional) {
		fputs("\nArguments:\n", out);
		help_text(spec->positional, "", text, sizeof text);
		help_row(out, spec->positional->arg, width, text);
	}
	fputs("\nOptions:\n", out);
	for (o = spec->options; o->name; o++) {
		left_of(o, left, sizeof left);
		help_text(o, defaults[o - spec->options], text, sizeof text);
		help_row(out, left, width, text);
	}
	help_row(out, "-h, --help", width, "show this help and exit");
}

/* ---- the parser ---------------------------------------------------------------- */

static const struct cli_option *find_option(const struct cli_option *opts,
					    const char *name, size_t len)
{
	for (const struct cli_option *o = opts; o->name; o++) {
		if (strlen(o->name) == len && !memcmp(o->name, name, len))
			return o;
	}
	return NULL;
}

/* "-1", "-0.5", "-.5": a negative number, so an argument, not an option. */
static int negative_number(const char *a)
{
	return a[0] == '-' && (isdigit((unsigned char)a[1]) ||
			       (a[1] == '.' && isdigit((unsigned char)a[2])));
}

static int take_positional(struct cli_spec *spec, const char *arg)
{
	const struct cli_option *p = spec->positional;

	if (!p || (p->type != CLI_LIST && spec->npositional == 1))
		return cli_usage(spec->cmd, "unexpected argument '%s'", arg);
	spec->npositional++;
	return read_value(spec->cmd, p, p->name, arg) < 0 ? CLI_EXIT_USAGE : CLI_RUN;
}

int cli_parse(struct cli_spec *spec, int argc, char **argv)
{
	char defaults[CLI_OPTIONS_MAX][DEFAULT_MAX];
	const char *cmd = spec->cmd;
	int options_done = 0, n = 0;

	spec->etcd_option = NULL;
	spec->npositional = 0;
	for (const struct cli_option *o = spec->options; o->name; o++, n++) {
		if (n == CLI_OPTIONS_MAX) {
			cli_error(cmd, "internal error: option table too long");
			return CLI_EXIT_ERROR;
		}
		default_text(o, defaults[n], sizeof defaults[n]);
	}

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *name, *eq, *value;
		const struct cli_option *o;
		char label[80];
		size_t len;

		if (!options_done && !strcmp(arg, "--")) {
			options_done = 1;
			continue;
		}
		if (options_done || arg[0] != '-' || !arg[1] || negative_number(arg)) {
			int rc = take_positional(spec, arg);
			if (rc != CLI_RUN)
				return rc;
			continue;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			print_help(cli_out(), spec, defaults);
			return CLI_EXIT_OK;
		}
		if (arg[1] != '-')
			return cli_usage(cmd, "unknown option '%s' (options are long, as in --name)",
					 arg);
		name = arg + 2;
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		o = find_option(spec->options, name, len);
		if (!o)
			return cli_usage(cmd, "unknown option '--%.*s'", (int)len, name);
		snprintf(label, sizeof label, "--%s", o->name);
		if (o->type == CLI_FLAG) {
			if (eq)
				return cli_usage(cmd, "option '%s' takes no value", label);
			value = "";
		} else if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) {
			value = argv[++i];
		} else {
			return cli_usage(cmd, "option '%s' needs a value %s", label, o->arg);
		}
		if (read_value(cmd, o, label, value) < 0)
			return CLI_EXIT_USAGE;
		if (o->given)
			*o->given = 1;
		if ((o->flags & CLI_ETCD) && !spec->etcd_option)
			spec->etcd_option = o->name;
	}
	return CLI_RUN;
}
