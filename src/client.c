/* client.c - the public client: configuration, open/close, and the lookup
 * entry points over the published ring. */
#include "client.h"
#include "error.h"
#include "log.h"
#include "owner.h"
#include "publish.h"
#include "thread_cache.h"
#include "watch.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hr_client {
	hr__log log;
	hr__publisher pub;
	hr__watcher *watcher;
	int64_t opened_ms;	/* CLOCK_MONOTONIC, for hr_client_wait_synced */
};

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hr_config_init(hr_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof *cfg);
	cfg->ring.vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT;
	cfg->open_timeout_ms = 10000;
	cfg->request_timeout_ms = 5000;
	cfg->connect_timeout_ms = 2000;
	cfg->backoff_initial_ms = 100;
	cfg->backoff_max_ms = 5000;
	cfg->probe_interval_ms = 3000;
	cfg->stale_warn_ms = 10000;
	cfg->page_size = 1000;
	cfg->log_level = HR_LOG_INFO;
}

static int check_config(const hr_config *c, hr_error *err)
{
	if (!c->prefix || !c->prefix[0])
		return hr__error_set(err, HR_EINVAL, "config: prefix must be set and not empty");
	if (strlen(c->prefix) > 4096)
		return hr__error_set(err, HR_EINVAL, "config: prefix longer than 4096 bytes");
#define POSITIVE(f)                                                           \
	if (c->f <= 0)                                                        \
		return hr__error_set(err, HR_EINVAL, "config: " #f " must be > 0 (is %d)", c->f);
	POSITIVE(open_timeout_ms)
	POSITIVE(request_timeout_ms)
	POSITIVE(connect_timeout_ms)
	POSITIVE(backoff_initial_ms)
	POSITIVE(backoff_max_ms)
	POSITIVE(probe_interval_ms)
	POSITIVE(stale_warn_ms)
#undef POSITIVE
	if (c->backoff_max_ms < c->backoff_initial_ms)
		return hr__error_set(err, HR_EINVAL,
				     "config: backoff_max_ms below backoff_initial_ms");
	if (c->page_size == 0 || c->page_size > 100000)
		return hr__error_set(err, HR_EINVAL, "config: page_size must be 1..100000");
	if ((unsigned)c->log_level > HR_LOG_DEBUG)
		return hr__error_set(err, HR_EINVAL, "config: invalid log_level");
	return 0;
}

int hr_client_open(const hr_config *cfg, hr_client **out, hr_error *err)
{
	hr__watch_opts wo;
	hr_client *c;
	hr_ring *empty = NULL;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "out must not be NULL");
	*out = NULL;
	if (!cfg)
		return hr__error_set(err, HR_EINVAL, "config must not be NULL");
	rc = check_config(cfg, err);
	if (rc)
		return rc;
	/* Thread safe since libcurl 7.84 and reference counted. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return hr__error_set(err, HR_ENOMEM, "libcurl initialisation failed");
	c = calloc(1, sizeof *c);
	if (!c) {
		curl_global_cleanup();
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	c->opened_ms = monotonic_ms();
	c->log.fn = cfg->log;
	c->log.userdata = cfg->log_userdata;
	c->log.max = cfg->log_level;
	/* Lookups before the first sync see an empty ring, never NULL. */
	rc = hr_ring_build(NULL, 0, &cfg->ring, 0, &empty, err);
	if (rc) {
		free(c);
		curl_global_cleanup();
		return rc;
	}
	hr__publish_init(&c->pub, empty);

	memset(&wo, 0, sizeof wo);
	wo.etcd.endpoints = cfg->endpoints;
	wo.etcd.api_base = cfg->api_base;
	wo.etcd.request_timeout_ms = cfg->request_timeout_ms;
	wo.etcd.connect_timeout_ms = cfg->connect_timeout_ms;
	wo.etcd.ca_file = cfg->ca_file;
	wo.etcd.cert_file = cfg->cert_file;
	wo.etcd.key_file = cfg->key_file;
	wo.etcd.insecure_skip_verify = cfg->insecure_skip_verify;
	wo.etcd.username = cfg->username;
	wo.etcd.password = cfg->password;
	wo.prefix = cfg->prefix;
	wo.ring = cfg->ring;
	wo.page_size = cfg->page_size;
	wo.backoff_initial_ms = cfg->backoff_initial_ms;
	wo.backoff_max_ms = cfg->backoff_max_ms;
	wo.probe_interval_ms = cfg->probe_interval_ms;
	wo.stale_warn_ms = cfg->stale_warn_ms;
	wo.log = &c->log;
	wo.publisher = &c->pub;
	wo.on_change = cfg->on_change;
	wo.on_change_userdata = cfg->on_change_userdata;
	wo.on_diff = cfg->on_diff;
	wo.on_diff_userdata = cfg->on_diff_userdata;
	rc = hr__watcher_start(&wo, &c->watcher, err);
	if (!rc && !cfg->open_nonblocking)
		rc = hr__watcher_wait_first(c->watcher, cfg->open_timeout_ms, err);
	if (rc) {
		hr_client_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* The watcher's "no ring after N ms: CAUSE" without its first part, which
 * names the length of one wait, not the time since open. */
static const char *failure_cause(const char *msg)
{
	static const char head[] = "no ring after ";
	const char *p = msg;

	if (strncmp(p, head, sizeof head - 1))
		return msg;
	p += sizeof head - 1;
	while (*p >= '0' && *p <= '9')
		p++;
	if (strncmp(p, " ms", 3))
		return msg;
	p += 3;
	return *p == ':' && p[1] == ' ' ? p + 2 : p;
}

int hr_client_wait_synced(hr_client *c, int timeout_ms, hr_error *err)
{
	hr_error last = { 0 };
	const char *cause;
	int rc;

	if (!c || timeout_ms < 0)
		return hr__error_set(err, HR_EINVAL,
				     "wait_synced: NULL client or negative timeout");
	rc = hr__watcher_wait_first(c->watcher, timeout_ms, &last);
	switch (rc) {
	case 0:
		return 0;
	case HR_EAUTH:
	case HR_EPERM:
	case HR_ETLS:
	case HR_ELIMIT:
	case HR_ENOMEM:
		/* Fatal for the first sync: the watcher says so at once. */
		return hr__error_copy(err, &last);
	}
	cause = failure_cause(last.message);
	if (*cause)
		return hr__error_set(err, HR_ETIMEDOUT, "no ring after %lld ms: %s",
				     (long long)(monotonic_ms() - c->opened_ms), cause);
	return hr__error_set(err, HR_ETIMEDOUT, "no ring after %lld ms",
			     (long long)(monotonic_ms() - c->opened_ms));
}

void hr_client_close(hr_client *c)
{
	if (!c)
		return;
	hr__watcher_stop(c->watcher);
	hr__thread_cache_forget(&c->pub);
	hr__publish_destroy(&c->pub);
	free(c);
	curl_global_cleanup();
}

int hr_client_lookup(hr_client *c, const void *key, size_t len, hr_owner *out)
{
	const hr_ring *ring;
	int rc;

	if (!c || !out || (!key && len))
		return HR_EINVAL;
	ring = hr__thread_cache_ring(&c->pub);
	if (__builtin_expect(ring != NULL, 1))
		return hr__ring_lookup_owner(ring, key, len, out);
	rc = hr__ring_lookup_owner(hr__publish_read_begin(&c->pub), key, len, out);
	hr__publish_read_end(&c->pub);
	return rc;
}

struct hr_reader {
	hr_client *client;
	hr_ring *held;		/* followed reference (hr__publish_follow) */
};

int hr_reader_open(hr_client *c, hr_reader **out)
{
	hr_reader *r;

	if (!out)
		return HR_EINVAL;
	*out = NULL;
	if (!c)
		return HR_EINVAL;
	r = malloc(sizeof *r);
	if (!r)
		return HR_ENOMEM;
	r->client = c;
	r->held = NULL;
	*out = r;
	return 0;
}

void hr_reader_close(hr_reader *r)
{
	if (!r)
		return;
	hr_ring_release(r->held);
	free(r);
}

int hr_reader_lookup(hr_reader *r, const void *key, size_t len, hr_owner *out)
{
	if (!r || !out || (!key && len))
		return HR_EINVAL;
	return hr__ring_lookup_owner(hr__publish_follow(&r->client->pub, &r->held),
				     key, len, out);
}

int hr_client_replicas(hr_client *c, const void *key, size_t len, hr_view view,
		       hr_replica *out, size_t r, uint64_t *revision)
{
	const hr_ring *ring;
	int k;

	if (!c || (!out && r) || (!key && len) || r > HR__REPLICAS_MAX ||
	    (view != HR_VIEW_WRITE && view != HR_VIEW_READ))
		return HR_EINVAL;
	ring = hr__thread_cache_ring(&c->pub);
	if (__builtin_expect(ring != NULL, 1))
		return hr__ring_replicas(ring, key, len, view, out, r, revision);
	k = hr__ring_replicas(hr__publish_read_begin(&c->pub), key, len, view,
			      out, r, revision);
	hr__publish_read_end(&c->pub);
	return k;
}

hr__publisher *hr__client_publisher(hr_client *c)
{
	return &c->pub;
}

const hr_ring *hr_client_read_begin(hr_client *c)
{
	return c ? hr__publish_read_begin(&c->pub) : NULL;
}

void hr_client_read_end(hr_client *c)
{
	if (c)
		hr__publish_read_end(&c->pub);
}

hr_ring *hr_client_acquire(hr_client *c)
{
	return c ? hr__publish_acquire(&c->pub) : NULL;
}

int hr_client_status_get(hr_client *c, hr_client_status *out)
{
	hr_ring *ring;

	if (!c || !out)
		return HR_EINVAL;
	memset(out, 0, sizeof *out);
	ring = hr__publish_acquire(&c->pub);
	out->revision = hr_ring_revision(ring);
	out->digest = hr_ring_digest(ring);
	hr_ring_release(ring);
	hr__watcher_status(c->watcher, out);
	return 0;
}
