/* SPDX-License-Identifier: MIT */
/*
 * ketama.h - placement compatible with libmemcached's weighted ketama
 * (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, libmemcached 1.1.4): the MD5 key
 * hash, the server names, the point counts and the sorted continuum; the
 * placement itself is hr__placement_ketama (placement.h).  Internal;
 * docs/placement.md section 11 is the specification.
 */
#ifndef HR_KETAMA_H
#define HR_KETAMA_H

#include "hashring.h"

/* libmemcached's port for which a server name carries no ":port". */
#define HR__KETAMA_DEFAULT_PORT 11211

/* One server of a continuum, in server-list order. */
struct hr__ketama_server {
	const char *addr;	/* "host", "host:port" or "[v6]:port" */
	double weight;		/* a whole number, 1 .. UINT32_MAX */
};

/* One point: `server` indexes the list given to hr__ketama_continuum(). */
struct hr__ketama_point {
	uint32_t value;
	uint32_t server;
};

/* The 32-bit key hash: the first four bytes of MD5(key), little endian. */
uint32_t hr__ketama_key_hash(const void *key, size_t len);

/* Points of server `i` among `servers`: libmemcached's float32 formula. */
unsigned hr__ketama_server_points(const struct hr__ketama_server *servers,
				  size_t n, size_t i);

/*
 * Builds the continuum of `n` servers: *out gets a malloc'd array of
 * *npoints points sorted by value, ties by server index.  n may be 0
 * (then *out is NULL).  Errors: HR_EINVAL (bad addr or weight), HR_ELIMIT,
 * HR_ENOMEM.
 */
int hr__ketama_continuum(const struct hr__ketama_server *servers, size_t n,
			 struct hr__ketama_point **out, size_t *npoints,
			 hr_error *err);

#endif
