/* SPDX-License-Identifier: MIT */
/* etcd_endpoints.h - the etcd client's endpoint list as configured
 * (internal to etcd.c).
 *
 * Comma-separated entries; "host:port" alone means http://host:port, as in
 * etcdctl; a trailing '/' is dropped.  An entry's "user[:password]@" is
 * percent-decoded and becomes the etcd user (token auth, never HTTP basic
 * auth) unless a user is configured, and must then agree with it; the
 * endpoints are kept, used and shown without it, and no error message
 * ever shows a password. */
#ifndef HR_ETCD_ENDPOINTS_H
#define HR_ETCD_ENDPOINTS_H

#include "hashring.h"

#include <stddef.h>

#define HR__ENDPOINTS_MAX 32
#define HR__ENDPOINT_LEN_MAX 512

typedef struct hr__endpoints {
	char *url[HR__ENDPOINTS_MAX];  /* "http[s]://host[:port][/path]" */
	size_t n;                      /* at least 1 once parsed */
	char *user;                    /* the etcd user, or NULL */
	char *password;                /* NULL when none was given */
} hr__endpoints;

/*
 * Parses `list` (NULL: http://127.0.0.1:2379) into `out`, settling the
 * user: `user` and `password` as configured, else those of the entries.
 * HR_EINVAL names what is wrong (empty entry, unsupported scheme, blank or
 * control byte, bad %-escape, a URL curl cannot read such as an unclosed
 * IPv6 bracket or a bad port, entries or configuration that disagree);
 * `out` is empty then.
 */
int hr__endpoints_parse(const char *list, const char *user,
			const char *password, hr__endpoints *out, hr_error *err);

/* Frees what `eps` holds, the password wiped first.  Accepts NULL. */
void hr__endpoints_clear(hr__endpoints *eps);

/* Frees a secret (password, token, a request holding one), zeroing it
 * first so that it does not linger in freed memory.  Accepts NULL. */
void hr__secret_free(char *s);

#endif
