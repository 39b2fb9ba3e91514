/* SPDX-License-Identifier: MIT */
/* ring_options.c - hr_ring_options: its defaults and its one reading
 * (ring_options.h, settings.h). */
#include "ring_options.h"

#include "error.h"
#include "maglev.h"
#include "settings.h"

HR__NO_TAIL_PADDING(hr_ring_options, maglev_size);

static const hr_ring_options ring_defaults = {
	.size = sizeof(hr_ring_options),
	.vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT,
	.placement = HR_PLACEMENT_XXH3,
};

void hr_ring_options_init_size(hr_ring_options *opts, size_t size)
{
	hr__settings_init(opts, size, &ring_defaults, sizeof ring_defaults);
}

int hr__ring_options_read(const hr_ring_options *in, hr_ring_options *out,
			  hr_error *err)
{
	int rc;

	*out = ring_defaults;
	if (!in)
		return 0;
	rc = HR__CHECK_SIZE(hr_ring_options, in, vnodes_per_weight, err);
	if (rc)
		return rc;
	HR__TAKE(hr_ring_options, in, out, vnodes_per_weight);
	HR__TAKE(hr_ring_options, in, out, placement);
	HR__TAKE(hr_ring_options, in, out, maglev_size);
	if (!out->vnodes_per_weight)
		out->vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT;
	if (!out->maglev_size)
		out->maglev_size = HR_MAGLEV_SIZE_DEFAULT;
	if (out->placement != HR_PLACEMENT_XXH3 && out->placement != HR_PLACEMENT_KETAMA &&
	    out->placement != HR_PLACEMENT_MAGLEV &&
	    out->placement != HR_PLACEMENT_RENDEZVOUS &&
	    out->placement != HR_PLACEMENT_TOKENS)
		return hr__error_set(err, HR_EINVAL, "hr_ring_options: unknown placement %d",
				     (int)out->placement);
	if (out->placement == HR_PLACEMENT_MAGLEV)
		return hr__maglev_size_check(out->maglev_size, err);
	return 0;
}
