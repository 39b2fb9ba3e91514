/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what every `hashring` command shares: exit statuses, the option
 * tables and their one parser, error lines, output, and the etcd options.
 *
 * A command is one file, src/cli/cmd_<name>.c, with one entry function
 * declared below and one row in the table of main.c.  Its argv starts at the
 * command name (argv[0] is "lookup", not "hashring").  A command describes
 * its options in a table (struct cli_option), hands the table to
 * cli_parse(), and then only does its work.
 */
#ifndef HR_CLI_H
#define HR_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "hashring.h"

/* ---- exit statuses --------------------------------------------------------- */

enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1, /* the command ran and failed (file, etcd, ring) */
	CLI_EXIT_USAGE = 2, /* the command line itself is wrong              */
	CLI_EXIT_SKIPPED = 3 /* rebalance: done, but keys were left behind   */
};

/*
 * A command interrupted by signal `sig` returns CLI_EXIT_SIGNAL(sig) once it
 * has cleaned up; main() then ends the process by that same signal, so the
 * shell reports 128 + sig (130 for SIGINT, 143 for SIGTERM, 141 for a
 * reader that went away) and a calling shell script stops as it would for
 * any interrupted program.
 */
#define CLI_EXIT_SIGNAL(sig) (128 + (sig))
#define CLI_EXIT_IS_SIGNAL(st) ((st) > 128 && (st) < 128 + 65)

/* ---- commands -------------------------------------------------------------- */

