/* SPDX-License-Identifier: MIT */
/* metrics_text.c - the Prometheus text exposition format 0.0.4: names and
 * constant labels checked, label values escaped, numbers in the C locale,
 * output buffered to the caller's callback. */
#include "metrics_text.h"
#include "error.h"
#include "escape.h"
#include "node.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128
#define LABELS_MAX 64
#define VALUE_MAX_LEN 4096

/* The label names the library's families use, now or in a later release
 * (hashring.h): a constant label of one of these names would give a
 * sample the same label twice. */
static const char *const reserved[] = {
	"node", "view", "state", "addr", "zone", "digest", "version",
	"endpoint", "key", "rank", "le", "quantile", "result", "step",
};

/* [a-zA-Z_][a-zA-Z0-9_]*: the names both metric and label names may
 * have (metric names may also hold ':', which is for recording rules). */
int hr__expo_valid_name(const char *s)
{
	if (!s[0] || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') ||
		       (s[0] >= 'A' && s[0] <= 'Z')))
		return 0;
	for (const char *p = s + 1; *p; p++) {
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			return 0;
	}
	return 1;
}

int hr__metrics_prefix_check(const char *prefix, hr_error *why)
{
	size_t len = strnlen(prefix, NAME_MAX_LEN + 1);
	char shown[HR__SHOW_SIZE];

	if (len && (len > NAME_MAX_LEN || !hr__expo_valid_name(prefix)))
		return hr__error_set(why, HR_EINVAL,
				     "\"%s\" is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes",
				     hr__show(shown, sizeof shown, prefix, len), NAME_MAX_LEN);
	return 0;
}

int hr__metrics_label_check(const hr_metrics_label *l, hr_error *why)
{
	char shown[HR__SHOW_SIZE];
	size_t len;

	if (!l->name || !l->value)
		return hr__error_set(why, HR_EINVAL, "%s is NULL", l->name ? "value" : "name");
	len = strnlen(l->name, NAME_MAX_LEN + 1);
	hr__show(shown, sizeof shown, l->name, len);
	if (len > NAME_MAX_LEN || !hr__expo_valid_name(l->name))
		return hr__error_set(why, HR_EINVAL,
				     "name \"%s\" is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes",
				     shown, NAME_MAX_LEN);
	if (l->name[0] == '_' && l->name[1] == '_')
		return hr__error_set(why, HR_EINVAL,
				     "name \"%s\" starts with \"__\", which Prometheus reserves",
				     shown);
	for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++) {
		if (!strcmp(l->name, reserved[k]))
			return hr__error_set(why, HR_EINVAL,
					     "name \"%s\" is one the library's metrics use", shown);
	}
	if (strnlen(l->value, VALUE_MAX_LEN + 1) > VALUE_MAX_LEN)
		return hr__error_set(why, HR_EINVAL, "value of \"%s\" is longer than %d bytes",
				     shown, VALUE_MAX_LEN);
	return 0;
}

static int check_label(const hr_metrics_label *l, size_t i, const hr_metrics_label *all,
		       hr_error *err)
{
	char shown[HR__SHOW_SIZE];
	hr_error why = { 0 };
	int rc = hr__metrics_label_check(l, &why);

	if (rc)
		return hr__error_set(err, rc, "hr_metrics_options: labels[%zu]: %s", i,
				     why.message);
	for (size_t k = 0; k < i; k++) {
		if (!strcmp(l->name, all[k].name))
			return hr__error_set(err, HR_EINVAL,
					     "hr_metrics_options: labels[%zu]: name \"%s\" is given"
					     " twice (also labels[%zu])", i,
					     hr__show(shown, sizeof shown, l->name, strlen(l->name)),
					     k);
	}
	return 0;
}

int hr__expo_begin(hr__expo *e, const hr_metrics_options *opts,
		   hr_metrics_write_fn write_fn, void *userdata, hr_error *err)
{
	const char *prefix = opts->name_prefix ? opts->name_prefix : "";
	hr_error why = { 0 };
	int rc;

	rc = hr__metrics_prefix_check(prefix, &why);
	if (rc)
		return hr__error_set(err, rc, "hr_metrics_options: name_prefix %s", why.message);
	if (opts->label_count && !opts->labels)
		return hr__error_set(err, HR_EINVAL,
				     "hr_metrics_options: labels is NULL with label_count %zu",
				     opts->label_count);
	if (opts->label_count > LABELS_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "hr_metrics_options: label_count %zu is over %d",
				     opts->label_count, LABELS_MAX);
	for (size_t i = 0; i < opts->label_count; i++) {
		rc = check_label(&opts->labels[i], i, opts->labels, err);
		if (rc)
			return rc;
	}
	memset(e, 0, offsetof(hr__expo, buf));
	/* The "C" locale object is static in glibc: this allocates nothing
	 * and cannot fail there, but the interface may. */
	e->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (e->c_locale == (locale_t)0)
		return hr__error_set(err, HR_ENOMEM, "out of memory (the C locale)");
	e->write = write_fn;
	e->userdata = userdata;
	e->prefix = prefix;
	e->labels = opts->labels;
	e->label_count = opts->label_count;
	e->err = err;
	return 0;
}

