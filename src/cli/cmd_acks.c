/* SPDX-License-Identifier: MIT */
/* cmd_acks.c - `hashring acks`: the clients that acknowledge their ring,
 * and the wait until every one has a given revision. */
#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CMD "acks"

static const char description[] =
	"Lists the live clients that acknowledge their ring under ACK_PREFIX\n"
	"(clients run with `hashring watch --client-id ID`, or programs with\n"
	"hr_client_config.ack_client_id), in client id order: the revision at\n"
	"which each client's ring matches etcd (its ring's revision, the one\n"
	"`hashring watch` prints), its digest, its lag behind the newest record\n"
	"under PREFIX, a status (current, behind, or conflict: another client\n"
	"reports the same revision with another digest), the client's hashring\n"
	"version and the age of its last ack.  A last line gives the number of\n"
	"clients and the newest record's revision (a ring's revision may be past\n"
	"it: a full sync matches etcd's revision then).  A client that dies\n"
	"leaves the list when its lease expires.  With --json each line is\n"
	"  {\"client\":\"web-1\",\"revision\":42,\"digest\":\"9f3a0c1d2e4b5a69\",\"lag\":0,\n"
	"   \"status\":\"current\",\"version\":\"1.0.0\",\"time_ms\":1796131200000,\n"
	"   \"lease\":\"694d7c1e2a3b4c5d\"}\n"
	"With --wait-revision R, waits until every live client reports at least R\n"
	"(behind then means below R) and exits 0, or exits 1 after --timeout naming\n"
	"the clients still behind, or at once when two clients conflict.  No live\n"
	"client at all is success, with a warning.";

enum { COL_CLIENT, COL_REVISION, COL_DIGEST, COL_LAG, COL_STATUS, COL_VERSION, COL_AGE, NCOLS };

