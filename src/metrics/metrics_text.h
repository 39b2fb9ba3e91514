/* SPDX-License-Identifier: MIT */
/* metrics_text.h - the Prometheus text exposition format 0.0.4, written
 * to a caller's callback (internal; the tools of src/cli/ may use its
 * name and label checks too, to name their own options).
 *
 * One exposition is begun with the caller's options (a name prefix and
 * constant labels, checked here against the format's rules), then written
 * family by family: a family's HELP and TYPE lines, then its samples, all
 * of one name.  Output goes through a fixed buffer to the callback.  The
 * first failure (the callback's refusal) sticks: later calls do nothing
 * and hr__expo_end() returns it, so the code that lists the families need
 * not check every line.
 *
 * Label values are any bytes, escaped as the format wants ('\', '"',
 * newline) and made valid UTF-8 (U+FFFD for each byte that is not).
 * Numbers are written in the C locale: integers exactly, doubles in the
 * fewest of 15 or 17 significant digits that read back as the same value.
 */
#ifndef HR_METRICS_TEXT_H
#define HR_METRICS_TEXT_H

#include "hashring.h"

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes handed to the callback at most at once (hashring.h says 8192). */
#define HR__EXPO_CHUNK 8192

typedef struct hr__expo {
	hr_metrics_write_fn write;
	void *userdata;
	const char *prefix;             /* "" for none */
	const hr_metrics_label *labels; /* constant labels, checked */
	size_t label_count;
	const char *family;             /* the family being written */
	locale_t c_locale;              /* for doubles, whatever the host's */
	int rc;                         /* first failure, sticky; a caller
					   may set its own to stop */
	hr_error *err;
	size_t len;
	char buf[HR__EXPO_CHUNK];
} hr__expo;

/* Why a name prefix or one constant label breaks the rules of hashring.h
 * (the name shown escaped), without naming the struct, for a caller that
 * names them otherwise (the CLI's options): HR_EINVAL, or 0.  Names given
 * twice are the caller's to find. */
int hr__metrics_prefix_check(const char *prefix, hr_error *why);
int hr__metrics_label_check(const hr_metrics_label *label, hr_error *why);

/*
 * Begins an exposition into `write_fn` with the options `opts` (read by
 * hr__metrics_options_read).  HR_EINVAL (the prefix or a constant label
 * breaks the rules of hashring.h: the message names it, shown escaped),
 * HR_ENOMEM; nothing is written then, and hr__expo_end() needs not be
 * called.
 */
int hr__expo_begin(hr__expo *e, const hr_metrics_options *opts,
		   hr_metrics_write_fn write_fn, void *userdata, hr_error *err);

/* Whether `s` is [a-zA-Z_][a-zA-Z0-9_]*: the names both metric and label
 * names may have (metric names may also hold ':', which is for recording
 * rules). */
int hr__expo_valid_name(const char *s);

/* Starts family `name` (without the prefix) of `type` ("gauge",
 * "counter") with its one-line `help`; the samples that follow are its.
 * `name` must outlive the family's samples (a literal). */
void hr__expo_family(hr__expo *e, const char *name, const char *type,
		     const char *help);

/* One sample of the current family: the constant labels, then the `n`
 * labels given (names are the library's, values any bytes), then the
 * value. */
void hr__expo_u64(hr__expo *e, const hr_metrics_label *labels, size_t n,
		  uint64_t value);
void hr__expo_double(hr__expo *e, const hr_metrics_label *labels, size_t n,
		     double value);

/* Flushes what is buffered and ends the exposition: 0, or the first
 * failure (HR_EIO when the callback refused bytes). */
int hr__expo_end(hr__expo *e);

#endif
