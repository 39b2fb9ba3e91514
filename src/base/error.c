/* SPDX-License-Identifier: MIT */
/* error.c - error codes and messages. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *hr_strerror(int code)
{
	switch (code) {
	case HR_OK: return "success";
	case HR_EINVAL: return "invalid argument";
	case HR_ENOMEM: return "out of memory";
	case HR_EEMPTY: return "no node in the ring";
	case HR_EDUPLICATE: return "duplicate node id";
	case HR_ELIMIT: return "size or count limit exceeded";
	case HR_EPARSE: return "malformed input";
	case HR_EIO: return "input/output error";
	case HR_ECONNECT: return "cannot connect";
	case HR_ETIMEDOUT: return "timed out";
	case HR_EETCD: return "etcd returned an error";
	case HR_EAUTH: return "authentication failed";
	case HR_EPERM: return "permission denied";
	case HR_ETLS: return "TLS error";
	case HR_ENOTFOUND: return "not found";
	case HR_EEXIST: return "already registered by another owner";
	case HR_ECLOSED: return "closed";
	case HR_ECOMPACTED: return "revision compacted";
	case HR_ECONFLICT: return "clients disagree on the ring at one revision";
	default: return "unknown error";
	}
}

int hr__error_set(hr_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

int hr__error_copy(hr_error *err, const hr_error *src)
{
	if (!src)
		return HR_OK;
	if (err && err != src)
		memcpy(err, src, sizeof *err);
	return src->code;
}
