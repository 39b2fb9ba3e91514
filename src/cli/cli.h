/*
 * cli.h - what every `hashring` command shares: exit codes, the option
 * parser, error lines, JSON string output and the command entry points.
 *
 * A command is one file, src/cli/cmd_<name>.c, with one entry function
 * declared below and one row in the table of main.c.  Its argv starts at the
 * command name (argv[0] is "lookup", not "hashring").
 */
#ifndef HR_CLI_H
#define HR_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "hashring.h"

/* Exit codes of every command. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1, /* the command ran and failed (file, etcd, ring) */
	CLI_EXIT_USAGE = 2  /* the command line itself is wrong              */
};

/* ---- commands ------------------------------------------------------------ */

int cmd_diff(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_weight(int argc, char **argv);

/* ---- errors -------------------------------------------------------------- */

/*
 * Every error is one line on stderr: "hashring: <cmd>: <message>".  Control
 * bytes in the message are escaped so that the line stays one line whatever
 * a key or a file held.
 */
void cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A usage error: the line ends with a hint to `hashring <cmd> --help`.
 * Returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A failed library call: prints err->message (or hr_strerror(code) when it
 * is empty) and returns CLI_EXIT_ERROR. */
int cli_fail(const char *cmd, int code, const hr_error *err);

/* ---- options ------------------------------------------------------------- */

/* One long option of a command.  `arg` names the value in the help text
 * ("FILE"); NULL makes the option a flag that takes no value. */
struct cli_option {
	const char *name; /* without the leading "--" */
	const char *arg;
	const char *help;
};

/*
 * Walks argv[1..argc) of a command.  Options are long only, given as
 * "--opt value" or "--opt=value"; "--" ends the options; anything else,
 * including "-", is a positional argument.  "--help" and "-h" are always
 * understood.
 */
struct cli_parser {
	const char *cmd;
	int argc;
	char **argv;
	int next;              /* index of the next argv element to read */
	int options_done;      /* "--" was seen                          */
	const char *value;     /* the value or positional just returned  */
};

enum {
	CLI_ARG_END = -1,        /* nothing left                            */
	CLI_ARG_POSITIONAL = -2, /* p->value is a positional argument       */
	CLI_ARG_HELP = -3,       /* --help or -h                            */
	CLI_ARG_ERROR = -4       /* a usage error was printed               */
};

void cli_parser_init(struct cli_parser *p, const char *cmd, int argc,
		     char **argv);

/* Returns the index in `opts` (terminated by a NULL name) of the next
 * option, with its value in p->value (NULL for a flag), or a CLI_ARG_*. */
int cli_parser_next(struct cli_parser *p, const struct cli_option *opts);

/*
 * Parses a decimal number for option `opt` within [min, max].  Signs,
 * blanks, empty strings and trailing bytes are rejected.  Prints a usage
 * error and returns -1 on failure, 0 on success.
 */
int cli_parse_ulong(const char *cmd, const char *opt, const char *s,
		    unsigned long min, unsigned long max, unsigned long *out);

/*
 * Parses a comma-separated list of such numbers into out[0..max_count);
 * returns the count, or -1 after a usage error (empty item, too many).
 */
int cli_parse_ulong_list(const char *cmd, const char *opt, const char *s,
			 unsigned long min, unsigned long max,
			 unsigned long *out, size_t max_count);

/* ---- help ---------------------------------------------------------------- */

/* Prints "Usage: hashring <usage>", the description and the options. */
void cli_print_help(FILE *out, const char *usage, const char *description,
		    const struct cli_option *opts);

/* ---- output -------------------------------------------------------------- */

/*
 * Writes `len` bytes as a JSON string, quotes included.  '"' and '\' are
 * escaped, and every control byte, DEL and byte >= 0x80 is written as
 * \u00XX, so the output is valid JSON (and ASCII) whatever the bytes are.
 */
void cli_json_string(FILE *out, const char *s, size_t len);

/* Writes `len` bytes for a text line: '\' and control bytes are escaped
 * C-style (\t, \n, \xNN); other bytes are written as they are. */
void cli_text_string(FILE *out, const char *s, size_t len);

/* ---- etcd connection options (cli_etcd.c) ------------------------------- */

/* The options every command that talks to etcd takes; put this macro in the
 * command's option table and hand each option to cli_etcd_option(). */
#define CLI_ETCD_OPTIONS                                                       \
	{ "endpoints", "URLS",                                                 \
	  "comma-separated etcd endpoints, host:port meaning http://host:port " \
	  "(default: $ETCDCTL_ENDPOINTS, then http://127.0.0.1:2379)" },       \
	{ "prefix", "PREFIX",                                                  \
	  "key prefix of the node records (default " CLI_DEFAULT_PREFIX ")" }, \
	{ "cacert", "FILE", "CA bundle for https endpoints ($ETCDCTL_CACERT)" }, \
	{ "cert", "FILE", "client certificate ($ETCDCTL_CERT)" },             \
	{ "key", "FILE", "client certificate's key ($ETCDCTL_KEY)" },         \
	{ "user", "NAME:PASSWORD", "etcd user ($ETCDCTL_USER)" },             \
	{ "insecure-skip-tls-verify", NULL,                                    \
	  "do not verify the server certificate (tests only)" },              \
	{ "api-base", "PATH", "gateway base path (default /v3)" },             \
	{ "vnodes-per-weight", "N", "ring points per unit of weight (default 200)" }, \
	{ "placement", "NAME",                                                 \
	  "xxh3 (default) or ketama: libmemcached-compatible placement" },    \
	{ "log-level", "LEVEL", "library log lines on stderr: error, warn, info, debug" }

#define CLI_DEFAULT_PREFIX "/hashring/nodes/"

struct cli_etcd {
	const char *endpoints, *prefix, *cacert, *cert, *key, *api_base;
	char *user;          /* NAME part of --user, malloc'd */
	char *password;      /* PASSWORD part, malloc'd       */
	int insecure;
	unsigned long vnodes_per_weight;
	hr_placement placement;
	hr_log_level log_level;
};

/* Defaults: `log_level` is what the command logs unless told otherwise. */
void cli_etcd_init(struct cli_etcd *e, hr_log_level log_level);
void cli_etcd_free(struct cli_etcd *e);

/* Takes option `name` if it is one of CLI_ETCD_OPTIONS: returns 1 when
 * taken, 0 when not ours, -1 after printing a usage error. */
int cli_etcd_option(struct cli_etcd *e, const char *cmd, const char *name,
		    const char *value);

/* The ring options given (--vnodes-per-weight, --placement). */
hr_ring_options cli_etcd_ring_options(const struct cli_etcd *e);

/* Whether option `name` of CLI_ETCD_OPTIONS is about reaching etcd, unlike
 * the ring and log options, which serve members files too. */
int cli_etcd_connects(const char *name);

/* Loads members file `file` with the ring options given into *out;
 * returns CLI_EXIT_OK, or an exit code after printing the error. */
int cli_load_members(const char *cmd, const char *file,
		     const struct cli_etcd *e, hr_ring **out);

/* Fills `cfg` (after hr_config_init) from the options and the ETCDCTL_*
 * variables; returns 0 or -1 after printing a usage error. */
int cli_etcd_config(struct cli_etcd *e, const char *cmd, hr_config *cfg);

/*
 * Follows the ring under the options' prefix: opens a client whose
 * on_change is `fn`, then waits for SIGINT or SIGTERM (the callback raises
 * SIGTERM itself to stop early) and closes the client.  Returns CLI_EXIT_OK
 * or the error of cli_etcd_open().
 */
int cli_etcd_follow(struct cli_etcd *e, const char *cmd, hr_ring_change_fn fn,
		    void *userdata);

/* Opens a client (blocking until the first ring) into *out.  Returns
 * CLI_EXIT_OK, or CLI_EXIT_USAGE / CLI_EXIT_ERROR after one error line. */
int cli_etcd_open(struct cli_etcd *e, const char *cmd, hr_config *cfg,
		  hr_client **out);

#endif
