/* SPDX-License-Identifier: MIT */
/* cmd_register.c - `hashring register`: a sidecar that keeps a node
 * registered under a lease until SIGTERM or SIGINT; and `hashring state` /
 * `hashring weight`, which change a registered node in place. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char register_description[] =
	"Registers a node under PREFIX/ID with a lease of TTL seconds and stays in\n"
	"the foreground renewing it about every TTL/3, like a sidecar.  If this\n"
	"process dies the lease expires and every client drops the node within\n"
	"TTL.  SIGTERM or SIGINT revoke the lease (the node disappears at once)\n"
	"and exit 0; with --drain-seconds the node first turns draining for N\n"
	"seconds.  A record changed by an operator (`hashring state`, `etcdctl\n"
	"put`) is kept; a put that detached the key from its lease is noticed and\n"
	"the lease attached again.  Registering an id that another process holds\n"
	"fails unless --replace is given; a process whose id is taken over that\n"
	"way stops renewing, leaves the key to its new holder and exits 1.  A\n"
	"weight the clients would refuse is an error and nothing is written.\n"
	"While etcd cannot be reached the first registration is retried for\n"
	"--timeout seconds.  With --placement tokens --tokens T the record gets\n"
	"round(W x T) tokens allocated against the ring of the records, written\n"
	"only if no record was put since they were read (else read again); on\n"
	"SIGTERM or SIGINT the node first hands its tokens to heirs (other nodes\n"
	"with tokens, the least loaded) in one transaction with its switch to\n"
	"draining, so that its leave moves its keys to them and keeps the\n"
	"balance.";

static const char *const register_states[] = { "warming", "active", NULL };
static const char *const all_states[] = { "warming", "active", "draining", NULL };

struct registering {
	const hr_registration *reg;
	hr_registrar **out;
};

static int attempt_register(void *ud, const hr_etcd_config *etcd, hr_error *err)
{
	const struct registering *a = ud;

	return hr_registrar_open(etcd, a->reg, a->out, err);
}

/*
 * Waits for SIGINT or SIGTERM (blocked in `set`) and returns it, or 0 as
 * soon as the registrar lost its id to another process (`err` says so).
 * The registrar notices a loss at a renewal, every TTL/3; polling its
 * status in slices of at most half a second adds little to that.
 */
static int wait_signal_or_loss(hr_registrar *r, const sigset_t *set,
			       unsigned long ttl, hr_error *err)
{
	long slice_ms = ttl * 1000 / 6 < 500 ? (long)(ttl * 1000 / 6) : 500;
	struct timespec ts = { 0, slice_ms * 1000000L };

	for (;;) {
		int sig = sigtimedwait(set, NULL, &ts);

		if (sig > 0)
			return sig;
		if (hr_registrar_status(r, err) != 0)
			return 0;
	}
}

