/* SPDX-License-Identifier: MIT */
/*
 * serve_target.c - what `hashring serve` reads of a request before it
 * answers: the path of its target (origin or absolute form) and whether
 * its authority names this server on loopback (the DNS-rebinding guard).
 * Plain functions of strings, so that their rules have a unit test
 * (tests/unit/cli/test_serve_target.c).
 */
#include "serve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int serve_host_ok(const char *host, unsigned port)
{
	char name[64], want[16];
	const char *colon;
	size_t len;
	struct in_addr a4;

	if (!host)
		return 1; /* HTTP/1.0; HTTP/1.1 without Host is a 400 already */
	colon = strrchr(host, ':');
	if (colon && strchr(colon, ']'))
		colon = NULL; /* "[::1]" without a port */
	len = colon ? (size_t)(colon - host) : strlen(host);
	snprintf(want, sizeof want, "%u", port);
	if (colon ? strcmp(colon + 1, want) != 0 : port != 80)
		return 0;
	if (len == 0 || len >= sizeof name)
		return 0;
	memcpy(name, host, len);
	name[len] = '\0';
	if (strcasecmp(name, "localhost") == 0 || strcmp(name, "[::1]") == 0)
		return 1;
	return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

const char *serve_target_path(const char *url, char *authority, size_t size)
{
	const char *a = url + 7, *slash;
	size_t n;

	authority[0] = '\0';
	if (url[0] == '/')
		return url;
	if (strncasecmp(url, "http://", 7) != 0)
		return NULL;
	slash = strchr(a, '/');
	n = slash ? (size_t)(slash - a) : strlen(a);
	if (n == 0 || n >= size || memchr(a, '@', n))
		return NULL;
	memcpy(authority, a, n);
	authority[n] = '\0';
	return slash ? slash : "/";
}
