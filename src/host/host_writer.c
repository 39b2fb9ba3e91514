/* SPDX-License-Identifier: MIT */
/*
 * host_writer.c - hr_host: an agent's directory held (lock, control page)
 * and its rings published there as snapshots (hashring/host.h).
 */
#define _GNU_SOURCE
#include "hashring.h"
#include "hashring/host.h"

#include "clock.h"
#include "control.h"
#include "error.h"
#include "settings.h"
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct hr_host {
	int dfd;		/* the directory */
	int lock_fd;		/* agent.lock, flocked */
	struct hr__control *ctl;	/* the control page, mapped shared */
	uint64_t generation;	/* the last published */
	bool stale;		/* the last notice's */
	int64_t noticed_ms;	/* when it was given */
	char *dir;		/* for messages */
};

HR__NO_TAIL_PADDING(hr_host_config, group);

static const hr_host_config host_defaults = { .size = sizeof(hr_host_config) };

void hr_host_config_init_size(hr_host_config *cfg, size_t size)
{
	hr__settings_init(cfg, size, &host_defaults, sizeof host_defaults);
}

static int sys_error(hr_error *err, int code, const hr_host *h, const char *what)
{
	return hr__error_set(err, code, "agent directory %s: %s: %s", h->dir, what,
			     strerror(errno));
}

/* The gid of group `name`; -1 with err set if there is none. */
static int group_id(const char *name, gid_t *gid, hr_error *err)
{
	struct group g, *found = NULL;
	char buf[4096];

	if (getgrnam_r(name, &g, buf, sizeof buf, &found) || !found)
		return hr__error_set(err, HR_EINVAL, "hr_host_config: no group \"%.64s\"", name);
	*gid = found->gr_gid;
	return HR_OK;
}

/* Opens, checks and sets up the directory: owned by us, not a symlink,
 * group `gid` (or ours), mode 2750 (set-group-ID: the files made in it
 * take its group). */
static int take_dir(hr_host *h, const char *dir, const gid_t *gid, hr_error *err)
{
	struct stat st;

	if (mkdir(dir, 0750) && errno != EEXIST)
		return sys_error(err, HR_EIO, h, "mkdir");
	h->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (h->dfd < 0)
		return errno == ELOOP || errno == ENOTDIR ?
		       hr__error_set(err, HR_EPERM, "agent directory %s: a symlink or not a "
				     "directory", h->dir) :
		       sys_error(err, HR_EIO, h, "open");
	if (fstat(h->dfd, &st))
		return sys_error(err, HR_EIO, h, "stat");
	if (st.st_uid != geteuid())
		return hr__error_set(err, HR_EPERM, "agent directory %s: owned by uid %u, "
				     "not this process's (%u)", h->dir, (unsigned)st.st_uid,
				     (unsigned)geteuid());
	if (gid && fchown(h->dfd, (uid_t)-1, *gid))
		return sys_error(err, HR_EPERM, h, "chown to the group");
	if (fchmod(h->dfd, 02750))
		return sys_error(err, HR_EPERM, h, "chmod");
	return HR_OK;
}

/* Takes agent.lock, or names the agent that holds it. */
static int take_lock(hr_host *h, hr_error *err)
{
	char pid[32];
	int n;

	h->lock_fd = openat(h->dfd, HR__LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			    0640);
	if (h->lock_fd < 0)
		return sys_error(err, HR_EIO, h, HR__LOCK_FILE);
	if (flock(h->lock_fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK)
			return sys_error(err, HR_EIO, h, "flock");
		n = (int)pread(h->lock_fd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return hr__error_set(err, HR_EEXIST, "agent directory %s: another agent "
				     "(pid %s) holds it", h->dir, pid[0] ? pid : "unknown");
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(h->lock_fd, 0) || pwrite(h->lock_fd, pid, (size_t)n, 0) != n)
		return sys_error(err, HR_EIO, h, "write " HR__LOCK_FILE);
	return HR_OK;
}

/* Maps the control page, made afresh unless it is one of this version:
 * an existing page keeps its generation, so they count on across agents. */
static int take_control(hr_host *h, hr_error *err)
{
	int fd = openat(h->dfd, HR__CONTROL_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			0640);
	struct hr__control *c;
	struct stat st;

	if (fd < 0)
		return sys_error(err, HR_EIO, h, HR__CONTROL_FILE);
	if (fstat(fd, &st) || (st.st_size != HR__CONTROL_BYTES &&
			       ftruncate(fd, HR__CONTROL_BYTES))) {
		close(fd);
		return sys_error(err, HR_EIO, h, HR__CONTROL_FILE);
	}
	c = mmap(NULL, HR__CONTROL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c == MAP_FAILED)
		return sys_error(err, HR_EIO, h, "mmap " HR__CONTROL_FILE);
	h->ctl = c;
	if (c->magic != HR__CONTROL_MAGIC || c->version != HR__CONTROL_VERSION ||
	    c->bytes != HR__CONTROL_BYTES) {
		__atomic_store_n(&c->magic, 0, __ATOMIC_RELAXED);
		memset((char *)c + sizeof c->magic, 0, HR__CONTROL_BYTES - sizeof c->magic);
		c->version = HR__CONTROL_VERSION;
		c->bytes = HR__CONTROL_BYTES;
		/* The magic last: a reader never takes a half-made page. */
		__atomic_store_n(&c->magic, HR__CONTROL_MAGIC, __ATOMIC_RELEASE);
	}
	h->generation = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c->pid, (uint64_t)getpid(), __ATOMIC_RELEASE);
	return HR_OK;
}

