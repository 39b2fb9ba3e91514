/* SPDX-License-Identifier: MIT */
/* client_config.c - hr_client_config: its defaults and its one reading;
 * an hr_etcd_config read with its ring options (client_config.h,
 * settings.h). */
#include "client_config.h"

#include "ack_record.h"
#include "error.h"
#include "etcd_config.h"
#include "ring_options.h"
#include "settings.h"

#include <string.h>

HR__NO_TAIL_PADDING(hr_client_config, agent_dir);

static const hr_client_config client_defaults = {
	.size = sizeof(hr_client_config),
	.open_timeout_ms = 10000,
	.backoff_initial_ms = 100,
	.backoff_max_ms = 5000,
	.probe_interval_ms = 3000,
	.stale_warn_ms = 10000,
	.page_size = 1000,
	.ack_ttl_s = 10,
	.ack_interval_ms = 250,
	.probe_jitter_pct = 20,
	.endpoint_order = HR_ENDPOINTS_SPREAD,
	.hot_key_sample = 1024,
	.hot_key_replicas = 3,
};

void hr_client_config_init_size(hr_client_config *cfg, size_t size)
{
	hr__settings_init(cfg, size, &client_defaults, sizeof client_defaults);
}

int hr__conn_read(const hr_etcd_config *in, hr__conn *out, hr_error *err)
{
	hr__etcd_config c;
	int rc;

	memset(out, 0, sizeof *out);
	rc = hr__etcd_config_read(in, &c, err);
	if (!rc)
		rc = hr__ring_options_read(c.ring, &out->ring, err);
	if (rc)
		return rc;
	out->etcd = c.etcd;
	out->prefix = c.prefix;
	out->log = c.log;
	return 0;
}

int hr__client_config_read(const hr_client_config *in, hr_client_config *out,
			   hr_error *err)
{
	int rc;

	*out = client_defaults;
	if (in) {
		rc = HR__CHECK_SIZE(hr_client_config, in, open_timeout_ms, err);
		if (rc)
			return rc;
		HR__TAKE(hr_client_config, in, out, open_timeout_ms);
		HR__TAKE(hr_client_config, in, out, open_nonblocking);
		HR__TAKE(hr_client_config, in, out, backoff_initial_ms);
		HR__TAKE(hr_client_config, in, out, backoff_max_ms);
		HR__TAKE(hr_client_config, in, out, probe_interval_ms);
		HR__TAKE(hr_client_config, in, out, stale_warn_ms);
		HR__TAKE(hr_client_config, in, out, page_size);
		HR__TAKE(hr_client_config, in, out, on_change);
		HR__TAKE(hr_client_config, in, out, on_change_userdata);
		HR__TAKE(hr_client_config, in, out, on_diff);
		HR__TAKE(hr_client_config, in, out, on_diff_userdata);
		HR__TAKE(hr_client_config, in, out, ack_client_id);
		HR__TAKE(hr_client_config, in, out, ack_prefix);
		HR__TAKE(hr_client_config, in, out, ack_ttl_s);
		HR__TAKE(hr_client_config, in, out, ack_interval_ms);
		HR__TAKE(hr_client_config, in, out, probe_jitter_pct);
		HR__TAKE(hr_client_config, in, out, endpoint_order);
		HR__TAKE(hr_client_config, in, out, hot_key_sample);
		HR__TAKE(hr_client_config, in, out, hot_key_replicas);
		HR__TAKE(hr_client_config, in, out, hot_key_spread);
		HR__TAKE(hr_client_config, in, out, share);
		HR__TAKE(hr_client_config, in, out, agent_dir);
	}
#define POSITIVE(f)                                                             \
	if (out->f <= 0)                                                        \
		return hr__error_set(err, HR_EINVAL,                            \
				     "hr_client_config: " #f " must be > 0 (is %d)", out->f);
	POSITIVE(open_timeout_ms)
	POSITIVE(backoff_initial_ms)
	POSITIVE(backoff_max_ms)
	POSITIVE(probe_interval_ms)
	POSITIVE(stale_warn_ms)
#undef POSITIVE
	if (out->backoff_max_ms < out->backoff_initial_ms)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: backoff_max_ms below backoff_initial_ms");
	if (out->page_size == 0 || out->page_size > 100000)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: page_size must be 1..100000 (is %u)",
				     out->page_size);
	if (!out->ack_client_id != !out->ack_prefix)
		return hr__error_set(err, HR_EINVAL, "hr_client_config: ack_client_id and"
				     " ack_prefix go together: set both, or neither");
	if (out->ack_client_id) {
		hr_error why;

		rc = hr__ack_client_id_check(out->ack_client_id, &why);
		if (rc)
			return hr__error_set(err, rc, "hr_client_config: %s", why.message);
	}
	if (out->ack_ttl_s < 2 || out->ack_ttl_s > 3600)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: ack_ttl_s must be 2..3600 (is %d)",
				     out->ack_ttl_s);
	if (out->ack_interval_ms < 10 || out->ack_interval_ms > 60000)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: ack_interval_ms must be 10..60000 (is %d)",
				     out->ack_interval_ms);
	if (out->probe_jitter_pct < 0 || out->probe_jitter_pct > 50)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: probe_jitter_pct must be 0..50 (is %d)",
				     out->probe_jitter_pct);
	if (out->endpoint_order != HR_ENDPOINTS_SPREAD &&
	    out->endpoint_order != HR_ENDPOINTS_IN_ORDER)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: endpoint_order must be HR_ENDPOINTS_SPREAD"
				     " or HR_ENDPOINTS_IN_ORDER (is %d)", out->endpoint_order);
	if (out->hot_key_sample > 65536 || (out->hot_key_sample & (out->hot_key_sample - 1)))
		return hr__error_set(err, HR_EINVAL, "hr_client_config: hot_key_sample must"
				     " be 0 or a power of two up to 65536 (is %u)",
				     out->hot_key_sample);
	if (out->hot_key_replicas < 2 || out->hot_key_replicas > 16)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: hot_key_replicas must be 2..16 (is %u)",
				     out->hot_key_replicas);
	/* Written so that NaN fails too. */
	if (!(out->hot_key_spread >= 0 && out->hot_key_spread <= 1))
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: hot_key_spread must be 0..1 (is %g)",
				     out->hot_key_spread);
	if (out->hot_key_spread > 0 && !out->hot_key_sample)
		return hr__error_set(err, HR_EINVAL, "hr_client_config: hot_key_spread"
				     " needs hot_key_sample > 0 (the hot keys come from the samples)");
	if (out->agent_dir && (!*out->agent_dir || out->share || out->ack_client_id ||
			       out->on_change || out->on_diff))
		return hr__error_set(err, HR_EINVAL, "hr_client_config: %s",
				     !*out->agent_dir ? "agent_dir is empty" :
				     "agent_dir does not go with share, ack_client_id, on_change"
				     " or on_diff (the agent watches and acknowledges)");
	return 0;
}
