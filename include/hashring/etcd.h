/* SPDX-License-Identifier: MIT */
/*
 * hashring/etcd.h - where a cluster's node records are in etcd, and how to
 * reach them: hr_etcd_config, shared by clients, registrars, record
 * updates and the acks.
 */
#ifndef HASHRING_ETCD_H
#define HASHRING_ETCD_H

#include "hashring/common.h"
#include "hashring/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* etcd: where the node records are, and how to reach them                  */
/* ------------------------------------------------------------------------ */

/*
 * What a client (hr_client_open), a registrar (hr_registrar_open) and an
 * operator's change (hr_node_update) share: the node records under one
 * prefix, the connection to etcd, and the ring options every client of
 * that prefix uses.  Read when called, never kept: strings are copied.
 * Grows (see "Structs that grow").
 */
typedef struct hr_etcd_config {
	size_t size;             /* sizeof, set by hr_etcd_config_init()     */
	/* Comma-separated endpoints; "host:port" means http://host:port.
	 * NULL: "http://127.0.0.1:2379".  "http://user:password@host:port"
	 * (percent-encoded, as curl takes it) gives the etcd user and
	 * password when `username` is NULL; when it is set, the two must
	 * agree (HR_EINVAL).  An entry curl cannot read as a URL (an unclosed
	 * IPv6 bracket, a port past 65535) is HR_EINVAL when opening, not a
	 * connection error.  Endpoints appear in log lines, error messages
	 * and hr_client_status without their "user:password@". */
	const char *endpoints;
	/* Key prefix of the records, used verbatim (normally ends in '/');
	 * 1..4096 bytes.  Required. */
	const char *prefix;
	/* Gateway base path; NULL means "/v3". */
	const char *api_base;
	/* The ring options of the clients (NULL: the defaults).  A client
	 * builds its rings with them; a registrar and hr_node_update() check
	 * every record they write with them (hr_node_check), so that no
	 * record the clients would refuse is written: give every process of
	 * one prefix the same. */
	const hr_ring_options *ring;
	int request_timeout_ms;  /* every unary request (default 5000)       */
	int connect_timeout_ms;  /* TCP/TLS connect (default 2000)           */
	/* TLS (https endpoints) and etcd auth. */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	const char *username;
	const char *password;
	int insecure_skip_verify; /* never set this outside tests            */
	hr_log_level log_level;   /* most verbose level passed (INFO)        */
	hr_log_fn log;            /* NULL: lines go to stderr                */
	void *log_userdata;
} hr_etcd_config;

/* Sets `size` bytes of `etcd` (NULL: nothing) to the defaults above (all
 * strings NULL), with etcd->size = size.  Call it through the macro. */
HR_EXPORT void hr_etcd_config_init_size(hr_etcd_config *etcd, size_t size);
#define hr_etcd_config_init(etcd) \
	hr_etcd_config_init_size((etcd), sizeof *(etcd))

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_ETCD_H */
