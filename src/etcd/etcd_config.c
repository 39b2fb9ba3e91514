/* SPDX-License-Identifier: MIT */
/* etcd_config.c - hr_etcd_config: its defaults and its one reading
 * (etcd_config.h, settings.h). */
#include "etcd_config.h"

#include "error.h"
#include "settings.h"

#include <string.h>

HR__NO_TAIL_PADDING(hr_etcd_config, log_userdata);

static const hr_etcd_config etcd_defaults = {
	.size = sizeof(hr_etcd_config),
	.request_timeout_ms = 5000,
	.connect_timeout_ms = 2000,
	.log_level = HR_LOG_INFO,
};

void hr_etcd_config_init_size(hr_etcd_config *etcd, size_t size)
{
	hr__settings_init(etcd, size, &etcd_defaults, sizeof etcd_defaults);
}

int hr__etcd_config_read(const hr_etcd_config *in, hr__etcd_config *out,
			 hr_error *err)
{
	hr_etcd_config c = etcd_defaults;
	int rc;

	memset(out, 0, sizeof *out);
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config must not be NULL");
	rc = HR__CHECK_SIZE(hr_etcd_config, in, endpoints, err);
	if (rc)
		return rc;
	HR__TAKE(hr_etcd_config, in, &c, endpoints);
	HR__TAKE(hr_etcd_config, in, &c, prefix);
	HR__TAKE(hr_etcd_config, in, &c, api_base);
	HR__TAKE(hr_etcd_config, in, &c, ring);
	HR__TAKE(hr_etcd_config, in, &c, request_timeout_ms);
	HR__TAKE(hr_etcd_config, in, &c, connect_timeout_ms);
	HR__TAKE(hr_etcd_config, in, &c, ca_file);
	HR__TAKE(hr_etcd_config, in, &c, cert_file);
	HR__TAKE(hr_etcd_config, in, &c, key_file);
	HR__TAKE(hr_etcd_config, in, &c, username);
	HR__TAKE(hr_etcd_config, in, &c, password);
	HR__TAKE(hr_etcd_config, in, &c, insecure_skip_verify);
	HR__TAKE(hr_etcd_config, in, &c, log_level);
	HR__TAKE(hr_etcd_config, in, &c, log);
	HR__TAKE(hr_etcd_config, in, &c, log_userdata);

	if (!c.prefix || !c.prefix[0])
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config: prefix must be set and not empty");
	if (strnlen(c.prefix, HR__PREFIX_MAX + 1) > HR__PREFIX_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: prefix longer than %d bytes", HR__PREFIX_MAX);
	if (c.request_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: request_timeout_ms must be > 0 (is %d)",
				     c.request_timeout_ms);
	if (c.connect_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: connect_timeout_ms must be > 0 (is %d)",
				     c.connect_timeout_ms);
	if ((unsigned)c.log_level > HR_LOG_DEBUG)
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config: invalid log_level %d",
				     (int)c.log_level);
	out->etcd = (hr__etcd_opts){
		.endpoints = c.endpoints,
		.api_base = c.api_base,
		.request_timeout_ms = c.request_timeout_ms,
		.connect_timeout_ms = c.connect_timeout_ms,
		.ca_file = c.ca_file,
		.cert_file = c.cert_file,
		.key_file = c.key_file,
		.insecure_skip_verify = c.insecure_skip_verify,
		.username = c.username,
		.password = c.password,
	};
	out->prefix = c.prefix;
	out->ring = c.ring;
	out->log = (hr__log){ c.log, c.log_userdata, c.log_level };
	return 0;
}
