/* SPDX-License-Identifier: MIT */
/* cmd_nodes.c - `hashring nodes`: the members of a ring, from etcd or from a
 * members file. */
#include "cli.h"
#include "cli_svg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CMD "nodes"

static const char description[] =
	"Lists the nodes of the ring built from the records under PREFIX (or from\n"
	"FILE), in id order: id, addr, zone, state, weight, vnodes, and the part of\n"
	"the key space the node owns in each view: WRITE_SHARE where writes go\n"
	"(active and warming nodes), READ_SHARE where the data is (active and\n"
	"draining nodes).  Columns are as wide as their widest cell; a last line\n"
	"sums the ring up.  With --json each line is\n"
	"  {\"id\":\"a\",\"addr\":\"127.0.0.1:11211\",\"zone\":\"\",\"state\":\"active\",\n"
	"   \"weight\":1,\"vnodes\":200,\"share\":0.5,\"write_share\":0.5,\n"
	"   \"read_share\":0.5,\"revision\":42}\n"
	"where share is that of the view the node serves in: read for a draining\n"
	"node, else write (no revision for a members file).";

enum { COL_ID, COL_ADDR, COL_ZONE, COL_STATE, COL_WEIGHT, COL_VNODES, COL_WRITE_SHARE,
       COL_READ_SHARE, NCOLS };

/* Each share names its view: a warming node's write share and a draining
 * node's read share are the ones that differ from the other view. */
static const char *const headers[NCOLS] = {
	"ID", "ADDR", "ZONE", "STATE", "WEIGHT", "VNODES", "WRITE_SHARE", "READ_SHARE"
};

/* One node's figures and the texts of its cells, worked out once. */
struct row {
	const hr_node *node;
	unsigned vnodes;
	double share[2]; /* by hr_view */
	char weight[32], vnodes_text[16], share_text[2][16];
};

static const char *cell(const struct row *r, int col)
{
	switch (col) {
	case COL_ID:
		return r->node->id;
	case COL_ADDR:
		return r->node->addr;
	case COL_ZONE:
		return r->node->zone[0] ? r->node->zone : "-";
	case COL_STATE:
		return hr_state_name(r->node->state);
	case COL_WEIGHT:
		return r->weight;
	case COL_VNODES:
		return r->vnodes_text;
	case COL_WRITE_SHARE:
		return r->share_text[HR_VIEW_WRITE];
	default:
		return r->share_text[HR_VIEW_READ];
	}
}

