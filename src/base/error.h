/* SPDX-License-Identifier: MIT */
/* error.h - filling hr_error values (internal). */
#ifndef HR_ERROR_H
#define HR_ERROR_H

#include "hashring.h"

/* Bytes of a valid id shown in a message about its node. */
#define HR__ID_SHOWN 80

/* Fills `err` (may be NULL) with `code` and a printf-style message, and
 * returns `code`, so callers can write `return hr__error_set(err, ...)`. */
int hr__error_set(hr_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Copies `src` into `err` (NULL-safe both ways) and returns src->code. */
int hr__error_copy(hr_error *err, const hr_error *src);

#endif
