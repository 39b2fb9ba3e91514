/* SPDX-License-Identifier: MIT */
/* cmd_rebalance.c - `hashring rebalance`: the handoff of docs/handoff.md
 * (hr_rebalancer_run) for every warming and draining node of the ring, or
 * one, against memcached or Redis; its figures on a terminal or as JSON
 * lines. */
#define _GNU_SOURCE
#include "cli.h"

#include "hashring/rebalance.h"

#include <inttypes.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "rebalance"
/* How often the figures are looked at while the run goes on. */
#define POLL_MS 100
/* --json prints the progress each time this many more keys are done. */
#define JSON_EVERY 1000

static const char description[] =
	"Runs the handoff (docs/handoff.md) for every warming and draining node of\n"
	"the ring under PREFIX, or for node ID alone with --id: waits until every\n"
	"live client under ACK_PREFIX acknowledges the ring's revision, and at least\n"
	"--clients of them are live (1 by default: a run that no client\n"
	"acknowledges proves nothing and is refused, unless --clients 0 asks for\n"
	"it), then copies every key whose write owner differs from its read owner\n"
	"from the read owner's memcached to the write owner's, with add semantics\n"
	"(a key already there is left as it is), the source's flags and remaining\n"
	"TTL, capped at --rate keys and --bytes-rate bytes a second.  With\n"
	"--backend redis the nodes are Redis (or Valkey) servers: keys listed by\n"
	"SCAN in database --redis-db, moved by DUMP, PTTL and RESTORE without\n"
	"REPLACE (every type, the remaining TTL; a key already there is kept).\n"
	"AUTH's user and password come from --redis-auth-file (lines user=NAME and\n"
	"password=SECRET) or else from HASHRING_REDIS_USER and\n"
	"HASHRING_REDIS_PASSWORD, never from the command line; no TLS yet.  With\n"
	"--promote the warming nodes then become active and the command waits for\n"
	"the clients again (a draining node is removed by whoever registered it);\n"
	"with --purge it then deletes from every node the keys it owns in neither\n"
	"view.  Interrupting it at any point is safe: a rerun converges.  A key the\n"
	"backend cannot move (memcached's text protocol cannot carry a key of over\n"
	"186 bytes holding a blank or a control byte) is skipped, named in an\n"
	"event=rebalance_skipped line and counted, and the run goes on.  Progress\n"
	"goes to stderr on a terminal, per source node; event=rebalance_* lines to\n"
	"the log; the result is one line per step:\n"
	"  wait\tREVISION\tCLIENTS\n"
	"  copy\tSCANNED\tMOVING\tEXPECTED\tCOPIED\tPRESENT\tGONE\tTAKEN_BACK\tSKIPPED"
	"\tBYTES\tSECONDS\n"
	"  promote\tNODES\tREVISION\n"
	"  purge\tSCANNED\tSTALE\tDELETED\tCHANGED\tSKIPPED\tSECONDS\n"
	"With --json each step is one object, and so is the progress of the scan\n"
	"and copy (\"step\":\"progress\") each time 1000 more keys are done, at most\n"
	"one every 100 ms:\n"
	"  {\"step\":\"copy\",\"scanned\":..,\"moving\":..,\"expected\":..,\"copied\":..,\n"
	"   \"present\":..,\"gone\":..,\"taken_back\":..,\"skipped\":..,\"bytes\":..,\n"
	"   \"seconds\":..}\n"
	"with \"step\" one of wait, progress, copy, promote, purge.  Exit status: 0\n"
	"done, 1 failed, 2 bad usage, 3 done but keys were skipped.";

static const char *const backends[] = { "memcached", "redis", NULL };
enum { BACKEND_MEMCACHED, BACKEND_REDIS };

/* The most an auth file may hold. */
#define AUTH_FILE_MAX 4096

/* AUTH's user and password: from `file` (lines user=NAME, password=SECRET;
 * '#' comments), or else from the environment.  The secret is never
 * printed.  Returns 0, or the exit code after a message. */
