/* SPDX-License-Identifier: MIT */
/* test_log.c - log lines are logfmt that a real parser reads back exactly:
 * escaping of every kind of byte, the printf subset, cut lines, and
 * record writers who try to inject fields. */
#include "escape.h"
#include "log.h"
#include "hrt_check.h"
#include "hrt_logfmt.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

/* ---- escaping -------------------------------------------------------------- */

/* The escape of all of s[0..n). */
static const char *esc(const char *s, size_t n)
{
	static char out[256];
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		size_t used;
		o += hr__escape_unit(s + i, n - i, &used, out + o);
		i += used;
	}
	out[o] = '\0';
	return out;
}

#define ESC(lit) esc(lit, sizeof lit - 1)

START_TEST(escape_ascii_and_controls)
{
	ck_assert_str_eq(ESC("plain-ascii_123:/.,"), "plain-ascii_123:/.,");
	ck_assert_str_eq(ESC("a\"b\\c"), "a\\\"b\\\\c");
	ck_assert_str_eq(ESC("\n\r\t"), "\\n\\r\\t");
	ck_assert_str_eq(ESC("\x01\x1f\x7f"), "\\u0001\\u001f\\u007f");
	ck_assert_str_eq(ESC("a\0b"), "a\\u0000b");
}
END_TEST

