/* SPDX-License-Identifier: MIT */
/* placements.c - the placements by hr_placement value: the one list a new
 * placement joins (see placement.h). */
#include "placements.h"

#include "error.h"

static const hr__placement *const placements[] = {
	[HR_PLACEMENT_XXH3] = &hr__placement_xxh3,
	[HR_PLACEMENT_KETAMA] = &hr__placement_ketama,
	[HR_PLACEMENT_MAGLEV] = &hr__placement_maglev,
	[HR_PLACEMENT_RENDEZVOUS] = &hr__placement_rendezvous,
	[HR_PLACEMENT_TOKENS] = &hr__placement_tokens,
};

int hr__placement_get(const hr_ring_options *opts, const hr__placement **out,
		      hr_error *err)
{
	hr_placement pl = opts ? opts->placement : HR_PLACEMENT_XXH3;

	if ((unsigned)pl >= sizeof placements / sizeof placements[0] ||
	    !placements[pl]) {
		*out = NULL;
		return hr__error_set(err, HR_EINVAL, "unknown placement %d",
				     (int)pl);
	}
	*out = placements[pl];
	return HR_OK;
}