static int redis_auth(const char *file, char **user, char **password)
{
	char buf[AUTH_FILE_MAX + 1], *line, *save = NULL;
	struct stat st;
	size_t n;
	FILE *f;

	*user = *password = NULL;
	if (!file) {
		const char *u = getenv("HASHRING_REDIS_USER"), *p = getenv("HASHRING_REDIS_PASSWORD");

		if (u && *u && !(p && *p)) {
			cli_error(CMD, "HASHRING_REDIS_USER is set without HASHRING_REDIS_PASSWORD");
			return CLI_EXIT_USAGE;
		}
		*user = u && *u ? strdup(u) : NULL;
		*password = p && *p ? strdup(p) : NULL;
		return 0;
	}
	f = fopen(file, "r");
	if (!f) {
		cli_error(CMD, "--redis-auth-file %s: %s", file, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	/* A secret others can read is worth saying, not refusing: the
	 * operator may share it on purpose (a group of movers). */
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH))
		cli_warn(CMD, "--redis-auth-file %s is readable by every user (chmod o-r)", file);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if (n > AUTH_FILE_MAX) {
		cli_error(CMD, "--redis-auth-file %s: over %d bytes", file, AUTH_FILE_MAX);
		return CLI_EXIT_ERROR;
	}
	buf[n] = '\0';
	for (line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		char **dest = !strncmp(line, "user=", 5) ? user :
			      !strncmp(line, "password=", 9) ? password : NULL;

		if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
			continue;
		if (!dest) {
			/* Not the line itself: it may be the secret. */
			cli_error(CMD, "--redis-auth-file %s: a line is neither user=NAME nor"
				  " password=SECRET", file);
			explicit_bzero(buf, sizeof buf);
			free(*user);
			*user = NULL;
			return CLI_EXIT_ERROR;
		}
		free(*dest);
		*dest = strdup(strchr(line, '=') + 1);
	}
	explicit_bzero(buf, sizeof buf);
	if (!*password) {
		cli_error(CMD, "--redis-auth-file %s: no password=SECRET line", file);
		free(*user);
		*user = NULL;
		return CLI_EXIT_ERROR;
	}
	return 0;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

struct run_state {
	hr_rebalancer *rb;
	hr_client *client;
	const hr_etcd_config *etcd;
	const char *node_id;
	size_t required;     /* --clients */
	int json, tty;
	/* Between the run's thread (the step lines) and this one (the
	 * progress): the output, and what follows. */
	pthread_mutex_t lock;
	double t0;           /* when the current step began */
	uint64_t last_json;  /* keys done at the last JSON progress line */
	uint64_t skipped;    /* by the copy, when its line went out */
	int copied;          /* the copy line is out: no progress after it */
	int rc;
	hr_error err;
	volatile int finished;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_copy(FILE *out, const char *step, const hr_rebalance_progress *p,
		       double secs, int json)
{
	if (json)
		fprintf(out,
			"{\"step\":\"%s\",\"scanned\":%" PRIu64 ",\"moving\":%" PRIu64
			",\"expected\":%.0f,\"copied\":%" PRIu64 ",\"present\":%" PRIu64
			",\"gone\":%" PRIu64 ",\"taken_back\":%" PRIu64 ",\"skipped\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"seconds\":%.3f}\n",
			step, p->scanned, p->moving, p->expected, p->copied, p->present,
			p->gone, p->taken_back, p->skipped, p->bytes, secs);
	else
		fprintf(out,
			"%s\t%" PRIu64 "\t%" PRIu64 "\t%.0f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%.3f\n",
			step, p->scanned, p->moving, p->expected, p->copied, p->present,
			p->gone, p->taken_back, p->skipped, p->bytes, secs);
}

/* The result line of each step, on the run's thread. */
static void on_step(void *userdata, hr_rebalance_step step, const hr_rebalance_progress *p)
{
	struct run_state *st = userdata;
	FILE *out = cli_out();
	double secs;

	pthread_mutex_lock(&st->lock);
	secs = now_s() - st->t0;
	if (st->tty)
		fputs("\r\033[K", stderr);
	switch (step) {
	case HR_REBALANCE_STEP_WAIT:
		if (!p->clients)
			cli_warn(CMD, "no live client acknowledges: nothing waited for");
		if (st->json)
			fprintf(out, "{\"step\":\"wait\",\"revision\":%" PRIu64
				",\"clients\":%zu}\n", p->acked_revision, p->clients);
		else
			fprintf(out, "wait\t%" PRIu64 "\t%zu\n", p->acked_revision, p->clients);
		break;
	case HR_REBALANCE_STEP_COPY:
		st->copied = 1;
		st->skipped = p->skipped;
		if (!p->nodes_total)
			cli_warn(CMD, "no warming or draining node: nothing to copy");
		else
			print_copy(out, "copy", p, secs, st->json);
		break;
	case HR_REBALANCE_STEP_PROMOTE:
		if (st->json)
			fprintf(out, "{\"step\":\"promote\",\"nodes\":%zu,\"revision\":%" PRIu64
				"}\n", p->promoted, p->revision);
		else
			fprintf(out, "promote\t%zu\t%" PRIu64 "\n", p->promoted, p->revision);
		break;
	case HR_REBALANCE_STEP_PURGE:
		/* The run's figures go on from the copy's: the purge's own. */
		if (st->json)
			fprintf(out,
				"{\"step\":\"purge\",\"scanned\":%" PRIu64 ",\"stale\":%" PRIu64
				",\"deleted\":%" PRIu64 ",\"changed\":%" PRIu64 ",\"skipped\":%" PRIu64
				",\"seconds\":%.3f}\n",
				p->purge_scanned, p->purge_stale, p->purged, p->purge_changed,
				p->skipped - st->skipped, secs);
		else
			fprintf(out, "purge\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
				"\t%" PRIu64 "\t%.3f\n", p->purge_scanned, p->purge_stale, p->purged,
				p->purge_changed, p->skipped - st->skipped, secs);
		break;
	default:
		break;
	}
	cli_out_flush();
	st->t0 = now_s();
	pthread_mutex_unlock(&st->lock);
}

/* The progress line on a terminal: the wait's clients, or the node worked
 * on (the n-th of the step's) and how far along its own keys the step is,
 * which never goes back while it works on that node. */
static void show_bar(const hr_rebalance_progress *p, size_t required)
{
	FILE *e = stderr;

	fputs("\r\033[K", e);
	if (p->step == HR_REBALANCE_STEP_WAIT) {
		fprintf(e, "wait  %zu live client%s acknowledging, %zu required", p->clients,
			p->clients == 1 ? "" : "s", required);
		return;
	}
	fprintf(e, "%s %s (%zu/%zu)", hr_rebalance_step_name(p->step), p->node,
		p->nodes_done + 1, p->nodes_total);
	if (p->step == HR_REBALANCE_STEP_SCAN) {
		fprintf(e, "  scanned %" PRIu64, p->scanned);
		return;
	}
	if (p->step == HR_REBALANCE_STEP_COPY)
		fprintf(e, "  copied %" PRIu64 "  present %" PRIu64 "  skipped %" PRIu64
			"  %.1f MB", p->copied, p->present, p->skipped, (double)p->bytes / 1e6);
	else
		fprintf(e, "  deleted %" PRIu64 "  skipped %" PRIu64, p->purged, p->skipped);
	fprintf(e, "  %.0f keys/s  %" PRIu64 " of %" PRIu64 " keys  %3.0f%%", p->keys_per_s,
		p->node_keys_done, p->node_keys,
		p->node_keys ? 100.0 * (double)p->node_keys_done / (double)p->node_keys : 0.0);
	if (p->eta_s >= 0)
		fprintf(e, "  ETA %.0fs", p->eta_s);
}

/* The progress: on a terminal a line, with --json an object each time
 * JSON_EVERY more keys of the scan and copy are done. */
static void show_progress(struct run_state *st)
{
	hr_rebalance_progress p;
	uint64_t done;

	pthread_mutex_lock(&st->lock);
	if (hr_rebalancer_progress(st->rb, &p, NULL) != 0) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	done = p.copied + p.present + p.gone + p.skipped;
	if (st->json && !st->copied &&
	    (p.step == HR_REBALANCE_STEP_SCAN || p.step == HR_REBALANCE_STEP_COPY) &&
	    done >= st->last_json + JSON_EVERY) {
		st->last_json = done;
		print_copy(cli_out(), "progress", &p, now_s() - st->t0, 1);
		cli_out_flush();
	} else if (st->tty && (p.step == HR_REBALANCE_STEP_WAIT ||
			       p.step == HR_REBALANCE_STEP_SCAN ||
			       p.step == HR_REBALANCE_STEP_COPY ||
			       p.step == HR_REBALANCE_STEP_PURGE)) {
		show_bar(&p, st->required);
	}
	pthread_mutex_unlock(&st->lock);
}

static void *run_thread(void *arg)
{
	struct run_state *st = arg;

	st->rc = hr_rebalancer_run(st->rb, st->client, st->etcd, st->node_id, &st->err);
	__atomic_store_n(&st->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs the handoff on a thread of its own while this one shows the
 * figures and waits for SIGINT or SIGTERM (blocked since the client
 * opened), which cancel the run.  Returns the exit code. */
static int run(struct run_state *st)
{
	struct timespec slice = { 0, POLL_MS * 1000000L };
	hr_rebalance_progress p;
	pthread_t thread;
	sigset_t set;
	int sig = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (pthread_create(&thread, NULL, run_thread, st)) {
		cli_error(CMD, "cannot start a thread");
		return CLI_EXIT_ERROR;
	}
	while (!__atomic_load_n(&st->finished, __ATOMIC_ACQUIRE)) {
		int got = sigtimedwait(&set, NULL, &slice);

		if (got == SIGINT || got == SIGTERM) {
			sig = got;
			hr_rebalancer_cancel(st->rb);
		}
		show_progress(st);
	}
	pthread_join(thread, NULL);
	if (st->tty)
		fputs("\r\033[K", stderr);
	if (sig)
		return CLI_EXIT_SIGNAL(sig);
	hr_rebalancer_progress(st->rb, &p, NULL);
	if (st->rc == HR_ETIMEDOUT && !p.clients && st->required) {
		/* Most likely a typo in --ack-prefix or services started
		 * without --client-id: say how to go on. */
		cli_error(CMD, "%s: start the clients with --client-id, check --ack-prefix, or"
			  " pass --clients 0 to run with no acknowledging client", st->err.message);
		return CLI_EXIT_ERROR;
	}
	if (st->rc)
		return cli_fail_input(CMD, st->rc, &st->err);
	if (p.skipped) {
		cli_warn(CMD, "%" PRIu64 " key%s skipped, which the backend cannot move: each"
			 " stays where it is, named in an event=rebalance_skipped line", p.skipped,
			 p.skipped == 1 ? "" : "s");
		return CLI_EXIT_SKIPPED;
	}
	return CLI_EXIT_OK;
}

/* --id must name a warming or draining node of the ring. */
static int check_id(const hr_ring *ring, const char *id)
{
	const hr_node *n = hr_ring_find(ring, id);

	if (!n) {
		cli_error(CMD, "node '%s' is not in the ring (revision %" PRIu64 ")", id,
			  hr_ring_revision(ring));
		return CLI_EXIT_ERROR;
	}
	if (n->state == HR_STATE_ACTIVE) {
		cli_error(CMD, "node '%s' is active, not warming or draining: nothing to hand off",
			  id);
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

int cmd_rebalance(int argc, char **argv)
{
	const char *ack_prefix = CLI_DEFAULT_ACK_PREFIX, *node_id = NULL;
	unsigned long rate = 0, bytes_rate = 0, clients = 1;
	int json = 0, do_promote = 0, do_purge = 0, backend = 0, ack_prefix_given = 0;
	unsigned long redis_db = 0;
	const char *auth_file = NULL;
	int redis_db_given = 0, auth_file_given = 0;
	char *redis_user = NULL, *redis_password = NULL;
	struct cli_etcd conn;
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *client = NULL;
	hr_rebalance_backend be;
	hr_rebalance_config rcfg;
	hr_rebalancer *rb = NULL;
	struct run_state st = { 0 };
	hr_error err = { 0 };
	hr_ring *ring;
	int rc, timeout_ms;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.timeout_s = 30;
	const struct cli_option options[] = {
		{ .name = "backend", .arg = "NAME", .type = CLI_CHOICE, .dest = &backend,
		  .choices = backends, .help = "the store the nodes' addresses name" },
		{ .name = "redis-db", .arg = "N", .type = CLI_UINT, .dest = &redis_db,
		  .min = 0, .max = INT_MAX, .given = &redis_db_given,
		  .help = "with --backend redis: the database (SELECT) of every node" },
		{ .name = "redis-auth-file", .arg = "FILE", .type = CLI_STRING, .dest = &auth_file,
		  .flags = CLI_NONEMPTY, .given = &auth_file_given,
		  .dflt = "HASHRING_REDIS_USER, HASHRING_REDIS_PASSWORD",
		  .help = "with --backend redis: AUTH's user=NAME and password=SECRET lines" },
		{ .name = "id", .arg = "ID", .type = CLI_STRING, .dest = &node_id,
		  .flags = CLI_NONEMPTY, .dflt = "every warming and draining node",
		  .help = "hand off this warming or draining node only" },
		{ .name = "rate", .arg = "KEYS_PER_S", .type = CLI_UINT, .dest = &rate,
		  .min = 1, .max = 100000000, .dflt = "no cap",
		  .help = "most keys copied a second" },
		{ .name = "bytes-rate", .arg = "B_PER_S", .type = CLI_UINT, .dest = &bytes_rate,
		  .min = 1, .max = 100000000000ul, .dflt = "no cap",
		  .help = "most value bytes copied a second" },
		{ .name = "clients", .arg = "N", .type = CLI_UINT, .dest = &clients,
		  .min = 0, .max = HR_NODES_MAX,
		  .help = "wait until at least N live clients acknowledge, fail after"
			  " --timeout; 0: run with none" },
		{ .name = "promote", .type = CLI_FLAG, .dest = &do_promote,
		  .help = "after the copy, switch the warming nodes to active and wait" },
		{ .name = "purge", .type = CLI_FLAG, .dest = &do_purge,
		  .help = "then delete from each node the keys it no longer owns" },
		{ .name = "json", .type = CLI_FLAG, .dest = &json,
		  .help = "print one JSON object per step, and the progress each 1000 keys" },
		{ .name = "ack-prefix", .arg = "ACK_PREFIX", .type = CLI_STRING,
		  .dest = &ack_prefix, .flags = CLI_ETCD | CLI_NONEMPTY,
		  .given = &ack_prefix_given,
		  .help = "key prefix of the clients' acks; must not overlap --prefix" },
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, "seconds each wait for the clients waits"),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--backend memcached|redis] [--redis-db N] [--redis-auth-file FILE]"
			 " [--id ID] [--rate KEYS_PER_S]"
			 " [--bytes-rate B_PER_S] [--clients N] [--promote] [--purge] [--json]"
			 " [--endpoints URLS] [--prefix P] [--ack-prefix ACK_PREFIX]",
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
	/* Before etcd is asked anything: an overlap is a usage error. */
	rc = cli_ack_prefix_check(CMD, ack_prefix_given ? ack_prefix : NULL, conn.prefix);
	if (rc)
		goto out;
	timeout_ms = !conn.timeout_s || conn.timeout_s > INT_MAX / 1000 ?
		     INT_MAX : (int)conn.timeout_s * 1000;
	if (backend != BACKEND_REDIS && (redis_db_given || auth_file_given)) {
		rc = cli_usage(CMD, "--%s is an option of --backend redis",
			       redis_db_given ? "redis-db" : "redis-auth-file");
		goto out;
	}
	hr_rebalance_backend_init(&be);
	if (backend == BACKEND_REDIS) {
		hr_rebalance_redis_config redis;

		rc = redis_auth(auth_file, &redis_user, &redis_password);
		if (rc)
			goto out;
		hr_rebalance_redis_config_init(&redis);
		redis.db = (int)redis_db;
		redis.user = redis_user;
		redis.password = redis_password;
		rc = hr_rebalance_redis(&redis, &be, &err);
	} else {
		rc = hr_rebalance_memcached(0, &be, &err);
	}
	if (rc) {
		rc = cli_fail(CMD, rc, &err);
		goto out;
	}
	st = (struct run_state){ .etcd = &etcd, .node_id = node_id, .required = clients,
				 .json = json, .tty = !json && isatty(2), .t0 = now_s() };
	pthread_mutex_init(&st.lock, NULL);
	hr_rebalance_config_init(&rcfg);
	rcfg.keys_per_s = (double)rate;
	rcfg.bytes_per_s = (double)bytes_rate;
	rcfg.ack_prefix = ack_prefix;
	rcfg.min_clients = clients;
	rcfg.wait_timeout_ms = timeout_ms;
	rcfg.flags = (do_promote ? HR_REBALANCE_PROMOTE : 0) | (do_purge ? HR_REBALANCE_PURGE : 0);
	rcfg.log_level = (hr_log_level)conn.log_level;
	rcfg.on_step = on_step;
	rcfg.on_step_userdata = &st;
	rc = hr_rebalancer_new(&be, &rcfg, &rb, &err);
	if (rc) {
		be.close(be.userdata);
		rc = cli_fail_input(CMD, rc, &err);
		goto out;
	}
	hr_client_config_init(&cfg);
	rc = cli_etcd_open(&conn, CMD, &cfg, &client);
	if (rc != CLI_EXIT_OK)
		goto out;
	ring = hr_client_ring(client);
	rc = node_id ? check_id(ring, node_id) : CLI_EXIT_OK;
	hr_ring_release(ring);
	if (rc != CLI_EXIT_OK)
		goto out;
	st.rb = rb;
	st.client = client;
	rc = run(&st);
out:
	free_secret(redis_user);
	free_secret(redis_password);
	hr_rebalancer_free(rb);
	hr_client_close(client);
	cli_etcd_free(&conn);
	if (st.etcd)
		pthread_mutex_destroy(&st.lock);
	return rc;
}
