/* SPDX-License-Identifier: MIT */
/* etcd.c - the etcd client: construction, endpoints, transfers, auth and
 * the unary call every request goes through. */
#include "etcd.h"

#include "buffer.h"
#include "error.h"
#include "etcd_endpoints.h"

#include <stdlib.h>
#include <string.h>

/* A reply larger than this is refused rather than buffered (HR_ELIMIT). */
#define MAX_REPLY_BYTES (256u << 20)

struct hr__etcd {
	hr__endpoints eps;         /* the URLs, and the user and password */
	size_t current;
	char *api_base;
	int request_timeout_ms;
	int connect_timeout_ms;
	char *ca_file, *cert_file, *key_file;
	int insecure;
	char *token;
	const int *stop_flag;
	void (*tick)(void *userdata);
	void *tick_userdata;
	uint64_t cluster_id;       /* of the last parsed reply */
	CURL *unary;               /* reused so connections are kept alive */
};

/* ---- construction ------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int hr__etcd_new(const hr__etcd_opts *opts, hr__etcd **out, hr_error *err)
{
	const char *base = opts->api_base ? opts->api_base : "/v3";
	hr__etcd *e;
	int rc;

	*out = NULL;
	e = calloc(1, sizeof *e);
	if (!e)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = hr__endpoints_parse(opts->endpoints, opts->username, opts->password,
				 &e->eps, err);
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
	if (e->eps.password && !e->eps.user) {
		hr__error_set(err, rc, "a password needs a user name");
		goto fail;
	}
	/* A user without a password authenticates with an empty one. */
	if (e->eps.user && !e->eps.password)
		e->eps.password = strdup("");
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
	e->stop_flag = opts->stop_flag;
	e->tick = opts->tick;
	e->tick_userdata = opts->tick_userdata;
	e->current = opts->first_endpoint % e->eps.n;
	e->unary = curl_easy_init();
	if (!e->api_base || !e->unary || (opts->ca_file && !e->ca_file) ||
	    (opts->cert_file && !e->cert_file) || (opts->key_file && !e->key_file) ||
	    (e->eps.user && !e->eps.password)) {
		hr__etcd_free(e);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	*out = e;
	return 0;
fail:
	hr__etcd_free(e);
	return rc;
}

void hr__etcd_free(hr__etcd *e)
{
	if (!e)
		return;
	hr__endpoints_clear(&e->eps);
	free(e->api_base);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	hr__secret_free(e->token);
	if (e->unary)
		curl_easy_cleanup(e->unary);
	free(e);
}

const char *hr__etcd_endpoint(const hr__etcd *e)
{
	return e->eps.url[e->current];
}

void hr__etcd_next_endpoint(hr__etcd *e)
{
	e->current = (e->current + 1) % e->eps.n;
}

uint64_t hr__etcd_cluster_id(const hr__etcd *e)
{
	return e->cluster_id;
}

/* ---- transfers ------------------------------------------------------------ */

typedef struct reply_buf {
	hr__buffer bytes;
	int too_big;
} reply_buf;

static size_t collect(char *p, size_t size, size_t nmemb, void *ud)
{
	reply_buf *b = ud;
	size_t n = size * nmemb;
	int rc = hr__buffer_append(&b->bytes, p, n, MAX_REPLY_BYTES);

	b->too_big = rc == HR_ELIMIT;
	/* Returning less than n makes libcurl abort the transfer. */
	return rc ? 0 : n;
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
	char url[HR__ENDPOINT_LEN_MAX + 256];
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
			hr__secret_free(line);
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
		hr__buffer_free(&buf.bytes);
		return hr__error_set(err, HR_ELIMIT, "%s: reply larger than %u bytes",
				     hr__etcd_endpoint(e), MAX_REPLY_BYTES);
	}
	if (rc != CURLE_OK || status != 200) {
		res = hr__etcd_transfer_error(e, rc, status, buf.bytes.data, buf.bytes.len, err);
		hr__buffer_free(&buf.bytes);
		return res;
	}
	*reply = buf.bytes.data ? cJSON_ParseWithLength(buf.bytes.data, buf.bytes.len) : NULL;
	hr__buffer_free(&buf.bytes);
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

	if (!e->eps.user)
		return 0;
	hr__secret_free(e->token);
	e->token = NULL;
	body = cJSON_CreateObject();
	if (!body || !cJSON_AddStringToObject(body, "name", e->eps.user) ||
	    !cJSON_AddStringToObject(body, "password", e->eps.password)) {
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
	hr__secret_free(text);
	if ((rc == HR_EETCD || rc == HR_EAUTH) && err && strstr(err->message, "authentication"))
		rc = hr__error_set(err, HR_EAUTH, "%s: authentication failed for user \"%s\"",
				   hr__etcd_endpoint(e), e->eps.user);
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
	for (size_t attempt = 0; attempt < e->eps.n; attempt++) {
		if (e->eps.user && !e->token) {
			rc = hr__etcd_authenticate(e, err);
			if (rc && try_next_endpoint(rc, err)) {
				hr__etcd_next_endpoint(e);
				continue;
			}
			if (rc)
				break;
		}
		rc = post_once(e, path, text, reply, err);
		if (rc == HR_EAUTH && e->eps.user) {
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
