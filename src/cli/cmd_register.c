/* cmd_register.c - `hashring register`: a sidecar that keeps a node
 * registered under a lease until SIGTERM or SIGINT; and `hashring state` /
 * `hashring weight`, which change a registered node in place. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct cli_option register_options[] = {
	CLI_ETCD_OPTIONS,
	{ "id", "ID", "node id (required)" },
	{ "addr", "ADDR", "address clients use, e.g. 10.0.0.7:11211 (required)" },
	{ "weight", "W", "weight (default 1)" },
	{ "zone", "ZONE", "zone (default none)" },
	{ "state", "STATE", "initial state: warming (default) or active" },
	{ "ttl", "SECONDS", "lease TTL (default 10)" },
	{ "drain-seconds", "N", "on SIGTERM/SIGINT switch to draining, wait N s, then leave" },
	{ "replace", NULL, "take the id over if another process holds it" },
	{ NULL, NULL, NULL }
};

static const char register_description[] =
	"Registers a node under PREFIX/ID with a lease of TTL seconds and stays in\n"
	"the foreground renewing it about every TTL/3, like a sidecar.  If this\n"
	"process dies the lease expires and every client drops the node within\n"
	"TTL.  SIGTERM or SIGINT revoke the lease (the node disappears at once)\n"
	"and exit 0; with --drain-seconds the node first turns draining for N\n"
	"seconds.  A record changed by an operator (`hashring state`, `etcdctl\n"
	"put`) is kept; a put that detached the key from its lease is noticed and\n"
	"the lease attached again.  Registering an id that another process holds\n"
	"fails unless --replace is given.";

/* Parses a weight: a finite decimal number > 0. */
static int parse_weight(const char *cmd, const char *s, double *out)
{
	char *end;
	double w = strtod(s, &end);

	if (!*s || *end || !(w > 0) || w > 1e9) {
		cli_usage(cmd, "--weight: '%s' is not a number > 0", s);
		return -1;
	}
	*out = w;
	return 0;
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
	struct cli_parser p;
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_config cfg;
	hr_error err = { 0 };
	unsigned long ttl = 10, drain = 0;
	sigset_t set, old;
	int opt, rc = CLI_EXIT_USAGE;

	hr_registration_init(&reg);
	cli_etcd_init(&conn, HR_LOG_INFO);
	cli_parser_init(&p, cmd, argc, argv);
	while ((opt = cli_parser_next(&p, register_options)) != CLI_ARG_END) {
		const char *name;

		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout, "register --id ID --addr ADDR [--weight W] [--zone Z]"
				       " [--state warming|active] [--ttl S] [--drain-seconds N] [--replace]",
				       register_description, register_options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		if (opt == CLI_ARG_POSITIONAL) {
			cli_usage(cmd, "unexpected argument '%s'", p.value);
			goto out;
		}
		name = register_options[opt].name;
		if (!strcmp(name, "id"))
			reg.id = p.value;
		else if (!strcmp(name, "addr"))
			reg.addr = p.value;
		else if (!strcmp(name, "zone"))
			reg.zone = p.value;
		else if (!strcmp(name, "replace"))
			reg.replace = 1;
		else if (!strcmp(name, "weight")) {
			if (parse_weight(cmd, p.value, &reg.weight))
				goto out;
		} else if (!strcmp(name, "state")) {
			hr_state st;
			if (hr_state_parse(p.value, &st) || st == HR_STATE_DRAINING) {
				cli_usage(cmd, "--state: '%s' is not warming or active", p.value);
				goto out;
			}
			reg.state = st;
		} else if (!strcmp(name, "ttl")) {
			if (cli_parse_ulong(cmd, "ttl", p.value, 2, 3600, &ttl))
				goto out;
		} else if (!strcmp(name, "drain-seconds")) {
			if (cli_parse_ulong(cmd, "drain-seconds", p.value, 0, 86400, &drain))
				goto out;
		} else if (cli_etcd_option(&conn, cmd, name, p.value) < 0) {
			goto out;
		}
	}
	if (!reg.id || !reg.addr) {
		cli_usage(cmd, "--id and --addr are required");
		goto out;
	}
	reg.ttl_s = (int)ttl;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);

	hr_config_init(&cfg);
	if (cli_etcd_config(&conn, cmd, &cfg))
		goto unblock;
	rc = hr_register(&cfg, &reg, &r, &err);
	if (rc) {
		rc = cli_fail(cmd, rc, &err);
		goto unblock;
	}
	/* The lease as etcdctl prints it, for `etcdctl lease timetolive`. */
	printf("registered %s lease=%016" PRIx64 " ttl=%lu\n", reg.id,
	       (uint64_t)hr_registrar_lease(r), ttl);
	fflush(stdout);
	if (!wait_signal_or_loss(r, &set, ttl, &err)) {
		/* Replaced: the record is someone else's now; only our lease goes. */
		rc = cli_fail(cmd, err.code, &err);
		hr_registrar_close(r);
		goto unblock;
	}
	rc = CLI_EXIT_OK;
	if (drain) {
		struct timespec ts = { (time_t)drain, 0 };
		if (hr_registrar_set_state(r, HR_STATE_DRAINING, &err) == 0) {
			printf("draining for %lu s\n", drain);
			fflush(stdout);
			/* A second signal cuts the drain short. */
			sigtimedwait(&set, NULL, &ts);
		} else {
			cli_error(cmd, "cannot switch to draining: %s", err.message);
		}
	}
	if (hr_registrar_deregister(r, &err)) {
		rc = cli_fail(cmd, err.code, &err);
	} else {
		printf("deregistered %s\n", reg.id);
	}
	hr_registrar_close(r);
