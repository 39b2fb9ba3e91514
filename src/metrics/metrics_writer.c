/* SPDX-License-Identifier: MIT */
/* metrics_writer.c - hr_metrics_writer: the exposition format of
 * metrics_text.c offered to programs and libraries built on hashring, with
 * every name and label they give checked (hashring/metrics.h). */
#include "error.h"
#include "metrics_options.h"
#include "metrics_text.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128

struct hr_metrics_writer {
	hr__expo e;
};

int hr_metrics_writer_new(hr_metrics_write_fn write_fn, void *userdata,
			  const hr_metrics_options *opts_in, hr_metrics_writer **out,
			  hr_error *err)
{
	hr_metrics_options opts;
	hr_metrics_writer *w;
	int rc;

	if (!write_fn || !out)
		return hr__error_set(err, HR_EINVAL, "hr_metrics_writer_new: %s is NULL",
				     write_fn ? "out" : "write_fn");
	*out = NULL;
	rc = hr__metrics_options_read(opts_in, &opts, err);
	if (rc)
		return rc;
	w = malloc(sizeof *w);
	if (!w)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = hr__expo_begin(&w->e, &opts, write_fn, userdata, err);
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* Whether `w` may write on; a bad argument stops it, saying why. */
static int usable(hr_metrics_writer *w, const char *fn, const char *why)
{
	if (!w || w->e.rc)
		return 0;
	if (why) {
		w->e.rc = hr__error_set(w->e.err, HR_EINVAL, "%s: %s", fn, why);
		return 0;
	}
	return 1;
}

static const char *name_problem(const char *name)
{
	size_t len;

	if (!name)
		return "the name is NULL";
	len = strnlen(name, NAME_MAX_LEN + 1);
	if (len > NAME_MAX_LEN || !hr__expo_valid_name(name))
		return "a name is not [a-zA-Z_][a-zA-Z0-9_]* of at most 128 bytes";
	return NULL;
}

void hr_metrics_writer_family(hr_metrics_writer *w, const char *name,
			      const char *type, const char *help)
{
	static const char *const types[] = { "counter", "gauge", "summary",
					     "histogram", "untyped" };
	const char *why = name_problem(name);
	size_t t = 0;

	while (type && t < sizeof types / sizeof types[0] && strcmp(type, types[t]))
		t++;
	if (!why && (!type || t == sizeof types / sizeof types[0]))
		why = "the type is not counter, gauge, summary, histogram or untyped";
	if (!why && !help)
		why = "the help text is NULL";
	if (usable(w, "hr_metrics_writer_family", why))
		hr__expo_family(&w->e, name, type, help);
}

/* Why a sample's labels cannot be written, or NULL. */
static const char *labels_problem(const hr_metrics_writer *w,
				  const hr_metrics_label *labels, size_t n)
{
	if (!w->e.family)
		return "no family started";
	if (n && !labels)
		return "labels is NULL with a count";
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].value)
			return "a label's value is NULL";
		if (name_problem(labels[i].name))
			return "a label's name is NULL or not [a-zA-Z_][a-zA-Z0-9_]* of at"
			       " most 128 bytes";
	}
	return NULL;
}

void hr_metrics_writer_u64(hr_metrics_writer *w, const hr_metrics_label *labels,
			   size_t n, uint64_t value)
{
	if (usable(w, "hr_metrics_writer_u64", w ? labels_problem(w, labels, n) : NULL))
		hr__expo_u64(&w->e, labels, n, value);
}

void hr_metrics_writer_double(hr_metrics_writer *w, const hr_metrics_label *labels,
			      size_t n, double value)
{
	if (usable(w, "hr_metrics_writer_double", w ? labels_problem(w, labels, n) : NULL))
		hr__expo_double(&w->e, labels, n, value);
}

int hr_metrics_writer_free(hr_metrics_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = hr__expo_end(&w->e);
	free(w);
	return rc;
}
