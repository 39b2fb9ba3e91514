/* config.c - the one reading and checking of an hr_config, shared by the
 * client, the registrar and the in-place node changes. */
#include "config.h"
#include "error.h"

#include <string.h>

#define PREFIX_MAX 4096

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

int hr__conn_read(const hr_config *c, hr__conn *out, hr_error *err)
{
	memset(out, 0, sizeof *out);
	if (!c)
		return hr__error_set(err, HR_EINVAL, "config must not be NULL");
	if (!c->prefix || !c->prefix[0])
		return hr__error_set(err, HR_EINVAL, "config: prefix must be set and not empty");
	if (strnlen(c->prefix, PREFIX_MAX + 1) > PREFIX_MAX)
		return hr__error_set(err, HR_EINVAL, "config: prefix longer than %d bytes",
				     PREFIX_MAX);
	if (c->request_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL, "config: request_timeout_ms must be > 0 (is %d)",
				     c->request_timeout_ms);
	if (c->connect_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL, "config: connect_timeout_ms must be > 0 (is %d)",
				     c->connect_timeout_ms);
	if ((unsigned)c->log_level > HR_LOG_DEBUG)
		return hr__error_set(err, HR_EINVAL, "config: invalid log_level");

	out->etcd = (hr__etcd_opts){
		.endpoints = c->endpoints,
		.api_base = c->api_base,
		.request_timeout_ms = c->request_timeout_ms,
		.connect_timeout_ms = c->connect_timeout_ms,
		.ca_file = c->ca_file,
		.cert_file = c->cert_file,
		.key_file = c->key_file,
		.insecure_skip_verify = c->insecure_skip_verify,
		.username = c->username,
		.password = c->password,
	};
	out->prefix = c->prefix;
	out->ring = c->ring;
	out->log = (hr__log){ c->log, c->log_userdata, c->log_level };
	return 0;
}

int hr__client_config_check(const hr_config *c, hr_error *err)
{
#define POSITIVE(f)                                                           \
	if (c->f <= 0)                                                        \
		return hr__error_set(err, HR_EINVAL, "config: " #f " must be > 0 (is %d)", c->f);
	POSITIVE(open_timeout_ms)
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
	return 0;
}
