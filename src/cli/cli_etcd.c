/* SPDX-License-Identifier: MIT */
/*
 * cli_etcd.c - the etcd connection options shared by every command that
 * talks to etcd, named and read from the environment as etcdctl does; the
 * waits for etcd (first sync, retries), which signals end at once.
 */
#include "cli.h"
#include "ack_record.h"
#include "clock.h"
#include "maglev.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sent by cli_etcd_follow_stop() to the process, to wake the main thread. */
#define CLI_WAKE_SIGNAL SIGUSR1

/* The slice of a wait for the first sync between two looks for a signal. */
#define SYNC_SLICE_MS 50

#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 1000

const char *const cli_log_levels[] = { "error", "warn", "info", "debug", NULL };
const char *const cli_placements[] = { "xxh3", "ketama", "maglev", "rendezvous",
				       "tokens", NULL };

_Static_assert(HR_LOG_ERROR == 0 && HR_LOG_WARN == 1 && HR_LOG_INFO == 2 &&
	       HR_LOG_DEBUG == 3, "cli_log_levels follows hr_log_level");
_Static_assert(HR_PLACEMENT_XXH3 == 0 && HR_PLACEMENT_KETAMA == 1 &&
	       HR_PLACEMENT_MAGLEV == 2 && HR_PLACEMENT_RENDEZVOUS == 3 &&
	       HR_PLACEMENT_TOKENS == 4,
	       "cli_placements follows hr_placement");
_Static_assert(HR_POINTS_MAX == 33554432u, "CLI_RING_OPTIONS names the limit");

const char *cli_maglev_size_check(unsigned long m)
{
	/* The library's rule, said in the option's terms. */
	return hr__maglev_size_check(m, NULL) ? "is not a prime (65537 is, the default)" : NULL;
}

void cli_etcd_init(struct cli_etcd *e, hr_log_level log_level)
{
	memset(e, 0, sizeof *e);
	e->log_level = (int)log_level;
	e->timeout_s = CLI_TIMEOUT_DEFAULT;
	e->vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT;
	e->placement = HR_PLACEMENT_XXH3;
}

