/* etcd.c - requests to etcd's v3 JSON gateway over libcurl. */
#define _GNU_SOURCE
#include "etcd.h"

#include "base64.h"
#include "error.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENDPOINTS 32
#define MAX_ENDPOINT_LEN 512
/* A reply larger than this is refused rather than buffered (HR_ELIMIT). */
#define MAX_REPLY_BYTES (256u << 20)

struct hr__etcd {
	char *endpoints[MAX_ENDPOINTS];
	size_t n_endpoints;
	size_t current;
	char *api_base;
	int request_timeout_ms;
	int connect_timeout_ms;
	char *ca_file, *cert_file, *key_file;
	int insecure;
	char *username, *password;
	char *token;
	const int *stop_flag;
	void (*tick)(void *userdata);
	void *tick_userdata;
	uint64_t cluster_id;       /* of the last parsed reply */
	CURL *unary;               /* reused so connections are kept alive */
};

/* ---- small helpers ------------------------------------------------------ */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void hr__kv_clear(hr__kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof *kv);
}

void hr__kvs_free(hr__kv *kvs, size_t n)
{
	for (size_t i = 0; kvs && i < n; i++)
		hr__kv_clear(&kvs[i]);
	free(kvs);
}

int hr__json_int64(const cJSON *obj, const char *name, int64_t dflt,
		   int64_t *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
	char *end;
	long long v;

	if (!it) {
		*out = dflt;
		return 0;
	}
	if (cJSON_IsNumber(it)) {
		double d = it->valuedouble;
		/* Casting a double outside int64's range is undefined. */
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
		    d != (double)(int64_t)d)
			return HR_EPARSE;
		*out = (int64_t)d;
		return 0;
	}
	if (!cJSON_IsString(it) || !it->valuestring[0])
		return HR_EPARSE;
	errno = 0;
	v = strtoll(it->valuestring, &end, 10);
	if (errno || *end)
		return HR_EPARSE;
	*out = v;
	return 0;
}

uint64_t hr__json_cluster_id(const cJSON *reply)
{
	const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(reply, "header");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(hdr, "cluster_id");
	unsigned long long v;
	char *end;

	if (!cJSON_IsString(id) || !id->valuestring[0] || id->valuestring[0] == '-')
		return 0;
	errno = 0;
	v = strtoull(id->valuestring, &end, 10);
	return errno || *end ? 0 : (uint64_t)v;
}

uint64_t hr__etcd_cluster_id(const hr__etcd *e)
{
	return e->cluster_id;
}

static int b64_field(const cJSON *obj, const char *name, char **out,
		     size_t *len)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!it) {
		/* etcd leaves empty values out: an absent field is "". */
		*out = calloc(1, 1);
		*len = 0;
		return *out ? 0 : HR_ENOMEM;
	}
	if (!cJSON_IsString(it))
		return HR_EPARSE;
	return hr__base64_decode(it->valuestring, strlen(it->valuestring), out,
				 len) ? HR_EPARSE : 0;
}

int hr__kv_from_json(const cJSON *kv, hr__kv *out, hr_error *err)
{
	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(kv))
		return hr__error_set(err, HR_EPARSE, "kv is not an object");
	if (!cJSON_GetObjectItemCaseSensitive(kv, "key") ||
	    b64_field(kv, "key", &out->key, &out->key_len) ||
	    b64_field(kv, "value", &out->value, &out->value_len) ||
	    hr__json_int64(kv, "mod_revision", 0, &out->mod_revision) ||
	    hr__json_int64(kv, "create_revision", 0, &out->create_revision) ||
	    hr__json_int64(kv, "lease", 0, &out->lease)) {
		hr__kv_clear(out);
		return hr__error_set(err, HR_EPARSE,
				     "malformed kv from etcd (base64 or integer field)");
	}
	return 0;
}

size_t hr__etcd_prefix_end(const char *prefix, size_t len, char *end)
{
	memcpy(end, prefix, len);
	while (len && (unsigned char)end[len - 1] == 0xff)
		len--;
	if (!len) {
		end[0] = '\0';
		return 1;
	}
	end[len - 1] = (char)((unsigned char)end[len - 1] + 1);
	return len;
}

/* ---- construction ------------------------------------------------------- */

static void wipe_free(char *s)
{
	if (s) {
		/* Secrets do not linger in freed memory. */
		volatile char *p = s;
		while (*p)
			*p++ = 0;
		free(s);
	}
}