START_TEST(escape_utf8)
{
	/* Valid UTF-8 of every length passes through. */
	ck_assert_str_eq(ESC("z\xc3\xbcrich"), "z\xc3\xbcrich");
	ck_assert_str_eq(ESC("\xe2\x82\xac"), "\xe2\x82\xac");
	ck_assert_str_eq(ESC("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
	ck_assert_str_eq(ESC("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
	/* Anything else is one \udcXX per byte. */
	ck_assert_str_eq(ESC("caf\xc3"), "caf\\udcc3");            /* cut short */
	ck_assert_str_eq(ESC("\xff\xfe"), "\\udcff\\udcfe");
	ck_assert_str_eq(ESC("\xc0\x80"), "\\udcc0\\udc80");        /* overlong */
	ck_assert_str_eq(ESC("\xe0\x80\xaf"), "\\udce0\\udc80\\udcaf");
	ck_assert_str_eq(ESC("\xed\xa0\x80"), "\\udced\\udca0\\udc80"); /* surrogate */
	ck_assert_str_eq(ESC("\xf4\x90\x80\x80"), "\\udcf4\\udc90\\udc80\\udc80");
	ck_assert_str_eq(ESC("\xc3\x28"), "\\udcc3(");
}
END_TEST

START_TEST(logfmt_quoting_rule)
{
	ck_assert(!hr__logfmt_needs_quotes("cache-7", 7));
	ck_assert(!hr__logfmt_needs_quotes("http://127.0.0.1:2379", 21));
	ck_assert(hr__logfmt_needs_quotes("", 0));
	ck_assert(hr__logfmt_needs_quotes("a b", 3));
	ck_assert(hr__logfmt_needs_quotes("a=b", 3));
	ck_assert(hr__logfmt_needs_quotes("a\"b", 3));
	ck_assert(hr__logfmt_needs_quotes("a\\b", 3));
	ck_assert(hr__logfmt_needs_quotes("z\xc3\xbc", 3));
	ck_assert(hr__logfmt_needs_quotes("a\x7f", 2));
}
END_TEST

/* ---- lines ------------------------------------------------------------------ */

struct captured {
	char text[1 << 16];
	size_t len;
	char last[HR__LOG_LINE_MAX];
};

static void capture(void *ud, hr_log_level level, const char *line)
{
	struct captured *c = ud;
	size_t n = strlen(line);

	(void)level;
	ck_assert_uint_lt(n, sizeof c->last);
	memcpy(c->last, line, n + 1);
	ck_assert_uint_lt(c->len + n + 1, sizeof c->text);
	memcpy(c->text + c->len, line, n);
	c->len += n;
	c->text[c->len++] = '\n';
}

static struct captured cap;
static hr__log lg = { capture, &cap, HR_LOG_DEBUG };

static void setup(void)
{
	memset(&cap, 0, sizeof cap);
}

START_TEST(printf_subset)
{
	uint64_t big = UINT64_MAX, digest = 0xabcULL;
	int64_t neg = INT64_MIN;

	hr__log_emit(&lg, HR_LOG_INFO, "ring",
		     "a=%d b=%u c=%zu d=%" PRIu64 " e=%" PRId64 " f=%016" PRIx64
		     " g=%.4f h=%g i=%5d j=%-3d| k=%x l=%c m=%% n=%*d o=%hhu",
		     -7, 7u, (size_t)12, big, neg, digest, 0.5, 1e-300, 42, 1, 255u,
		     'q', 4, 9, (unsigned char)200);
	ck_assert_str_eq(cap.last,
			 "level=info event=ring a=-7 b=7 c=12 d=18446744073709551615"
			 " e=-9223372036854775808 f=0000000000000abc g=0.5000 h=1e-300"
			 " i=   42 j=1  | k=ff l=q m=% n=   9 o=200");
}
END_TEST

START_TEST(strings_bare_or_quoted)
{
	hr__log_emit(&lg, HR_LOG_WARN, "x", "id=%s msg=%s empty=%s",
		     "cache-7", "two words", "");
	ck_assert_str_eq(cap.last,
			 "level=warn event=x id=cache-7 msg=\"two words\" empty=\"\"");
	/* %.*s takes exactly that many bytes, NULs included. */
	hr__log_emit(&lg, HR_LOG_WARN, "x", "key=%.*s", 5, "a\0b\nc-ignored");
	ck_assert_str_eq(cap.last, "level=warn event=x key=\"a\\u0000b\\nc\"");
}
END_TEST

START_TEST(levels_filter)
{
	hr__log quiet = { capture, &cap, HR_LOG_WARN };

	hr__log_emit(&quiet, HR_LOG_INFO, "x", "%s", "a");
	ck_assert_uint_eq(cap.len, 0);
	hr__log_emit(&quiet, HR_LOG_ERROR, "x", "n=%d", 1);
	ck_assert_str_eq(cap.last, "level=error event=x n=1");
	ck_assert(!hr__log_enabled(NULL, HR_LOG_ERROR));
}
END_TEST

/* What a log line or a message names for a level or code that is not one. */
START_TEST(unknown_level_and_code)
{
	ck_assert_ptr_null(hr_log_level_name((hr_log_level)42));
	ck_assert_str_eq(hr_strerror(-12345), "unknown error");
	ck_assert_str_eq(hr_strerror(12345), "unknown error");
}
END_TEST

/* Decodes every captured line; each must parse. */
static cJSON *decode_all(void)
{
	cJSON *all = hrt_logfmt_decode(cap.text, cap.len), *line;

	ck_assert_msg(all != NULL, "the logfmt decoder did not run");
	cJSON_ArrayForEach(line, all) {
		ck_assert_msg(cJSON_IsArray(line), "a line did not parse: %s",
			      cJSON_PrintUnformatted(line));
	}
	return all;
}

static void assert_pairs(const cJSON *line, const char *const *kv, size_t n)
{
	ck_assert_int_eq(cJSON_GetArraySize(line), (int)n);
	for (size_t i = 0; i < n; i++) {
		const cJSON *p = cJSON_GetArrayItem(line, (int)i);
		ck_assert_str_eq(cJSON_GetArrayItem(p, 0)->valuestring, kv[2 * i]);
		ck_assert_str_eq(cJSON_GetArrayItem(p, 1)->valuestring, kv[2 * i + 1]);
	}
}

START_TEST(record_writers_cannot_inject_fields)
{
	/* A key and a message made to look like other fields. */
	const char *key = "/hashring/nodes/q\" level=error event=cluster_replaced x=\"";
	const char *msg = "node \"badjson\": unexpected \" at byte 3";
	cJSON *all;

	hr__log_emit(&lg, HR_LOG_WARN, "bad_record", "key=%.*s mod_revision=%d msg=%s",
		     (int)strlen(key), key, 9, msg);
	hr__log_emit(&lg, HR_LOG_WARN, "bad_record", "key=%s msg=%s",
		     "a=b c=d", "back\\slash\" \n newline\tand=tab");
	all = decode_all();
	ck_assert_int_eq(cJSON_GetArraySize(all), 2);
	{
		const char *want[] = { "level", "warn", "event", "bad_record", "key", key,
				       "mod_revision", "9", "msg", msg };
		assert_pairs(cJSON_GetArrayItem(all, 0), want, 5);
	}
	{
		const char *want[] = { "level", "warn", "event", "bad_record", "key", "a=b c=d",
				       "msg", "back\\slash\" \n newline\tand=tab" };
		assert_pairs(cJSON_GetArrayItem(all, 1), want, 4);
	}
	cJSON_Delete(all);
}
END_TEST

START_TEST(any_bytes_read_back)
{
	cJSON *all;

	hr__log_emit(&lg, HR_LOG_INFO, "x", "zone=%s ctl=%s bad=%s",
		     "z\xc3\xbcrich \xe2\x82\xac", "a\001\177b", "caf\xc3 \xff");
	all = decode_all();
	{
		/* Valid UTF-8 comes back exactly; an invalid byte as U+FFFD
		 * (Go's reading of the lone surrogate). */
		const char *want[] = { "level", "info", "event", "x",
				       "zone", "z\xc3\xbcrich \xe2\x82\xac",
				       "ctl", "a\001\177b",
				       "bad", "caf\xef\xbf\xbd \xef\xbf\xbd" };
		assert_pairs(cJSON_GetArrayItem(all, 0), want, 5);
	}
	cJSON_Delete(all);
}
END_TEST

START_TEST(long_lines_cut_at_a_field)
{
	char big[3000];
	cJSON *all, *line;
	const char *msg;

	for (size_t i = 0; i < sizeof big - 1; i++)
		big[i] = "ab\" ="[i % 5];
	big[sizeof big - 1] = '\0';
	hr__log_emit(&lg, HR_LOG_WARN, "x", "id=%s msg=%s after=%d", "n1", big, 1);
	ck_assert_uint_lt(strlen(cap.last), HR__LOG_LINE_MAX);
	hr__log_emit(&lg, HR_LOG_WARN, "x", "id=%s msg=%s after=%d", big + 3, "m", 2);
	all = decode_all();
	line = cJSON_GetArrayItem(all, 0);
	ck_assert_int_eq(cJSON_GetArraySize(line), 4); /* after= is dropped */
	msg = hrt_logfmt_get(line, "msg");
	ck_assert_ptr_nonnull(msg);
	ck_assert_uint_gt(strlen(msg), 500);
	ck_assert_int_eq(strncmp(msg, big, strlen(msg)), 0);
	line = cJSON_GetArrayItem(all, 1);
	ck_assert_int_eq(cJSON_GetArraySize(line), 3);
	cJSON_Delete(all);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, escape_ascii_and_controls);
	tcase_add_test(tc, escape_utf8);
	tcase_add_test(tc, logfmt_quoting_rule);
	tcase_add_test(tc, printf_subset);
	tcase_add_test(tc, strings_bare_or_quoted);
	tcase_add_test(tc, levels_filter);
	tcase_add_test(tc, unknown_level_and_code);
	tcase_add_test(tc, record_writers_cannot_inject_fields);
	tcase_add_test(tc, any_bytes_read_back);
	tcase_add_test(tc, long_lines_cut_at_a_field);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(log_suite());
}
