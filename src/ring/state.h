/* SPDX-License-Identifier: MIT */
/* state.h - node states: which views a node in each state is in
 * (internal; their names are state.c's, hr_state_name and hr_state_parse). */
#ifndef HR_STATE_H
#define HR_STATE_H

#include "hashring.h"

#include <stdbool.h>

/* Whether a node in `state` has points in `view`: the write view leaves
 * draining nodes out, the read view warming ones. */
static inline bool hr__in_view(hr_state state, hr_view view)
{
	return view == HR_VIEW_WRITE ? state != HR_STATE_DRAINING :
				       state != HR_STATE_WARMING;
}

static inline bool hr__valid_view(hr_view view)
{
	return view == HR_VIEW_WRITE || view == HR_VIEW_READ;
}

/* The view a node in `state` counts its points in: the read view for a
 * draining node, else the write view. */
static inline hr_view hr__home_view(hr_state state)
{
	return state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
}

#endif
