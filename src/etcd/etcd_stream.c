/* SPDX-License-Identifier: MIT */
/* etcd_stream.c - the watch stream and its probes on one multi handle. */
#include "etcd_stream.h"

#include "buffer.h"
#include "error.h"
#include "watch_stream.h"

#include <stdlib.h>
#include <string.h>

/* The most of a probe's reply kept: a count-only range is a header and a
 * count. */
#define PROBE_REPLY_MAX 65536

typedef struct probe {
	CURL *h;                   /* NULL: no probe runs */
	struct curl_slist *headers;
	hr__buffer reply;
} probe;

struct hr__etcd_stream {
	hr__etcd *etcd;
	hr__etcd_stream_cbs cbs;
	CURLM *multi;
	CURL *h;                   /* the watch */
	struct curl_slist *headers;
	hr__linebuf lb;
	int done;                  /* ended or stopped: no callback runs again */
	probe pr;
	char *probe_request;       /* the same for every probe */
};

/* ---- request bodies --------------------------------------------------------- */

static char *print_if(cJSON *body, int ok)
{
	char *text = ok ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	return text;
}

/* {"create_request":{"key":..,"range_end":..,"start_revision":"N",
 *  "progress_notify":true,"fragment":true}} */
static char *watch_request(const char *prefix, int64_t start_revision)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *create = cJSON_AddObjectToObject(body, "create_request");

	return print_if(body, create &&
			hr__json_add_prefix_range(create, prefix, strlen(prefix)) &&
			hr__json_add_int64(create, "start_revision", start_revision) &&
			cJSON_AddTrueToObject(create, "progress_notify") &&
			cJSON_AddTrueToObject(create, "fragment"));
}

/* {"key":..,"range_end":..,"count_only":true}: linearizable, so a member
 * cut off from the leader fails it. */
static char *probe_request(const char *prefix)
{
	cJSON *body = cJSON_CreateObject();

	return print_if(body, body &&
			hr__json_add_prefix_range(body, prefix, strlen(prefix)) &&
			cJSON_AddTrueToObject(body, "count_only"));
}

/* ---- the stream ------------------------------------------------------------- */

/* Hands a line on; 1 (stop) once the consumer asked to stop. */
static int on_line(void *ud, const char *line, size_t len)
{
	hr__etcd_stream *s = ud;

	if (s->done || s->cbs.line(s->cbs.userdata, line, len)) {
		s->done = 1;
		return 1;
	}
	return 0;
}

static void end(hr__etcd_stream *s, const hr_error *why)
{
	s->done = 1;
	s->cbs.ended(s->cbs.userdata, why);
}

static size_t on_stream_data(char *p, size_t size, size_t nmemb, void *ud)
{
	hr__etcd_stream *s = ud;
	size_t n = size * nmemb;
	hr_error why;
	int rc = s->done ? 1 : hr__linebuf_feed(&s->lb, p, n, on_line, s);

	if (rc == HR_ELIMIT || rc == HR_ENOMEM) {
		if (rc == HR_ELIMIT)
			hr__error_set(&why, rc, "%s: watch message longer than %zu bytes",
				      hr__etcd_endpoint(s->etcd), s->lb.max);
		else
			hr__error_set(&why, rc, "out of memory");
		end(s, &why);
	}
	/* Returning less than n makes libcurl abort the transfer. */
	return rc ? 0 : n;
}

static void stream_done(hr__etcd_stream *s, CURLcode rc)
{
	long status = 0;
	hr_error why;

	/* etcd 3.4 ends a failed stream with an error object and no
	 * newline. */
	hr__linebuf_finish(&s->lb, on_line, s);
	if (s->done)
		return;
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OK && status == 200) {
		end(s, NULL);
		return;
	}
	hr__etcd_transfer_error(s->etcd, rc, status, NULL, 0, &why);
	end(s, &why);
}

/* ---- probes ----------------------------------------------------------------- */

static size_t on_probe_data(char *p, size_t size, size_t nmemb, void *ud)
{
	hr__buffer *reply = ud;
	size_t n = size * nmemb;

	return hr__buffer_append(reply, p, n, PROBE_REPLY_MAX) ? 0 : n;
}

static void probe_free(hr__etcd_stream *s)
{
	probe *pr = &s->pr;

	if (pr->h) {
		curl_multi_remove_handle(s->multi, pr->h);
		curl_easy_cleanup(pr->h);
	}
	curl_slist_free_all(pr->headers);
	hr__buffer_free(&pr->reply);
	memset(pr, 0, sizeof *pr);
}