/* Removes the snapshots older than the newest HR_HOST_KEEP, and the
 * temporary files of writers that died. */
static void remove_old(hr_host *h)
{
	int fd = openat(h->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		uint64_t g;
		size_t len = strlen(e->d_name);

		if (hr__snap_name_parse(e->d_name, &g) ?
		    g + HR_HOST_KEEP <= h->generation :
		    e->d_name[0] == '.' && len > 4 && !strcmp(e->d_name + len - 4, ".tmp"))
			unlinkat(h->dfd, e->d_name, 0);
	}
	closedir(d);
}

int hr_host_open(const char *dir, const hr_host_config *cfg, hr_host **out,
		 hr_error *err)
{
	hr_host_config c = host_defaults;
	gid_t gid;
	hr_host *h;
	int rc;

	if (!dir || !*dir || !out)
		return hr__error_set(err, HR_EINVAL, "hr_host_open: NULL or empty argument");
	*out = NULL;
	if (cfg) {
		rc = HR__CHECK_SIZE(hr_host_config, cfg, group, err);
		if (rc)
			return rc;
		HR__TAKE(hr_host_config, cfg, &c, group);
	}
	if (c.group && (rc = group_id(c.group, &gid, err)))
		return rc;
	h = calloc(1, sizeof *h);
	if (!h || !(h->dir = strdup(dir))) {
		free(h);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	h->dfd = h->lock_fd = -1;
	rc = take_dir(h, dir, c.group ? &gid : NULL, err);
	if (!rc)
		rc = take_lock(h, err);
	if (!rc)
		rc = take_control(h, err);
	if (rc) {
		/* Not ours: leave the control page alone. */
		if (h->ctl)
			munmap(h->ctl, HR__CONTROL_BYTES);
		h->ctl = NULL;
		hr_host_close(h);
		return rc;
	}
	remove_old(h);
	*out = h;
	return HR_OK;
}

int64_t hr_host_publish(hr_host *h, const hr_ring *ring, hr_error *err)
{
	char name[HR__SNAP_NAME_MAX];
	uint64_t gen;
	int rc;

	if (!h || !ring)
		return hr__error_set(err, HR_EINVAL, "hr_host_publish: NULL argument");
	gen = h->generation + 1;
	hr__snap_name(name, gen);
	rc = hr__snapshot_write(ring, h->dfd, name, gen, err);
	if (rc)
		return rc;
	__atomic_store_n(&h->ctl->revision, hr_ring_revision(ring), __ATOMIC_RELAXED);
	__atomic_store_n(&h->ctl->generation, gen, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->ctl->changes, 1, __ATOMIC_RELEASE);
	/* Durable where the directory is on a disk (a no-op on tmpfs). */
	msync(h->ctl, HR__CONTROL_BYTES, MS_SYNC);
	h->generation = gen;
	remove_old(h);
	return (int64_t)gen;
}

void hr_host_beat(hr_host *h, int64_t unconfirmed_ms)
{
	int64_t now = hr__now_ms();
	bool stale;

	if (!h)
		return;
	__atomic_store_n(&h->ctl->confirmed_ms, now - (unconfirmed_ms > 0 ? unconfirmed_ms : 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->ctl->heartbeat_ms, now, __ATOMIC_RELEASE);
	/* A notice when the ring turns stale, every HR__HOST_STALE_MS while
	 * it stays so, and when it is current again: readers log each. */
	stale = unconfirmed_ms >= HR__HOST_STALE_MS;
	if (stale != h->stale || (stale && now - h->noticed_ms >= HR__HOST_STALE_MS)) {
		h->stale = stale;
		h->noticed_ms = now;
		__atomic_store_n(&h->ctl->stale, stale ? 1u : 0u, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->ctl->changes, 1, __ATOMIC_RELEASE);
	}
}

uint64_t hr_host_generation(const hr_host *h)
{
	return h ? h->generation : 0;
}

void hr_host_close(hr_host *h)
{
	if (!h)
		return;
	if (h->ctl) {
		__atomic_store_n(&h->ctl->pid, 0, __ATOMIC_RELEASE);
		munmap(h->ctl, HR__CONTROL_BYTES);
	}
	if (h->lock_fd >= 0)
		close(h->lock_fd);
	if (h->dfd >= 0)
		close(h->dfd);
	free(h->dir);
	free(h);
}
