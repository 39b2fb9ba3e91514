/* SPDX-License-Identifier: MIT */
/* main.c - the `hashring` command: finds the command, runs it, and ends the
 * process the way its result says. */
#include "cli.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line for `hashring --help` */
};

static const struct command commands[] = {
	{ "lookup", cmd_lookup, "show the nodes that own keys (node, read node, replicas)" },
	{ "nodes", cmd_nodes, "list the ring's nodes with their share of the key space" },
	{ "watch", cmd_watch, "print a line for every ring published from etcd" },
	{ "register", cmd_register, "register a node under a lease and keep it alive (sidecar)" },
	{ "state", cmd_state, "change a registered node's state in place" },
	{ "weight", cmd_weight, "change a registered node's weight in place" },
	{ "acks", cmd_acks, "list the clients that acknowledge their ring; wait for a revision" },
	{ "agent", cmd_agent, "the host's one watcher: publish each ring for the host's processes" },
	{ "rebalance", cmd_rebalance, "copy the keys warming and draining nodes take over (memcached)" },
	{ "serve", cmd_serve, "serve a live page of the ring, /ring.json and /metrics over HTTP" },
	{ "diff", cmd_diff, "list the arcs of the key space that change owner between rings" },
	{ "metrics", cmd_metrics, "print the Prometheus metrics of a client or a members file" },
	{ "sim", cmd_sim, "measure balance and keys moved on growth, by vnode count" },
	{ "tokens", cmd_tokens, "allocate a joining node's tokens and print its record" },
	{ NULL, NULL, NULL }
};

static const struct command *find_command(const char *name)
{
	for (const struct command *c = commands; c->name; c++) {
		if (strcmp(c->name, name) == 0)
			return c;
	}
	return NULL;
}

static void print_help(FILE *out)
{
	fputs("Usage: hashring COMMAND [OPTIONS] [ARGS...]\n"
	      "\n"
	      "A consistent-hash ring of cluster nodes, kept in sync with etcd.\n"
	      "\n"
	      "Commands:\n", out);
	for (const struct command *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fputs("\n"
	      "Options:\n"
	      "  -h, --help     show this help and exit\n"
	      "  --version      print the version and exit\n"
	      "\n"
	      "Run 'hashring COMMAND --help' for the options of a command.\n"
	      "Exit status: 0 success, 1 error, 2 usage error.  SIGINT or SIGTERM end\n"
	      "watch, agent, diff (following etcd), register and serve, which run until\n"
	      "stopped, with exit 0; any other command cleans up and ends by that\n"
	      "signal: 130 (SIGINT), 143 (SIGTERM).  141 (SIGPIPE) when the reader of\n"
	      "the output went away, after cleaning up.\n", out);
}

/* Ends the process by `sig`, as if it had never been caught, so that the
 * shell sees 128 + sig and a calling script stops as for any interrupted
 * program. */
static void die_by(int sig)
{
	sigset_t set;

	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

/*
 * Output that could not be written is an error, not a silent success,
 * except when the reader went away (EPIPE: `hashring ... | head -1`): then
 * the process ends by SIGPIPE, like a filter that did not ignore it, and
 * says nothing.
 */
static int finish(const char *cmd, int status)
{
	int err = cli_out_flush();

	if (err == EPIPE)
		die_by(SIGPIPE);
	if (err) {
		cli_error(cmd, "cannot write the output: %s", strerror(err));
		if (!status)
			status = CLI_EXIT_ERROR;
	}
	if (CLI_EXIT_IS_SIGNAL(status))
		die_by(status - 128);
	return status;
}

int main(int argc, char **argv)
{
	const struct command *c;
	const char *name;

	/* Writes to a closed pipe fail with EPIPE, which finish() handles
	 * after the command has cleaned up (closed its client, revoked its
	 * lease). */
	signal(SIGPIPE, SIG_IGN);
	cli_locale_init();
	if (cli_out_open()) {
		cli_error(NULL, "cannot set up the output: %s", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	if (argc < 2)
		return cli_usage(NULL, "missing command");
	name = argv[1];

	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		print_help(cli_out());
		return finish(NULL, CLI_EXIT_OK);
	}
	if (strcmp(name, "--version") == 0) {
		fprintf(cli_out(), "hashring %s\n", HR_VERSION_STRING);
		return finish(NULL, CLI_EXIT_OK);
	}
	if (strcmp(name, "help") == 0) {
		char help_opt[] = "--help";
		char *help_argv[3];

		if (argc < 3) {
			print_help(cli_out());
			return finish(NULL, CLI_EXIT_OK);
		}
		c = find_command(argv[2]);
		if (!c)
			return cli_usage(NULL, "unknown command '%s'", argv[2]);
		help_argv[0] = argv[2];
		help_argv[1] = help_opt;
		help_argv[2] = NULL;
		return finish(c->name, c->run(2, help_argv));
	}
	if (name[0] == '-')
		return cli_usage(NULL, "unknown option '%s' before the command",
				 name);

	c = find_command(name);
	if (!c)
		return cli_usage(NULL, "unknown command '%s'", name);
	return finish(c->name, c->run(argc - 1, argv + 1));
}
