/* SPDX-License-Identifier: MIT */
/* register_tokens.h - registering with allocated tokens: read, allocate,
 * put if unchanged, again on a change (internal). */
#ifndef HR_REGISTER_TOKENS_H
#define HR_REGISTER_TOKENS_H

#include "etcd.h"
#include "hashring.h"

/*
 * The ring of the records under `prefix` as a client with `opts` builds it
 * (bad records left out), at the revision etcd gives in *revision.  With
 * `records` not NULL, *records and *nrecords get the keys and values read
 * (hr__kvs_free).  Errors: those of etcd and of the build, HR_ENOMEM.
 */
int hr__records_ring(hr__etcd *e, const char *prefix, const hr_ring_options *opts,
		     hr_ring **ring, int64_t *revision, hr__kv **records,
		     size_t *nrecords, hr_error *err);

/* Called between the allocation and the put of each attempt (tests: a
 * record put there makes the attempt fail). */
typedef void (*hr__tokens_race_fn)(void *userdata, int attempt);

/* A registration with allocated tokens. */
typedef struct hr__tokens_join {
	hr__etcd *etcd;
	const char *prefix;        /* the records' */
	const char *key;           /* the node's, below prefix */
	const hr_node *node;
	size_t ntokens;
	const hr_ring_options *opts;   /* as the clients build the ring */
	int64_t lease;             /* the record's; 0: none */
	int64_t lease_ttl_s;       /* renewed every third of it meanwhile */
	int64_t renewed_ms;        /* in: when the lease was granted
				      (hr__now_ms()); out: last renewed */
	int budget_ms;             /* conflicts are retried this long; 0:
				      30 s */
	hr__tokens_race_fn race;   /* tests; NULL */
	void *userdata;
} hr__tokens_join;

/*
 * Registers `node` under `key` with `ntokens` tokens allocated against the
 * ring of the records under `prefix`, attached to `lease`: the put happens
 * only if the key is absent and no key under the prefix was put since the
 * records were read.  Else the records are read and the tokens allocated
 * again after a random wait (up to 20 ms, the bound doubling with each
 * conflict up to 1 s), for up to `budget_ms`, then HR_ECONFLICT; so are
 * attempts that etcd could not answer (HR_ETIMEDOUT, HR_ECONNECT,
 * HR_EETCD: the last one is returned once the time is up), and the lease
 * is renewed meanwhile.  *value gets the record written or to write
 * (malloc'd); *done is 0 when the key exists under another lease or none
 * (the caller's move, with that value), 1 when written (the key under our
 * lease is ours: an attempt whose answer was lost); *attempts counts the
 * reads.  Errors: those of etcd, hr_tokens_allocate(), HR_ECONFLICT,
 * HR_ENOTFOUND (the lease expired), HR_ENOMEM.
 */
int hr__register_tokens(hr__tokens_join *join, char **value, int *done,
			int *attempts, hr_error *err);

/* Sleeps `ms`, renewing join->lease (if any) when due, as between the
 * attempts of hr__register_tokens(): also a registrar's hand-over, whose
 * renewal thread waits meanwhile.  Errors: those of etcd, HR_ENOTFOUND
 * (the lease expired). */
int hr__tokens_wait(hr__tokens_join *join, int64_t ms, hr_error *err);

#endif
