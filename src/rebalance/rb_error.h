/* rb_error.h - the rebalancer's errors: hr_error values, as the library's. */
#ifndef HR_REBALANCE_ERROR_H
#define HR_REBALANCE_ERROR_H

#include "hashring.h"

/* Fills `err` (may be NULL) with `code` and the formatted message, cut to
 * one line of HR_ERROR_MSG_MAX; returns `code`. */
int rb_fail(hr_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes `len` bytes of `key` into `out` (`size` bytes) for a message:
 * printable ASCII as is, other bytes as \xHH, cut with "..." if long. */
const char *rb_key_text(const void *key, size_t len, char *out, size_t size);

#endif