/*
 * The user and password of endpoints written "http://user:password@host",
 * as curl reads them.  They become the etcd user (token auth), never HTTP
 * basic auth; the endpoints are stored, used and shown (log lines, errors,
 * hr_client_status) without them.
 */
typedef struct url_creds {
	char *user;                /* NULL: no endpoint had a user part   */
	char *password;            /* NULL: no ":password" after the user */
} url_creds;

static void url_creds_clear(url_creds *c)
{
	free(c->user);
	wipe_free(c->password);
	memset(c, 0, sizeof *c);
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
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
		hi = i + 1 < n ? hex_value(s[i + 1]) : -1;
		lo = i + 2 < n ? hex_value(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			d[k] = '\0';
			wipe_free(d);
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

static int add_endpoint(hr__etcd *e, const char *s, size_t n, url_creds *creds,
			hr_error *err)
{
	char buf[MAX_ENDPOINT_LEN], shown[160];
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
	if (e->n_endpoints == MAX_ENDPOINTS)
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: more than %d", MAX_ENDPOINTS);
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
	e->endpoints[e->n_endpoints] = strdup(buf);
	if (!e->endpoints[e->n_endpoints])
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	e->n_endpoints++;
	return 0;
}

/* The user and password: the options', else the endpoints'.  Both given
 * must agree. */
static int pick_credentials(const hr__etcd_opts *opts, const url_creds *c,
			    const char **user, const char **password, hr_error *err)
{
	*user = opts->username;
	*password = opts->password;
	if (!c->user)
		return 0;
	if (!opts->username) {
		*user = c->user;
		*password = c->password;
		return 0;
	}
	if (strcmp(opts->username, c->user))
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: the user \"%s\" before '@' differs from the configured user \"%s\"",
				     c->user, opts->username);
	if (c->password && opts->password && strcmp(c->password, opts->password))
		return hr__error_set(err, HR_EINVAL,
				     "endpoints: the password before '@' differs from the configured one");
	if (!*password)
		*password = c->password;
	return 0;
}

int hr__etcd_new(const hr__etcd_opts *opts, hr__etcd **out, hr_error *err)
{
	const char *eps = opts->endpoints ? opts->endpoints : "http://127.0.0.1:2379";
	const char *base = opts->api_base ? opts->api_base : "/v3";
	const char *user, *password;
	url_creds creds = { 0 };
	hr__etcd *e;
	int rc;

	*out = NULL;
	e = calloc(1, sizeof *e);
	if (!e)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (const char *p = eps;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		rc = add_endpoint(e, p, n, &creds, err);
		if (rc)
			goto fail;
		if (!comma)
			break;
		p = comma + 1;
	}
	rc = pick_credentials(opts, &creds, &user, &password, err);
	if (rc)
		goto fail;
	rc = HR_EINVAL;
	if (base[0] != '/' || strpbrk(base, " \t\r\n?#")) {
		hr__error_set(err, rc, "api_base must start with '/' and hold no blanks");
		goto fail;
	}
	if ((opts->cert_file == NULL) != (opts->key_file == NULL)) {
		hr__error_set(err, rc, "a client certificate needs both cert and key files");
		goto fail;
	}
	if (password && !user) {
		hr__error_set(err, rc, "a password needs a user name");
		goto fail;
	}
	e->api_base = strdup(base);
	/* Drop a trailing '/' so that base + "/kv/range" has one slash. */
	if (e->api_base && strlen(e->api_base) > 1 &&
	    e->api_base[strlen(e->api_base) - 1] == '/')
		e->api_base[strlen(e->api_base) - 1] = '\0';
	e->request_timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 5000;
	e->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 2000;
	e->ca_file = dup_or_null(opts->ca_file);
	e->cert_file = dup_or_null(opts->cert_file);
	e->key_file = dup_or_null(opts->key_file);
	e->insecure = opts->insecure_skip_verify;
	e->username = dup_or_null(user);
	e->password = dup_or_null(user ? (password ? password : "") : NULL);
	e->stop_flag = opts->stop_flag;
	e->tick = opts->tick;
	e->tick_userdata = opts->tick_userdata;
	e->unary = curl_easy_init();
	url_creds_clear(&creds);
	if (!e->api_base || !e->unary || (opts->ca_file && !e->ca_file) ||
	    (opts->cert_file && !e->cert_file) || (opts->key_file && !e->key_file) ||
	    (user && (!e->username || !e->password))) {
		hr__etcd_free(e);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	*out = e;
	return 0;
fail:
	url_creds_clear(&creds);
	hr__etcd_free(e);
	return rc;
}

void hr__etcd_free(hr__etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_endpoints; i++)
		free(e->endpoints[i]);
	free(e->api_base);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	free(e->username);
	wipe_free(e->password);
	wipe_free(e->token);
	if (e->unary)
		curl_easy_cleanup(e->unary);
	free(e);
}

const char *hr__etcd_endpoint(const hr__etcd *e)
{
	return e->endpoints[e->current];
}

void hr__etcd_next_endpoint(hr__etcd *e)
{
	e->current = (e->current + 1) % e->n_endpoints;
}

/* ---- transfers ------------------------------------------------------------ */

typedef struct reply_buf {
	char *data;
	size_t len, cap;
	int too_big;
} reply_buf;

static size_t collect(char *p, size_t size, size_t nmemb, void *ud)
{
	reply_buf *b = ud;
	size_t n = size * nmemb;

	if (b->len + n + 1 > MAX_REPLY_BYTES) {
		b->too_big = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;
		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c,
		       curl_off_t d)
{
	const hr__etcd *e = ud;

	(void)a, (void)b, (void)c, (void)d;
	if (e->tick)
		e->tick(e->tick_userdata);
	return e->stop_flag && __atomic_load_n(e->stop_flag, __ATOMIC_ACQUIRE);
}

int hr__etcd_setup(hr__etcd *e, CURL *h, const char *path, const char *body,
		   int streaming, struct curl_slist **headers, hr_error *err)
{
	char url[MAX_ENDPOINT_LEN + 256];
	struct curl_slist *hs = NULL, *t;

	snprintf(url, sizeof url, "%s%s%s", hr__etcd_endpoint(e), e->api_base, path);
	hs = curl_slist_append(hs, "Content-Type: application/json");
	/* Without it a watch on a member cut off from the leader is never
	 * cancelled (etcd issue 10819). */
	if (hs && (t = curl_slist_append(hs, "Grpc-Metadata-hasleader: true")))
		hs = t;
	if (hs && e->token) {
		size_t n = strlen(e->token) + 32;
		char *line = malloc(n);
		if (line) {
			snprintf(line, n, "Authorization: %s", e->token);
			t = curl_slist_append(hs, line);
			wipe_free(line);
			if (t)
				hs = t;
		}
	}
	if (!hs)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	*headers = hs;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)e->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, streaming ? 0L : (long)e->request_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 5L);
	/* The gateway's streaming replies are plain HTTP/1.1 chunks. */
	if (!strncmp(url, "http://", 7))
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (e->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, e->ca_file);
	if (e->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert_file);
	if (e->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key_file);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, e->insecure ? 0L : 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, e->insecure ? 0L : 2L);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, e);
	return 0;
}

