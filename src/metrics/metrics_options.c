/* SPDX-License-Identifier: MIT */
/* metrics_options.c - hr_metrics_options: its defaults and its one
 * reading (metrics_options.h, settings.h). */
#include "metrics_options.h"

#include "error.h"
#include "settings.h"

#include <inttypes.h>

HR__NO_TAIL_PADDING(hr_metrics_options, omit);

static const hr_metrics_options metrics_defaults = {
	.size = sizeof(hr_metrics_options),
};

void hr_metrics_options_init_size(hr_metrics_options *opts, size_t size)
{
	hr__settings_init(opts, size, &metrics_defaults, sizeof metrics_defaults);
}

/* The omit flags this release knows. */
#define KNOWN_OMIT ((uint64_t)(HR_METRICS_OMIT_NODES | HR_METRICS_OMIT_LOOKUPS | \
				 HR_METRICS_OMIT_HOT_KEYS | HR_METRICS_OMIT_RING))


int hr__metrics_options_read(const hr_metrics_options *in, hr_metrics_options *out,
			     hr_error *err)
{
	int rc;

	*out = metrics_defaults;
	if (!in)
		return 0;
	rc = HR__CHECK_SIZE(hr_metrics_options, in, name_prefix, err);
	if (rc)
		return rc;
	HR__TAKE(hr_metrics_options, in, out, name_prefix);
	HR__TAKE(hr_metrics_options, in, out, labels);
	HR__TAKE(hr_metrics_options, in, out, label_count);
	HR__TAKE(hr_metrics_options, in, out, omit);
	if (out->omit & ~KNOWN_OMIT)
		return hr__error_set(err, HR_EINVAL,
				     "hr_metrics_options: unknown flags 0x%" PRIx64 " in omit",
				     out->omit & ~KNOWN_OMIT);
	return 0;
}
