/* cmd_nodes.c - `hashring nodes`: the members of the ring etcd holds. */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

#define CMD "nodes"

static const struct cli_option options[] = {
	CLI_ETCD_OPTIONS,
	{ "json", NULL, "print one JSON object per node" },
	{ NULL, NULL, NULL }
};

static const char description[] =
	"Lists the nodes of the ring built from the records under PREFIX, in id\n"
	"order: id, addr, zone, state, weight, vnodes, and share (the part of\n"
	"the key space the node owns: in the write view for active and warming\n"
	"nodes, in the read view for draining ones).  With --json each line is\n"
	"  {\"id\":\"a\",\"addr\":\"10.0.0.1:11211\",\"zone\":\"\",\"state\":\"active\",\n"
	"   \"weight\":1,\"vnodes\":200,\"share\":0.5,\"revision\":42}";

static void print_nodes(const hr_ring *ring, int json)
{
	size_t n = hr_ring_node_count(ring);

	if (!json && n)
		printf("%-20s %-24s %-12s %-9s %8s %7s %8s\n", "ID", "ADDR", "ZONE",
		       "STATE", "WEIGHT", "VNODES", "SHARE");
	for (size_t i = 0; i < n; i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		double share = hr_ring_node_share(ring, node, view);
		unsigned vnodes = hr_ring_node_vnodes(ring, node);

		if (json) {
			fputs("{\"id\":", stdout);
			cli_json_string(stdout, node->id, strlen(node->id));
			fputs(",\"addr\":", stdout);
			cli_json_string(stdout, node->addr, strlen(node->addr));
			fputs(",\"zone\":", stdout);
			cli_json_string(stdout, node->zone, strlen(node->zone));
			printf(",\"state\":\"%s\",\"weight\":%.17g,\"vnodes\":%u,"
			       "\"share\":%.6f,\"revision\":%" PRIu64 "}\n",
			       hr_state_name(node->state), node->weight, vnodes, share,
			       hr_ring_revision(ring));
		} else {
			printf("%-20s %-24s %-12s %-9s %8g %7u %8.4f\n", node->id,
			       node->addr, node->zone[0] ? node->zone : "-",
			       hr_state_name(node->state), node->weight, vnodes, share);
		}
	}
	if (!json)
		printf("# %zu nodes, %zu points, revision %" PRIu64 ", digest %016" PRIx64 "\n",
		       n, hr_ring_point_count(ring), hr_ring_revision(ring),
		       hr_ring_digest(ring));
}

int cmd_nodes(int argc, char **argv)
{
	struct cli_etcd conn;
	struct cli_parser p;
	hr_config cfg;
	hr_client *client = NULL;
	hr_ring *ring;
	int opt, json = 0, rc = CLI_EXIT_USAGE;

	cli_etcd_init(&conn, HR_LOG_ERROR);
	cli_parser_init(&p, CMD, argc, argv);
	while ((opt = cli_parser_next(&p, options)) != CLI_ARG_END) {
		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout, CMD " [--endpoints URLS] [--prefix P] [--json]",
				       description, options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		if (opt == CLI_ARG_POSITIONAL) {
			cli_usage(CMD, "unexpected argument '%s'", p.value);
			goto out;
		}
		if (!strcmp(options[opt].name, "json"))
			json = 1;
		else if (cli_etcd_option(&conn, CMD, options[opt].name, p.value) < 0)
			goto out;
	}
	hr_config_init(&cfg);
	rc = cli_etcd_open(&conn, CMD, &cfg, &client);
	if (rc)
		goto out;
	ring = hr_client_acquire(client);
	print_nodes(ring, json);
	hr_ring_release(ring);
	hr_client_close(client);
	rc = fflush(stdout) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
out:
	cli_etcd_free(&conn);
	return rc;
}
