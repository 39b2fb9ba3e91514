/* SPDX-License-Identifier: MIT */
/*
 * host_reader.c - a reader attached to an agent's directory: its control
 * page mapped, the snapshot it names mapped as a ring (host_reader.h).
 */
#define _GNU_SOURCE
#include "host_reader.h"

#include "clock.h"
#include "error.h"
#include "fork.h"
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int hr__host_attach(const char *dir, hr__host_reader **out, hr_error *err)
{
	hr__host_reader *r;
	struct stat st;
	void *p;
	int fd;

	if (!dir || !*dir || !out)
		return hr__error_set(err, HR_EINVAL, "agent_dir: NULL or empty");
	*out = NULL;
	r = calloc(1, sizeof *r);
	if (!r || !(r->dir = strdup(dir))) {
		free(r);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	r->dfd = -1;
	r->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->dfd < 0) {
		int e = errno;

		hr__host_detach(r);
		return hr__error_set(err, e == ENOENT ? HR_ENOTFOUND : HR_EIO,
				     "agent directory %s: %s", dir,
				     e == ENOENT ? "does not exist (no agent ran there)" :
				     e == ELOOP ? "a symlink (not followed)" : strerror(e));
	}
	fd = openat(r->dfd, HR__CONTROL_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		hr__host_detach(r);
		return hr__error_set(err, e == ENOENT ? HR_ENOTFOUND : HR_EIO,
				     "agent directory %s: %s", dir,
				     e == ENOENT ? "no control page (no agent ever ran there)" :
				     strerror(e));
	}
	if (!S_ISREG(st.st_mode) || st.st_size != HR__CONTROL_BYTES) {
		close(fd);
		hr__host_detach(r);
		return hr__error_set(err, HR_EPARSE, "agent directory %s: a control page of "
				     "%lld bytes, not %u", dir, (long long)st.st_size,
				     HR__CONTROL_BYTES);
	}
	p = mmap(NULL, HR__CONTROL_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		int e = errno;

		hr__host_detach(r);
		return hr__error_set(err, HR_EIO, "agent directory %s: mmap: %s", dir,
				     strerror(e));
	}
	r->ctl = p;
	if (__atomic_load_n(&r->ctl->magic, __ATOMIC_ACQUIRE) != HR__CONTROL_MAGIC ||
	    r->ctl->version != HR__CONTROL_VERSION) {
		uint32_t v = r->ctl->version;

		hr__host_detach(r);
		return hr__error_set(err, HR_EPARSE, "agent directory %s: a control page of "
				     "another format (version %u, this reader reads %u)", dir,
				     v, HR__CONTROL_VERSION);
	}
	*out = r;
	return HR_OK;
}

int hr__host_map_current(hr__host_reader *r, hr_ring **out, hr_error *err)
{
	int rc = HR_OK;

	*out = NULL;
	/* Newer generations while the one read is being removed: a few
	 * tries, each after reading the page again. */
	for (int tries = 0; tries < 4; tries++) {
		uint64_t gen = __atomic_load_n(&r->ctl->generation, __ATOMIC_ACQUIRE);
		char name[HR__SNAP_NAME_MAX];

		if (!gen) {
			rc = hr__error_set(err, HR_ENOTFOUND, "agent directory %s: the agent "
					   "has published no ring yet", r->dir);
			break;
		}
		hr__snap_name(name, gen);
		rc = hr__snapshot_map(r->dfd, name, out, err);
		if (rc == HR_ENOTFOUND &&
		    __atomic_load_n(&r->ctl->generation, __ATOMIC_ACQUIRE) != gen)
			continue;
		/* Tried: not again until the page names another. */
		__atomic_store_n(&r->generation, gen, __ATOMIC_RELAXED);
		break;
	}
	return rc;
}

bool hr__host_follow_begin(hr__host_reader *r)
{
	int me = (int)hr__process(), v = 0;

	if (__atomic_compare_exchange_n(&r->follower, &v, me, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return true;
	/* Held by a thread of the parent, which is not in this child. */
	return v != me && __atomic_compare_exchange_n(&r->follower, &v, me, false,
						       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void hr__host_follow_end(hr__host_reader *r)
{
	__atomic_store_n(&r->follower, 0, __ATOMIC_RELEASE);
}

void hr__host_agent(const hr__host_reader *r, uint64_t *pid, int64_t *beat_age_ms,
		    int64_t *unconfirmed_ms)
{
	int64_t now = hr__now_ms();
	int64_t beat = __atomic_load_n(&r->ctl->heartbeat_ms, __ATOMIC_ACQUIRE);
	int64_t conf = __atomic_load_n(&r->ctl->confirmed_ms, __ATOMIC_RELAXED);

	*pid = __atomic_load_n(&r->ctl->pid, __ATOMIC_RELAXED);
	*beat_age_ms = beat ? now - beat : -1;
	*unconfirmed_ms = conf ? now - conf : -1;
}

void hr__host_detach(hr__host_reader *r)
{
	if (!r)
		return;
	if (r->ctl)
		munmap((void *)r->ctl, HR__CONTROL_BYTES);
	if (r->dfd >= 0)
		close(r->dfd);
	free(r->dir);
	free(r);
}
