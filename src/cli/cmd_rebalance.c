/* cmd_rebalance.c - `hashring rebalance`: the handoff of docs/handoff.md
 * for every warming and draining node of the ring, against memcached. */
#define _GNU_SOURCE
#include "cli.h"

#include "copy.h"
#include "purge.h"
#include "rate.h"

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "rebalance"

static const char description[] =
	"Runs the handoff (docs/handoff.md) for every warming and draining node of\n"
	"the ring under PREFIX: waits until every live client under ACK_PREFIX\n"
	"acknowledges the ring's revision (and at least --clients of them live),\n"
	"then copies every key whose write owner differs from its read owner from\n"
	"the read owner's memcached to the write owner's, with add semantics (a\n"
	"key already there is left as it is), the source's flags and remaining\n"
	"TTL, capped at --rate keys and --bytes-rate bytes a second.  With\n"
	"--promote the warming nodes then become active and the command waits for\n"
	"the clients again (a draining node is removed by whoever registered it);\n"
	"with --purge it then deletes from every node the keys it owns in neither\n"
	"view.  Interrupting it at any point is safe: a rerun converges.  Progress\n"
	"goes to stderr on a terminal; the result is one line per step:\n"
	"  copy\tSCANNED\tMOVING\tEXPECTED\tCOPIED\tPRESENT\tGONE\tBYTES\tSECONDS\n"
	"With --json each step and, every 1000 keys, the progress is one object\n"
	"  {\"step\":\"copy\",\"scanned\":..,\"moving\":..,\"expected\":..,\"copied\":..,\n"
	"   \"present\":..,\"gone\":..,\"taken_back\":..,\"bytes\":..,\"seconds\":..}\n"
	"with \"step\" one of wait, progress, copy, promote, purge.";

static const char *const backends[] = { "memcached", NULL };

struct progress_state {
	int json, tty;
	double t0;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_stats(FILE *out, const char *step, const rb_copy_stats *s, double secs,
			int json)
{
	if (json) {
		fprintf(out,
			"{\"step\":\"%s\",\"scanned\":%" PRIu64 ",\"moving\":%" PRIu64
			",\"expected\":%.0f,\"copied\":%" PRIu64 ",\"present\":%" PRIu64
			",\"gone\":%" PRIu64 ",\"taken_back\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"seconds\":%.3f}\n",
			step, s->scanned, s->moving, s->expected_moving, s->copied, s->present,
			s->gone, s->taken_back, s->bytes, secs);
	} else {
		fprintf(out,
			"%s\t%" PRIu64 "\t%" PRIu64 "\t%.0f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%.3f\n",
			step, s->scanned, s->moving, s->expected_moving, s->copied, s->present,
			s->gone, s->bytes, secs);
	}
}

static void on_progress(void *userdata, const rb_copy_stats *s)
{
	struct progress_state *p = userdata;
	double secs = now_s() - p->t0;
	uint64_t done = s->copied + s->present + s->gone;

	if (p->json) {
		print_stats(cli_out(), "progress", s, secs, 1);
		cli_out_flush();
	} else if (p->tty) {
		/* Keys done (copied, present or gone) a second, for the ETA. */
		double rate = secs > 0 ? (double)done / secs : 0;
		double eta = rate > 0 && s->moving > done ? (double)(s->moving - done) / rate : 0;

		fprintf(stderr,
			"\rscanned %" PRIu64 "  moving %" PRIu64 "  copied %" PRIu64
			"  present %" PRIu64 "  %.1f MB  %.0f keys/s  %3.0f%%  ETA %.0fs   ",
			s->scanned, s->moving, s->copied, s->present, (double)s->bytes / 1e6, rate,
			s->moving ? 100.0 * (double)done / (double)s->moving : 0.0, eta);
	}
}

/* Waits until every live client acknowledges the newest change of the
 * records, and checks that at least `clients` of them are live.  (Not the
 * revision of our own ring: that of a full sync is etcd's at the time,
 * which the acks themselves move past the last change of a record.) */
static int wait_clients(const hr_etcd_config *etcd, const char *ack_prefix,
			unsigned long clients, int timeout_ms, int json)
{
	hr_acks *last = NULL;
	hr_error err = { 0 };
	uint64_t revision;
	size_t n;
	int rc = hr_acks_list(etcd, ack_prefix, &last, &err);

	if (rc)
		return cli_fail_input(CMD, rc, &err);
	revision = hr_acks_ring_revision(last);
	hr_acks_free(last);
	last = NULL;
	rc = hr_acks_wait(etcd, ack_prefix, revision ? revision : 1, timeout_ms, &last, &err);
	n = hr_acks_count(last);
	hr_acks_free(last);
	if (rc)
		return cli_fail_input(CMD, rc, &err);
	if (n < clients) {
		cli_error(CMD, "%zu live clients acknowledge under '%s', fewer than --clients %lu",
			  n, ack_prefix, clients);
		return CLI_EXIT_ERROR;
	}
	if (!n)
		cli_warn(CMD, "no live client acknowledges under '%s': nothing waited for",
			 ack_prefix);
	if (json)
		fprintf(cli_out(), "{\"step\":\"wait\",\"revision\":%" PRIu64 ",\"clients\":%zu}\n",
			revision, n);
	else
		fprintf(cli_out(), "wait\t%" PRIu64 "\t%zu\n", revision, n);
	cli_out_flush();
	return CLI_EXIT_OK;
}

/* The number of warming and of draining nodes. */
static size_t handoffs(const hr_ring *ring, size_t *warming)
{
	size_t n = 0;

	*warming = 0;
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		hr_state st = hr_ring_node(ring, i)->state;

		*warming += st == HR_STATE_WARMING;
		n += st != HR_STATE_ACTIVE;
	}
	return n;
}

