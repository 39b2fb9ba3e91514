/* cmd_lookup.c - `hashring lookup`: which nodes own the given keys. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CMD "lookup"
#define REPLICAS_DEFAULT 3

static const struct cli_option options[] = {
	CLI_ETCD_OPTIONS,
	{ "members", "FILE", "JSON object mapping node id to record (offline)" },
	{ "replicas", "R", "length of the preference list (default 3)" },
	{ "json", NULL, "print one JSON object per key" },
	{ NULL, NULL, NULL }
};

static const char description[] =
	"Prints, for each KEY, one line: the key, its owner in the write view\n"
	"(node), its owner in the read view (read_node) and the preference list\n"
	"of R replicas in the write view, where writes go.  A view with no node\n"
	"gives '-' (null in JSON).  Text lines are tab-separated, replicas\n"
	"comma-separated; with --json each line is\n"
	"  {\"key\":\"k\",\"node\":\"a\",\"read_node\":\"a\",\"replicas\":[\"a\",\"c\",\"b\"]}\n"
	"\n"
	"The ring comes from FILE (--members, offline) or from the records under\n"
	"PREFIX in etcd; then each line also carries the ring's revision (a last\n"
	"tab-separated column, or \"revision\" in JSON).\n"
	"\n"
	"FILE maps node id to record, e.g.\n"
	"  {\"a\":\"10.0.0.1:11211\",\n"
	"   \"b\":{\"addr\":\"10.0.0.2:11211\",\"weight\":2,\"zone\":\"z1\",\"state\":\"warming\"}}";

struct lookup_args {
	struct cli_etcd conn;
	int etcd;              /* an etcd option was given */
	const char *members;
	unsigned long replicas;
	int json;
	const char **keys;
	size_t nkeys;
};

static void print_owner_text(const hr_node *node)
{
	fputs(node ? node->id : "-", stdout);
}

static void print_owner_json(const hr_node *node)
{
	if (node)
		cli_json_string(stdout, node->id, strlen(node->id));
	else
		fputs("null", stdout);
}

static void print_answer(const struct lookup_args *a, const char *key,
			 const hr_lookup *res, const hr_node **replicas,
			 size_t k)
{
	size_t klen = strlen(key);

	if (a->json) {
		fputs("{\"key\":", stdout);
		cli_json_string(stdout, key, klen);
		fputs(",\"node\":", stdout);
		print_owner_json(res->node);
		fputs(",\"read_node\":", stdout);
		print_owner_json(res->read_node);
		fputs(",\"replicas\":[", stdout);
		for (size_t i = 0; i < k; i++) {
			if (i)
				fputc(',', stdout);
			print_owner_json(replicas[i]);
		}
		fputc(']', stdout);
		if (a->etcd)
			printf(",\"revision\":%" PRIu64, res->revision);
		fputs("}\n", stdout);
		return;
	}

	cli_text_string(stdout, key, klen);
	fputc('\t', stdout);
	print_owner_text(res->node);
	fputc('\t', stdout);
	print_owner_text(res->read_node);
	fputc('\t', stdout);
	if (k == 0)
		fputc('-', stdout);
	for (size_t i = 0; i < k; i++) {
		if (i)
			fputc(',', stdout);
		print_owner_text(replicas[i]);
	}
	if (a->etcd)
		printf("\t%" PRIu64, res->revision);
	fputc('\n', stdout);
}

/* Answers every key from one ring, whatever mode produced the ring. */
static int print_answers(const struct lookup_args *a, const hr_ring *ring)
{
	size_t count = hr_ring_node_count(ring);
	size_t r = a->replicas < count ? a->replicas : count;
	const hr_node **replicas;
	int status = CLI_EXIT_OK;

	if (count == 0) {
		cli_error(CMD, "the ring has no node");
		return CLI_EXIT_ERROR;
	}
	replicas = calloc(r ? r : 1, sizeof *replicas);
	if (!replicas)
		return cli_fail(CMD, HR_ENOMEM, NULL);

	for (size_t i = 0; i < a->nkeys; i++) {
		const char *key = a->keys[i];
		hr_lookup res;
		int rc, k;

		rc = hr_ring_lookup(ring, key, strlen(key), &res);
		if (rc < 0) {
			status = cli_fail(CMD, rc, NULL);
			break;
		}
		k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE,
				     replicas, r);
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
	hr_config cfg;
	hr_client *client = NULL;
	hr_ring *ring;
	int rc;

	hr_config_init(&cfg);
	rc = cli_etcd_open(&a->conn, CMD, &cfg, &client);
	if (rc)
		return rc;
	/* One snapshot answers every key: one consistent revision. */
	ring = hr_client_acquire(client);
	rc = print_answers(a, ring);
	hr_ring_release(ring);
	hr_client_close(client);
	return rc;
}

int cmd_lookup(int argc, char **argv)
{
	struct lookup_args a = { .replicas = REPLICAS_DEFAULT };
	struct cli_parser p;
	int opt, rc;

	cli_etcd_init(&a.conn, HR_LOG_ERROR);
	a.keys = calloc((size_t)argc + 1, sizeof *a.keys);
	if (!a.keys)
		return cli_fail(CMD, HR_ENOMEM, NULL);

	cli_parser_init(&p, CMD, argc, argv);
	while ((opt = cli_parser_next(&p, options)) != CLI_ARG_END) {
		rc = CLI_EXIT_USAGE;
		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout,
				       CMD " (--members FILE | [--endpoints URLS] [--prefix P])"
				       " [--replicas R] [--json] KEY...",
				       description, options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		if (opt == CLI_ARG_POSITIONAL) {
			a.keys[a.nkeys++] = p.value;
			continue;
		}
		if (strcmp(options[opt].name, "members") == 0) {
			if (!*p.value) {
				rc = cli_usage(CMD, "--members: empty file name");
				goto out;
			}
			a.members = p.value;
		} else if (strcmp(options[opt].name, "replicas") == 0) {
			if (cli_parse_ulong(CMD, "replicas", p.value, 1,
					    HR_NODES_MAX, &a.replicas) < 0)
				goto out;
		} else if (strcmp(options[opt].name, "json") == 0) {
			a.json = 1;
		} else {
			rc = cli_etcd_option(&a.conn, CMD, options[opt].name, p.value);
			if (rc < 0) {
				rc = CLI_EXIT_USAGE;
				goto out;
			}
			/* Ring options serve --members too. */
			if (cli_etcd_connects(options[opt].name))
				a.etcd = 1;
		}
	}

	if (a.nkeys == 0) {
		rc = cli_usage(CMD, "no KEY given");
		goto out;
	}
	if (a.members && a.etcd) {
		rc = cli_usage(CMD, "--members and the etcd options exclude each other");
	} else if (a.members) {
		rc = lookup_members(&a);
	} else {
		a.etcd = 1;
		rc = lookup_etcd(&a);
	}
out:
	cli_etcd_free(&a.conn);
	free(a.keys);
	return rc;
}