static void flush(hr__expo *e)
{
	int r;

	if (e->rc || !e->len)
		return;
	r = e->write(e->userdata, e->buf, e->len);
	e->len = 0;
	if (r)
		e->rc = hr__error_set(e->err, HR_EIO,
				      "metrics: the write callback returned %d: output cut short", r);
}

static void put(hr__expo *e, const char *p, size_t n)
{
	while (n && !e->rc) {
		size_t room = sizeof e->buf - e->len;
		size_t k = n < room ? n : room;

		memcpy(e->buf + e->len, p, k);
		e->len += k;
		p += k;
		n -= k;
		if (e->len == sizeof e->buf)
			flush(e);
	}
}

static void put_str(hr__expo *e, const char *s)
{
	put(e, s, strlen(s));
}

/* The inside of a quoted label value: '\', '"' and newline escaped, the
 * rest as it is where it is valid UTF-8, U+FFFD for each byte where not. */
static void put_label_value(hr__expo *e, const char *s)
{
	size_t n = strlen(s), run = 0, i = 0;

	while (i < n) {
		const char *esc = NULL;
		size_t len = 1;

		switch (s[i]) {
		case '\\': esc = "\\\\"; break;
		case '"': esc = "\\\""; break;
		case '\n': esc = "\\n"; break;
		default:
			len = hr__utf8_len(s + i, n - i);
			if (!len) {
				esc = "\xef\xbf\xbd";
				len = 1;
			}
		}
		if (esc) {
			put(e, s + run, i - run);
			put_str(e, esc);
			run = i + len;
		}
		i += len;
	}
	put(e, s + run, n - run);
}

void hr__expo_family(hr__expo *e, const char *name, const char *type,
		     const char *help)
{
	e->family = name;
	put_str(e, "# HELP ");
	put_str(e, e->prefix);
	put_str(e, name);
	put_str(e, " ");
	/* HELP text escapes only '\' and newline; ours are one line. */
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			put_str(e, "\\\\");
		else if (*p == '\n')
			put_str(e, "\\n");
		else
			put(e, p, 1);
	}
	put_str(e, "\n# TYPE ");
	put_str(e, e->prefix);
	put_str(e, name);
	put_str(e, " ");
	put_str(e, type);
	put_str(e, "\n");
}

static void put_labels(hr__expo *e, const hr_metrics_label *l, size_t n)
{
	put_str(e, l->name);
	put_str(e, "=\"");
	put_label_value(e, l->value);
	put_str(e, "\"");
	for (size_t i = 1; i < n; i++) {
		put_str(e, ",");
		put_str(e, l[i].name);
		put_str(e, "=\"");
		put_label_value(e, l[i].value);
		put_str(e, "\"");
	}
}

static void put_sample(hr__expo *e, const hr_metrics_label *labels, size_t n,
		       const char *value)
{
	put_str(e, e->prefix);
	put_str(e, e->family);
	if (e->label_count || n) {
		put_str(e, "{");
		if (e->label_count)
			put_labels(e, e->labels, e->label_count);
		if (e->label_count && n)
			put_str(e, ",");
		if (n)
			put_labels(e, labels, n);
		put_str(e, "}");
	}
	put_str(e, " ");
	put_str(e, value);
	put_str(e, "\n");
}

void hr__expo_u64(hr__expo *e, const hr_metrics_label *labels, size_t n,
		  uint64_t value)
{
	char text[24];

	snprintf(text, sizeof text, "%" PRIu64, value);
	put_sample(e, labels, n, text);
}

void hr__expo_double(hr__expo *e, const hr_metrics_label *labels, size_t n,
		     double value)
{
	char text[32];
	locale_t old;

	if (isnan(value)) {
		put_sample(e, labels, n, "NaN");
		return;
	}
	if (isinf(value)) {
		put_sample(e, labels, n, value > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* The host may have set a locale whose decimal point is not '.'. */
	old = uselocale(e->c_locale);
	snprintf(text, sizeof text, "%.15g", value);
	if (strtod(text, NULL) != value)
		snprintf(text, sizeof text, "%.17g", value);
	uselocale(old);
	put_sample(e, labels, n, text);
}

int hr__expo_end(hr__expo *e)
{
	flush(e);
	freelocale(e->c_locale);
	return e->rc;
}