/* Puts every warming node of `ring` to active, then waits (--timeout)
 * until the client's ring has none warming; its new ring in *out. */
static int promote(hr_client *client, const hr_etcd_config *etcd, const hr_ring *ring,
		   int timeout_ms, hr_ring **out)
{
	double end = now_s() + timeout_ms / 1000.0;
	hr_error err = { 0 };
	size_t warming;

	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *n = hr_ring_node(ring, i);
		hr_record_update upd;
		int rc;

		if (n->state != HR_STATE_WARMING)
			continue;
		hr_record_update_init(&upd);
		upd.fields = HR_UPDATE_STATE;
		upd.state = HR_STATE_ACTIVE;
		rc = hr_node_update(etcd, n->id, &upd, &err);
		if (rc)
			return cli_fail(CMD, rc, &err);
	}
	for (;;) {
		hr_ring *now = hr_client_acquire(client);

		handoffs(now, &warming);
		if (!warming) {
			*out = now;
			return CLI_EXIT_OK;
		}
		hr_ring_release(now);
		if (now_s() > end) {
			cli_error(CMD, "the promoted nodes did not reach the ring within --timeout");
			return CLI_EXIT_ERROR;
		}
		usleep(20000);
	}
}

static int purge_all(const hr_ring *ring, const rb_copy_options *o, int json)
{
	rb_purge_stats ps = { 0 };
	hr_error err = { 0 };
	double t0 = now_s();

	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		int rc = rb_purge_node(ring, hr_ring_node(ring, i), o, &ps, &err);

		if (rc)
			return cli_fail(CMD, rc, &err);
	}
	if (json)
		fprintf(cli_out(),
			"{\"step\":\"purge\",\"scanned\":%" PRIu64 ",\"stale\":%" PRIu64
			",\"deleted\":%" PRIu64 ",\"changed\":%" PRIu64 ",\"seconds\":%.3f}\n",
			ps.scanned, ps.stale, ps.deleted, ps.changed, now_s() - t0);
	else
		fprintf(cli_out(), "purge\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.3f\n",
			ps.scanned, ps.stale, ps.deleted, ps.changed, now_s() - t0);
	cli_out_flush();
	return CLI_EXIT_OK;
}

