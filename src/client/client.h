/* SPDX-License-Identifier: MIT */
/* client.h - client internals shared with tests and the benchmark
 * (internal). */
#ifndef HR_CLIENT_H
#define HR_CLIENT_H

#include "hashring.h"
#include "publish.h"

#include <stdbool.h>

/* The publisher the client's lookups read from.  Lets a test or the
 * benchmark publish rings of its own through the very path lookups take
 * (with no etcd reachable the watcher never publishes). */
hr__publisher *hr__client_publisher(hr_client *c);

/* Lookup counting on or off (on at open), for lookups on rings the
 * threads move to afterwards: the benchmark measures both on one client. */
void hr__client_count_lookups(hr_client *c, bool on);

#endif
