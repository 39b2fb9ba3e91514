/* SPDX-License-Identifier: MIT */
/* cmd_lookup.c - `hashring lookup`: which nodes own the given keys. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CMD "lookup"
#define REPLICAS_DEFAULT 3

static const char description[] =
	"Prints, for each KEY, one line: the key, its owner in the write view\n"
	"(node), its owner in the read view (read_node) and the preference list\n"
	"of R replicas in the write view, where writes go (every node of the view\n"
	"when it has fewer than R).  A view with no node gives '-' (null in JSON).\n"
	"Text lines are tab-separated, replicas comma-separated, after a header\n"
	"line KEY NODE READ_NODE REPLICAS; with --json each line is\n"
	"  {\"key\":\"k\",\"node\":\"a\",\"addr\":\"127.0.0.1:11211\",\"read_node\":\"a\",\n"
	"   \"read_addr\":\"127.0.0.1:11211\",\"replicas\":[\"a\",\"c\",\"b\"]}\n"
	"with the owners' addresses, without a header.\n"
	"\n"
	"The ring comes from FILE (--members, offline) or from the records under\n"
	"PREFIX in etcd; then each line also carries the ring's revision (a last\n"
	"tab-separated column REVISION, or \"revision\" in JSON).\n"
	"\n"
	"FILE maps node id to record, e.g.\n"
	"  {\"a\":\"127.0.0.1:11211\",\n"
	"   \"b\":{\"addr\":\"127.0.0.2:11211\",\"weight\":2,\"zone\":\"z1\",\"state\":\"warming\"}}";

struct lookup_args {
	struct cli_etcd conn;
	int etcd;              /* the ring comes from etcd */
	const char *members;
	unsigned long replicas;
	int json;
	struct cli_list keys;
};

static void print_owner(FILE *out, const hr_node *node, int json)
{
	if (!node)
		fputs(json ? "null" : "-", out);
	else if (json)
		cli_json_string(out, node->id, strlen(node->id));
	else
		fputs(node->id, out); /* ids are printable ASCII */
}

/* The owner's address in JSON, null for none (as serve's /lookup). */
static void print_addr(FILE *out, const hr_node *node)
{
	if (node)
		cli_json_string(out, node->addr, strlen(node->addr));
	else
		fputs("null", out);
}

static void print_answer(const struct lookup_args *a, const char *key,
			 const hr_lookup *res, const hr_node **replicas,
			 size_t k)
{
	FILE *out = cli_out();
	size_t klen = strlen(key);

	if (a->json) {
		fputs("{\"key\":", out);
		cli_json_string(out, key, klen);
		fputs(",\"node\":", out);
		print_owner(out, res->node, 1);
		fputs(",\"addr\":", out);
		print_addr(out, res->node);
		fputs(",\"read_node\":", out);
		print_owner(out, res->read_node, 1);
		fputs(",\"read_addr\":", out);
		print_addr(out, res->read_node);
		fputs(",\"replicas\":[", out);
		for (size_t i = 0; i < k; i++) {
			if (i)
				fputc(',', out);
			print_owner(out, replicas[i], 1);
		}
		fputc(']', out);
		if (a->etcd)
			fprintf(out, ",\"revision\":%" PRIu64, res->revision);
		fputs("}\n", out);
		return;
	}

	cli_text_string(out, key, klen);
	fputc('\t', out);
	print_owner(out, res->node, 0);
	fputc('\t', out);
	print_owner(out, res->read_node, 0);
	fputc('\t', out);
	if (k == 0)
		fputc('-', out);
	for (size_t i = 0; i < k; i++) {
		if (i)
			fputc(',', out);
		print_owner(out, replicas[i], 0);
	}
	if (a->etcd)
		fprintf(out, "\t%" PRIu64, res->revision);
	fputc('\n', out);
}

