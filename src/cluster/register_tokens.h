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

/*
 * Registers `node` under `key` (below `prefix`) with `ntokens` tokens
 * allocated against the ring of the records under `prefix` as a client with
 * `opts` builds it, attached to `lease`: the put happens only if the key is
 * absent and no key under the prefix was put since the records were read,
 * else the records are read and the tokens allocated again (up to 8 times,
 * then HR_ECONFLICT).  *value gets the record written or to write
 * (malloc'd); *done is 0 when the key exists (the caller's move, with that
 * value), 1 when written; *attempts counts the reads.  Errors: those of
 * etcd, hr_tokens_allocate(), HR_ECONFLICT, HR_ENOMEM.
 */
int hr__register_tokens(hr__etcd *e, const char *prefix, const char *key,
			const hr_node *node, size_t ntokens,
			const hr_ring_options *opts, int64_t lease,
			hr__tokens_race_fn race, void *userdata, char **value,
			int *done, int *attempts, hr_error *err);

#endif