int hr__etcd_stream_probe(hr__etcd_stream *s, int timeout_ms, hr_error *err)
{
	probe *pr = &s->pr;
	int rc;

	if (pr->h)
		return 0;
	pr->h = curl_easy_init();
	rc = pr->h ? hr__etcd_setup(s->etcd, pr->h, "/kv/range", s->probe_request, 0,
				    &pr->headers, err) :
		     hr__error_set(err, HR_ENOMEM, "out of memory");
	if (rc) {
		probe_free(s);
		return rc;
	}
	curl_easy_setopt(pr->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(pr->h, CURLOPT_WRITEFUNCTION, on_probe_data);
	curl_easy_setopt(pr->h, CURLOPT_WRITEDATA, &pr->reply);
	curl_multi_add_handle(s->multi, pr->h);
	return 0;
}

int hr__etcd_stream_probing(const hr__etcd_stream *s)
{
	return s->pr.h != NULL;
}

/* The header of a range reply. */
static void read_probe_reply(hr__etcd_stream *s, hr__probe_result *r)
{
	const probe *pr = &s->pr;
	cJSON *root = cJSON_ParseWithLength(pr->reply.data ? pr->reply.data : "",
					    pr->reply.len);

	if (!cJSON_IsObject(root) ||
	    hr__json_int64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision", 0,
			   &r->revision)) {
		hr__error_set(&r->err, HR_EETCD, "%s: malformed probe reply",
			      hr__etcd_endpoint(s->etcd));
	} else {
		r->outcome = HR__PROBE_ANSWERED;
		r->cluster_id = hr__json_cluster_id(root);
	}
	cJSON_Delete(root);
}

static void probe_done(hr__etcd_stream *s, CURLcode rc)
{
	hr__probe_result r = { .outcome = HR__PROBE_FAILED };
	curl_off_t us = 0;
	long status = 0;

	curl_easy_getinfo(s->pr.h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(s->pr.h, CURLINFO_TOTAL_TIME_T, &us);
	r.elapsed_ms = (int64_t)(us / 1000);
	/* The token expired while the stream was quiet; the stream itself
	 * keeps working, so only the token is renewed. */
	if (rc == CURLE_OK && status == 401 && hr__etcd_authenticate(s->etcd, &r.err) == 0)
		r.outcome = HR__PROBE_REAUTHENTICATED;
	else if (rc != CURLE_OK || status != 200)
		hr__etcd_transfer_error(s->etcd, rc, status, s->pr.reply.data, s->pr.reply.len,
					&r.err);
	else
		read_probe_reply(s, &r);
	probe_free(s);
	if (s->cbs.probe(s->cbs.userdata, &r))
		s->done = 1;
}

/* ---- the multi handle ------------------------------------------------------- */

int hr__etcd_stream_open(hr__etcd *e, const char *prefix, int64_t start_revision,
			 size_t max_line, const hr__etcd_stream_cbs *cbs,
			 hr__etcd_stream **out, hr_error *err)
{
	hr__etcd_stream *s = calloc(1, sizeof *s);
	char *body;
	int rc;

	*out = NULL;
	if (!s)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	s->etcd = e;
	s->cbs = *cbs;
	s->lb.max = max_line;
	s->multi = curl_multi_init();
	s->h = curl_easy_init();
	s->probe_request = probe_request(prefix);
	body = watch_request(prefix, start_revision);
	rc = s->multi && s->h && s->probe_request && body ?
	     hr__etcd_setup(e, s->h, "/watch", body, 1, &s->headers, err) :
	     hr__error_set(err, HR_ENOMEM, "out of memory");
	free(body);
	if (rc) {
		hr__etcd_stream_close(s);
		return rc;
	}
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_stream_data);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
	curl_multi_add_handle(s->multi, s->h);
	*out = s;
	return 0;
}

int hr__etcd_stream_perform(hr__etcd_stream *s)
{
	CURLMsg *msg;
	int running, left;

	if (s->done)
		return 0;
	curl_multi_perform(s->multi, &running);
	while (!s->done && (msg = curl_multi_info_read(s->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (msg->easy_handle == s->pr.h)
			probe_done(s, msg->data.result);
		else if (msg->easy_handle == s->h)
			stream_done(s, msg->data.result);
	}
	return !s->done;
}

void hr__etcd_stream_wait(hr__etcd_stream *s, int ms)
{
	curl_multi_poll(s->multi, NULL, 0, ms, NULL);
}

void hr__etcd_stream_wakeup(hr__etcd_stream *s)
{
	curl_multi_wakeup(s->multi);
}

void hr__etcd_stream_close(hr__etcd_stream *s)
{
	if (!s)
		return;
	probe_free(s);
	if (s->h) {
		curl_multi_remove_handle(s->multi, s->h);
		curl_easy_cleanup(s->h);
	}
	curl_slist_free_all(s->headers);
	curl_multi_cleanup(s->multi);
	hr__linebuf_free(&s->lb);
	free(s->probe_request);
	free(s);
}