static void wipe(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

void cli_etcd_free(struct cli_etcd *e)
{
	free(e->user);
	wipe(e->password);
	e->user = e->password = NULL;
}

int cli_etcd_set_user(void *dest, const char *cmd, const char *v)
{
	struct cli_etcd *e = dest;
	const char *colon = strchr(v, ':');
	const char *env_pw = getenv("ETCDCTL_PASSWORD");

	/* NAME alone takes the password from ETCDCTL_PASSWORD, as etcdctl
	 * does; there is no prompt. */
	if (colon == v || (!colon && !(env_pw && *env_pw))) {
		/* Never echo the value: it may be a password. */
		cli_usage(cmd, "--user: expected NAME:PASSWORD (or NAME with ETCDCTL_PASSWORD set)");
		return -1;
	}
	cli_etcd_free(e);
	e->user = colon ? strndup(v, (size_t)(colon - v)) : strdup(v);
	e->password = strdup(colon ? colon + 1 : env_pw);
	if (!e->user || !e->password) {
		cli_error(cmd, "out of memory");
		return -1;
	}
	return 0;
}

hr_ring_options cli_etcd_ring_options(const struct cli_etcd *e)
{
	hr_ring_options opts;

	hr_ring_options_init(&opts);
	opts.vnodes_per_weight = (unsigned)e->vnodes_per_weight;
	opts.placement = (hr_placement)e->placement;
	opts.maglev_size = e->maglev_size;
	return opts;
}

/* Whether `msg` already names `file`: "FILE: ..." or "...\"FILE\"...". */
static int names_file(const char *msg, const char *file)
{
	size_t len = strlen(file);
	const char *p;

	if (!strncmp(msg, file, len) && msg[len] == ':')
		return 1;
	for (p = msg; (p = strchr(p, '"')); p++) {
		if (!strncmp(p + 1, file, len) && p[len + 1] == '"')
			return 1;
	}
	return 0;
}

int cli_load_members(const char *cmd, const char *file,
		     const struct cli_etcd *e, hr_ring **out)
{
	hr_ring_options opts = cli_etcd_ring_options(e);
	hr_error err = { 0 };
	const char *msg;
	int rc = hr_ring_load_file(file, &opts, out, &err);

	if (rc == 0)
		return CLI_EXIT_OK;
	msg = err.message[0] ? err.message : hr_strerror(rc);
	if (names_file(msg, file))
		cli_error(cmd, "%s", msg);
	else
		cli_error(cmd, "%s: %s", file, msg);
	return CLI_EXIT_ERROR;
}

int cli_ring_open(struct cli_etcd *e, const char *cmd, const char *members,
		  const char *etcd_option, hr_client **client, hr_ring **ring)
{
	hr_client_config cfg;
	int rc;

	*client = NULL;
	*ring = NULL;
	if (members && etcd_option)
		return cli_usage(cmd, "--members and --%s exclude each other", etcd_option);
	if (members)
		return cli_load_members(cmd, members, e, ring);
	hr_client_config_init(&cfg);
	rc = cli_etcd_open(e, cmd, &cfg, client);
	if (rc == CLI_EXIT_OK)
		*ring = hr_client_ring(*client);
	return rc;
}

/* An option, else its ETCDCTL_* variable (if set and not empty). */
static const char *or_env(const char *opt, const char *var)
{
	const char *v;

	if (opt)
		return opt;
	v = getenv(var);
	return v && *v ? v : NULL;
}

/* The events of a watcher that failed to reach etcd and tries again. */
static const char *const retry_events[] = {
	"sync_failed", "auth_failed", "probe_failed", "stream_ended",
	"stream_error", "watch_canceled", NULL
};

/* The library's lines as its default logger writes them, but those of
 * retry_events[]. */
static void log_without_retries(void *ud, hr_log_level level, const char *line)
{
	const char *ev = strstr(line, " event=");
	struct timespec ts;
	struct tm tm;
	char when[32];

	(void)ud, (void)level;
	for (int i = 0; ev && retry_events[i]; i++) {
		size_t n = strlen(retry_events[i]);

		if (!strncmp(ev + 7, retry_events[i], n) && (ev[7 + n] == ' ' || !ev[7 + n]))
			return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "ts=%s.%03ldZ %s\n", when, ts.tv_nsec / 1000000L, line);
}

int cli_etcd_config(struct cli_etcd *e, const char *cmd, hr_etcd_config *cfg)
{
	const char *user = getenv("ETCDCTL_USER");
	const char *insecure = getenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY");
	size_t plen;

	if (!e->user && user && *user && cli_etcd_set_user(e, cmd, user))
		return -1;
	/* "NAME:" with the password in ETCDCTL_PASSWORD. */
	if (e->user && !e->password[0] && or_env(NULL, "ETCDCTL_PASSWORD")) {
		wipe(e->password);
		e->password = strdup(getenv("ETCDCTL_PASSWORD"));
		if (!e->password) {
			cli_error(cmd, "out of memory");
			return -1;
		}
	}
	cfg->endpoints = or_env(e->endpoints, "ETCDCTL_ENDPOINTS");
	cfg->prefix = e->prefix ? e->prefix : CLI_DEFAULT_PREFIX;
	plen = strlen(cfg->prefix);
	if (plen > CLI_PREFIX_MAX) {
		cli_usage(cmd, "--prefix: longer than %d bytes", CLI_PREFIX_MAX);
		return -1;
	}
	/* Allowed (a prefix is any byte string), but almost always a slip
	 * that hides every node: the ids would start with '/'. */
	if (plen && cfg->prefix[plen - 1] != '/')
		cli_warn(cmd, "--prefix '%s' does not end in '/': the record %s/ID would have the id '/ID', which is invalid",
			 cfg->prefix, cfg->prefix);
	cfg->api_base = e->api_base;
	cfg->ca_file = or_env(e->cacert, "ETCDCTL_CACERT");
	cfg->cert_file = or_env(e->cert, "ETCDCTL_CERT");
	cfg->key_file = or_env(e->key, "ETCDCTL_KEY");
	cfg->insecure_skip_verify = e->insecure || (insecure && !strcmp(insecure, "true"));
	cfg->username = e->user;
	cfg->password = e->password;
	e->ring = cli_etcd_ring_options(e);
	cfg->ring = &e->ring;
	cfg->log_level = (hr_log_level)e->log_level;
	if (e->one_shot && !e->log_level_given)
		cfg->log = log_without_retries;
	return 0;
}

/* ---- signals ----------------------------------------------------------------- */

void cli_signals_block(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int cli_signal_wait(const sigset_t *set, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int sig = ms < 0 ? sigwaitinfo(set, NULL) : sigtimedwait(set, NULL, &ts);

	return sig > 0 ? sig : 0;
}

/* ---- waiting for etcd --------------------------------------------------------- */

int cli_etcd_start(struct cli_etcd *e, const char *cmd, hr_client_config *cfg,
		   hr_client **out)
{
	hr_etcd_config etcd;
	hr_error err = { 0 };
	sigset_t set;
	int rc;

	*out = NULL;
	/* Before the watcher thread starts: it inherits the mask. */
	cli_signals_block(&set);
	hr_etcd_config_init(&etcd);
	if (cli_etcd_config(e, cmd, &etcd))
		return CLI_EXIT_USAGE;
	if (e->agent_dir && e->ack_client_id)
		return cli_usage(cmd, "--agent and --client-id exclude each other (the agent "
				 "acknowledges)");
	cfg->agent_dir = e->agent_dir;
	cfg->open_nonblocking = 1;
	rc = hr_client_open(&etcd, cfg, out, &err);
	if (rc)
		return cli_fail_input(cmd, rc, &err);
	return CLI_EXIT_OK;
}

int cli_etcd_open(struct cli_etcd *e, const char *cmd, hr_client_config *cfg,
		  hr_client **out)
{
	hr_error err = { 0 };
	int64_t deadline;
	sigset_t set;
	int rc = cli_etcd_start(e, cmd, cfg, out);

	if (rc)
		return rc;
	cli_signals_block(&set);
	deadline = e->timeout_s ? hr__now_ms() + (int64_t)e->timeout_s * 1000 : 0;
	for (;;) {
		long slice = SYNC_SLICE_MS;
		int sig;

		if (deadline && deadline - hr__now_ms() < slice)
			slice = deadline > hr__now_ms() ? (long)(deadline - hr__now_ms()) : 0;
		rc = hr_client_wait_synced(*out, (int)slice, &err);
		if (rc == 0)
			return CLI_EXIT_OK;
		sig = rc == HR_ETIMEDOUT ? cli_signal_wait(&set, 0) : 0;
		if (rc != HR_ETIMEDOUT || (deadline && hr__now_ms() >= deadline) ||
		    sig == SIGINT || sig == SIGTERM) {
			hr_client_close(*out);
			*out = NULL;
			if (sig == SIGINT || sig == SIGTERM)
				return CLI_EXIT_SIGNAL(sig);
			return cli_fail(cmd, rc, &err);
		}
	}
}

int cli_ack_options_check(const struct cli_etcd *e, const char *cmd)
{
	hr_error why = { 0 };

	if (!e->ack_client_id && (e->ack_prefix || e->ack_ttl_s))
		return cli_usage(cmd, "--%s needs --client-id: the id the acks are written under",
				 e->ack_prefix ? "ack-prefix" : "ack-ttl");
	if (!e->ack_client_id)
		return 0;
	if (hr__ack_client_id_check(e->ack_client_id, &why))
		return cli_usage(cmd, "--client-id: %s", why.message);
	return cli_ack_prefix_check(cmd, e->ack_prefix, e->prefix);
}

/* "--NAME VALUE", or with a NULL value "--NAME DEFAULT (the default)". */
static void option_text(char *buf, size_t size, const char *name, const char *value,
			const char *dflt)
{
	snprintf(buf, size, "--%s %.200s%s", name, value ? value : dflt,
		 value ? "" : " (the default)");
}

int cli_ack_prefix_check(const char *cmd, const char *ack_prefix, const char *prefix)
{
	const char *acks = ack_prefix ? ack_prefix : CLI_DEFAULT_ACK_PREFIX;
	char a[256], r[256];

	if (strlen(acks) > CLI_PREFIX_MAX)
		return cli_usage(cmd, "--ack-prefix: longer than %d bytes", CLI_PREFIX_MAX);
	option_text(a, sizeof a, "ack-prefix", ack_prefix, CLI_DEFAULT_ACK_PREFIX);
	option_text(r, sizeof r, "prefix", prefix, CLI_DEFAULT_PREFIX);
	switch (hr__prefixes_overlap(acks, prefix ? prefix : CLI_DEFAULT_PREFIX)) {
	case HR__APART:
		return 0;
	case HR__SAME:
		return cli_usage(cmd, "%s is also %s: acks and node records would be read as"
				 " each other; give the acks a prefix of their own", a, r);
	case HR__ACKS_HOLD_RING:
		return cli_usage(cmd, "%s contains %s: node records would be read as acks;"
				 " give the acks a prefix of their own", a, r);
	default:
		return cli_usage(cmd, "%s contains %s: acks would be read as node records;"
				 " give the acks a prefix of their own", r, a);
	}
}

void cli_ack_config(const struct cli_etcd *e, hr_client_config *cfg)
{
	if (e->ack_client_id) {
		cfg->ack_client_id = e->ack_client_id;
		cfg->ack_prefix = e->ack_prefix ? e->ack_prefix : CLI_DEFAULT_ACK_PREFIX;
		if (e->ack_ttl_s)
			cfg->ack_ttl_s = (int)e->ack_ttl_s;
	}
}

static int follow_stopped;

void cli_etcd_follow_stop(void)
{
	__atomic_store_n(&follow_stopped, 1, __ATOMIC_RELEASE);
	kill(getpid(), CLI_WAKE_SIGNAL);
}

/*
 * The rings published before the open is over (its first ring, and with
 * --client-id its first ack) are held back, so that a command that fails
 * to open (an ack id another client holds) prints nothing; once it is over
 * they are handed to the command in order, then each ring as it comes.
 */
struct follow_gate {
	pthread_mutex_t mu;
	int open;
	hr_ring_change_fn fn;
	void *userdata;
	hr_ring *(*held)[2];     /* (old, new) pairs, retained */
	size_t n, cap;
};

static void gated_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct follow_gate *g = ud;

	pthread_mutex_lock(&g->mu);
	if (g->open) {
		g->fn(g->userdata, old, ring);
	} else {
		if (g->n == g->cap) {
			size_t cap = g->cap ? g->cap * 2 : 4;
			void *p = realloc(g->held, cap * sizeof *g->held);

			if (p) {
				g->held = p;
				g->cap = cap;
			}
		}
		/* Out of memory: that ring is not shown. */
		if (g->n < g->cap) {
			g->held[g->n][0] = hr_ring_retain((hr_ring *)old);
			g->held[g->n][1] = hr_ring_retain((hr_ring *)ring);
			g->n++;
		}
	}
	pthread_mutex_unlock(&g->mu);
}

/* Hands the held rings over (`deliver`) or drops them, and opens. */
static void gate_open(struct follow_gate *g, int deliver)
{
	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < g->n; i++) {
		if (deliver)
			g->fn(g->userdata, g->held[i][0], g->held[i][1]);
		hr_ring_release(g->held[i][0]);
		hr_ring_release(g->held[i][1]);
	}
	g->n = 0;
	g->open = 1;
	pthread_mutex_unlock(&g->mu);
}