int cmd_rebalance(int argc, char **argv)
{
	const char *ack_prefix = CLI_DEFAULT_ACK_PREFIX;
	unsigned long rate = 0, bytes_rate = 0, clients = 0;
	int json = 0, do_promote = 0, do_purge = 0, backend = 0;
	struct cli_etcd conn;
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *client = NULL;
	hr_ring *ring = NULL, *after = NULL;
	rb_rate bucket;
	rb_copy_options o = { 0 };
	rb_copy_stats st = { 0 };
	struct progress_state prog = { 0 };
	hr_error err = { 0 };
	size_t n, warming;
	int rc, timeout_ms;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.timeout_s = 30;
	const struct cli_option options[] = {
		{ .name = "backend", .arg = "NAME", .type = CLI_CHOICE, .dest = &backend,
		  .choices = backends, .help = "the store the nodes' addresses name" },
		{ .name = "rate", .arg = "KEYS_PER_S", .type = CLI_UINT, .dest = &rate,
		  .min = 1, .max = 100000000, .dflt = "no cap",
		  .help = "most keys copied a second" },
		{ .name = "bytes-rate", .arg = "B_PER_S", .type = CLI_UINT, .dest = &bytes_rate,
		  .min = 1, .max = 100000000000ul, .dflt = "no cap",
		  .help = "most value bytes copied a second" },
		{ .name = "clients", .arg = "N", .type = CLI_UINT, .dest = &clients,
		  .min = 0, .max = HR_NODES_MAX,
		  .help = "fail unless at least N live clients acknowledge" },
		{ .name = "promote", .type = CLI_FLAG, .dest = &do_promote,
		  .help = "after the copy, switch the warming nodes to active and wait" },
		{ .name = "purge", .type = CLI_FLAG, .dest = &do_purge,
		  .help = "then delete from each node the keys it no longer owns" },
		{ .name = "json", .type = CLI_FLAG, .dest = &json,
		  .help = "print one JSON object per step and per 1000 keys" },
		{ .name = "ack-prefix", .arg = "ACK_PREFIX", .type = CLI_STRING,
		  .dest = &ack_prefix, .flags = CLI_ETCD | CLI_NONEMPTY,
		  .help = "key prefix of the clients' acks; must not overlap --prefix" },
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, "seconds each wait for the clients waits"),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--backend memcached] [--rate KEYS_PER_S] [--bytes-rate B_PER_S]"
			 " [--clients N] [--promote] [--purge] [--json] [--endpoints URLS]"
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
	timeout_ms = !conn.timeout_s || conn.timeout_s > INT_MAX / 1000 ?
		     INT_MAX : (int)conn.timeout_s * 1000;
	hr_client_config_init(&cfg);
	rc = cli_etcd_open(&conn, CMD, &cfg, &client);
	if (rc != CLI_EXIT_OK)
		goto out;
	ring = hr_client_acquire(client);
	n = handoffs(ring, &warming);

	rc = wait_clients(&etcd, ack_prefix, clients, timeout_ms, json);
	if (rc)
		goto out;
	rb_rate_init(&bucket, (double)rate, (double)bytes_rate, rb_rate_now_ns());
	o.rate = rate || bytes_rate ? &bucket : NULL;
	if (n) {
		prog = (struct progress_state){ .json = json, .tty = !json && isatty(2),
						.t0 = now_s() };
		o.progress = on_progress;
		o.progress_userdata = &prog;
		rc = rb_copy_ring(ring, &conn.ring, &o, &st, &err);
		if (prog.tty)
			fputc('\n', stderr);
		if (rc) {
			rc = cli_fail(CMD, rc, &err);
			goto out;
		}
		o.progress = NULL;
		print_stats(cli_out(), "copy", &st, now_s() - prog.t0, json);
		cli_out_flush();
	} else {
		cli_warn(CMD, "no warming or draining node: nothing to copy");
	}
	if (do_promote && warming) {
		hr_ring *now = hr_client_acquire(client);
		int same = hr_ring_digest(now) == hr_ring_digest(ring);

		hr_ring_release(now);
		if (!same) {
			cli_error(CMD, "the ring changed during the copy: run again to copy its new arcs");
			rc = CLI_EXIT_ERROR;
			goto out;
		}
		rc = promote(client, &etcd, ring, timeout_ms, &after);
		if (rc)
			goto out;
		if (json)
			fprintf(cli_out(), "{\"step\":\"promote\",\"nodes\":%zu,\"revision\":%" PRIu64
				"}\n", warming, hr_ring_revision(after));
		else
			fprintf(cli_out(), "promote\t%zu\t%" PRIu64 "\n", warming,
				hr_ring_revision(after));
		rc = wait_clients(&etcd, ack_prefix, clients, timeout_ms, json);
		if (rc)
			goto out;
	}
	if (do_purge)
		rc = purge_all(after ? after : ring, &o, json);
out:
	hr_ring_release(after);
	hr_ring_release(ring);
	hr_client_close(client);
	cli_etcd_free(&conn);
	return rc;
}
