/* SPDX-License-Identifier: MIT */
/* etcd_endpoints.c - endpoint URLs and the user:password@ they may carry. */
#define _GNU_SOURCE
#include "etcd_endpoints.h"

#include "error.h"
#include "escape.h"

#include <curl/curl.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hr__secret_free(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

/* The user and password of entries written "http://user:password@host",
 * as curl reads them. */
typedef struct url_creds {
	char *user;                /* NULL: no entry had a user part      */
	char *password;            /* NULL: no ":password" after the user */
} url_creds;

static void url_creds_clear(url_creds *c)
{
	free(c->user);
	hr__secret_free(c->password);
	memset(c, 0, sizeof *c);
}

/* Percent-decodes s[0..n) into a new string.  HR_EINVAL for a malformed
 * escape or an encoded NUL. */
static int percent_decode(const char *s, size_t n, char **out, hr_error *err)
{
	char *d = malloc(n + 1);
	size_t k = 0;

	*out = NULL;
	if (!d)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] != '%') {
			d[k++] = s[i];
			continue;
		}
		hi = i + 1 < n ? hr__hex_digit(s[i + 1]) : -1;
		lo = i + 2 < n ? hr__hex_digit(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			d[k] = '\0';
			hr__secret_free(d);
			return hr__error_set(err, HR_EINVAL,
					     "endpoints: bad %%-escape in the user:password@ part of an entry");
		}
		d[k++] = (char)(hi << 4 | lo);
		i += 2;
	}
	d[k] = '\0';
	*out = d;
	return 0;
}

/* Two optional strings are the same (both NULL, or equal). */
static int same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/*
 * Takes the "user[:password]@" of an authority s[0..n) into `creds`, which
 * earlier endpoints may have filled (they must then agree).  *host gets
 * the offset of the host part.
 */
static int take_userinfo(const char *s, size_t n, url_creds *creds,
			 size_t *host, hr_error *err)
{
	const char *at = NULL, *colon;
	url_creds c = { 0 };
	int rc;

	*host = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '@')
			at = s + i;
	if (!at)
		return 0;
	*host = (size_t)(at - s) + 1;
	colon = memchr(s, ':', (size_t)(at - s));
	rc = percent_decode(s, (size_t)((colon ? colon : at) - s), &c.user, err);
	if (!rc && colon)
		rc = percent_decode(colon + 1, (size_t)(at - colon - 1), &c.password, err);
	if (!rc && !c.user[0])
		rc = hr__error_set(err, HR_EINVAL,
				   "endpoints: empty user name before '@' in an entry");
	if (!rc && creds->user &&
	    (!same_text(creds->user, c.user) || !same_text(creds->password, c.password)))
		rc = hr__error_set(err, HR_EINVAL,
				   "endpoints: entries give different users or passwords");
	if (rc || creds->user) {
		url_creds_clear(&c);
		return rc;
	}
	*creds = c;
	return 0;
}

/* Copies entry s[0..n) for an error message, with the password of a
 * "user:password@" replaced by "***". */
static const char *shown_entry(char *buf, size_t size, const char *s, size_t n)
{
	const char *start = memmem(s, n, "://", 3);
	const char *auth = start ? start + 3 : s;
	size_t alen = (size_t)(s + n - auth), host;
	const char *slash = memchr(auth, '/', alen);
	const char *at = NULL, *colon;

	if (slash)
		alen = (size_t)(slash - auth);
	for (size_t i = 0; i < alen; i++)
		if (auth[i] == '@')
			at = auth + i;
	if (n > 100)
		n = 100;
	colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (!colon || colon >= s + n) {
		snprintf(buf, size, "%.*s", (int)n, s);
		return buf;
	}
	host = (size_t)(at - s);
	snprintf(buf, size, "%.*s***%.*s", (int)(colon + 1 - s), s,
		 (int)(n > host ? n - host : 0), at);
	return buf;
}

/* The URL as curl will read it (an unclosed IPv6 bracket, a bad port):
 * refused now, rather than as a connection error after every retry. */