int cmd_acks(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_rebalance(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_tokens(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_weight(int argc, char **argv);

/* ---- sim --compare (cmd_sim_compare.c) ------------------------------------ */

/* Longest "node-<id>" and "key-<n>" of the sims, NUL included. */
#define CLI_SIM_NAME_MAX 48
/* The most nodes --compare takes: Maglev's default table needs several
 * slots per node. */
#define CLI_COMPARE_NODES_MAX 10000

/* The options of `sim --compare`. */
struct cli_compare_args {
	unsigned long nodes, keys, seed;
	int json;
	const char *svg;     /* --svg FILE, or NULL */
};

/* Checks the arguments: CLI_EXIT_OK, or CLI_EXIT_USAGE after the line. */
int cli_sim_compare_check(const struct cli_compare_args *a);
/* Runs the comparison and prints it: an exit status. */
int cli_sim_compare(const struct cli_compare_args *a);

/* i of a node "node-<i>" with i < nodes (cmd_sim.c): 0, or -1 for any
 * other node or NULL. */
int cli_sim_node_index(const hr_node *node, unsigned long nodes, unsigned long *out);

/* ---- errors (cli_errors.c) ------------------------------------------------ */

/*
 * Every error is one line on stderr: "hashring: <cmd>: <message>".  Control
 * bytes in the message are escaped so that the line stays one line whatever
 * a key or a file held.
 */
void cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "hashring: <cmd>: <message>", what a command that waits is waiting for
 * (stdout stays the results'). */
void cli_note(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "hashring: <cmd>: warning: <message>": the command goes on. */
void cli_warn(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A usage error: the line ends with a hint to `hashring <cmd> --help`.
 * Returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A failed library call: prints err->message (or hr_strerror(code) when it
 * is empty) and returns CLI_EXIT_ERROR. */
int cli_fail(const char *cmd, int code, const hr_error *err);

/* The same for a call whose every input came from the command line or the
 * environment (opening a client, registering): HR_EINVAL, the library's
 * "bad argument", is then a usage error (CLI_EXIT_USAGE). */
int cli_fail_input(const char *cmd, int code, const hr_error *err);

/* ---- option tables (cli_options.c) ------------------------------------------ */

/* How an option's value is read and where it goes (`dest`). */
enum cli_type {
	CLI_FLAG,    /* int *: 1; the option takes no value                     */
	CLI_STRING,  /* const char **: the value as given                       */
	CLI_UINT,    /* unsigned long *: decimal, within [min, max]             */
	CLI_UINTS,   /* struct cli_uints *: comma-separated CLI_UINTs           */
	CLI_WEIGHT,  /* double *: a plain decimal number > 0, no sign, exponent,
			hex or blanks (the size is cli_check_node()'s business) */
	CLI_CHOICE,  /* int *: index of the value in `choices`                  */
	CLI_STATE,   /* hr_state *: one of the state names in `choices`         */
	CLI_LIST,    /* struct cli_list *: appended; the option may repeat      */
	CLI_CALL     /* call(dest, cmd, value): 0, or -1 after a usage error    */
};

/* Flags of an option. */
enum {
	CLI_NONEMPTY = 1, /* "" is a usage error                               */
	CLI_ETCD = 2      /* reaches etcd: not with an offline source (--members) */
};

/* A repeatable option's (or the positional arguments') values. */
struct cli_list {
	const char **items; /* room for `max` */
	size_t n, max;
	const char *what;   /* "members file": names the overflow error */
};

/* The numbers of a CLI_UINTS option. */
struct cli_uints {
	unsigned long *items; /* room for `max` */
	size_t n, max;
};

/*
 * One row of a command's option table; the table ends with a row whose
 * name is NULL.  Rows are written with designated initializers; `dest`
 * points into the command's own variables, which hold the defaults.
 */
struct cli_option {
	const char *name;      /* without "--"; for the positional row, the
				  word error messages use ("weight")        */
	const char *arg;       /* the value's name in the help ("FILE");
				  NULL for a CLI_FLAG                        */
	const char *help;      /* what it does; the parser appends the range,
				  the choices and the default                */
	enum cli_type type;
	void *dest;
	unsigned long min, max;      /* CLI_UINT(S) bounds                 */
	/* CLI_UINT: a rule beyond the bounds; NULL, or why `v` is refused
	 * ("is not a prime"). */
	const char *(*check)(unsigned long v);
	const char *const *choices;  /* CLI_CHOICE, CLI_STATE: NULL-ended  */
	const char *dflt;      /* the default as shown, when the value in
				  `dest` does not say it ("no limit")        */
	unsigned flags;        /* CLI_NONEMPTY, CLI_ETCD                   */
	int (*call)(void *dest, const char *cmd, const char *value);
	int *given;            /* if not NULL, set to 1 when given         */
};

/* A command's command line. */
struct cli_spec {
	const char *cmd;           /* "lookup"                               */
	const char *usage;         /* after "Usage: hashring "               */
	const char *description;   /* paragraphs for --help                  */
	const struct cli_option *options;
	/* The positional arguments: NULL when the command takes none.  A
	 * CLI_LIST row takes them all (up to its max); any other row takes
	 * one. */
	const struct cli_option *positional;
	/* Out: the first CLI_ETCD option given ("endpoints"), or NULL. */
	const char *etcd_option;
	/* Out: how many positional arguments were given. */
	size_t npositional;
};

/* cli_parse() returns this when the command should run. */
#define CLI_RUN (-1)

/*
 * The one option parser.  Walks argv[1..argc): options are long only,
 * "--opt value" or "--opt=value", in any order and between positional
 * arguments; each value is read and checked as it comes, the last of a
 * repeated option wins (CLI_LIST rows collect them all).  "--" ends the
 * options; "-" and negative numbers ("-1", "-0.5") are positional
 * arguments.  "-h" and "--help" print the help made from the table and
 * stop.  Option names are exact: no abbreviations, so that a new option
 * never breaks a script.  A separate value that starts with "--" is taken
 * for a forgotten value ("--members --json"); "--opt=--x" still works.
 *
 * Returns CLI_RUN, or the status to exit with: CLI_EXIT_OK after the help,
 * CLI_EXIT_USAGE after one usage error line.
 */
int cli_parse(struct cli_spec *spec, int argc, char **argv);

/*
 * Checks a node as the library does for any ring (id, addr, zone, weight,
 * state) at one point per unit of weight, the fewest (hr_node_check): a
 * weight refused there fits no ring.  Returns 0, or
 * CLI_EXIT_USAGE after printing the library's reason.
 */
int cli_check_node(const char *cmd, const hr_node *node);

/* ---- output (cli_output.c) -------------------------------------------------- */

/*
 * The command's standard output: buffered, with the reason of the first
 * failed write kept.  After a failure nothing more is written, and
 * cli_out_error() returns its errno.  Set up by main(); every command
 * writes its results here, never to stdout directly.
 */
int cli_out_open(void);
FILE *cli_out(void);
int cli_out_error(void);
/* Flushes; returns cli_out_error(). */
int cli_out_flush(void);

/* LC_CTYPE from the environment (for display widths); UTF-8 if the
 * environment's is not, since the output is UTF-8 whatever it says. */
void cli_locale_init(void);

/*
 * Writes `len` bytes as a JSON string, quotes included: valid UTF-8 as it
 * is, '"' and '\' escaped, control bytes as \n, \t, \u00XX..., and a byte
 * that is not valid UTF-8 as \udcXX (PEP 383 surrogateescape, so Python and
 * JavaScript readers get the bytes back).
 */
void cli_json_string(FILE *out, const char *s, size_t len);

/*
 * Writes `len` bytes for a text line: printable UTF-8 as it is; '\' as
 * "\\"; \t, \n, \r; and control bytes, DEL, non-printable characters and
 * bytes that are not valid UTF-8 as \xNN.  A line stays one line of valid
 * UTF-8 whatever the bytes were.
 */
void cli_text_string(FILE *out, const char *s, size_t len);

/* Terminal columns cli_text_string() output takes (wcwidth). */
size_t cli_text_width(const char *s, size_t len);

/* cli_text_string() padded with blanks to `width` columns, on the right
 * (left-aligned) or, with `right`, on the left. */
void cli_text_cell(FILE *out, const char *s, size_t width, int right);

/* ---- etcd (cli_etcd.c) --------------------------------------------------------- */

#define CLI_DEFAULT_PREFIX "/hashring/nodes/"
#define CLI_DEFAULT_ACK_PREFIX "/hashring/acks/"
/* Longest --prefix and --ack-prefix (hr_etcd_config.prefix,
 * hr_client_config.ack_prefix). */
#define CLI_PREFIX_MAX 4096
#define CLI_TIMEOUT_DEFAULT 3       /* seconds: --timeout            */
#define CLI_TIMEOUT_MAX 86400

/* The options every command that talks to etcd takes, and the ring options
 * of those that build rings. */
struct cli_etcd {
	const char *endpoints, *prefix, *cacert, *cert, *key, *api_base;
	char *user;          /* NAME part of --user, malloc'd */
	char *password;      /* PASSWORD part, malloc'd       */
	int insecure;
	unsigned long timeout_s;     /* 0: no limit */
	int log_level;               /* hr_log_level */
	int log_level_given;
	/* A command that ends after one answer (nodes, lookup): at its
	 * default log level it leaves out the watcher's retry lines, whose
	 * cause its error line gives if it fails. */
	int one_shot;
	unsigned long vnodes_per_weight;
	int placement;               /* hr_placement */
	unsigned long maglev_size;   /* 0: the default */
	/* What cli_etcd_config() points hr_etcd_config.ring to. */
	hr_ring_options ring;
	/* Acks of the ring a following command has (CLI_ACK_OPTIONS); no
	 * client id: none. */
	const char *ack_client_id, *ack_prefix;
	unsigned long ack_ttl_s;
	/* --agent: the ring of the host's agent in this directory, not of
	 * etcd (CLI_AGENT_OPTION); NULL: etcd. */
	const char *agent_dir;
};

extern const char *const cli_log_levels[];
extern const char *const cli_placements[];
/* NULL if `m` is a Maglev table size, else why not (--maglev-size). */
const char *cli_maglev_size_check(unsigned long m);
int cli_etcd_set_user(void *e, const char *cmd, const char *value);

/*
 * The etcd options, as rows of an option table, for `struct cli_etcd *e`.
 * `timeout_help` says what --timeout bounds for the command.
 */
#define CLI_ETCD_OPTIONS(e, timeout_help)                                     \
	{ .name = "endpoints", .arg = "URLS", .type = CLI_STRING,              \
	  .dest = &(e)->endpoints, .flags = CLI_ETCD | CLI_NONEMPTY,           \
	  .help = "comma-separated etcd endpoints; host:port means "           \
		  "http://host:port; a user:password@ before the host is the " \
		  "etcd user, never shown",                                    \
	  .dflt = "$ETCDCTL_ENDPOINTS, then http://127.0.0.1:2379" },          \
	{ .name = "prefix", .arg = "PREFIX", .type = CLI_STRING,               \
	  .dest = &(e)->prefix, .flags = CLI_ETCD | CLI_NONEMPTY,              \
	  .help = "key prefix of the node records, normally ending in '/'",    \
	  .dflt = CLI_DEFAULT_PREFIX },                                        \
	{ .name = "cacert", .arg = "FILE", .type = CLI_STRING,                 \
	  .dest = &(e)->cacert, .flags = CLI_ETCD | CLI_NONEMPTY,              \
	  .help = "CA bundle for https endpoints", .dflt = "$ETCDCTL_CACERT" }, \
	{ .name = "cert", .arg = "FILE", .type = CLI_STRING,                   \
	  .dest = &(e)->cert, .flags = CLI_ETCD | CLI_NONEMPTY,                \
	  .help = "client certificate", .dflt = "$ETCDCTL_CERT" },             \
	{ .name = "key", .arg = "FILE", .type = CLI_STRING, .dest = &(e)->key, \
	  .flags = CLI_ETCD | CLI_NONEMPTY,                                    \
	  .help = "client certificate's key", .dflt = "$ETCDCTL_KEY" },        \
	{ .name = "user", .arg = "NAME:PASSWORD", .type = CLI_CALL, .dest = (e), \
	  .call = cli_etcd_set_user, .flags = CLI_ETCD,                        \
	  .help = "etcd user; NAME alone takes the password from "             \
		  "$ETCDCTL_PASSWORD",                                         \
	  .dflt = "$ETCDCTL_USER" },                                           \
	{ .name = "insecure-skip-tls-verify", .type = CLI_FLAG,                \
	  .dest = &(e)->insecure, .flags = CLI_ETCD,                           \
	  .help = "do not verify the server certificate (tests only)" },      \
	{ .name = "api-base", .arg = "PATH", .type = CLI_STRING,               \
	  .dest = &(e)->api_base, .flags = CLI_ETCD | CLI_NONEMPTY,            \
	  .help = "gateway base path", .dflt = "/v3" },                        \
	{ .name = "timeout", .arg = "SECONDS", .type = CLI_UINT,               \
	  .dest = &(e)->timeout_s, .min = 0, .max = CLI_TIMEOUT_MAX,           \
	  .flags = CLI_ETCD, .help = timeout_help "; 0: no limit" },          \
	{ .name = "log-level", .arg = "LEVEL", .type = CLI_CHOICE,             \
	  .dest = &(e)->log_level, .choices = cli_log_levels,                  \
	  .given = &(e)->log_level_given,                                      \
	  .help = "library log lines on stderr" }

/* --agent DIR: the commands that read a ring (lookup, nodes, watch) read
 * the one the host's agent publishes instead of etcd's.  An etcd option
 * for the table's checks: it excludes --members. */
#define CLI_AGENT_OPTION(e)                                                    \
	{ .name = "agent", .arg = "DIR", .type = CLI_STRING,                   \
	  .dest = &(e)->agent_dir, .flags = CLI_ETCD | CLI_NONEMPTY,           \
	  .help = "read the ring that the host's agent (hashring agent) "      \
		  "publishes in DIR, not etcd's: no etcd connection; the "    \
		  "other etcd options but --timeout and --log-level are "     \
		  "ignored" }

/* The ring options: commands that build rings (from etcd or a file). */
#define CLI_RING_OPTIONS(e)                                                    \
	{ .name = "vnodes-per-weight", .arg = "N", .type = CLI_UINT,           \
	  .dest = &(e)->vnodes_per_weight, .min = 1, .max = 4294967295ul,      \
	  .help = "ring points per unit of weight; a ring holds at most "     \
		  "33554432 points" },                                         \
	{ .name = "placement", .arg = "NAME", .type = CLI_CHOICE,              \
	  .dest = &(e)->placement, .choices = cli_placements,                  \
	  .help = "ketama: libmemcached-compatible; maglev: a table per "     \
		  "view, one read per lookup; rendezvous: exact weights and "  \
		  "minimal movement, O(nodes) per lookup; tokens: the "        \
		  "records' allocated tokens" },                               \
	{ .name = "maglev-size", .arg = "M", .type = CLI_UINT,                 \
	  .dest = &(e)->maglev_size, .min = HR_MAGLEV_SIZE_MIN,               \
	  .max = HR_MAGLEV_SIZE_MAX, .check = cli_maglev_size_check,           \
	  .help = "slots of a maglev table, a prime; about 100 per node",     \
	  .dflt = "65537" }

/* The acks of a command that follows the ring (watch): --client-id, and
 * --ack-prefix and --ack-ttl, which need it. */
#define CLI_ACK_OPTIONS(e)                                                     \
	{ .name = "client-id", .arg = "ID", .type = CLI_STRING,                \
	  .dest = &(e)->ack_client_id, .flags = CLI_NONEMPTY,                 \
	  .help = "acknowledge each ring under --ack-prefix as client ID, "   \
		  "under a lease of its own, for hashring acks",               \
	  .dflt = "no acks" },                                                 \
	{ .name = "ack-prefix", .arg = "ACK_PREFIX", .type = CLI_STRING,       \
	  .dest = &(e)->ack_prefix, .flags = CLI_NONEMPTY,                     \
	  .help = "key prefix of the acks; must not overlap --prefix",         \
	  .dflt = CLI_DEFAULT_ACK_PREFIX },                                    \
	{ .name = "ack-ttl", .arg = "SECONDS", .type = CLI_UINT,               \
	  .dest = &(e)->ack_ttl_s, .min = 2, .max = 3600,                      \
	  .help = "TTL of the ack lease: a client that dies leaves after it",  \
	  .dflt = "10" }

/* Checks that --ack-prefix and --ack-ttl come with --client-id, the id
 * and (cli_ack_prefix_check) the ack prefix; 0, or CLI_EXIT_USAGE after
 * the error line. */
int cli_ack_options_check(const struct cli_etcd *e, const char *cmd);

/* Checks an ack prefix against the ring's prefix in option terms
 * ("--ack-prefix /x/ contains --prefix /x/nodes/"); NULL stands for the
 * option's default.  0, or CLI_EXIT_USAGE after the error line. */
int cli_ack_prefix_check(const char *cmd, const char *ack_prefix, const char *prefix);

/* The acks the options ask for (--client-id...) into `cfg`; none without
 * --client-id. */
void cli_ack_config(const struct cli_etcd *e, hr_client_config *cfg);

/* What --timeout bounds, for CLI_ETCD_OPTIONS. */
#define CLI_TIMEOUT_SYNC "seconds to wait for the first full sync"
#define CLI_TIMEOUT_RETRY "seconds to keep retrying while etcd is unreachable"
#define CLI_TIMEOUT_SERVE "seconds without a first ring before a warning says why" \
	" (serving goes on)"
#define CLI_TIMEOUT_AGENT "seconds without a first ring before a warning says why" \
	" (the agent goes on)"

/* Defaults: `log_level` is what the command logs unless told otherwise. */
void cli_etcd_init(struct cli_etcd *e, hr_log_level log_level);
void cli_etcd_free(struct cli_etcd *e);

/* The ring options given (--vnodes-per-weight, --placement). */
hr_ring_options cli_etcd_ring_options(const struct cli_etcd *e);

/* Loads members file `file` with the ring options given into *out;
 * returns CLI_EXIT_OK, or an exit status after printing the error. */
int cli_load_members(const char *cmd, const char *file,
		     const struct cli_etcd *e, hr_ring **out);

/* Fills `cfg` (after hr_etcd_config_init) from the options and the
 * ETCDCTL_* variables, its ring options pointing into `e`; warns about a
 * prefix without a trailing '/'.  Returns 0 or -1 after printing a usage
 * error. */
int cli_etcd_config(struct cli_etcd *e, const char *cmd, hr_etcd_config *cfg);

/*
 * Blocks SIGINT and SIGTERM, and fills `set` with them: blocked in this
 * thread and in every thread started after, so that only the waits of this
 * thread take them.  Call before the library starts a thread.
 */
void cli_signals_block(sigset_t *set);

/*
 * Opens a client of the etcd options with the client settings `cfg`
 * (after hr_client_config_init) and waits for its first ring, --timeout
 * long at most.  SIGINT and SIGTERM end the wait at once.  Returns
 * CLI_EXIT_OK with *out set, CLI_EXIT_SIGNAL(sig), or CLI_EXIT_USAGE /
 * CLI_EXIT_ERROR after one error line.
 */
int cli_etcd_open(struct cli_etcd *e, const char *cmd, hr_client_config *cfg,
		  hr_client **out);
/* cli_etcd_open() without the wait: the client's watcher looks for its
 * first ring in the background (hr_client_wait_synced() says how it
 * goes).  Returns CLI_EXIT_OK with *out set, or CLI_EXIT_USAGE /
 * CLI_EXIT_ERROR after one error line. */
int cli_etcd_start(struct cli_etcd *e, const char *cmd, hr_client_config *cfg,
		   hr_client **out);

/* The ring a command reads once: members file `members` (offline), else
 * the ring of a client opened with cli_etcd_open(), left in *client for
 * the caller to close (NULL offline).  `etcd_option` is the spec's: with
 * `members` it is a usage error.  Returns CLI_EXIT_OK with *ring set, or
 * an exit status after one error line. */
int cli_ring_open(struct cli_etcd *e, const char *cmd, const char *members,
		  const char *etcd_option, hr_client **client, hr_ring **ring);

/*
 * Follows the ring under the options' prefix: opens a client whose
 * on_change is `fn`, then runs until SIGINT or SIGTERM, or until `fn`
 * calls cli_etcd_follow_stop() (on the watcher thread), and closes the
 * client.  Following ends normally on a signal: returns CLI_EXIT_OK then,
 * or the error of cli_etcd_open().
 */
int cli_etcd_follow(struct cli_etcd *e, const char *cmd, hr_ring_change_fn fn,
		    void *userdata);

/* Waits up to `ms` (< 0: forever) for a signal of `set` (blocked);
 * returns it, or 0 when the time is up. */
int cli_signal_wait(const sigset_t *set, long ms);
void cli_etcd_follow_stop(void);

/* One attempt of cli_etcd_retry(): a library call with `etcd`. */
typedef int (*cli_attempt_fn)(void *userdata, const hr_etcd_config *etcd,
			      hr_error *err);

/*
 * Calls `fn` until it succeeds, fails otherwise than by not reaching etcd
 * (HR_ECONNECT, HR_ETIMEDOUT), or --timeout has passed, sleeping 100 ms
 * doubling to 1 s in between.  With `sigs` (blocked signals) a signal ends
 * the retries.  Returns 0, an HR_E* code with `err` filled (its message
 * says how long etcd was unreachable), or CLI_EXIT_SIGNAL(sig).
 */
int cli_etcd_retry(const struct cli_etcd *e, const hr_etcd_config *etcd,
		   const sigset_t *sigs, cli_attempt_fn fn, void *userdata,
		   hr_error *err);

/* ---- the metrics' options (cli_metrics.c) ----------------------------------------- */

#define CLI_LABELS_MAX 64

/* What --name-prefix, --label, --omit-nodes and --omit-lookups give; the
 * commands that write the Prometheus exposition (metrics, serve). */
struct cli_metrics {
	hr_metrics_options opts;     /* after cli_metrics_check()   */
	const char *label_items[CLI_LABELS_MAX];
	struct cli_list label_list;
	hr_metrics_label labels[CLI_LABELS_MAX];
	char *names[CLI_LABELS_MAX]; /* the labels' names, malloc'd */
	int omit_nodes, omit_lookups;
};

void cli_metrics_init(struct cli_metrics *m);
void cli_metrics_free(struct cli_metrics *m);
/* The options given into m->opts, checked as the library checks them: 0,
 * or an exit status after the error line. */
int cli_metrics_check(struct cli_metrics *m, const char *cmd);

#define CLI_METRICS_OPTIONS(m)                                                 \
	{ .name = "name-prefix", .arg = "P", .type = CLI_STRING,               \
	  .dest = &(m)->opts.name_prefix,                                      \
	  .help = "put P before every metric name (myapp_ gives"              \
		  " myapp_hashring_ring_revision)" },                          \
	{ .name = "label", .arg = "NAME=VALUE", .type = CLI_LIST,              \
	  .dest = &(m)->label_list,                                            \
	  .help = "a label every sample carries; may repeat" },               \
	{ .name = "omit-nodes", .type = CLI_FLAG, .dest = &(m)->omit_nodes,    \
	  .help = "leave out the per-node metrics (hashring_node_*)" },       \
	{ .name = "omit-lookups", .type = CLI_FLAG, .dest = &(m)->omit_lookups, \
	  .help = "leave out the lookup counts of the client"                 \
		  " (hashring_node_lookups_total)" }

#endif
