/* SPDX-License-Identifier: MIT */
/* rebalance_config.c - the rebalancer's settings structs: their defaults,
 * the size protocol and the one reading of each (hashring/common.h,
 * "Structs that grow"; docs/abi.md), and its errors.  The library is
 * built on libhashring's public API alone, so it keeps its own small copy
 * of the protocol the core's settings.c implements: the same checks and
 * the same messages. */
#include "rebalance_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* No struct of ours will ever be this big: a larger size is garbage. */
#define SIZE_LIMIT 4096
#define PREFIX_MAX 4096

/* The end of field `f` of T, and whether the caller's struct `p` holds it. */
#define END(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))
#define HAS(T, p, f) ((p)->size >= END(T, f))
/* Takes field `f` from the caller's `in` when its struct holds it. */
#define TAKE(T, in, out, f)              \
	do {                             \
		if (HAS(T, in, f))       \
			(out)->f = (in)->f; \
	} while (0)

/* No struct ends in padding that a later field could slip into (where
 * pointers are 64 bits; other ABIs pad doubles differently). */
#if UINTPTR_MAX == UINT64_MAX
#define NO_TAIL_PADDING(T, last) \
	_Static_assert(sizeof(T) == END(T, last), #T " ends in padding")
NO_TAIL_PADDING(hr_rebalance_config, on_step_userdata);
NO_TAIL_PADDING(hr_rebalance_backend, add_batch);
NO_TAIL_PADDING(hr_rebalance_redis_config, scan_count);
#endif

static const hr_rebalance_backend backend_defaults = {
	.size = sizeof(hr_rebalance_backend),
};

static const hr_rebalance_redis_config redis_defaults = {
	.size = sizeof(hr_rebalance_redis_config),
	.timeout_ms = 2000,
	.scan_count = 1000,
};

static const hr_rebalance_config rebalance_defaults = {
	.size = sizeof(hr_rebalance_config),
	.ack_prefix = "/hashring/acks/",
	/* A wait that no client acknowledges proves nothing: a run without
	 * any is asked for (0), never the default. */
	.min_clients = 1,
	.wait_timeout_ms = 30000,
	.progress_interval_ms = 1000,
	.log_level = HR_LOG_INFO,
};

int hr__rb_error_set(hr_error *err, int code, const char *fmt, ...)
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

/* Writes the caller's `size` bytes of `p` and no more: the defaults of
 * the fields this library knows, zeros for those of a later release. */
static void init_sized(void *p, size_t size, const void *defaults, size_t known)
{
	if (!p || size < sizeof(size_t))
		return;
	memcpy(p, defaults, size < known ? size : known);
	if (size > known)
		memset((char *)p + known, 0, size - known);
	memcpy(p, &size, sizeof size);
}

/*
 * Checks the size of the caller's struct `p` of type `type`, of which this
 * library knows `known` bytes and whose first field ends at `first_end`.
 * Bytes past `known` are those of fields of a later release: all zero
 * unless the program set one, which this library cannot honour.
 */
static int check_size(const void *p, size_t known, size_t first_end,
		      const char *type, hr_error *err)
{
	const unsigned char *b = p;
	size_t size;

	memcpy(&size, p, sizeof size);
	if (size == 0)
		return hr__rb_error_set(err, HR_EINVAL,
					"%s: size is 0: set it up with %s_init()", type, type);
	if (size < first_end || size > SIZE_LIMIT)
		return hr__rb_error_set(err, HR_EINVAL,
					"%s: size %zu is not that of an initialised struct:"
					" set it up with %s_init()", type, size, type);
	for (size_t i = known; i < size; i++) {
		if (b[i])
			return hr__rb_error_set(err, HR_EINVAL,
						"%s: byte %zu is set, past the %zu bytes hashring %s"
						" knows: the program sets a field of a later release",
						type, i, known, HR_VERSION_STRING);
	}
	return 0;
}

#define CHECK_SIZE(T, in, first, err) \
	check_size((in), sizeof(T), END(T, first), #T, (err))

void hr_rebalance_backend_init_size(hr_rebalance_backend *b, size_t size)
{
	init_sized(b, size, &backend_defaults, sizeof backend_defaults);
}

void hr_rebalance_config_init_size(hr_rebalance_config *cfg, size_t size)
{
	init_sized(cfg, size, &rebalance_defaults, sizeof rebalance_defaults);
}

void hr_rebalance_redis_config_init_size(hr_rebalance_redis_config *cfg, size_t size)
{
	init_sized(cfg, size, &redis_defaults, sizeof redis_defaults);
}

int hr__rebalance_redis_config_read(const hr_rebalance_redis_config *in,
				    hr_rebalance_redis_config *out, hr_error *err)
{
	int rc;

	*out = redis_defaults;
	if (!in)
		return 0;
	rc = CHECK_SIZE(hr_rebalance_redis_config, in, timeout_ms, err);
	if (rc)
		return rc;
	TAKE(hr_rebalance_redis_config, in, out, timeout_ms);
	TAKE(hr_rebalance_redis_config, in, out, db);
	TAKE(hr_rebalance_redis_config, in, out, user);
	TAKE(hr_rebalance_redis_config, in, out, password);
	TAKE(hr_rebalance_redis_config, in, out, scan_count);
	if (out->timeout_ms < 0 || out->db < 0)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_redis_config: %s must be >= 0",
					out->timeout_ms < 0 ? "timeout_ms" : "db");
	if (out->user && !out->password)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_redis_config: a user needs a password");
	if (out->scan_count == 0 || out->scan_count > 1000000)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_redis_config: scan_count must be 1..1000000");
	if (out->timeout_ms == 0)
		out->timeout_ms = redis_defaults.timeout_ms;
	return 0;
}

int hr__rebalance_backend_read(const hr_rebalance_backend *in, hr_rebalance_backend *out,
			       hr_error *err)
{
	int rc;

	*out = backend_defaults;
	if (!in)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_backend must not be NULL");
	rc = CHECK_SIZE(hr_rebalance_backend, in, userdata, err);
	if (rc)
		return rc;
	TAKE(hr_rebalance_backend, in, out, userdata);
	TAKE(hr_rebalance_backend, in, out, enumerate);
	TAKE(hr_rebalance_backend, in, out, fetch);
	TAKE(hr_rebalance_backend, in, out, add);
	TAKE(hr_rebalance_backend, in, out, remove);
	TAKE(hr_rebalance_backend, in, out, close);
	TAKE(hr_rebalance_backend, in, out, enumerate_passes);
	TAKE(hr_rebalance_backend, in, out, name);
	TAKE(hr_rebalance_backend, in, out, fetch_batch);
	TAKE(hr_rebalance_backend, in, out, add_batch);
	if (!out->fetch_batch != !out->add_batch)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_backend: fetch_batch and add_batch go together"
					" (%s is NULL)", out->fetch_batch ? "add_batch" : "fetch_batch");
	if (!out->enumerate || !out->fetch || !out->add)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_backend: %s is NULL (required)",
					!out->enumerate ? "enumerate" : !out->fetch ? "fetch" : "add");
	if (out->enumerate_passes == 0)
		out->enumerate_passes = 1;
	if (out->enumerate_passes > 16)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_backend: enumerate_passes %zu is over 16",
					out->enumerate_passes);
	if (out->name && (!*out->name || strlen(out->name) > 64))
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_backend: name must hold 1..64 bytes");
	return 0;
}

