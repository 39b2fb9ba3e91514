/* SPDX-License-Identifier: MIT */
/* share.h - which watcher a client follows (internal).
 *
 * A feed is one watcher with the clients it publishes to (subscribers.h)
 * and the settings it runs with.  A client opened without a share gets a
 * feed of its own.  A share (hr_share) keeps the feeds of the clients
 * opened with it, keyed by the settings a watcher depends on in a
 * canonical byte string, so that a client with equal settings finds the
 * running feed and subscribes to it; the last client to leave a feed
 * stops its watcher.  The share's lock covers its list of feeds and who
 * subscribes to them: joining and leaving take it, then the subscribers'
 * lock; a publication takes the subscribers' lock alone.
 */
#ifndef HR_SHARE_H
#define HR_SHARE_H

#include "client_config.h"
#include "subscribers.h"
#include "watch.h"

typedef struct hr__feed hr__feed;

/*
 * Subscribes `sub` (see hr__subs_add) to the feed of `share` for these
 * settings, starting one if it has none, or to a feed of its own when
 * `share` is NULL.  On success *out is the feed, followed until
 * hr__feed_leave().  Errors: those of hr__watcher_start(), HR_ENOMEM.
 */
int hr__feed_join(hr_share *share, const hr__conn *conn,
		  const hr_client_config *cc, hr__subscriber *sub,
		  hr__feed **out, hr_error *err);

/* Unsubscribes `sub`; the last subscriber stops the watcher and frees the
 * feed (and the share, if its owner freed it already). */
void hr__feed_leave(hr__feed *f, hr__subscriber *sub);

hr__watcher *hr__feed_watcher(hr__feed *f);

/* How many clients follow the feed. */
size_t hr__feed_clients(hr__feed *f);

#endif