static void print_table(FILE *out, const struct row *rows, size_t n)
{
	size_t width[NCOLS];

	for (int c = 0; c < NCOLS; c++) {
		width[c] = strlen(headers[c]);
		for (size_t i = 0; i < n; i++) {
			const char *s = cell(&rows[i], c);
			size_t w = cli_text_width(s, strlen(s));

			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t i = 0; i <= n && !cli_out_error(); i++) {
		for (int c = 0; c < NCOLS; c++) {
			const char *s = i ? cell(&rows[i - 1], c) : headers[c];

			if (c)
				fputs("  ", out);
			/* Numbers to the right; READ_SHARE, last, ends the line. */
			cli_text_cell(out, s, width[c], c >= COL_WEIGHT);
		}
		fputc('\n', out);
	}
}

static void print_json(FILE *out, const struct row *rows, size_t n, int etcd,
		       uint64_t revision)
{
	for (size_t i = 0; i < n && !cli_out_error(); i++) {
		const hr_node *node = rows[i].node;

		fputs("{\"id\":", out);
		cli_json_string(out, node->id, strlen(node->id));
		fputs(",\"addr\":", out);
		cli_json_string(out, node->addr, strlen(node->addr));
		fputs(",\"zone\":", out);
		cli_json_string(out, node->zone, strlen(node->zone));
		fprintf(out, ",\"state\":\"%s\",\"weight\":%.17g,\"vnodes\":%u,\"share\":%.6f"
			",\"write_share\":%.6f,\"read_share\":%.6f",
			hr_state_name(node->state), node->weight, rows[i].vnodes,
			rows[i].share[node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE],
			rows[i].share[HR_VIEW_WRITE], rows[i].share[HR_VIEW_READ]);
		if (etcd)
			fprintf(out, ",\"revision\":%" PRIu64, revision);
		fputs("}\n", out);
	}
}

static int print_nodes(const hr_ring *ring, int json, int etcd)
{
	FILE *out = cli_out();
	size_t n = hr_ring_node_count(ring);
	struct row *rows = calloc(n ? n : 1, sizeof *rows);
	/* Every node's share of both views: one pass over the points each. */
	double *shares = calloc(2 * (n ? n : 1), sizeof *shares);

	if (!rows || !shares) {
		free(rows);
		free(shares);
		return cli_fail(CMD, HR_ENOMEM, NULL);
	}
	hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, n);
	hr_ring_node_shares(ring, HR_VIEW_READ, shares + n, n);
	for (size_t i = 0; i < n; i++) {
		struct row *r = &rows[i];

		r->node = hr_ring_node(ring, i);
		r->vnodes = hr_ring_node_vnodes(ring, r->node);
		snprintf(r->weight, sizeof r->weight, "%g", r->node->weight);
		snprintf(r->vnodes_text, sizeof r->vnodes_text, "%u", r->vnodes);
		for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++) {
			r->share[v] = shares[(size_t)v * n + i];
			snprintf(r->share_text[v], sizeof r->share_text[v], "%.4f", r->share[v]);
		}
	}
	if (json) {
		print_json(out, rows, n, etcd, hr_ring_revision(ring));
	} else {
		if (n)
			print_table(out, rows, n);
		fprintf(out, "# %zu nodes, %zu points", n, hr_ring_point_count(ring));
		if (etcd)
			fprintf(out, ", revision %" PRIu64, hr_ring_revision(ring));
		fprintf(out, ", digest %016" PRIx64 "\n", hr_ring_digest(ring));
	}
	free(shares);
	free(rows);
	return CLI_EXIT_OK;
}

static int write_svg(const hr_ring *ring, const char *path)
{
	FILE *f = cli_svg_open(CMD, path);
	int rc;

	if (!f)
		return CLI_EXIT_ERROR;
	rc = cli_svg_ring(f, ring);
	if (rc) {
		fclose(f);
		return cli_fail(CMD, rc, NULL);
	}
	return cli_svg_close(CMD, path, f);
}

int cmd_nodes(int argc, char **argv)
{
	struct cli_etcd conn;
	const char *members = NULL, *svg = NULL;
	int json = 0, rc;
	hr_ring *ring = NULL;
	hr_client *client = NULL;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.one_shot = 1;
	const struct cli_option options[] = {
		{ .name = "members", .arg = "FILE", .type = CLI_STRING, .dest = &members,
		  .flags = CLI_NONEMPTY,
		  .help = "build the ring from this members file (offline), as for lookup" },
		{ .name = "json", .type = CLI_FLAG, .dest = &json,
		  .help = "print one JSON object per node" },
		{ .name = "svg", .arg = "FILE", .type = CLI_STRING, .dest = &svg,
		  .flags = CLI_NONEMPTY,
		  .help = "also draw the ring and the shares into FILE, as SVG" },
		CLI_RING_OPTIONS(&conn),
		CLI_AGENT_OPTION(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " (--members FILE | --agent DIR | [--endpoints URLS] [--prefix P])"
			 " [--json] [--svg FILE]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	rc = cli_ring_open(&conn, CMD, members, spec.etcd_option, &client, &ring);
	if (rc == CLI_EXIT_OK)
		rc = print_nodes(ring, json, client != NULL);
	if (rc == CLI_EXIT_OK && svg)
		rc = write_svg(ring, svg);
	hr_client_close(client);
	hr_ring_release(ring);
out:
	cli_etcd_free(&conn);
	return rc;
}
