/* SPDX-License-Identifier: MIT */
/* update.h - in-place edits of a node's record in etcd, shared by a
 * registrar changing its own record and an operator's hr_node_update()
 * (internal). */
#ifndef HR_UPDATE_H
#define HR_UPDATE_H

#include "etcd.h"
#include "hashring.h"
#include "update_heirs.h"

/*
 * Applies `upd` (already read and checked) to the record of node `id` at
 * `key`: reads it, changes the fields named, keeps every other, checks
 * the result with the clients' ring options `opts` (hr_node_check), and
 * puts it on condition that the key is still as read, retrying a few times
 * if it changed.  On success *written (if not NULL) gets the value put,
 * malloc'd.  Errors: HR_ENOTFOUND (no key), HR_EPARSE (not a record),
 * HR_EINVAL and HR_ELIMIT (a record the clients would refuse: nothing is
 * written), the claim's error, the etcd errors, HR_EETCD when the record
 * keeps changing.
 */
int hr__record_update(hr__etcd *e, const char *key, const char *id,
		      const hr_ring_options *opts, const hr_record_update *upd,
		      const hr__record_writer *w, char **written, hr_error *err);

#endif
