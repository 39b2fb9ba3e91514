/* SPDX-License-Identifier: MIT */
/* update_heirs.h - the writer of an edited record, and the edit that
 * hands a leaving node's tokens to its heirs (internal; update.h's edits
 * call it, so it depends on nothing of theirs). */
#ifndef HR_UPDATE_HEIRS_H
#define HR_UPDATE_HEIRS_H

#include "etcd.h"
#include "hashring.h"
#include "log.h"
#include "register_tokens.h"

/* Who writes an edited record. */
typedef struct hr__record_writer {
	/* The lease the put attaches; 0 keeps the key's own (an operator). */
	int64_t lease;
	/* Called with the key as read before each put: 0 to go on, else the
	 * error that ends the edit (the key is another registrar's).  NULL:
	 * anyone's key may be edited. */
	int (*claim)(void *userdata, const hr__kv *kv, hr_error *err);
	void *userdata;
	/* Where a hand-over that took more than one attempt says so. */
	const hr__log *log;
	/* How long a hand-over's conflicts are retried; 0: 30 s. */
	int64_t budget_ms;
	/* Waits `ms` between a hand-over's attempts, with userdata; NULL:
	 * sleeps.  An error ends the hand-over. */
	int (*wait)(void *userdata, int64_t ms, hr_error *err);
} hr__record_writer;

/*
 * hr__record_update() of an `upd` with HR_UPDATE_HEIRS (update_heirs.c,
 * docs/placement.md section 16, "Leaving"): the records under the prefix
 * (`key` less `id`) read at one revision, heirs chosen in their ring
 * (hr_tokens_heirs), and in one transaction the node's record edited and
 * each heir's listing the tokens it takes, on condition that no record
 * changed since; else read and choose again after w->wait's random wait
 * (backoff.h) for up to w->budget_ms, then HR_ECONFLICT; more than one
 * attempt is logged (event=heirs_rechosen) to w->log.  Errors as for
 * hr__record_update, plus HR_EINVAL (not the tokens placement, a node
 * without tokens, no heir: from hr_tokens_heirs), HR_ELIMIT (more heirs
 * than one transaction takes), HR_ECONFLICT, w->wait's.  `race` (NULL:
 * none) is called with `userdata` between the read and the transaction of
 * each attempt (tests).
 */
int hr__record_hand_over(hr__etcd *e, const char *key, const char *id,
			 const hr_ring_options *opts, const hr_record_update *upd,
			 const hr__record_writer *w, hr__tokens_race_fn race,
			 void *userdata, char **written, hr_error *err);

#endif