static int check_url(const char *url, const char *shown, hr_error *err)
{
	CURLU *u = curl_url();
	CURLUcode uc;

	if (!u)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	uc = curl_url_set(u, CURLUPART_URL, url, 0);
	curl_url_cleanup(u);
	if (uc == CURLUE_OUT_OF_MEMORY)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (uc != CURLUE_OK)
		return hr__error_set(err, HR_EINVAL, "endpoints: malformed URL \"%s\": %s",
				     shown, curl_url_strerror(uc));
	return 0;
}

static int add_endpoint(hr__endpoints *eps, const char *s, size_t n,
			url_creds *creds, hr_error *err)
{
	char buf[HR__ENDPOINT_LEN_MAX], shown[160];
	size_t scheme_len = 0, auth_len, host;
	int has_scheme, rc;

	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	while (n && s[n - 1] == '/')
		n--;
	if (!n)
		return hr__error_set(err, HR_EINVAL, "endpoints: empty entry");
	if (eps->n == HR__ENDPOINTS_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: more than %d", HR__ENDPOINTS_MAX);
	if (n > 7 && !strncmp(s, "http://", 7))
		scheme_len = 7;
	else if (n > 8 && !strncmp(s, "https://", 8))
		scheme_len = 8;
	has_scheme = scheme_len > 0;
	if (!has_scheme && memmem(s, n, "://", 3))
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: unsupported scheme in \"%s\" (http or https)",
				     shown_entry(shown, sizeof shown, s, n));
	if (n + 8 >= sizeof buf)
		return hr__error_set(err, HR_EINVAL, "endpoints: entry too long");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return hr__error_set(err, HR_EINVAL,
					     "endpoints: blank or control byte in an entry");
	/* The authority ends at the path, if any. */
	auth_len = n - scheme_len;
	{
		const char *slash = memchr(s + scheme_len, '/', auth_len);
		if (slash)
			auth_len = (size_t)(slash - (s + scheme_len));
	}
	rc = take_userinfo(s + scheme_len, auth_len, creds, &host, err);
	if (rc)
		return rc;
	if (host == auth_len)
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: no host after '@' in \"%s\"",
				     shown_entry(shown, sizeof shown, s, n));
	snprintf(buf, sizeof buf, "%s%.*s%.*s", has_scheme ? "" : "http://",
		 (int)scheme_len, s, (int)(n - scheme_len - host), s + scheme_len + host);
	rc = check_url(buf, shown_entry(shown, sizeof shown, s, n), err);
	if (rc)
		return rc;
	eps->url[eps->n] = strdup(buf);
	if (!eps->url[eps->n])
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	eps->n++;
	return 0;
}

/* The user and password: the configured ones, else the entries'.  Both
 * given must agree. */
static int pick_credentials(const char *cfg_user, const char *cfg_password,
			    const url_creds *c, const char **user,
			    const char **password, hr_error *err)
{
	*user = cfg_user;
	*password = cfg_password;
	if (!c->user)
		return 0;
	if (!cfg_user) {
		*user = c->user;
		*password = c->password;
		return 0;
	}
	if (strcmp(cfg_user, c->user))
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: the user \"%s\" before '@' differs from the configured user \"%s\"",
				     c->user, cfg_user);
	if (c->password && cfg_password && strcmp(c->password, cfg_password))
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: the password before '@' differs from the configured one");
	if (!*password)
		*password = c->password;
	return 0;
}

int hr__endpoints_parse(const char *list, const char *user,
			const char *password, hr__endpoints *out, hr_error *err)
{
	url_creds creds = { 0 };
	const char *u = NULL, *pw = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	for (const char *p = list ? list : "http://127.0.0.1:2379";;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		rc = add_endpoint(out, p, n, &creds, err);
		if (rc || !comma)
			break;
		p = comma + 1;
	}
	if (!rc)
		rc = pick_credentials(user, password, &creds, &u, &pw, err);
	if (!rc) {
		out->user = u ? strdup(u) : NULL;
		out->password = pw ? strdup(pw) : NULL;
		if ((u && !out->user) || (pw && !out->password))
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	url_creds_clear(&creds);
	if (rc)
		hr__endpoints_clear(out);
	return rc;
}

void hr__endpoints_clear(hr__endpoints *eps)
{
	if (!eps)
		return;
	for (size_t i = 0; i < eps->n; i++)
		free(eps->url[i]);
	free(eps->user);
	hr__secret_free(eps->password);
	memset(eps, 0, sizeof *eps);
}
