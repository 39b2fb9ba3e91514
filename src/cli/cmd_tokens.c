/* SPDX-License-Identifier: MIT */
/* cmd_tokens.c - `hashring tokens --allocate`: the record of a node that
 * joins with allocated tokens (docs/placement.md section 16), printed for
 * `etcdctl put`. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "tokens"

static const char description[] =
	"Allocates the tokens of node ID against the ring it would join (the\n"
	"records under PREFIX, or a members file) and prints its record, one line\n"
	"of JSON with the tokens as decimal strings, for `etcdctl put PREFIX/ID`.\n"
	"The node gets round(W x T) tokens (at least 1), placed in the arcs of\n"
	"the nodes most loaded against their fair share by weight so that its\n"
	"share is its fair share as nearly as that many tokens allow.  The ring\n"
	"is read once: if the records change before the put, allocate again.";

/* The record: the fields given, then the tokens. */
static char *record_json(const hr_node *nd, int weight_given, int zone_given,
			 int state_given, const uint64_t *tokens, size_t n)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
	char *s = NULL;
	int ok = o && arr && cJSON_AddStringToObject(o, "addr", nd->addr);

	if (ok && weight_given)
		ok = cJSON_AddNumberToObject(o, "weight", nd->weight) != NULL;
	if (ok && zone_given)
		ok = cJSON_AddStringToObject(o, "zone", nd->zone) != NULL;
	if (ok && state_given)
		ok = cJSON_AddStringToObject(o, "state", hr_state_name(nd->state)) != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		char buf[24];

		snprintf(buf, sizeof buf, "%" PRIu64, tokens[i]);
		ok = cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
	}
	if (ok && cJSON_AddItemToObject(o, "tokens", arr)) {
		arr = NULL;
		s = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(arr);
	cJSON_Delete(o);
	return s;
}

static int allocate_and_print(const hr_ring *ring, const hr_node *nd,
			      unsigned long per_weight, int weight_given,
			      int zone_given, int state_given)
{
	double x = round(nd->weight * (double)per_weight);
	size_t n = x < 1 ? 1 : x > HR_TOKENS_MAX ? HR_TOKENS_MAX + 1 : (size_t)x;
	uint64_t *tokens;
	hr_error err = { 0 };
	char *json;
	int rc;

	if (n > HR_TOKENS_MAX)
		return cli_usage(CMD, "--weight %g x --tokens %lu is over %d tokens, a node's limit",
				 nd->weight, per_weight, HR_TOKENS_MAX);
	tokens = malloc(n * sizeof *tokens);
	if (!tokens)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	rc = hr_tokens_allocate(ring, nd, n, tokens, &err);
	if (rc) {
		free(tokens);
		return cli_fail_input(CMD, rc, &err);
	}
	json = record_json(nd, weight_given, zone_given, state_given, tokens, n);
	free(tokens);
	if (!json)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	fprintf(cli_out(), "%s\n", json);
	cJSON_free(json);
	return CLI_EXIT_OK;
}

int cmd_tokens(int argc, char **argv)
{
	static const char *const states[] = { "warming", "active", "draining", NULL };
	struct cli_etcd conn;
	const char *members = NULL;
	hr_node nd = { .zone = "", .weight = 1, .state = HR_STATE_ACTIVE };
	int allocate = 0, weight_given = 0, zone_given = 0, state_given = 0, rc;
	unsigned long per_weight = HR_TOKENS_DEFAULT;
	hr_ring *ring = NULL;
	hr_client *client = NULL;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.one_shot = 1;
	conn.placement = HR_PLACEMENT_TOKENS;
	const struct cli_option options[] = {
		{ .name = "allocate", .type = CLI_FLAG, .dest = &allocate,
		  .help = "allocate the node's tokens and print its record (required)" },
		{ .name = "id", .arg = "ID", .type = CLI_STRING, .dest = &nd.id,
		  .help = "node id (required)" },
		{ .name = "addr", .arg = "ADDR", .type = CLI_STRING, .dest = &nd.addr,
		  .help = "address clients use (required)" },
		{ .name = "weight", .arg = "W", .type = CLI_WEIGHT, .dest = &nd.weight,
		  .given = &weight_given, .help = "weight" },
		{ .name = "zone", .arg = "ZONE", .type = CLI_STRING, .dest = &nd.zone,
		  .given = &zone_given, .help = "zone", .dflt = "none" },
		{ .name = "state", .arg = "STATE", .type = CLI_STATE, .dest = &nd.state,
		  .choices = states, .given = &state_given, .help = "state" },
		{ .name = "tokens", .arg = "T", .type = CLI_UINT, .dest = &per_weight,
		  .min = 1, .max = HR_TOKENS_MAX, .help = "tokens per unit of weight" },
		{ .name = "members", .arg = "FILE", .type = CLI_STRING, .dest = &members,
		  .flags = CLI_NONEMPTY,
		  .help = "allocate against the ring of this members file (offline)" },
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " --allocate --id ID --addr ADDR [--weight W] [--zone Z] [--state S]"
			 " [--tokens T] (--members FILE | [--endpoints URLS] [--prefix P])",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	if (!allocate || !nd.id || !nd.addr) {
		rc = cli_usage(CMD, "--allocate, --id and --addr are required");
		goto out;
	}
	if (conn.placement != HR_PLACEMENT_TOKENS) {
		rc = cli_usage(CMD, "--placement: tokens are allocated in a tokens ring only");
		goto out;
	}
	rc = cli_check_node(CMD, &nd);
	if (rc)
		goto out;
	rc = cli_ring_open(&conn, CMD, members, spec.etcd_option, &client, &ring);
	if (rc == CLI_EXIT_OK)
		rc = allocate_and_print(ring, &nd, per_weight, weight_given,
					zone_given, state_given);
	hr_client_close(client);
	hr_ring_release(ring);
out:
	cli_etcd_free(&conn);
	return rc;
}
