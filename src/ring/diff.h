/* SPDX-License-Identifier: MIT */
/* diff.h - what the library reads of a ring diff beyond the public API
 * (internal). */
#ifndef HR_DIFF_H
#define HR_DIFF_H

#include "hashring.h"

/* The share of the key space the diff moves: the exact sum of its arcs,
 * rounded once, equal to hr_ring_moved_share() of its rings and view, at
 * no cost (the watcher's log line takes it from the diff it made anyway).
 * 0 for NULL. */
double hr__diff_moved_share(const hr_diff *diff);

#endif
