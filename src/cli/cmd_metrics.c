/* cmd_metrics.c - `hashring metrics`: the Prometheus exposition of a
 * client after its first sync, or of a members file's ring, once. */
#include "cli.h"
#include "metrics_text.h"

#include <stdlib.h>
#include <string.h>

#define CMD "metrics"
#define LABELS_MAX 64

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

static int discard(void *userdata, const char *data, size_t len)
{
	return 0;
}

/* Bad options are a usage error, found before etcd is asked anything and
 * named as options (the library's rules, the library's reasons); then
 * the library checks them as it would before it writes a byte, here for
 * an empty ring. */
static int check_options(const hr_metrics_options *opts, const struct cli_list *given)
{
	hr_ring *empty = NULL;
	hr_error err = { 0 };
	int rc;

	if (opts->name_prefix && hr__metrics_prefix_check(opts->name_prefix, &err))
		return cli_usage(CMD, "--name-prefix: %s", err.message);
	for (size_t i = 0; i < opts->label_count; i++) {
		const hr_metrics_label *l = &opts->labels[i];

		if (hr__metrics_label_check(l, &err))
			return cli_usage(CMD, "--label %.140s: %s", given->items[i], err.message);
		for (size_t k = 0; k < i; k++) {
			if (!strcmp(l->name, opts->labels[k].name))
				return cli_usage(CMD, "--label %.140s: the name \"%.200s\" is given"
						 " twice", given->items[i], l->name);
		}
	}
	rc = hr_ring_build(NULL, 0, NULL, 0, &empty, &err);
	if (!rc)
		rc = hr_ring_metrics_write(empty, discard, NULL, opts, &err);
	hr_ring_release(empty);
	return rc ? cli_fail_input(CMD, rc, &err) : CLI_EXIT_OK;
}

/* NAME=VALUE into a label; "=" separates at the first one. */
static int parse_labels(const struct cli_list *given, hr_metrics_label *labels,
			char **names)
{
	for (size_t i = 0; i < given->n; i++) {
		const char *eq = strchr(given->items[i], '=');

		if (!eq || eq == given->items[i])
			return cli_usage(CMD, "--label wants NAME=VALUE (got \"%s\")",
					 given->items[i]);
		names[i] = strndup(given->items[i], (size_t)(eq - given->items[i]));
		if (!names[i])
			return cli_fail(CMD, HR_ENOMEM, NULL);
		labels[i] = (hr_metrics_label){ names[i], eq + 1 };
	}
	return CLI_EXIT_OK;
}

int cmd_metrics(int argc, char **argv)
{
	struct cli_etcd conn;
	const char *members = NULL, *label_items[LABELS_MAX];
	struct cli_list label_list = { .items = label_items, .max = LABELS_MAX,
				       .what = "label" };
	hr_metrics_label labels[LABELS_MAX];
	char *names[LABELS_MAX] = { NULL };
	hr_metrics_options opts;
	int omit_nodes = 0, rc;
	hr_error err = { 0 };

	hr_metrics_options_init(&opts);
	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.one_shot = 1;
	const struct cli_option options[] = {
		{ .name = "members", .arg = "FILE", .type = CLI_STRING, .dest = &members,
		  .flags = CLI_NONEMPTY,
		  .help = "the metrics of this members file's ring (offline), as for lookup" },
		{ .name = "name-prefix", .arg = "P", .type = CLI_STRING, .dest = &opts.name_prefix,
		  .help = "put P before every metric name (myapp_ gives"
			  " myapp_hashring_ring_revision)" },
		{ .name = "label", .arg = "NAME=VALUE", .type = CLI_LIST, .dest = &label_list,
		  .help = "a label every sample carries; may repeat" },
		{ .name = "omit-nodes", .type = CLI_FLAG, .dest = &omit_nodes,
		  .help = "leave out the per-node metrics (hashring_node_*)" },
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
	rc = parse_labels(&label_list, labels, names);
	if (rc != CLI_EXIT_OK)
		goto out;
	opts.labels = labels;
	opts.label_count = label_list.n;
	opts.omit = omit_nodes ? HR_METRICS_OMIT_NODES : 0;
	rc = check_options(&opts, &label_list);
	if (rc != CLI_EXIT_OK)
		goto out;
	if (members && spec.etcd_option) {
		rc = cli_usage(CMD, "--members and --%s exclude each other", spec.etcd_option);
	} else if (members) {
		hr_ring *ring = NULL;

		rc = cli_load_members(CMD, members, &conn, &ring);
		if (rc == CLI_EXIT_OK && hr_ring_metrics_write(ring, write_out, cli_out(), &opts, &err))
			rc = cli_out_error() ? CLI_EXIT_OK : cli_fail(CMD, err.code, &err);
		hr_ring_release(ring);
	} else {
		hr_client_config cfg;
		hr_client *client = NULL;

		hr_client_config_init(&cfg);
		rc = cli_etcd_open(&conn, CMD, &cfg, &client);
		if (rc == CLI_EXIT_OK &&
		    hr_client_metrics_write(client, write_out, cli_out(), &opts, &err))
			rc = cli_out_error() ? CLI_EXIT_OK : cli_fail(CMD, err.code, &err);
		hr_client_close(client);
	}
out:
	for (size_t i = 0; i < LABELS_MAX; i++)
		free(names[i]);
	cli_etcd_free(&conn);
	return rc;
}
