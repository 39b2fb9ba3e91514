/* SPDX-License-Identifier: MIT */
/* cmd_metrics.c - `hashring metrics`: the Prometheus exposition of a
 * client after its first sync, or of a members file's ring, once. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define CMD "metrics"

static const char description[] =
	"Prints the Prometheus metrics (text exposition format 0.0.4) of a client\n"
	"of the records under PREFIX once its first full sync is done, or of the\n"
	"ring of FILE (without the client's metrics), and exits: what a service\n"
	"embedding the library serves with hr_client_metrics_write(), for a look\n"
	"by hand or a node exporter's textfile collector.";

static int write_out(void *userdata, const char *data, size_t len)
{
	FILE *out = userdata;

	return fwrite(data, 1, len, out) == len ? 0 : 1;
}

int cmd_metrics(int argc, char **argv)
{
	struct cli_etcd conn;
	const char *members = NULL;
	struct cli_metrics m;
	int rc;
	hr_error err = { 0 };

	cli_metrics_init(&m);
	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.one_shot = 1;
	const struct cli_option options[] = {
		{ .name = "members", .arg = "FILE", .type = CLI_STRING, .dest = &members,
		  .flags = CLI_NONEMPTY,
		  .help = "the metrics of this members file's ring (offline), as for lookup" },
		CLI_METRICS_OPTIONS(&m),
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " (--members FILE | [--endpoints URLS] [--prefix P])"
			 " [--name-prefix P] [--label NAME=VALUE]... [--omit-nodes]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	rc = cli_metrics_check(&m, CMD);
	if (rc != CLI_EXIT_OK)
		goto out;
	if (members && spec.etcd_option) {
		rc = cli_usage(CMD, "--members and --%s exclude each other", spec.etcd_option);
	} else if (members) {
		hr_ring *ring = NULL;

		rc = cli_load_members(CMD, members, &conn, &ring);
		if (rc == CLI_EXIT_OK && hr_ring_metrics_write(ring, write_out, cli_out(), &m.opts, &err))
			rc = cli_out_error() ? CLI_EXIT_OK : cli_fail(CMD, err.code, &err);
		hr_ring_release(ring);
	} else {
		hr_client_config cfg;
		hr_client *client = NULL;

		hr_client_config_init(&cfg);
		rc = cli_etcd_open(&conn, CMD, &cfg, &client);
		if (rc == CLI_EXIT_OK &&
		    hr_client_metrics_write(client, write_out, cli_out(), &m.opts, &err))
			rc = cli_out_error() ? CLI_EXIT_OK : cli_fail(CMD, err.code, &err);
		hr_client_close(client);
	}
out:
	cli_metrics_free(&m);
	cli_etcd_free(&conn);
	return rc;
}
