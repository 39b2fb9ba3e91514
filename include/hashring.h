/* SPDX-License-Identifier: MIT */
/*
 * hashring.h - consistent-hash ring of cluster nodes, kept in sync with etcd.
 *
 * These headers are the specification of the public API.  Every function
 * documents its ownership rules, its thread safety and the errors it returns.
 * This one includes one header per concern, each of which also compiles on
 * its own:
 *
 *   hashring/version.h    the version of these headers (macros only)
 *   hashring/common.h     the library's version, error codes and hr_error,
 *                         structs that grow, logging
 *   hashring/ring.h       nodes and states, ring options and placements,
 *                         building and loading rings, lookups, batch
 *                         lookups, preference lists, shares, epochs, ring
 *                         diffs, bounded loads, allocated tokens (offline)
 *   hashring/etcd.h       hr_etcd_config: where the records are in etcd
 *   hashring/client.h     clients: a ring kept in sync with etcd, shared
 *                         watchers, lookups, counts, hot keys, status
 *   hashring/acks.h       acknowledged epochs: which ring every client has
 *   hashring/registrar.h  registration under a lease, record updates
 *   hashring/metrics.h    the Prometheus exposition of rings and clients
 *
 * Not included here: hashring/rebalance.h, the handoff's copy between
 * stores, which belongs to its own library, libhashring-rebalance
 * (pkg-config hashring-rebalance; CMake hashring::rebalance).
 *
 * Conventions
 *   - Functions that can fail return 0 (HR_OK) or a negative HR_E* code;
 *     hr_strerror() turns a code into a fixed English sentence.
 *   - Functions that take an `hr_error *err` fill it, when it is not NULL,
 *     with the code and a one-line message naming the offending input.
 *   - Destructors and release functions accept NULL.
 *   - Placement (which node owns which key) is the contract written down in
 *     docs/placement.md; it never changes within a major version.
 */
#ifndef HASHRING_H
#define HASHRING_H

#include "hashring/version.h"
#include "hashring/common.h"
#include "hashring/ring.h"
#include "hashring/etcd.h"
#include "hashring/client.h"
#include "hashring/acks.h"
#include "hashring/registrar.h"
#include "hashring/metrics.h"
#include "hashring/host.h"

#endif /* HASHRING_H */