static const char *const headers[NCOLS] = {
	"CLIENT", "REVISION", "DIGEST", "LAG", "STATUS", "VERSION", "AGE"
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *status_of(const hr_ack *a, uint64_t wait_revision)
{
	if (a->conflict)
		return "conflict";
	if (wait_revision ? a->revision < wait_revision : a->lag > 0)
		return "behind";
	return "current";
}

/* The text of cell `col` of ack `a` (buf for numbers). */
static const char *cell(const hr_ack *a, int col, uint64_t wait_revision,
			char *buf, size_t size)
{
	switch (col) {
	case COL_CLIENT:
		return a->client_id;
	case COL_REVISION:
		snprintf(buf, size, "%" PRIu64, a->revision);
		return buf;
	case COL_DIGEST:
		snprintf(buf, size, "%016" PRIx64, a->digest);
		return buf;
	case COL_LAG:
		snprintf(buf, size, "%" PRIu64, a->lag);
		return buf;
	case COL_STATUS:
		return status_of(a, wait_revision);
	case COL_VERSION:
		return a->version;
	default: {
		int64_t age = wall_ms() - a->time_ms;

		snprintf(buf, size, "%.1fs", (double)(age > 0 ? age : 0) / 1000);
		return buf;
	}
	}
}

static void print_table(FILE *out, const hr_acks *acks, uint64_t wait_revision)
{
	size_t n = hr_acks_count(acks), width[NCOLS];
	char buf[64];

	for (int c = 0; c < NCOLS; c++) {
		width[c] = strlen(headers[c]);
		for (size_t i = 0; i < n; i++) {
			const char *s = cell(hr_acks_get(acks, i), c, wait_revision, buf, sizeof buf);
			size_t w = cli_text_width(s, strlen(s));

			if (w > width[c])
				width[c] = w;
		}
	}
	for (size_t i = 0; n && i <= n && !cli_out_error(); i++) {
		for (int c = 0; c < NCOLS; c++) {
			const char *s = i ? cell(hr_acks_get(acks, i - 1), c, wait_revision, buf,
						 sizeof buf) : headers[c];

			if (c)
				fputs("  ", out);
			cli_text_cell(out, s, width[c],
				      c == COL_REVISION || c == COL_LAG || c == COL_AGE);
		}
		fputc('\n', out);
	}
	fprintf(out, "# %zu clients, newest record revision %" PRIu64 "\n", n,
		hr_acks_ring_revision(acks));
}

static void print_json(FILE *out, const hr_acks *acks, uint64_t wait_revision)
{
	for (size_t i = 0; i < hr_acks_count(acks) && !cli_out_error(); i++) {
		const hr_ack *a = hr_acks_get(acks, i);

		fputs("{\"client\":", out);
		cli_json_string(out, a->client_id, strlen(a->client_id));
		fprintf(out, ",\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\",\"lag\":%" PRIu64
			",\"status\":\"%s\",\"version\":", a->revision, a->digest, a->lag,
			status_of(a, wait_revision));
		cli_json_string(out, a->version, strlen(a->version));
		fprintf(out, ",\"time_ms\":%" PRId64 ",\"lease\":\"%016" PRIx64 "\"}\n", a->time_ms,
			(uint64_t)a->lease);
	}
}

int cmd_acks(int argc, char **argv)
{
	const char *ack_prefix = CLI_DEFAULT_ACK_PREFIX;
	unsigned long wait_revision = 0;
	int json = 0, wait_given = 0, ack_prefix_given = 0;
	struct cli_etcd conn;
	hr_etcd_config etcd;
	hr_error err = { 0 };
	hr_acks *acks = NULL;
	int rc;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.timeout_s = 30;
	const struct cli_option options[] = {
		{ .name = "wait-revision", .arg = "R", .type = CLI_UINT, .dest = &wait_revision,
		  .min = 1, .max = INT64_MAX, .given = &wait_given,
		  .dflt = "no wait: list once",
		  .help = "wait until every live client reports at least revision R" },
		{ .name = "json", .type = CLI_FLAG, .dest = &json,
		  .help = "print one JSON object per client" },
		{ .name = "ack-prefix", .arg = "ACK_PREFIX", .type = CLI_STRING,
		  .dest = &ack_prefix, .flags = CLI_ETCD | CLI_NONEMPTY,
		  .given = &ack_prefix_given,
		  .help = "key prefix of the acks; must not overlap --prefix" },
		CLI_ETCD_OPTIONS(&conn, "seconds --wait-revision waits"),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--wait-revision R] [--timeout S] [--json] [--endpoints URLS]"
			 " [--prefix P] [--ack-prefix ACK_PREFIX]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	hr_etcd_config_init(&etcd);
	if (cli_etcd_config(&conn, CMD, &etcd)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	rc = cli_ack_prefix_check(CMD, ack_prefix_given ? ack_prefix : NULL, conn.prefix);
	if (rc)
		goto out;
	if (wait_given) {
		int timeout_ms = !conn.timeout_s || conn.timeout_s > INT_MAX / 1000 ?
				 INT_MAX : (int)conn.timeout_s * 1000;

		rc = hr_acks_wait(&etcd, ack_prefix, wait_revision, timeout_ms, &acks, &err);
	} else {
		rc = hr_acks_new(&etcd, ack_prefix, &acks, &err);
	}
	if (acks) {
		if (json)
			print_json(cli_out(), acks, wait_revision);
		else
			print_table(cli_out(), acks, wait_revision);
	}
	if (rc) {
		cli_out_flush();
		rc = cli_fail_input(CMD, rc, &err);
	} else {
		if (!hr_acks_count(acks))
			cli_warn(CMD, "no live client acknowledges under '%s'%s", ack_prefix,
				 wait_given ? ": nothing to wait for" : "");
		rc = CLI_EXIT_OK;
	}
out:
	hr_acks_free(acks);
	cli_etcd_free(&conn);
	return rc;
}
