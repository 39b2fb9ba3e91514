/* SPDX-License-Identifier: MIT */
/*
 * host_reader.h - a reader attached to an agent's directory (internal):
 * the control page mapped, the newest snapshot mapped as a ring.  A client
 * whose source is an agent (hr_client_config.agent_dir) holds one; its
 * lookups test hr__host_changed() and, when it says so, one of them maps
 * the new snapshot (hr__host_follow) while the others go on with the
 * ring they have.  No thread, no socket, no lock on a lookup that finds
 * nothing new.
 */
#ifndef HR_HOST_READER_H
#define HR_HOST_READER_H

#include "control.h"
#include "hashring.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct hr__host_reader {
	const struct hr__control *ctl;	/* mapped read-only, shared */
	uint64_t generation;		/* of the snapshot last tried (0:
					   none); atomic */
	uint64_t seen;			/* the page's `changes` handled;
					   atomic */
	bool stale;			/* a stale notice was logged; the
					   follower's */
	/* The process whose thread maps (0: none): a lock that a child of
	 * fork() takes over from a thread of its parent. */
	int follower;			/* atomic pid_t */
	int dfd;			/* the directory */
	char *dir;			/* for messages */
} hr__host_reader;

/*
 * Attaches to directory `dir`: opens it (not through a symlink) and maps
 * its control page.  Errors: HR_ENOTFOUND (no directory, or no agent ever
 * ran there: no control page), HR_EPARSE (a control page of another
 * format), HR_EIO with the system's reason, HR_ENOMEM.
 */
int hr__host_attach(const char *dir, hr__host_reader **out, hr_error *err);

/* Whether the control page changed since the reader last followed it (a
 * new generation, a staleness notice): one load from the page. */
static inline bool hr__host_changed(const hr__host_reader *r)
{
	return __atomic_load_n(&r->ctl->changes, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&r->seen, __ATOMIC_RELAXED);
}

/* Whether the control page names a generation other than the one last
 * tried. */
static inline bool hr__host_new_generation(const hr__host_reader *r)
{
	return __atomic_load_n(&r->ctl->generation, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&r->generation, __ATOMIC_RELAXED);
}

/*
 * Maps the snapshot the control page names now, as a ring (*out, a
 * reference), and makes it the reader's generation.  A file already
 * removed (the agent published twice meanwhile) is looked for again under
 * the newer generation.  HR_ENOTFOUND when the agent has published
 * nothing yet; HR_EPARSE for a snapshot refused (the message saying why:
 * the reader keeps its ring, and tries that generation again only when
 * the control page changes); HR_EIO; HR_ENOMEM.  Between
 * hr__host_follow_begin() and _end().
 */
int hr__host_map_current(hr__host_reader *r, hr_ring **out, hr_error *err);

/* The right to map, for the calling thread: false while another thread
 * of this process has it (the caller goes on with the ring it has). */
bool hr__host_follow_begin(hr__host_reader *r);
void hr__host_follow_end(hr__host_reader *r);

/* The agent's state from its control page: its pid (0: closed), the age
 * of its heartbeat and of its ring's last confirmation with etcd (ms). */
void hr__host_agent(const hr__host_reader *r, uint64_t *pid, int64_t *beat_age_ms,
		    int64_t *unconfirmed_ms);

/* Whether the agent says its ring is stale (control.h). */
static inline bool hr__host_agent_stale(const hr__host_reader *r)
{
	return __atomic_load_n(&r->ctl->stale, __ATOMIC_RELAXED) != 0;
}

/* A heartbeat older than this says the agent stopped (it beats about
 * every second). */
#define HR__HOST_BEAT_LATE_MS 3000

void hr__host_detach(hr__host_reader *r);

#endif
