/* cmd_watch.c - `hashring watch`: one line per published ring, flushed at
 * once so that other programs can follow it. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define CMD "watch"

static const struct cli_option options[] = {
	CLI_ETCD_OPTIONS,
	{ "json", NULL, "print one JSON object per ring" },
	{ "count", "N", "exit after N rings (default: until SIGINT or SIGTERM)" },
	{ NULL, NULL, NULL }
};

static const char description[] =
	"Follows the records under PREFIX and prints one line for every ring the\n"
	"library publishes, the first one included:\n"
	"  revision=42 digest=9f3a0c1d2e4b5a69 nodes=3 points=600 moved_write=0.3300 moved_read=0.3300\n"
	"With --json:\n"
	"  {\"revision\":42,\"digest\":\"9f3a0c1d2e4b5a69\",\"nodes\":3,\"points\":600,\n"
	"   \"moved_write\":0.33,\"moved_read\":0.33}\n"
	"nodes counts every valid record, whatever its state; moved_* is the share\n"
	"of the key space whose owner changed in that view.  Library log lines\n"
	"(key=value, level info by default) go to stderr.";

struct watch_state {
	int json;
	unsigned long count;     /* 0: unlimited */
	unsigned long printed;   /* touched by the watcher thread only */
	int write_failed;
};

static void on_ring(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct watch_state *s = ud;
	double mw = hr_ring_moved_share(old, ring, HR_VIEW_WRITE);
	double mr = hr_ring_moved_share(old, ring, HR_VIEW_READ);

	if (s->write_failed || (s->count && s->printed >= s->count))
		return;
	if (s->json)
		printf("{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\",\"nodes\":%zu,"
		       "\"points\":%zu,\"moved_write\":%.6f,\"moved_read\":%.6f}\n",
		       hr_ring_revision(ring), hr_ring_digest(ring),
		       hr_ring_node_count(ring), hr_ring_point_count(ring), mw, mr);
	else
		printf("revision=%" PRIu64 " digest=%016" PRIx64 " nodes=%zu points=%zu"
		       " moved_write=%.4f moved_read=%.4f\n",
		       hr_ring_revision(ring), hr_ring_digest(ring),
		       hr_ring_node_count(ring), hr_ring_point_count(ring), mw, mr);
	s->printed++;
	if (fflush(stdout) != 0)
		s->write_failed = 1;
	/* Wake the main thread, which waits for a signal. */
	if (s->write_failed || (s->count && s->printed >= s->count))
		kill(getpid(), SIGTERM);
}

int cmd_watch(int argc, char **argv)
{
	struct watch_state st = { 0 };
	struct cli_etcd conn;
	struct cli_parser p;
	int opt, rc = CLI_EXIT_USAGE;

	cli_etcd_init(&conn, HR_LOG_INFO);
	cli_parser_init(&p, CMD, argc, argv);
	while ((opt = cli_parser_next(&p, options)) != CLI_ARG_END) {
		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout, CMD " [--endpoints URLS] [--prefix P] [--json] [--count N]",
				       description, options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		if (opt == CLI_ARG_POSITIONAL) {
			cli_usage(CMD, "unexpected argument '%s'", p.value);
			goto out;
		}
		if (!strcmp(options[opt].name, "json"))
			st.json = 1;
		else if (!strcmp(options[opt].name, "count")) {
			if (cli_parse_ulong(CMD, "count", p.value, 1, (unsigned long)-1 / 2,
					    &st.count))
				goto out;
		} else if (cli_etcd_option(&conn, CMD, options[opt].name, p.value) < 0)
			goto out;
	}

	rc = cli_etcd_follow(&conn, CMD, on_ring, &st);
	if (rc == CLI_EXIT_OK && st.write_failed)
		rc = CLI_EXIT_ERROR;
out:
	cli_etcd_free(&conn);
	return rc;
}
