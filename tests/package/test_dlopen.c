/* SPDX-License-Identifier: MIT */
/*
 * test_dlopen.c - the shared library can be loaded with dlopen(), used from
 * several threads and closed while one of them still runs.
 *
 * The lookup path keeps per-thread references in initial-exec TLS (which a
 * dlopen()ed library takes from glibc's static TLS reserve) and releases
 * them from a thread-exit destructor, as liburcu-bp does for its own
 * per-thread state; a thread exiting after dlclose() runs both.  So the
 * library is built never to be unloaded ("nodelete"), and stays mapped.
 */
#include "hrt_check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashring.h"

#ifndef HR_LIB_PATH
#error "HR_LIB_PATH comes from the build"
#endif

struct api {
	void (*etcd_config_init_size)(hr_etcd_config *, size_t);
	void (*client_config_init_size)(hr_client_config *, size_t);
	int (*client_open)(const hr_etcd_config *, const hr_client_config *,
			   hr_client **, hr_error *);
	int (*client_lookup)(hr_client *, const void *, size_t, hr_owner *, hr_error *);
	void (*client_close)(hr_client *);
};

struct looker {
	struct api *api;
	hr_client *client;
	int rc;
	pthread_barrier_t looked, unloaded;
};

static void quiet(void *ud, hr_log_level level, const char *line)
{
	(void)ud;
	(void)level;
	(void)line;
}

/* Looks up, then outlives the library: it exits only after dlclose(). */
static void *look_and_linger(void *p)
{
	struct looker *l = p;
	hr_owner o;

	l->rc = l->api->client_lookup(l->client, "key", 3, &o, NULL);
	pthread_barrier_wait(&l->looked);
	pthread_barrier_wait(&l->unloaded);
	return NULL;
}

static int still_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		found |= strstr(line, HR_LIB_PATH) != NULL;
	fclose(f);
	return found;
}

START_TEST(load_use_unload)
{
	void *lib = dlopen(HR_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
	struct api api;
	struct looker l;
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_owner o;
	pthread_t th;

	ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
	*(void **)&api.etcd_config_init_size = dlsym(lib, "hr_etcd_config_init_size");
	*(void **)&api.client_config_init_size = dlsym(lib, "hr_client_config_init_size");
	*(void **)&api.client_open = dlsym(lib, "hr_client_open");
	*(void **)&api.client_lookup = dlsym(lib, "hr_client_lookup");
	*(void **)&api.client_close = dlsym(lib, "hr_client_close");
	ck_assert(api.etcd_config_init_size && api.client_config_init_size &&
		  api.client_open && api.client_lookup && api.client_close);

	/* Nobody listens on port 1: the client serves its empty ring. */
	api.etcd_config_init_size(&etcd, sizeof etcd);
	api.client_config_init_size(&cfg, sizeof cfg);
	etcd.endpoints = "127.0.0.1:1";
	etcd.prefix = "/dlopen/";
	etcd.log = quiet;
	cfg.open_nonblocking = 1;
	memset(&l, 0, sizeof l);
	l.api = &api;
	ck_assert_int_eq(api.client_open(&etcd, &cfg, &l.client, NULL), 0);
	ck_assert_int_eq(api.client_lookup(l.client, "key", 3, &o, NULL), HR_EEMPTY);

	pthread_barrier_init(&l.looked, NULL, 2);
	pthread_barrier_init(&l.unloaded, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, look_and_linger, &l), 0);
	pthread_barrier_wait(&l.looked);
	ck_assert_int_eq(l.rc, HR_EEMPTY);
	api.client_close(l.client);
	ck_assert_int_eq(dlclose(lib), 0);
	ck_assert_int_eq(still_mapped(), 1);
	/* The thread exits now and runs its destructors: in unmapped code
	 * they would crash the process. */
	pthread_barrier_wait(&l.unloaded);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&l.looked);
	pthread_barrier_destroy(&l.unloaded);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dlopen");
	TCase *tc = tcase_create("dlopen");

	tcase_add_test(tc, load_use_unload);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
