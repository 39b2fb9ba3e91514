/* SPDX-License-Identifier: MIT */
/*
 * hashring/host.h - host rings: one process of a host (the agent,
 * `hashring agent`) keeps the ring in sync with etcd and publishes each
 * ring it builds into a directory, as an immutable snapshot file; the
 * host's other processes map the newest one and look up in it in place
 * (docs/agent.md).  This header is the agent's side: a directory held,
 * rings published into it.
 */
#ifndef HASHRING_HOST_H
#define HASHRING_HOST_H

#include "hashring/common.h"
#include "hashring/ring.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An agent's directory, held: the only writer of it while open.  What the
 * directory holds (docs/agent.md, "The directory"):
 *
 *   agent.lock          the agent's lock (flock) and pid
 *   control             the current snapshot's generation and revision,
 *                       the agent's pid and heartbeat, whether its ring is
 *                       confirmed current with etcd; one page, mapped by
 *                       every reader
 *   ring-<gen>.snap     one snapshot per published ring (generation
 *                       <gen>, 20 decimal digits); the newest
 *                       HR_HOST_KEEP are kept, older ones removed
 *
 * Readers attach through hr_client_config.agent_dir (hashring/client.h).
 * Generations count up across the agent's restarts (the control file
 * keeps the count), so a reader follows a new agent without restarting.
 */
typedef struct hr_host hr_host;

/* Snapshots kept in the directory: the current one and those before it
 * that a reader may still be opening (a reader that finds its file gone
 * reads the control page again). */
#define HR_HOST_KEEP 3

typedef struct hr_host_config {
	size_t size;        /* sizeof, set by hr_host_config_init()        */
	/* The group whose members may read the directory: it and its files
	 * are given to it (the agent's user must be a member, or root).
	 * NULL (the default): the agent's own group. */
	const char *group;
} hr_host_config;

/* Sets `size` bytes of `cfg` to the defaults (see hr_ring_options_init). */
HR_EXPORT void hr_host_config_init_size(hr_host_config *cfg, size_t size);
#define hr_host_config_init(cfg) hr_host_config_init_size((cfg), sizeof *(cfg))

/*
 * Takes directory `dir` for this process: creates it if it does not
 * exist (mode 0750, and its parent must), refuses one that is a symlink
 * or not owned by the process's user, sets its group (cfg->group) and
 * mode 0750, and takes its lock.  The files it writes are 0640, never
 * written through a symlink.  *out is the held directory;
 * hr_host_close() releases it.  Errors: HR_EINVAL (NULL, a bad config,
 * an unknown group); HR_EEXIST when another agent holds the directory,
 * the message naming its pid; HR_EPERM for a directory the process may
 * not take (owner, symlink, mode), the message saying which; HR_EIO with
 * the system's reason; HR_ENOMEM.  Not thread safe with the other calls
 * on the same object.
 */
HR_EXPORT int hr_host_open(const char *dir, const hr_host_config *cfg,
			   hr_host **out, hr_error *err);

/*
 * Publishes `ring` (borrowed: read during the call): writes it as the
 * next generation's snapshot (complete and flushed to disk before its
 * name appears), then sets the control page to that generation, so a
 * reader never sees a partial file; then removes the snapshots older
 * than the newest HR_HOST_KEEP.  Returns the new generation (> 0), or
 * HR_EIO (the directory's state is unchanged: the last generation stays
 * current), HR_EINVAL (NULL), HR_ENOMEM.  Time: about one pass over the
 * ring's points and a write of its memory.
 */
HR_EXPORT int64_t hr_host_publish(hr_host *host, const hr_ring *ring,
				  hr_error *err);

/*
 * The agent's heartbeat: sets the control page's heartbeat to now, and
 * how long ago its ring was last known to match etcd (`unconfirmed_ms`,
 * as hr_client_status gives it; 0: current).  From 10 s unconfirmed the
 * page says the ring is stale (again every 10 s, and when it is current
 * again), and each reader's next lookup logs it, as an in-process client
 * logs its own; readers' hr_client_status() reports the ring unconfirmed
 * when the heartbeat stops.  Call it every second or so, from any one
 * thread (hr_host_publish() may run on another).  NULL: nothing.
 */
HR_EXPORT void hr_host_beat(hr_host *host, int64_t unconfirmed_ms);

/* The generation last published (0: none yet, in this directory ever). */
HR_EXPORT uint64_t hr_host_generation(const hr_host *host);

/* Releases the directory (its lock); the files stay, so readers keep
 * serving the last ring (their status reports it unconfirmed once the
 * heartbeat stops) and follow the next agent's.  NULL: nothing. */
HR_EXPORT void hr_host_close(hr_host *host);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_HOST_H */
