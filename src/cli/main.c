/* main.c - the `hashring` command: finds the command and runs it. */
#include "cli.h"

#include <errno.h>
#include <string.h>

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
	{ "diff", cmd_diff, "list the arcs of the key space that change owner between rings" },
	{ "sim", cmd_sim, "measure balance and keys moved on growth, by vnode count" },
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
	      "Exit status: 0 success, 1 error, 2 usage error.\n", out);
}

/* Output that could not be written is an error, not a silent success
 * (a full disk, a closed pipe turned into EPIPE). */
static int finish_output(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(NULL, "cannot write the output: %s", strerror(errno));
		return status ? status : CLI_EXIT_ERROR;
	}
	return status;
}

int main(int argc, char **argv)
{
	const struct command *c;
	const char *name;

	if (argc < 2)
		return cli_usage(NULL, "missing command");
	name = argv[1];

	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		print_help(stdout);
		return finish_output(CLI_EXIT_OK);
	}
	if (strcmp(name, "--version") == 0) {
		printf("hashring %s\n", HR_VERSION_STRING);
		return finish_output(CLI_EXIT_OK);
	}
	if (strcmp(name, "help") == 0) {
		char help_opt[] = "--help";
		char *help_argv[3];

		if (argc < 3) {
			print_help(stdout);
			return finish_output(CLI_EXIT_OK);
		}
		c = find_command(argv[2]);
		if (!c)
			return cli_usage(NULL, "unknown command '%s'", argv[2]);
		help_argv[0] = argv[2];
		help_argv[1] = help_opt;
		help_argv[2] = NULL;
		return finish_output(c->run(2, help_argv));
	}
	if (name[0] == '-')
		return cli_usage(NULL, "unknown option '%s' before the command",
				 name);

	c = find_command(name);
	if (!c)
		return cli_usage(NULL, "unknown command '%s'", name);
	return finish_output(c->run(argc - 1, argv + 1));
}
