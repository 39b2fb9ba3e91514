/* SPDX-License-Identifier: MIT */
/* cmd_watch.c - `hashring watch`: one line per published ring, flushed at
 * once so that other programs can follow it. */
#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define CMD "watch"

static const char description[] =
	"Follows the records under PREFIX and prints one line for every ring the\n"
	"library publishes, the first one included:\n"
	"  revision=42 digest=9f3a0c1d2e4b5a69 nodes=3 points=600 moved_write=0.3300 moved_read=0.3300\n"
	"With --json:\n"
	"  {\"revision\":42,\"digest\":\"9f3a0c1d2e4b5a69\",\"nodes\":3,\"points\":600,\n"
	"   \"moved_write\":0.33,\"moved_read\":0.33}\n"
	"revision is the ring's: the etcd revision at which it matches the\n"
	"records (after a full sync etcd's revision then, which may be past the\n"
	"newest record's); `hashring acks` lists it for each client.  nodes\n"
	"counts every valid record, whatever its state; moved_* is the share\n"
	"of the key space whose owner changed in that view.  Runs until SIGINT or\n"
	"SIGTERM (exit 0) or --count rings.  Library log lines (key=value, level\n"
	"info by default) go to stderr.\n"
	"With --client-id, each ring is also acknowledged for `hashring acks`: its\n"
	"revision and digest at the key ACK_PREFIX followed by ID, under a lease\n"
	"revoked on exit; the first ring is printed once its ack is in etcd, and\n"
	"an ID that another live client holds is an error (exit 1).";

struct watch_state {
	int json;
	unsigned long count;     /* 0: unlimited */
	unsigned long printed;   /* touched by the watcher thread only */
};

static void on_ring(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct watch_state *s = ud;
	FILE *out = cli_out();
	double mw = hr_ring_moved_share(old, ring, HR_VIEW_WRITE);
	double mr = hr_ring_moved_share(old, ring, HR_VIEW_READ);

	if (cli_out_error() || (s->count && s->printed >= s->count))
		return;
	if (s->json)
		fprintf(out, "{\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\",\"nodes\":%zu,"
			"\"points\":%zu,\"moved_write\":%.6f,\"moved_read\":%.6f}\n",
			hr_ring_revision(ring), hr_ring_digest(ring),
			hr_ring_node_count(ring), hr_ring_point_count(ring), mw, mr);
	else
		fprintf(out, "revision=%" PRIu64 " digest=%016" PRIx64 " nodes=%zu points=%zu"
			" moved_write=%.4f moved_read=%.4f\n",
			hr_ring_revision(ring), hr_ring_digest(ring),
			hr_ring_node_count(ring), hr_ring_point_count(ring), mw, mr);
	s->printed++;
	/* A write that failed (the reader went away) ends the watch too. */
	if (cli_out_flush() || (s->count && s->printed >= s->count))
		cli_etcd_follow_stop();
}

int cmd_watch(int argc, char **argv)
{
	struct watch_state st = { 0 };
	struct cli_etcd conn;
	int rc;

	cli_etcd_init(&conn, HR_LOG_INFO);
	const struct cli_option options[] = {
		{ .name = "count", .arg = "N", .type = CLI_UINT, .dest = &st.count,
		  .min = 1, .max = ULONG_MAX, .dflt = "until SIGINT or SIGTERM",
		  .help = "exit after N rings" },
		{ .name = "json", .type = CLI_FLAG, .dest = &st.json,
		  .help = "print one JSON object per ring" },
		CLI_ACK_OPTIONS(&conn),
		CLI_RING_OPTIONS(&conn),
		CLI_AGENT_OPTION(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--agent DIR | --endpoints URLS --prefix P] [--json] [--count N]"
			 " [--client-id ID [--ack-prefix ACK_PREFIX] [--ack-ttl S]]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc == CLI_RUN) {
		rc = cli_ack_options_check(&conn, CMD);
		if (!rc)
			rc = cli_etcd_follow(&conn, CMD, on_ring, &st);
	}
	cli_etcd_free(&conn);
	return rc;
}