int cmd_register(int argc, char **argv)
{
	const char *cmd = "register";
	struct cli_etcd conn;
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_etcd_config etcd;
	hr_error err = { 0 };
	unsigned long ttl, drain = 0, tokens = 0;
	sigset_t set;
	int rc;

	hr_registration_init(&reg);
	/* Retried here for --timeout, where a signal can end the wait. */
	reg.open_timeout_ms = 0;
	ttl = (unsigned long)reg.ttl_s;
	cli_etcd_init(&conn, HR_LOG_INFO);
	const struct cli_option options[] = {
		{ .name = "id", .arg = "ID", .type = CLI_STRING, .dest = &reg.id,
		  .help = "node id (required): 1-255 printable ASCII bytes, no '/'" },
		{ .name = "addr", .arg = "ADDR", .type = CLI_STRING, .dest = &reg.addr,
		  .help = "address clients use, e.g. 127.0.0.7:11211 (required)" },
		{ .name = "weight", .arg = "W", .type = CLI_WEIGHT, .dest = &reg.weight,
		  .help = "weight" },
		{ .name = "zone", .arg = "ZONE", .type = CLI_STRING, .dest = &reg.zone,
		  .help = "zone", .dflt = "none" },
		{ .name = "state", .arg = "STATE", .type = CLI_STATE, .dest = &reg.state,
		  .choices = register_states, .help = "initial state" },
		{ .name = "ttl", .arg = "SECONDS", .type = CLI_UINT, .dest = &ttl,
		  .min = 2, .max = 3600, .help = "lease TTL" },
		{ .name = "drain-seconds", .arg = "N", .type = CLI_UINT, .dest = &drain,
		  .min = 0, .max = 86400,
		  .help = "on SIGTERM/SIGINT switch to draining, wait N s, then leave" },
		{ .name = "replace", .type = CLI_FLAG, .dest = &reg.replace,
		  .help = "take the id over if another process holds it" },
		{ .name = "tokens", .arg = "T", .type = CLI_UINT, .dest = &tokens,
		  .min = 1, .max = HR_TOKENS_MAX,
		  .help = "with --placement tokens: allocate round(W x T) tokens against "
			  "the ring and write them into the record",
		  .dflt = "none" },
		{ .name = "placement", .arg = "NAME", .type = CLI_CHOICE,
		  .dest = &conn.placement, .choices = cli_placements,
		  .help = "the ring's placement, as the clients use it (tokens: see --tokens)" },
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_RETRY),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = cmd,
		.usage = "register --id ID --addr ADDR [--weight W] [--zone Z]"
			 " [--state warming|active] [--ttl S] [--drain-seconds N] [--replace]"
			 " [--placement tokens --tokens T]",
		.description = register_description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	if (!reg.id || !reg.addr) {
		rc = cli_usage(cmd, "--id and --addr are required");
		goto out;
	}
	reg.ttl_s = (int)ttl;
	reg.tokens = tokens;
	if (tokens && conn.placement != HR_PLACEMENT_TOKENS) {
		rc = cli_usage(cmd, "--tokens needs --placement tokens");
		goto out;
	}
	rc = cli_check_node(cmd, &(hr_node){ .id = reg.id, .addr = reg.addr, .zone = reg.zone,
					     .weight = reg.weight, .state = reg.state });
	if (rc)
		goto out;

	/* Before the registrar's thread starts: it inherits the mask. */
	cli_signals_block(&set);
	hr_etcd_config_init(&etcd);
	if (cli_etcd_config(&conn, cmd, &etcd)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	rc = cli_etcd_retry(&conn, &etcd, &set, attempt_register,
			    &(struct registering){ &reg, &r }, &err);
	if (CLI_EXIT_IS_SIGNAL(rc)) {
		rc = CLI_EXIT_OK; /* stopped before it was registered */
		goto out;
	}
	if (rc) {
		rc = cli_fail_input(cmd, rc, &err);
		goto out;
	}
	/* The lease as etcdctl prints it, for `etcdctl lease timetolive`. */
	fprintf(cli_out(), "registered %s lease=%016" PRIx64 " ttl=%lu\n", reg.id,
		(uint64_t)hr_registrar_lease(r), ttl);
	/* If nobody reads the output any more, leave as on a signal; main()
	 * then ends the process by SIGPIPE. */
	if (cli_out_flush() == 0 && !wait_signal_or_loss(r, &set, ttl, &err)) {
		/* Replaced: the record is someone else's now; only our lease goes. */
		rc = cli_fail(cmd, err.code, &err);
		hr_registrar_close(r);
		goto out;
	}
	rc = CLI_EXIT_OK;
	/* With tokens, a leave hands them to heirs first, drained or not:
	 * else every arc falls to the point after it. */
	if ((drain || tokens) && !cli_out_error()) {
		struct timespec ts = { (time_t)drain, 0 };
		hr_record_update upd;

		hr_record_update_init(&upd);
		upd.fields = HR_UPDATE_STATE | (tokens ? HR_UPDATE_HEIRS : 0);
		upd.state = HR_STATE_DRAINING;
		if (hr_registrar_update(r, &upd, &err) == 0) {
			if (tokens)
				fprintf(cli_out(), "tokens handed to heirs\n");
			if (drain)
				fprintf(cli_out(), "draining for %lu s\n", drain);
			cli_out_flush();
			/* A second signal cuts the drain short. */
			if (drain)
				sigtimedwait(&set, NULL, &ts);
		} else {
			cli_error(cmd, "cannot switch to draining: %s", err.message);
		}
	}
	if (hr_registrar_deregister(r, &err))
		rc = cli_fail(cmd, err.code, &err);
	else
		fprintf(cli_out(), "deregistered %s\n", reg.id);
	hr_registrar_close(r);
out:
	cli_etcd_free(&conn);
	return rc;
}

/* `state` and `weight`: one positional value, applied in place. */
struct change {
	const char *id;
	int is_state;
	hr_state state;
	double weight;
	int heirs;	/* state draining: hand the tokens to heirs */
	int json;
};

/* The one line that says the change is made. */
static void print_changed(const struct change *c)
{
	FILE *out = cli_out();
	char w[32];

	/* The fewest of 15 or 17 digits that read back as the weight. */
	snprintf(w, sizeof w, "%.15g", c->weight);
	if (strtod(w, NULL) != c->weight)
		snprintf(w, sizeof w, "%.17g", c->weight);
	if (c->json) {
		fputs("{\"id\":", out);
		cli_json_string(out, c->id, strlen(c->id));
		if (c->is_state)
			fprintf(out, ",\"state\":\"%s\"%s}\n", hr_state_name(c->state),
				c->heirs ? ",\"heirs\":true" : "");
		else
			fprintf(out, ",\"weight\":%s}\n", w);
	} else if (c->is_state) {
		/* Ids are printable ASCII. */
		fprintf(out, "updated %s state=%s%s\n", c->id, hr_state_name(c->state),
			c->heirs ? ", tokens handed to heirs" : "");
	} else {
		fprintf(out, "updated %s weight=%s\n", c->id, w);
	}
}

static int attempt_change(void *ud, const hr_etcd_config *etcd, hr_error *err)
{
	const struct change *c = ud;
	hr_record_update upd;

	hr_record_update_init(&upd);
	upd.fields = c->is_state ? HR_UPDATE_STATE : HR_UPDATE_WEIGHT;
	if (c->heirs)
		upd.fields |= HR_UPDATE_HEIRS;
	upd.state = c->state;
	upd.weight = c->weight;
	return hr_node_update(etcd, c->id, &upd, err);
}

static int change(const char *cmd, int argc, char **argv)
{
	struct change c = { .is_state = !strcmp(cmd, "state"), .weight = 1 };
	struct cli_etcd conn;
	hr_etcd_config etcd;
	hr_error err = { 0 };
	int rc;

	cli_etcd_init(&conn, HR_LOG_WARN);
	const struct cli_option options[] = {
		{ .name = "id", .arg = "ID", .type = CLI_STRING, .dest = &c.id,
		  .help = "node id (required)" },
		{ .name = "json", .type = CLI_FLAG, .dest = &c.json,
		  .help = "print the confirmation as one JSON object" },
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_RETRY),
		/* `state` only: the list ends here for `weight`. */
		{ .name = c.is_state ? "heirs" : NULL, .type = CLI_FLAG, .dest = &c.heirs,
		  .help = "with draining: hand the node's tokens to heirs in the same "
			  "transaction (tokens placement)" },
		{ .name = NULL }
	};
	const struct cli_option value = c.is_state ?
		(struct cli_option){ .name = "STATE", .arg = "STATE", .type = CLI_STATE,
				     .dest = &c.state, .choices = all_states,
				     .help = "the new state" } :
		(struct cli_option){ .name = "W", .arg = "W", .type = CLI_WEIGHT,
				     .dest = &c.weight, .help = "the new weight" };
	struct cli_spec spec = {
		.cmd = cmd,
		.usage = c.is_state ? "state --id ID warming|active|draining [--heirs] [--json]" :
				      "weight --id ID W [--json]",
		.description = c.is_state ?
			"Changes the state of a registered node in place: its other\n"
			"fields and its lease are kept, so it still disappears when\n"
			"its registering process dies.  While etcd cannot be reached\n"
			"the change is retried for --timeout seconds.  `draining\n"
			"--heirs` also hands the node's allocated tokens to heirs, the\n"
			"least loaded nodes with tokens, whose records list them as\n"
			"well: reads stay with the node while it drains, writes go to\n"
			"the heirs, which own its arcs once it is gone.  Once done it\n"
			"prints one line:\n"
			"  updated cache-7 state=active\n"
			"or with --json {\"id\":\"cache-7\",\"state\":\"active\"}." :
			"Changes the weight of a registered node in place: its other\n"
			"fields and its lease are kept.  While etcd cannot be reached\n"
			"the change is retried for --timeout seconds.  Once done it\n"
			"prints one line:\n"
			"  updated cache-7 weight=2\n"
			"or with --json {\"id\":\"cache-7\",\"weight\":2}.",
		.options = options,
		.positional = &value,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	if (!c.id || !spec.npositional) {
		rc = cli_usage(cmd, "--id and the new %s are required",
			       c.is_state ? "state" : "weight");
		goto out;
	}
	/* The record's addr is kept: any valid one checks the rest. */
	rc = cli_check_node(cmd, &(hr_node){ .id = c.id, .addr = "-", .weight = c.weight,
					     .state = c.state });
	if (rc)
		goto out;
	if (c.heirs && c.state != HR_STATE_DRAINING) {
		rc = cli_usage(cmd, "--heirs goes with draining");
		goto out;
	}
	if (c.heirs)
		conn.placement = HR_PLACEMENT_TOKENS;
	hr_etcd_config_init(&etcd);
	if (cli_etcd_config(&conn, cmd, &etcd)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	/* Nothing to undo if interrupted: SIGINT and SIGTERM keep their
	 * default action and end the command at once, even mid-request. */
	rc = cli_etcd_retry(&conn, &etcd, NULL, attempt_change, &c, &err);
	if (rc)
		rc = cli_fail_input(cmd, rc, &err);
	else
		print_changed(&c);
out:
	cli_etcd_free(&conn);
	return rc;
}

int cmd_state(int argc, char **argv)
{
	return change("state", argc, argv);
}

int cmd_weight(int argc, char **argv)
{
	return change("weight", argc, argv);
}
