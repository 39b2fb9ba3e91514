/* SPDX-License-Identifier: MIT */
/* cmd_agent.c - `hashring agent`: the host's one watcher.  Follows etcd
 * and publishes each ring into a directory that the host's other
 * processes attach to (hashring/host.h), with a heartbeat every second. */
#include "cli.h"
#include "clock.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#define CMD "agent"
#define DEFAULT_DIR "/run/hashring"

static const char description[] =
	"Runs in the foreground as the host's one watcher of PREFIX: every ring\n"
	"it builds from etcd is written into DIR as an immutable snapshot, which\n"
	"the host's other processes map and look up in place instead of each\n"
	"watching etcd (hr_client_config.agent_dir; hashring lookup --agent DIR,\n"
	"hashring watch --agent DIR).  One line per published snapshot:\n"
	"  generation=7 revision=42 nodes=3 points=600 write_ms=0.3\n"
	"DIR (created 0750 if absent; its parent must exist) is owned by the\n"
	"agent's user, set-group-ID to --group, and holds one agent at a time: a\n"
	"second one is refused, naming the first one's pid (exit 1).  The agent\n"
	"beats every second; readers keep serving the last ring, log it stale\n"
	"when the agent has lost etcd, and report it unconfirmed when the beat\n"
	"stops.  Runs until SIGINT or SIGTERM (exit 0).  Library log lines\n"
	"(key=value) go to stderr.";

struct agent {
	hr_host *host;
	unsigned long published;	/* the watcher thread's */
	int failed;			/* a publish failed since the last line */
};

/* On the watcher thread: each ring, as soon as it is built. */
static void on_ring(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct agent *a = ud;
	struct timespec t0, t1;
	hr_error err = { 0 };
	int64_t gen;

	(void)old;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gen = hr_host_publish(a->host, ring, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (gen < 0) {
		/* The last snapshot stays current; the next ring tries again. */
		cli_warn(CMD, "revision %" PRIu64 " not published: %s", hr_ring_revision(ring),
			 err.message);
		return;
	}
	fprintf(cli_out(), "generation=%" PRId64 " revision=%" PRIu64 " nodes=%zu points=%zu"
		" write_ms=%.1f\n", gen, hr_ring_revision(ring),
		hr_ring_node_count(ring), hr_ring_point_count(ring),
		(double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	cli_out_flush();
	a->published++;
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = { 0 };
	const char *dir = DEFAULT_DIR, *group = NULL;
	hr_host_config hc;
	hr_client_config cfg;
	hr_client *client = NULL;
	hr_error err = { 0 };
	struct cli_etcd conn;
	sigset_t set;
	int rc;

	cli_etcd_init(&conn, HR_LOG_INFO);
	const struct cli_option options[] = {
		{ .name = "dir", .arg = "DIR", .type = CLI_STRING, .dest = &dir,
		  .flags = CLI_NONEMPTY, .dflt = DEFAULT_DIR,
		  .help = "the directory the snapshots are published in" },
		{ .name = "group", .arg = "NAME", .type = CLI_STRING, .dest = &group,
		  .flags = CLI_NONEMPTY, .dflt = "the agent's own group",
		  .help = "the group whose members may read DIR (the readers' users)" },
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_AGENT),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--dir DIR] [--group NAME] [--endpoints URLS] [--prefix P]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	hr_host_config_init(&hc);
	hc.group = group;
	rc = hr_host_open(dir, &hc, &a.host, &err);
	if (rc) {
		rc = cli_fail_input(CMD, rc, &err);
		goto out;
	}
	hr_client_config_init(&cfg);
	cfg.on_change = on_ring;
	cfg.on_change_userdata = &a;
	/* Blocks SIGINT and SIGTERM for the watcher too.  Not waiting for
	 * the first ring: the agent beats meanwhile, and its readers keep
	 * a previous agent's last ring. */
	rc = cli_etcd_start(&conn, CMD, &cfg, &client);
	if (rc)
		goto out;
	cli_signals_block(&set);
	for (int64_t t0 = hr__now_ms(), warned = 0;;) {
		hr_client_status st;
		int sig;

		if (hr_client_status_get(client, &st, NULL) == 0)
			hr_host_beat(a.host, st.rings_published ? st.unconfirmed_ms :
				     hr__now_ms() - t0);
		if (!warned && conn.timeout_s &&
		    hr__now_ms() - t0 >= (int64_t)conn.timeout_s * 1000 &&
		    hr_client_wait_synced(client, 0, &err)) {
			cli_warn(CMD, "no ring yet after %lu s: %s", conn.timeout_s, err.message);
			warned = 1;
		}
		sig = cli_signal_wait(&set, 1000);
		if (sig == SIGINT || sig == SIGTERM || cli_out_error())
			break;
	}
	hr_client_close(client);
out:
	hr_host_close(a.host);
	cli_etcd_free(&conn);
	return rc;
}
