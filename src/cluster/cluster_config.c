/* SPDX-License-Identifier: MIT */
/* cluster_config.c - hr_registration and hr_record_update: their
 * defaults and their one reading (cluster_config.h, settings.h). */
#include "cluster_config.h"

#include "error.h"
#include "settings.h"

#include <math.h>

HR__NO_TAIL_PADDING(hr_registration, backoff_initial_ms);
HR__NO_TAIL_PADDING(hr_record_update, weight);

static const hr_registration registration_defaults = {
	.size = sizeof(hr_registration),
	.weight = 1,
	.state = HR_STATE_WARMING,
	.ttl_s = 10,
	.open_timeout_ms = 10000,
	.backoff_initial_ms = 100,
};

static const hr_record_update update_defaults = {
	.size = sizeof(hr_record_update),
};

void hr_registration_init_size(hr_registration *reg, size_t size)
{
	hr__settings_init(reg, size, &registration_defaults, sizeof registration_defaults);
}

void hr_record_update_init_size(hr_record_update *upd, size_t size)
{
	hr__settings_init(upd, size, &update_defaults, sizeof update_defaults);
}

int hr__registration_read(const hr_registration *in, hr_registration *out,
			  hr_error *err)
{
	int rc;

	*out = registration_defaults;
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_registration must not be NULL");
	rc = HR__CHECK_SIZE(hr_registration, in, id, err);
	if (rc)
		return rc;
	HR__TAKE(hr_registration, in, out, id);
	HR__TAKE(hr_registration, in, out, addr);
	HR__TAKE(hr_registration, in, out, zone);
	HR__TAKE(hr_registration, in, out, weight);
	HR__TAKE(hr_registration, in, out, state);
	HR__TAKE(hr_registration, in, out, ttl_s);
	HR__TAKE(hr_registration, in, out, replace);
	HR__TAKE(hr_registration, in, out, on_lost);
	HR__TAKE(hr_registration, in, out, on_lost_userdata);
	HR__TAKE(hr_registration, in, out, tokens);
	HR__TAKE(hr_registration, in, out, open_timeout_ms);
	HR__TAKE(hr_registration, in, out, backoff_initial_ms);
	if (!out->id || !out->addr)
		return hr__error_set(err, HR_EINVAL, "hr_registration: id and addr are required");
	if (out->ttl_s < 2 || out->ttl_s > 3600)
		return hr__error_set(err, HR_EINVAL,
				     "hr_registration: ttl_s must be 2..3600 (is %d)", out->ttl_s);
	if (out->open_timeout_ms < 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_registration: open_timeout_ms must be 0 or more (is %d)",
				     out->open_timeout_ms);
	if (out->backoff_initial_ms <= 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_registration: backoff_initial_ms must be > 0 (is %d)",
				     out->backoff_initial_ms);
	return 0;
}

int hr__record_update_read(const hr_record_update *in, hr_record_update *out,
			   hr_error *err)
{
	const unsigned known = HR_UPDATE_STATE | HR_UPDATE_WEIGHT | HR_UPDATE_HEIRS;
	int rc;

	*out = update_defaults;
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_record_update must not be NULL");
	rc = HR__CHECK_SIZE(hr_record_update, in, fields, err);
	if (rc)
		return rc;
	HR__TAKE(hr_record_update, in, out, fields);
	HR__TAKE(hr_record_update, in, out, state);
	HR__TAKE(hr_record_update, in, out, weight);
	if (!out->fields)
		return hr__error_set(err, HR_EINVAL, "hr_record_update: fields names nothing to change");
	if (out->fields & ~known)
		return hr__error_set(err, HR_EINVAL, "hr_record_update: unknown flags 0x%x in fields",
				     out->fields & ~known);
	if ((out->fields & HR_UPDATE_STATE) && !hr_state_name(out->state))
		return hr__error_set(err, HR_EINVAL, "hr_record_update: invalid state %d",
				     (int)out->state);
	if ((out->fields & HR_UPDATE_HEIRS) &&
	    (!(out->fields & HR_UPDATE_STATE) || out->state != HR_STATE_DRAINING))
		return hr__error_set(err, HR_EINVAL,
				     "hr_record_update: HR_UPDATE_HEIRS needs the state draining");
	if ((out->fields & HR_UPDATE_WEIGHT) && (!isfinite(out->weight) || out->weight <= 0))
		return hr__error_set(err, HR_EINVAL,
				     "hr_record_update: weight must be a finite number > 0");
	return 0;
}
