/* SPDX-License-Identifier: MIT */
/* lookup.c - the owners of keys in the ring an etcd holds.
 *   HASHRING_ENDPOINTS=127.0.0.1:2379 ./lookup user:42 user:43 */
#include <hashring.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *prefix = getenv("HASHRING_PREFIX");
	hr_etcd_config etcd;
	hr_client *client;
	hr_error err = { 0 };
	int status = 0;

	hr_etcd_config_init(&etcd);                     /* the defaults, and etcd.size */
	etcd.endpoints = getenv("HASHRING_ENDPOINTS");  /* NULL: http://127.0.0.1:2379 */
	etcd.prefix = prefix ? prefix : "/hashring/nodes/";
	etcd.log_level = HR_LOG_WARN;                   /* the library logs to stderr */
	if (hr_client_open(&etcd, NULL, &client, &err) != 0) { /* waits for the first sync */
		fprintf(stderr, "lookup: %s\n", err.message);
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		hr_owner o;                             /* from any thread, lock free */
		int rc = hr_client_lookup(client, argv[i], strlen(argv[i]), &o, &err);

		if (rc != 0) {                          /* HR_EEMPTY: no node yet */
			fprintf(stderr, "lookup: %s: %s\n", argv[i], err.message);
			status = 1;
			continue;
		}
		/* Writes go to node, reads to read_node: they differ while a
		 * node joins (warming) or leaves (draining). */
		printf("%s\t%s\t%s\t%s\t%s\n", argv[i], o.node, o.addr, o.read_node, o.read_addr);
	}
	hr_client_close(client);
	return status;
}
