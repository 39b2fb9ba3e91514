/* SPDX-License-Identifier: MIT */
/* state.c - the node states by name, as records, the CLI and the settings
 * readers write and read them; state.h says which views each state is in. */
#include "state.h"

#include "error.h"

#include <string.h>

static const char *const state_names[] = { "active", "warming", "draining" };

const char *hr_state_name(hr_state state)
{
	if ((unsigned)state >= sizeof state_names / sizeof state_names[0])
		return NULL;
	return state_names[state];
}

int hr_state_parse(const char *name, hr_state *out, hr_error *err)
{
	if (!name || !out)
		return hr__error_set(err, HR_EINVAL, "state parse: %s is NULL",
				     name ? "out" : "name");
	for (unsigned i = 0; i < sizeof state_names / sizeof state_names[0]; i++) {
		if (strcmp(name, state_names[i]) == 0) {
			*out = (hr_state)i;
			return HR_OK;
		}
	}
	return hr__error_set(err, HR_EINVAL,
			     "unknown state \"%.32s\" (active, warming or draining)", name);
}