int hr__rebalance_config_read(const hr_rebalance_config *in, hr_rebalance_config *out,
			      hr_error *err)
{
	const unsigned known = HR_REBALANCE_PROMOTE | HR_REBALANCE_PURGE;
	int rc;

	*out = rebalance_defaults;
	if (!in)
		return 0;
	rc = CHECK_SIZE(hr_rebalance_config, in, keys_per_s, err);
	if (rc)
		return rc;
	TAKE(hr_rebalance_config, in, out, keys_per_s);
	TAKE(hr_rebalance_config, in, out, bytes_per_s);
	TAKE(hr_rebalance_config, in, out, ack_prefix);
	TAKE(hr_rebalance_config, in, out, min_clients);
	TAKE(hr_rebalance_config, in, out, wait_timeout_ms);
	TAKE(hr_rebalance_config, in, out, flags);
	TAKE(hr_rebalance_config, in, out, progress_interval_ms);
	TAKE(hr_rebalance_config, in, out, log_level);
	TAKE(hr_rebalance_config, in, out, log);
	TAKE(hr_rebalance_config, in, out, log_userdata);
	TAKE(hr_rebalance_config, in, out, on_step);
	TAKE(hr_rebalance_config, in, out, on_step_userdata);
	if (!isfinite(out->keys_per_s) || out->keys_per_s < 0)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_config: keys_per_s must be a finite number >= 0");
	if (!isfinite(out->bytes_per_s) || out->bytes_per_s < 0)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_config: bytes_per_s must be a finite number >= 0");
	if (!out->ack_prefix || !*out->ack_prefix || strlen(out->ack_prefix) > PREFIX_MAX)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_config: ack_prefix must hold 1..%d bytes",
					PREFIX_MAX);
	if (out->wait_timeout_ms < 0 || out->progress_interval_ms < 0)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_config: %s must be >= 0",
					out->wait_timeout_ms < 0 ? "wait_timeout_ms" :
					"progress_interval_ms");
	if (out->flags & ~known)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_config: unknown flags 0x%x",
					out->flags & ~known);
	if ((unsigned)out->log_level > HR_LOG_DEBUG)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_config: invalid log_level %d",
					(int)out->log_level);
	return 0;
}