unblock:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	cli_etcd_free(&conn);
	return rc;
}

static const struct cli_option change_options[] = {
	CLI_ETCD_OPTIONS,
	{ "id", "ID", "node id (required)" },
	{ NULL, NULL, NULL }
};

/* `state` and `weight`: one positional value, applied in place. */
static int change(const char *cmd, int argc, char **argv)
{
	struct cli_etcd conn;
	struct cli_parser p;
	hr_config cfg;
	hr_error err = { 0 };
	const char *id = NULL, *value = NULL;
	int opt, rc = CLI_EXIT_USAGE, is_state = !strcmp(cmd, "state");

	cli_etcd_init(&conn, HR_LOG_ERROR);
	cli_parser_init(&p, cmd, argc, argv);
	while ((opt = cli_parser_next(&p, change_options)) != CLI_ARG_END) {
		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout, is_state ? "state --id ID warming|active|draining"
							: "weight --id ID W",
				       is_state ?
				       "Changes the state of a registered node in place: its other\n"
				       "fields and its lease are kept, so it still disappears when\n"
				       "its registering process dies." :
				       "Changes the weight of a registered node in place: its other\n"
				       "fields and its lease are kept.",
				       change_options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		if (opt == CLI_ARG_POSITIONAL) {
			if (value) {
				cli_usage(cmd, "unexpected argument '%s'", p.value);
				goto out;
			}
			value = p.value;
		} else if (!strcmp(change_options[opt].name, "id")) {
			id = p.value;
		} else if (cli_etcd_option(&conn, cmd, change_options[opt].name, p.value) < 0) {
			goto out;
		}
	}
	if (!id || !value) {
		cli_usage(cmd, "--id and the new %s are required", is_state ? "state" : "weight");
		goto out;
	}
	hr_config_init(&cfg);
	if (cli_etcd_config(&conn, cmd, &cfg))
		goto out;
	if (is_state) {
		hr_state st;
		if (hr_state_parse(value, &st)) {
			cli_usage(cmd, "'%s' is not warming, active or draining", value);
			goto out;
		}
		rc = hr_node_set_state(&cfg, id, st, &err);
	} else {
		double w;
		if (parse_weight(cmd, value, &w))
			goto out;
		rc = hr_node_set_weight(&cfg, id, w, &err);
	}
	rc = rc ? cli_fail(cmd, rc, &err) : CLI_EXIT_OK;
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