static int is_tls_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return 1;
	default:
		return 0;
	}
}

int hr__etcd_transfer_error(hr__etcd *e, CURLcode rc, long status,
			    const char *body, size_t len, hr_error *err)
{
	const char *ep = hr__etcd_endpoint(e);

	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return hr__error_set(err, HR_ECLOSED, "request aborted: closing");
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return hr__error_set(err, HR_ETIMEDOUT, "%s: request timed out", ep);
	if (is_tls_error(rc))
		return hr__error_set(err, HR_ETLS, "%s: TLS: %s", ep, curl_easy_strerror(rc));
	if ((rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) && !strncmp(ep, "https://", 8))
		return hr__error_set(err, HR_ETLS,
				     "%s: TLS handshake rejected (client certificate missing or refused?)", ep);
	if (rc != CURLE_OK)
		return hr__error_set(err, HR_ECONNECT, "%s: %s", ep, curl_easy_strerror(rc));

	/* An HTTP error: {"error":"..","message":"..","code":N} (3.4/3.5) or
	 * {"code":N,"message":".."} (3.6). */
	cJSON *root = body ? cJSON_ParseWithLength(body, len) : NULL;
	const cJSON *msg = root ? cJSON_GetObjectItemCaseSensitive(root, "message") : NULL;
	const cJSON *code = root ? cJSON_GetObjectItemCaseSensitive(root, "code") : NULL;
	int grpc = cJSON_IsNumber(code) ? code->valueint : -1;
	char text[160];
	int result;

	if (cJSON_IsString(msg))
		snprintf(text, sizeof text, "%s", msg->valuestring);
	else if (body && len)
		snprintf(text, sizeof text, "%.*s", (int)(len > 120 ? 120 : len), body);
	else
		snprintf(text, sizeof text, "empty body");
	for (char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	cJSON_Delete(root);

	if (strstr(text, "user name is empty"))
		return hr__error_set(err, HR_EAUTH,
				     "%s: etcd requires authentication: no user given", ep);
	if (grpc == 16 || status == 401 ||
	    (grpc == 3 && strstr(text, "authentication failed")))
		result = HR_EAUTH;
	else if (grpc == 7 || status == 403)
		result = HR_EPERM;
	else if (grpc == 5 || status == 404)
		result = HR_ENOTFOUND;
	else if (grpc == 11 && strstr(text, "compacted"))
		result = HR_ECOMPACTED;
	else
		result = HR_EETCD;
	return hr__error_set(err, result, "%s: HTTP %ld: %s", ep, status, text);
}

/* One POST on the reused handle.  *reply gets the parsed JSON on 200. */
static int post_once(hr__etcd *e, const char *path, const char *body,
		     cJSON **reply, hr_error *err)
{
	struct curl_slist *headers = NULL;
	reply_buf buf = { 0 };
	long status = 0;
	uint64_t id;
	CURLcode rc;
	int res;

	*reply = NULL;
	curl_easy_reset(e->unary);
	res = hr__etcd_setup(e, e->unary, path, body, 0, &headers, err);
	if (res)
		return res;
	curl_easy_setopt(e->unary, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e->unary, CURLOPT_WRITEDATA, &buf);
	rc = curl_easy_perform(e->unary);
	curl_easy_getinfo(e->unary, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(headers);
	if (buf.too_big) {
		free(buf.data);
		return hr__error_set(err, HR_ELIMIT, "%s: reply larger than %u bytes",
				     hr__etcd_endpoint(e), MAX_REPLY_BYTES);
	}
	if (rc != CURLE_OK || status != 200) {
		res = hr__etcd_transfer_error(e, rc, status, buf.data, buf.len, err);
		free(buf.data);
		return res;
	}
	*reply = buf.data ? cJSON_ParseWithLength(buf.data, buf.len) : NULL;
	free(buf.data);
	if (!*reply || !cJSON_IsObject(*reply)) {
		cJSON_Delete(*reply);
		*reply = NULL;
		return hr__error_set(err, HR_EETCD, "%s: reply is not a JSON object",
				     hr__etcd_endpoint(e));
	}
	id = hr__json_cluster_id(*reply);
	if (id)
		e->cluster_id = id;
	return 0;
}

int hr__etcd_authenticate(hr__etcd *e, hr_error *err)
{
	cJSON *body, *reply = NULL;
	const cJSON *tok;
	char *text;
	int rc;

	if (!e->username)
		return 0;
	wipe_free(e->token);
	e->token = NULL;
	body = cJSON_CreateObject();
	if (!body || !cJSON_AddStringToObject(body, "name", e->username) ||
	    !cJSON_AddStringToObject(body, "password", e->password)) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	text = cJSON_PrintUnformatted(body);
	/* Scrub the password from cJSON's copy before freeing it. */
	cJSON *pw = cJSON_GetObjectItemCaseSensitive(body, "password");
	if (pw && pw->valuestring)
		memset(pw->valuestring, 0, strlen(pw->valuestring));
	cJSON_Delete(body);
	if (!text)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = post_once(e, "/auth/authenticate", text, &reply, err);
	wipe_free(text);
	if ((rc == HR_EETCD || rc == HR_EAUTH) && err && strstr(err->message, "authentication"))
		rc = hr__error_set(err, HR_EAUTH, "%s: authentication failed for user \"%s\"",
				   hr__etcd_endpoint(e), e->username);
	if (rc)
		return rc;
	tok = cJSON_GetObjectItemCaseSensitive(reply, "token");
	if (!cJSON_IsString(tok) || !tok->valuestring[0]) {
		cJSON_Delete(reply);
		return hr__error_set(err, HR_EAUTH, "%s: authentication is not enabled or gave no token",
				     hr__etcd_endpoint(e));
	}
	e->token = strdup(tok->valuestring);
	memset(tok->valuestring, 0, strlen(tok->valuestring));
	cJSON_Delete(reply);
	return e->token ? 0 : hr__error_set(err, HR_ENOMEM, "out of memory");
}

/* Errors after which another endpoint may do better. */
static int try_next_endpoint(int rc, const hr_error *err)
{
	return rc == HR_ECONNECT || rc == HR_ETIMEDOUT ||
	       (rc == HR_EETCD && err && strstr(err->message, "HTTP 503"));
}

int hr__etcd_call(hr__etcd *e, const char *path, const cJSON *body,
		  cJSON **reply, hr_error *err)
{
	hr_error local = { 0 };
	char *text;
	int rc = HR_ECONNECT;

	if (!err)
		err = &local;
	*reply = NULL;
	text = cJSON_PrintUnformatted(body);
	if (!text)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t attempt = 0; attempt < e->n_endpoints; attempt++) {
		if (e->username && !e->token) {
			rc = hr__etcd_authenticate(e, err);
			if (rc && try_next_endpoint(rc, err)) {
				hr__etcd_next_endpoint(e);
				continue;
			}
			if (rc)
				break;
		}
		rc = post_once(e, path, text, reply, err);
		if (rc == HR_EAUTH && e->username) {
			/* The token expired or the cluster was rebuilt. */
			rc = hr__etcd_authenticate(e, err);
			if (!rc)
				rc = post_once(e, path, text, reply, err);
		}
		if (!try_next_endpoint(rc, err))
			break;
		hr__etcd_next_endpoint(e);
	}
	free(text);
	return rc;
}

/* ---- range over a prefix -------------------------------------------------- */

int hr__json_add_b64(cJSON *obj, const char *name, const void *data, size_t n)
{
	char *enc = malloc(hr__base64_encoded_size(n));
	int ok;

	if (!enc)
		return 0;
	hr__base64_encode(data, n, enc);
	ok = cJSON_AddStringToObject(obj, name, enc) != NULL;
	free(enc);
	return ok;
}

int hr__etcd_list(hr__etcd *e, const char *prefix, unsigned page_size,
		  size_t max_keys, hr__kv **kvs_out, size_t *n_out,
		  int64_t *revision, hr_error *err)
{
	size_t plen = strlen(prefix), n = 0, cap = 0;
	char *end = malloc(plen + 1), *start = NULL;
	size_t end_len, start_len;
	hr__kv *kvs = NULL;
	int64_t rev = 0;
	int rc = 0, more = 1;

	*kvs_out = NULL;
	*n_out = 0;
	if (!end)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	end_len = hr__etcd_prefix_end(prefix, plen, end);
	start = malloc(plen + 1);
	if (!start) {
		free(end);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	memcpy(start, prefix, plen);
	start_len = plen;
	/* An empty prefix means every key: etcd wants key "\0" for that. */
	if (!start_len) {
		start[0] = '\0';
		start_len = 1;
	}

	while (more && !rc) {
		cJSON *body = cJSON_CreateObject(), *reply = NULL;
		char pagebuf[24], revbuf[24];
		const cJSON *items, *it;
		const cJSON *more_item;

		snprintf(pagebuf, sizeof pagebuf, "%u", page_size ? page_size : 1000);
		snprintf(revbuf, sizeof revbuf, "%lld", (long long)rev);
		if (!body || !hr__json_add_b64(body, "key", start, start_len) ||
		    !hr__json_add_b64(body, "range_end", end, end_len) ||
		    !cJSON_AddStringToObject(body, "limit", pagebuf) ||
		    (rev && !cJSON_AddStringToObject(body, "revision", revbuf))) {
			cJSON_Delete(body);
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			break;
		}
		rc = hr__etcd_call(e, "/kv/range", body, &reply, err);
		cJSON_Delete(body);
		if (rc)
			break;
		if (!rev) {
			const cJSON *hdr = cJSON_GetObjectItemCaseSensitive(reply, "header");
			if (hr__json_int64(hdr, "revision", 0, &rev) || rev <= 0) {
				cJSON_Delete(reply);
				rc = hr__error_set(err, HR_EETCD, "range reply without a revision");
				break;
			}
		}
		items = cJSON_GetObjectItemCaseSensitive(reply, "kvs");
		cJSON_ArrayForEach(it, items) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				hr__kv *t = realloc(kvs, ncap * sizeof *t);
				if (!t) {
					rc = hr__error_set(err, HR_ENOMEM, "out of memory");
					break;
				}
				kvs = t;
				cap = ncap;
			}
			rc = hr__kv_from_json(it, &kvs[n], err);
			if (rc)
				break;
			n++;
			if (n > max_keys) {
				rc = hr__error_set(err, HR_ELIMIT,
						   "more than %zu keys under the prefix", max_keys);
				break;
			}
		}
		more_item = cJSON_GetObjectItemCaseSensitive(reply, "more");
		more = cJSON_IsTrue(more_item) && n > 0;
		if (!rc && more) {
			/* Next page starts just after the last key. */
			char *t = realloc(start, kvs[n - 1].key_len + 1);
			if (!t) {
				rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			} else {
				start = t;
				memcpy(start, kvs[n - 1].key, kvs[n - 1].key_len);
				start[kvs[n - 1].key_len] = '\0';
				start_len = kvs[n - 1].key_len + 1;
			}
		}
		cJSON_Delete(reply);
	}
	free(start);
	free(end);
	if (rc) {
		hr__kvs_free(kvs, n);
		return rc;
	}
	*kvs_out = kvs;
	*n_out = n;
	*revision = rev;
	return 0;
}