/* cli_etcd_follow() of an agent's rings: a reader has no thread to call
 * back from, so this one looks every few milliseconds. */
static int follow_agent(struct cli_etcd *e, const char *cmd, hr_ring_change_fn fn,
			void *userdata)
{
	hr_client_config cfg;
	hr_client *client = NULL;
	hr_ring *prev = NULL, *ring;
	hr_error err = { 0 };
	sigset_t set;
	int rc;

	cli_signals_block(&set);
	sigaddset(&set, CLI_WAKE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	__atomic_store_n(&follow_stopped, 0, __ATOMIC_RELEASE);
	hr_client_config_init(&cfg);
	rc = cli_etcd_open(e, cmd, &cfg, &client);
	if (rc == CLI_EXIT_OK && hr_ring_build(NULL, 0, NULL, 0, &prev, &err))
		rc = cli_fail(cmd, HR_ENOMEM, &err);
	while (rc == CLI_EXIT_OK && !__atomic_load_n(&follow_stopped, __ATOMIC_ACQUIRE)) {
		int sig;

		ring = hr_client_ring(client);
		if (hr_ring_revision(ring) != hr_ring_revision(prev) ||
		    hr_ring_digest(ring) != hr_ring_digest(prev)) {
			fn(userdata, prev, ring);
			hr_ring_release(prev);
			prev = ring;
		} else {
			hr_ring_release(ring);
		}
		sig = cli_signal_wait(&set, 5);
		if (sig == SIGINT || sig == SIGTERM)
			break;
	}
	hr_ring_release(prev);
	hr_client_close(client);
	return CLI_EXIT_IS_SIGNAL(rc) ? CLI_EXIT_OK : rc;
}

int cli_etcd_follow(struct cli_etcd *e, const char *cmd, hr_ring_change_fn fn,
		    void *userdata)
{
	struct follow_gate gate = { .fn = fn, .userdata = userdata };
	hr_client_config cfg;
	hr_client *client = NULL;
	sigset_t set;
	int rc;

	if (e->agent_dir)
		return follow_agent(e, cmd, fn, userdata);
	/* The wake-up signal too, before the watcher thread starts. */
	cli_signals_block(&set);
	sigaddset(&set, CLI_WAKE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	__atomic_store_n(&follow_stopped, 0, __ATOMIC_RELEASE);
	pthread_mutex_init(&gate.mu, NULL);
	hr_client_config_init(&cfg);
	cfg.on_change = gated_change;
	cfg.on_change_userdata = &gate;
	cli_ack_config(e, &cfg);
	rc = cli_etcd_open(e, cmd, &cfg, &client);
	/* Closed on failure: no more calls. */
	gate_open(&gate, rc == CLI_EXIT_OK);
	if (rc == CLI_EXIT_OK) {
		while (!__atomic_load_n(&follow_stopped, __ATOMIC_ACQUIRE)) {
			int sig = cli_signal_wait(&set, -1);

			if (sig == SIGINT || sig == SIGTERM)
				break;
		}
		hr_client_close(client);
	}
	free(gate.held);
	pthread_mutex_destroy(&gate.mu);
	/* Asked to stop before the first ring: a normal end. */
	return CLI_EXIT_IS_SIGNAL(rc) ? CLI_EXIT_OK : rc;
}

int cli_etcd_retry(const struct cli_etcd *e, const hr_etcd_config *etcd,
		   const sigset_t *sigs, cli_attempt_fn fn, void *userdata,
		   hr_error *err)
{
	int64_t deadline = e->timeout_s ? hr__now_ms() + (int64_t)e->timeout_s * 1000 : 0;
	long backoff = RETRY_FIRST_MS;
	char cause[HR_ERROR_MSG_MAX];
	int rc;

	for (;;) {
		long wait = backoff;

		memset(err, 0, sizeof *err);
		rc = fn(userdata, etcd, err);
		if (rc != HR_ECONNECT && rc != HR_ETIMEDOUT)
			return rc;
		if (deadline && hr__now_ms() >= deadline)
			break;
		if (deadline && deadline - hr__now_ms() < wait)
			wait = (long)(deadline - hr__now_ms());
		if (sigs) {
			int sig = cli_signal_wait(sigs, wait);

			if (sig == SIGINT || sig == SIGTERM)
				return CLI_EXIT_SIGNAL(sig);
		} else {
			struct timespec ts = { wait / 1000, (wait % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
		backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
	}
	snprintf(cause, sizeof cause, "%s", err->message[0] ? err->message : hr_strerror(rc));
	/* A long cause is cut: the message stays one hr_error. */
	if (snprintf(err->message, sizeof err->message, "etcd unreachable for %lu s: %.200s",
		     e->timeout_s, cause) < 0)
		err->message[0] = '\0';
	return rc;
}