/* Answers every key from one ring, whatever mode produced the ring. */
static int print_answers(const struct lookup_args *a, const hr_ring *ring)
{
	size_t count = hr_ring_node_count(ring);
	size_t r = a->replicas < count ? a->replicas : count;
	const hr_node **replicas;
	int status = CLI_EXIT_OK;

	/* Only etcd's ring can be empty here (lookup_members said so of a
	 * file): name where it looked, as a wrong --prefix is the usual cause. */
	if (count == 0) {
		cli_error(CMD, "no node under %s at revision %" PRIu64,
			  a->conn.prefix ? a->conn.prefix : CLI_DEFAULT_PREFIX,
			  hr_ring_revision(ring));
		return CLI_EXIT_ERROR;
	}
	replicas = calloc(r ? r : 1, sizeof *replicas);
	if (!replicas)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	if (!a->json)
		fprintf(cli_out(), "KEY\tNODE\tREAD_NODE\tREPLICAS%s\n", a->etcd ? "\tREVISION" : "");

	/* A reader that went away stops the work, not just the output. */
	for (size_t i = 0; i < a->keys.n && !cli_out_error(); i++) {
		const char *key = a->keys.items[i];
		hr_lookup res;
		int rc, k;

		rc = hr_ring_lookup(ring, key, strlen(key), &res, NULL);
		if (rc < 0) {
			status = cli_fail(CMD, rc, NULL);
			break;
		}
		k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE,
				     replicas, r, NULL);
		if (k < 0) {
			status = cli_fail(CMD, k, NULL);
			break;
		}
		print_answer(a, key, &res, replicas, (size_t)k);
	}
	free(replicas);
	return status;
}

static int lookup_members(const struct lookup_args *a)
{
	hr_ring *ring = NULL;
	int rc = cli_load_members(CMD, a->members, &a->conn, &ring);

	if (rc != CLI_EXIT_OK)
		return rc;
	if (hr_ring_node_count(ring) == 0) {
		cli_error(CMD, "%s: no node in the members file", a->members);
		hr_ring_release(ring);
		return CLI_EXIT_ERROR;
	}
	rc = print_answers(a, ring);
	hr_ring_release(ring);
	return rc;
}

static int lookup_etcd(struct lookup_args *a)
{
	hr_client_config cfg;
	hr_client *client = NULL;
	hr_ring *ring;
	int rc;

	hr_client_config_init(&cfg);
	rc = cli_etcd_open(&a->conn, CMD, &cfg, &client);
	if (rc)
		return rc;
	/* One snapshot answers every key: one consistent revision. */
	ring = hr_client_ring(client);
	rc = print_answers(a, ring);
	hr_ring_release(ring);
	hr_client_close(client);
	return rc;
}

int cmd_lookup(int argc, char **argv)
{
	struct lookup_args a = { .replicas = REPLICAS_DEFAULT };
	int rc;

	cli_etcd_init(&a.conn, HR_LOG_WARN);
	a.conn.one_shot = 1;
	a.keys.items = calloc((size_t)argc + 1, sizeof *a.keys.items);
	a.keys.max = (size_t)argc;
	a.keys.what = "key";
	if (!a.keys.items)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	const struct cli_option options[] = {
		{ .name = "members", .arg = "FILE", .type = CLI_STRING, .dest = &a.members,
		  .flags = CLI_NONEMPTY,
		  .help = "JSON object mapping node id to record (offline)" },
		/* The ring itself gives any length up to its node count;
		 * hr_client_replicas() stops at 64 because it copies out. */
		{ .name = "replicas", .arg = "R", .type = CLI_UINT, .dest = &a.replicas,
		  .min = 1, .max = HR_NODES_MAX,
		  .help = "length of the preference list; the ring's node limit bounds it" },
		{ .name = "json", .type = CLI_FLAG, .dest = &a.json,
		  .help = "print one JSON object per key" },
		CLI_RING_OPTIONS(&a.conn),
		CLI_AGENT_OPTION(&a.conn),
		CLI_ETCD_OPTIONS(&a.conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	const struct cli_option keys = {
		.name = "KEY", .arg = "KEY...", .type = CLI_LIST, .dest = &a.keys,
		.help = "the keys to look up, any bytes"
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " (--members FILE | --agent DIR | [--endpoints URLS] [--prefix P])"
			 " [--replicas R] [--json] KEY...",
		.description = description,
		.options = options,
		.positional = &keys,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	if (a.keys.n == 0) {
		rc = cli_usage(CMD, "no KEY given");
	} else if (a.members && spec.etcd_option) {
		rc = cli_usage(CMD, "--members and --%s exclude each other", spec.etcd_option);
	} else if (a.members) {
		rc = lookup_members(&a);
	} else {
		a.etcd = 1;
		rc = lookup_etcd(&a);
	}
out:
	cli_etcd_free(&a.conn);
	free(a.keys.items);
	return rc;
}