/* ---- leases and single keys --------------------------------------------- */

static cJSON *id_body(int64_t id)
{
	char buf[24];
	cJSON *body = cJSON_CreateObject();

	/* Lease ids need all 64 bits: always send them as strings. */
	snprintf(buf, sizeof buf, "%lld", (long long)id);
	if (body && !cJSON_AddStringToObject(body, "ID", buf)) {
		cJSON_Delete(body);
		body = NULL;
	}
	return body;
}

int hr__etcd_lease_grant(hr__etcd *e, int ttl, int64_t *id, int64_t *granted,
			 hr_error *err)
{
	cJSON *body = cJSON_CreateObject(), *reply = NULL;
	char buf[16];
	int rc;

	snprintf(buf, sizeof buf, "%d", ttl);
	if (!body || !cJSON_AddStringToObject(body, "TTL", buf)) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_call(e, "/lease/grant", body, &reply, err);
	cJSON_Delete(body);
	if (rc)
		return rc;
	if (hr__json_int64(reply, "ID", 0, id) || *id == 0 ||
	    hr__json_int64(reply, "TTL", 0, granted) || *granted <= 0) {
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(reply, "error");
		rc = hr__error_set(err, HR_EETCD, "%s: lease grant failed: %s", hr__etcd_endpoint(e),
				   cJSON_IsString(msg) ? msg->valuestring : "no lease in the reply");
	}
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_keepalive(hr__etcd *e, int64_t id, int64_t *ttl,
			     hr_error *err)
{
	cJSON *body = id_body(id), *reply = NULL;
	const cJSON *res;
	int rc;

	if (!body)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = hr__etcd_call(e, "/lease/keepalive", body, &reply, err);
	cJSON_Delete(body);
	if (rc)
		return rc;
	/* A one-message stream: {"result":{...,"TTL":"10"}}, or an error
	 * object if the stream failed. */
	res = cJSON_GetObjectItemCaseSensitive(reply, "result");
	if (!cJSON_IsObject(res)) {
		cJSON_Delete(reply);
		return hr__error_set(err, HR_EETCD, "%s: lease keepalive failed",
				     hr__etcd_endpoint(e));
	}
	if (hr__json_int64(res, "TTL", 0, ttl))
		rc = hr__error_set(err, HR_EETCD, "%s: malformed keepalive reply",
				   hr__etcd_endpoint(e));
	if (*ttl < 0)
		*ttl = 0;
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_revoke(hr__etcd *e, int64_t id, hr_error *err)
{
	cJSON *body = id_body(id), *reply = NULL;
	int rc;

	if (!body)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	/* This path exists on every gateway version (3.3 has no /lease/revoke). */
	rc = hr__etcd_call(e, "/kv/lease/revoke", body, &reply, err);
	cJSON_Delete(body);
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_lease_ttl(hr__etcd *e, int64_t id, int64_t *ttl, hr_error *err)
{
	cJSON *body = id_body(id), *reply = NULL;
	int rc;

	if (!body)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	/* Read only, unlike a keepalive; this path exists on every gateway
	 * version.  An unknown lease answers TTL -1. */
	rc = hr__etcd_call(e, "/kv/lease/timetolive", body, &reply, err);
	cJSON_Delete(body);
	if (!rc && hr__json_int64(reply, "TTL", 0, ttl))
		rc = hr__error_set(err, HR_EETCD, "%s: malformed timetolive reply",
				   hr__etcd_endpoint(e));
	if (!rc && *ttl < 0)
		*ttl = 0;
	cJSON_Delete(reply);
	return rc;
}

int hr__etcd_get(hr__etcd *e, const char *key, hr__kv *out, int *found,
		 hr_error *err)
{
	cJSON *body = cJSON_CreateObject(), *reply = NULL;
	const cJSON *kvs;
	int rc;

	memset(out, 0, sizeof *out);
	*found = 0;
	if (!body || !hr__json_add_b64(body, "key", key, strlen(key))) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_call(e, "/kv/range", body, &reply, err);
	cJSON_Delete(body);
	if (rc)
		return rc;
	kvs = cJSON_GetObjectItemCaseSensitive(reply, "kvs");
	if (cJSON_GetArraySize(kvs) > 0) {
		rc = hr__kv_from_json(cJSON_GetArrayItem(kvs, 0), out, err);
		*found = rc == 0;
	}
	cJSON_Delete(reply);
	return rc;
}

/* Appends the comparison "`key`'s `target` field EQUAL `n`" to `compare`
 * (int64s go as strings, as the gateway reads them); 0 on out of memory. */
static int add_compare(cJSON *compare, const char *key, const char *target,
		       const char *field, int64_t n)
{
	cJSON *cmp = cJSON_CreateObject();
	char buf[24];

	if (!cmp || !cJSON_AddItemToArray(compare, cmp)) {
		cJSON_Delete(cmp);
		return 0;
	}
	snprintf(buf, sizeof buf, "%lld", (long long)n);
	return hr__json_add_b64(cmp, "key", key, strlen(key)) &&
	       cJSON_AddStringToObject(cmp, "result", "EQUAL") &&
	       cJSON_AddStringToObject(cmp, "target", target) &&
	       cJSON_AddStringToObject(cmp, field, buf);
}

int hr__etcd_put_if(hr__etcd *e, const char *key, const char *value,
		    int64_t expect_mod, int64_t expect_lease, int64_t lease,
		    int ignore_lease, int *done, hr_error *err)
{
	cJSON *body = cJSON_CreateObject(), *reply = NULL;
	cJSON *compare = cJSON_AddArrayToObject(body, "compare");
	cJSON *success = cJSON_AddArrayToObject(body, "success");
	cJSON *req = cJSON_CreateObject(), *put;
	char buf[24];
	int rc, ok;

	*done = 0;
	/* Attach at once so that the body owns everything from here on. */
	ok = compare && success && req && cJSON_AddItemToArray(success, req);
	if (!ok) {
		if (!success || !cJSON_GetArraySize(success))
			cJSON_Delete(req);
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	ok = expect_mod < 0 ? add_compare(compare, key, "CREATE", "create_revision", 0) :
			      add_compare(compare, key, "MOD", "mod_revision", expect_mod);
	/* An absent key has lease 0 too: LEASE alone never means "exists". */
	if (ok && expect_lease >= 0)
		ok = add_compare(compare, key, "LEASE", "lease", expect_lease);
	put = cJSON_AddObjectToObject(req, "request_put");
	ok = ok && put && hr__json_add_b64(put, "key", key, strlen(key)) &&
	     hr__json_add_b64(put, "value", value, strlen(value));
	if (ok && lease) {
		/* Lease ids need all 64 bits: always send them as strings. */
		snprintf(buf, sizeof buf, "%lld", (long long)lease);
		ok = cJSON_AddStringToObject(put, "lease", buf) != NULL;
	}
	if (ok && ignore_lease)
		ok = cJSON_AddTrueToObject(put, "ignore_lease") != NULL;
	if (!ok) {
		cJSON_Delete(body);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	rc = hr__etcd_call(e, "/kv/txn", body, &reply, err);
	cJSON_Delete(body);
	if (!rc)
		*done = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "succeeded"));
	cJSON_Delete(reply);
	return rc;
}
