/* cli_etcd.c - the etcd connection options shared by every command that
 * talks to etcd, named and read from the environment as etcdctl does. */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void cli_etcd_init(struct cli_etcd *e, hr_log_level log_level)
{
	memset(e, 0, sizeof *e);
	e->log_level = log_level;
	e->vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT;
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

static int set_user(struct cli_etcd *e, const char *cmd, const char *v)
{
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

int cli_etcd_option(struct cli_etcd *e, const char *cmd, const char *name,
		    const char *value)
{
	if (!strcmp(name, "endpoints"))
		e->endpoints = value;
	else if (!strcmp(name, "prefix"))
		e->prefix = value;
	else if (!strcmp(name, "cacert"))
		e->cacert = value;
	else if (!strcmp(name, "cert"))
		e->cert = value;
	else if (!strcmp(name, "key"))
		e->key = value;
	else if (!strcmp(name, "api-base"))
		e->api_base = value;
	else if (!strcmp(name, "insecure-skip-tls-verify"))
		e->insecure = 1;
	else if (!strcmp(name, "user"))
		return set_user(e, cmd, value) ? -1 : 1;
	else if (!strcmp(name, "vnodes-per-weight"))
		return cli_parse_ulong(cmd, name, value, 1, 1000000,
				       &e->vnodes_per_weight) ? -1 : 1;
	else if (!strcmp(name, "placement")) {
		if (!strcmp(value, "xxh3"))
			e->placement = HR_PLACEMENT_XXH3;
		else if (!strcmp(value, "ketama"))
			e->placement = HR_PLACEMENT_KETAMA;
		else {
			cli_usage(cmd, "--placement: '%s' is not xxh3 or ketama", value);
			return -1;
		}
	} else if (!strcmp(name, "log-level")) {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		for (int i = 0; i < 4; i++)
			if (!strcmp(value, names[i])) {
				e->log_level = (hr_log_level)i;
				return 1;
			}
		cli_usage(cmd, "--log-level: '%s' is not error, warn, info or debug", value);
		return -1;
	} else
		return 0;
	return 1;
}

hr_ring_options cli_etcd_ring_options(const struct cli_etcd *e)
{
	hr_ring_options opts = {
		.vnodes_per_weight = (unsigned)e->vnodes_per_weight,
		.placement = e->placement,
	};

	return opts;
}

int cli_etcd_connects(const char *name)
{
	return strcmp(name, "vnodes-per-weight") && strcmp(name, "placement") &&
	       strcmp(name, "log-level");
}

int cli_load_members(const char *cmd, const char *file,
		     const struct cli_etcd *e, hr_ring **out)
{
	hr_ring_options opts = cli_etcd_ring_options(e);
	hr_error err = { 0 };
	int rc = hr_ring_load_file(file, &opts, out, &err);

	if (rc == HR_EIO)
		return cli_fail(cmd, rc, &err); /* the message names the file */
	if (rc < 0) {
		cli_error(cmd, "%s: %s", file,
			  err.message[0] ? err.message : hr_strerror(rc));
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
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

int cli_etcd_config(struct cli_etcd *e, const char *cmd, hr_config *cfg)
{
	const char *user = getenv("ETCDCTL_USER");

	if (!e->user && user && *user && set_user(e, cmd, user))
		return -1;
	if (e->user && !e->password[0]) {
		const char *pw = getenv("ETCDCTL_PASSWORD");
		if (pw && *pw) {
			wipe(e->password);
			e->password = strdup(pw);
		}
	}
	cfg->endpoints = or_env(e->endpoints, "ETCDCTL_ENDPOINTS");
	cfg->prefix = e->prefix ? e->prefix : CLI_DEFAULT_PREFIX;
	if (!cfg->prefix[0]) {
		cli_usage(cmd, "--prefix: must not be empty");
		return -1;
	}
	cfg->api_base = e->api_base;
	cfg->ca_file = or_env(e->cacert, "ETCDCTL_CACERT");
	cfg->cert_file = or_env(e->cert, "ETCDCTL_CERT");
	cfg->key_file = or_env(e->key, "ETCDCTL_KEY");
	cfg->insecure_skip_verify = e->insecure ||
		(getenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY") &&
		 !strcmp(getenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY"), "true"));
	cfg->username = e->user;
	cfg->password = e->password;
	cfg->ring = cli_etcd_ring_options(e);
	cfg->log_level = e->log_level;
	/* A one-shot command should not sit for the library's 10 s when etcd
	 * is down; etcdctl gives up after about as long. */
	cfg->open_timeout_ms = 3000;
	return 0;
}

int cli_etcd_open(struct cli_etcd *e, const char *cmd, hr_config *cfg,
		  hr_client **out)
{
	hr_error err = { 0 };
	int rc;

	*out = NULL;
	if (cli_etcd_config(e, cmd, cfg))
		return CLI_EXIT_USAGE;
	rc = hr_client_open(cfg, out, &err);
	if (rc)
		return cli_fail(cmd, rc, &err);
	return CLI_EXIT_OK;
}

int cli_etcd_follow(struct cli_etcd *e, const char *cmd, hr_ring_change_fn fn,
		    void *userdata)
{
	hr_config cfg;
	hr_client *client = NULL;
	sigset_t set, old;
	int sig, rc;

	/* Signals are taken synchronously by this thread alone; the library's
	 * threads inherit the mask.  A closed stdout is a write error, not a
	 * signal. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	signal(SIGPIPE, SIG_IGN);
	hr_config_init(&cfg);
	cfg.on_change = fn;
	cfg.on_change_userdata = userdata;
	rc = cli_etcd_open(e, cmd, &cfg, &client);
	if (rc == CLI_EXIT_OK) {
		sigwait(&set, &sig);
		hr_client_close(client);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
