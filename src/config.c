/* config.c - the public settings structs: their defaults (the *_init_size
 * functions), the size protocol, and the one reading and checking of each
 * (hashring.h, "Structs that grow"; docs/abi.md). */
#include "config.h"
#include "ack_record.h"
#include "error.h"
#include "maglev.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
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

/*
 * A release that appends fields must make the size grow, or an older
 * library could not tell that they are set: no struct ends in padding
 * that a later field could slip into.  (Checked where pointers are 64
 * bits; other ABIs pad doubles differently.)
 */
#if UINTPTR_MAX == UINT64_MAX
#define NO_TAIL_PADDING(T, last) \
	_Static_assert(sizeof(T) == END(T, last), #T " ends in padding")
NO_TAIL_PADDING(hr_ring_options, maglev_size);
NO_TAIL_PADDING(hr_etcd_config, log_userdata);
NO_TAIL_PADDING(hr_client_config, share);
NO_TAIL_PADDING(hr_registration, tokens);
NO_TAIL_PADDING(hr_record_update, weight);
NO_TAIL_PADDING(hr_metrics_options, omit);
NO_TAIL_PADDING(hr_rebalance_config, on_step_userdata);
NO_TAIL_PADDING(hr_rebalance_backend, name);
#endif

static const hr_ring_options ring_defaults = {
	.size = sizeof(hr_ring_options),
	.vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT,
	.placement = HR_PLACEMENT_XXH3,
};

static const hr_etcd_config etcd_defaults = {
	.size = sizeof(hr_etcd_config),
	.request_timeout_ms = 5000,
	.connect_timeout_ms = 2000,
	.log_level = HR_LOG_INFO,
};

static const hr_client_config client_defaults = {
	.size = sizeof(hr_client_config),
	.open_timeout_ms = 10000,
	.backoff_initial_ms = 100,
	.backoff_max_ms = 5000,
	.probe_interval_ms = 3000,
	.stale_warn_ms = 10000,
	.page_size = 1000,
	.ack_ttl_s = 10,
	.ack_interval_ms = 250,
	.probe_jitter_pct = 20,
	.endpoint_order = HR_ENDPOINTS_SPREAD,
	.hot_key_sample = 1024,
	.hot_key_replicas = 3,
};

static const hr_registration registration_defaults = {
	.size = sizeof(hr_registration),
	.weight = 1,
	.state = HR_STATE_WARMING,
	.ttl_s = 10,
};

static const hr_record_update update_defaults = {
	.size = sizeof(hr_record_update),
};

static const hr_metrics_options metrics_defaults = {
	.size = sizeof(hr_metrics_options),
};

static const hr_rebalance_backend backend_defaults = {
	.size = sizeof(hr_rebalance_backend),
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

/* ---- initialising ---------------------------------------------------------- */

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

void hr_ring_options_init_size(hr_ring_options *opts, size_t size)
{
	init_sized(opts, size, &ring_defaults, sizeof ring_defaults);
}

void hr_etcd_config_init_size(hr_etcd_config *etcd, size_t size)
{
	init_sized(etcd, size, &etcd_defaults, sizeof etcd_defaults);
}

void hr_client_config_init_size(hr_client_config *cfg, size_t size)
{
	init_sized(cfg, size, &client_defaults, sizeof client_defaults);
}

void hr_registration_init_size(hr_registration *reg, size_t size)
{
	init_sized(reg, size, &registration_defaults, sizeof registration_defaults);
}

void hr_record_update_init_size(hr_record_update *upd, size_t size)
{
	init_sized(upd, size, &update_defaults, sizeof update_defaults);
}

void hr_rebalance_backend_init_size(hr_rebalance_backend *b, size_t size)
{
	init_sized(b, size, &backend_defaults, sizeof backend_defaults);
}

void hr_rebalance_config_init_size(hr_rebalance_config *cfg, size_t size)
{
	init_sized(cfg, size, &rebalance_defaults, sizeof rebalance_defaults);
}

void hr_metrics_options_init_size(hr_metrics_options *opts, size_t size)
{
	init_sized(opts, size, &metrics_defaults, sizeof metrics_defaults);
}

/* ---- the size protocol ------------------------------------------------------- */

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
		return hr__error_set(err, HR_EINVAL,
				     "%s: size is 0: set it up with %s_init()", type, type);
	if (size < first_end || size > SIZE_LIMIT)
		return hr__error_set(err, HR_EINVAL,
				     "%s: size %zu is not that of an initialised struct:"
				     " set it up with %s_init()", type, size, type);
	for (size_t i = known; i < size; i++) {
		if (b[i])
			return hr__error_set(err, HR_EINVAL,
					     "%s: byte %zu is set, past the %zu bytes hashring %s"
					     " knows: the program sets a field of a later release",
					     type, i, known, HR_VERSION_STRING);
	}
	return 0;
}

#define CHECK_SIZE(T, in, first, err) \
	check_size((in), sizeof(T), END(T, first), #T, (err))

/* ---- reading ------------------------------------------------------------------- */

int hr__ring_options_read(const hr_ring_options *in, hr_ring_options *out,
			  hr_error *err)
{
	int rc;

	*out = ring_defaults;
	if (!in)
		return 0;
	rc = CHECK_SIZE(hr_ring_options, in, vnodes_per_weight, err);
	if (rc)
		return rc;
	TAKE(hr_ring_options, in, out, vnodes_per_weight);
	TAKE(hr_ring_options, in, out, placement);
	TAKE(hr_ring_options, in, out, maglev_size);
	if (!out->vnodes_per_weight)
		out->vnodes_per_weight = HR_VNODES_PER_WEIGHT_DEFAULT;
	if (!out->maglev_size)
		out->maglev_size = HR_MAGLEV_SIZE_DEFAULT;
	if (out->placement != HR_PLACEMENT_XXH3 && out->placement != HR_PLACEMENT_KETAMA &&
	    out->placement != HR_PLACEMENT_MAGLEV &&
	    out->placement != HR_PLACEMENT_RENDEZVOUS &&
	    out->placement != HR_PLACEMENT_TOKENS)
		return hr__error_set(err, HR_EINVAL, "hr_ring_options: unknown placement %d",
				     (int)out->placement);
	if (out->placement == HR_PLACEMENT_MAGLEV)
		return hr__maglev_size_check(out->maglev_size, err);
	return 0;
}

int hr__conn_read(const hr_etcd_config *in, hr__conn *out, hr_error *err)
{
	hr_etcd_config c = etcd_defaults;
	int rc;

	memset(out, 0, sizeof *out);
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config must not be NULL");
	rc = CHECK_SIZE(hr_etcd_config, in, endpoints, err);
	if (rc)
		return rc;
	TAKE(hr_etcd_config, in, &c, endpoints);
	TAKE(hr_etcd_config, in, &c, prefix);
	TAKE(hr_etcd_config, in, &c, api_base);
	TAKE(hr_etcd_config, in, &c, ring);
	TAKE(hr_etcd_config, in, &c, request_timeout_ms);
	TAKE(hr_etcd_config, in, &c, connect_timeout_ms);
	TAKE(hr_etcd_config, in, &c, ca_file);
	TAKE(hr_etcd_config, in, &c, cert_file);
	TAKE(hr_etcd_config, in, &c, key_file);
	TAKE(hr_etcd_config, in, &c, username);
	TAKE(hr_etcd_config, in, &c, password);
	TAKE(hr_etcd_config, in, &c, insecure_skip_verify);
	TAKE(hr_etcd_config, in, &c, log_level);
	TAKE(hr_etcd_config, in, &c, log);
	TAKE(hr_etcd_config, in, &c, log_userdata);

	if (!c.prefix || !c.prefix[0])
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config: prefix must be set and not empty");
	if (strnlen(c.prefix, PREFIX_MAX + 1) > PREFIX_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: prefix longer than %d bytes", PREFIX_MAX);
	if (c.request_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: request_timeout_ms must be > 0 (is %d)",
				     c.request_timeout_ms);
	if (c.connect_timeout_ms <= 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_etcd_config: connect_timeout_ms must be > 0 (is %d)",
				     c.connect_timeout_ms);
	if ((unsigned)c.log_level > HR_LOG_DEBUG)
		return hr__error_set(err, HR_EINVAL, "hr_etcd_config: invalid log_level %d",
				     (int)c.log_level);
	rc = hr__ring_options_read(c.ring, &out->ring, err);
	if (rc)
		return rc;

	out->etcd = (hr__etcd_opts){
		.endpoints = c.endpoints,
		.api_base = c.api_base,
		.request_timeout_ms = c.request_timeout_ms,
		.connect_timeout_ms = c.connect_timeout_ms,
		.ca_file = c.ca_file,
		.cert_file = c.cert_file,
		.key_file = c.key_file,
		.insecure_skip_verify = c.insecure_skip_verify,
		.username = c.username,
		.password = c.password,
	};
	out->prefix = c.prefix;
	out->log = (hr__log){ c.log, c.log_userdata, c.log_level };
	return 0;
}

int hr__client_config_read(const hr_client_config *in, hr_client_config *out,
			   hr_error *err)
{
	int rc;

	*out = client_defaults;
	if (in) {
		rc = CHECK_SIZE(hr_client_config, in, open_timeout_ms, err);
		if (rc)
			return rc;
		TAKE(hr_client_config, in, out, open_timeout_ms);
		TAKE(hr_client_config, in, out, open_nonblocking);
		TAKE(hr_client_config, in, out, backoff_initial_ms);
		TAKE(hr_client_config, in, out, backoff_max_ms);
		TAKE(hr_client_config, in, out, probe_interval_ms);
		TAKE(hr_client_config, in, out, stale_warn_ms);
		TAKE(hr_client_config, in, out, page_size);
		TAKE(hr_client_config, in, out, on_change);
		TAKE(hr_client_config, in, out, on_change_userdata);
		TAKE(hr_client_config, in, out, on_diff);
		TAKE(hr_client_config, in, out, on_diff_userdata);
		TAKE(hr_client_config, in, out, ack_client_id);
		TAKE(hr_client_config, in, out, ack_prefix);
		TAKE(hr_client_config, in, out, ack_ttl_s);
		TAKE(hr_client_config, in, out, ack_interval_ms);
		TAKE(hr_client_config, in, out, probe_jitter_pct);
		TAKE(hr_client_config, in, out, endpoint_order);
		TAKE(hr_client_config, in, out, hot_key_sample);
		TAKE(hr_client_config, in, out, hot_key_replicas);
		TAKE(hr_client_config, in, out, hot_key_spread);
		TAKE(hr_client_config, in, out, share);
	}
#define POSITIVE(f)                                                             \
	if (out->f <= 0)                                                        \
		return hr__error_set(err, HR_EINVAL,                            \
				     "hr_client_config: " #f " must be > 0 (is %d)", out->f);
	POSITIVE(open_timeout_ms)
	POSITIVE(backoff_initial_ms)
	POSITIVE(backoff_max_ms)
	POSITIVE(probe_interval_ms)
	POSITIVE(stale_warn_ms)
#undef POSITIVE
	if (out->backoff_max_ms < out->backoff_initial_ms)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: backoff_max_ms below backoff_initial_ms");
	if (out->page_size == 0 || out->page_size > 100000)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: page_size must be 1..100000 (is %u)",
				     out->page_size);
	if (!out->ack_client_id != !out->ack_prefix)
		return hr__error_set(err, HR_EINVAL, "hr_client_config: ack_client_id and"
				     " ack_prefix go together: set both, or neither");
	if (out->ack_client_id) {
		hr_error why;

		rc = hr__ack_client_id_check(out->ack_client_id, &why);
		if (rc)
			return hr__error_set(err, rc, "hr_client_config: %s", why.message);
	}
	if (out->ack_ttl_s < 2 || out->ack_ttl_s > 3600)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: ack_ttl_s must be 2..3600 (is %d)",
				     out->ack_ttl_s);
	if (out->ack_interval_ms < 10 || out->ack_interval_ms > 60000)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: ack_interval_ms must be 10..60000 (is %d)",
				     out->ack_interval_ms);
	if (out->probe_jitter_pct < 0 || out->probe_jitter_pct > 50)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: probe_jitter_pct must be 0..50 (is %d)",
				     out->probe_jitter_pct);
	if (out->endpoint_order != HR_ENDPOINTS_SPREAD &&
	    out->endpoint_order != HR_ENDPOINTS_IN_ORDER)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: endpoint_order must be HR_ENDPOINTS_SPREAD"
				     " or HR_ENDPOINTS_IN_ORDER (is %d)", out->endpoint_order);
	if (out->hot_key_sample > 65536 || (out->hot_key_sample & (out->hot_key_sample - 1)))
		return hr__error_set(err, HR_EINVAL, "hr_client_config: hot_key_sample must"
				     " be 0 or a power of two up to 65536 (is %u)",
				     out->hot_key_sample);
	if (out->hot_key_replicas < 2 || out->hot_key_replicas > 16)
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: hot_key_replicas must be 2..16 (is %u)",
				     out->hot_key_replicas);
	/* Written so that NaN fails too. */
	if (!(out->hot_key_spread >= 0 && out->hot_key_spread <= 1))
		return hr__error_set(err, HR_EINVAL,
				     "hr_client_config: hot_key_spread must be 0..1 (is %g)",
				     out->hot_key_spread);
	if (out->hot_key_spread > 0 && !out->hot_key_sample)
		return hr__error_set(err, HR_EINVAL, "hr_client_config: hot_key_spread"
				     " needs hot_key_sample > 0 (the hot keys come from the samples)");
	return 0;
}

int hr__registration_read(const hr_registration *in, hr_registration *out,
			  hr_error *err)
{
	int rc;

	*out = registration_defaults;
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_registration must not be NULL");
	rc = CHECK_SIZE(hr_registration, in, id, err);
	if (rc)
		return rc;
	TAKE(hr_registration, in, out, id);
	TAKE(hr_registration, in, out, addr);
	TAKE(hr_registration, in, out, zone);
	TAKE(hr_registration, in, out, weight);
	TAKE(hr_registration, in, out, state);
	TAKE(hr_registration, in, out, ttl_s);
	TAKE(hr_registration, in, out, replace);
	TAKE(hr_registration, in, out, on_lost);
	TAKE(hr_registration, in, out, on_lost_userdata);
	TAKE(hr_registration, in, out, tokens);
	if (!out->id || !out->addr)
		return hr__error_set(err, HR_EINVAL, "hr_registration: id and addr are required");
	if (out->ttl_s < 2 || out->ttl_s > 3600)
		return hr__error_set(err, HR_EINVAL,
				     "hr_registration: ttl_s must be 2..3600 (is %d)", out->ttl_s);
	return 0;
}

int hr__record_update_read(const hr_record_update *in, hr_record_update *out,
			   hr_error *err)
{
	const unsigned known = HR_UPDATE_STATE | HR_UPDATE_WEIGHT | HR_UPDATE_HEIRS;
	int rc;

	*out = update_defaults;
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_record_update must not be NULL");
	rc = CHECK_SIZE(hr_record_update, in, fields, err);
	if (rc)
		return rc;
	TAKE(hr_record_update, in, out, fields);
	TAKE(hr_record_update, in, out, state);
	TAKE(hr_record_update, in, out, weight);
	if (!out->fields)
		return hr__error_set(err, HR_EINVAL, "hr_record_update: fields names nothing to change");
	if (out->fields & ~known)
		return hr__error_set(err, HR_EINVAL, "hr_record_update: unknown flags 0x%x in fields",
				     out->fields & ~known);
	if ((out->fields & HR_UPDATE_STATE) && !hr_state_name(out->state))
		return hr__error_set(err, HR_EINVAL, "hr_record_update: invalid state %d",
				     (int)out->state);
	if ((out->fields & HR_UPDATE_HEIRS) &&
	    (!(out->fields & HR_UPDATE_STATE) || out->state != HR_STATE_DRAINING))
		return hr__error_set(err, HR_EINVAL,
				     "hr_record_update: HR_UPDATE_HEIRS needs the state draining");
	if ((out->fields & HR_UPDATE_WEIGHT) && (!isfinite(out->weight) || out->weight <= 0))
		return hr__error_set(err, HR_EINVAL,
				     "hr_record_update: weight must be a finite number > 0");
	return 0;
}

/* The omit flags this release knows. */
#define KNOWN_OMIT ((uint64_t)(HR_METRICS_OMIT_NODES | HR_METRICS_OMIT_LOOKUPS | \
				 HR_METRICS_OMIT_HOT_KEYS))

int hr__metrics_options_read(const hr_metrics_options *in, hr_metrics_options *out,
			     hr_error *err)
{
	int rc;

	*out = metrics_defaults;
	if (!in)
		return 0;
	rc = CHECK_SIZE(hr_metrics_options, in, name_prefix, err);
	if (rc)
		return rc;
	TAKE(hr_metrics_options, in, out, name_prefix);
	TAKE(hr_metrics_options, in, out, labels);
	TAKE(hr_metrics_options, in, out, label_count);
	TAKE(hr_metrics_options, in, out, omit);
	if (out->omit & ~KNOWN_OMIT)
		return hr__error_set(err, HR_EINVAL,
				     "hr_metrics_options: unknown flags 0x%" PRIx64 " in omit",
				     out->omit & ~KNOWN_OMIT);
	return 0;
}

int hr__rebalance_backend_read(const hr_rebalance_backend *in, hr_rebalance_backend *out,
			       hr_error *err)
{
	int rc;

	*out = backend_defaults;
	if (!in)
		return hr__error_set(err, HR_EINVAL, "hr_rebalance_backend must not be NULL");
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
	if (!out->enumerate || !out->fetch || !out->add)
		return hr__error_set(err, HR_EINVAL, "hr_rebalance_backend: %s is NULL (required)",
				     !out->enumerate ? "enumerate" : !out->fetch ? "fetch" : "add");
	if (out->enumerate_passes == 0)
		out->enumerate_passes = 1;
	if (out->enumerate_passes > 16)
		return hr__error_set(err, HR_EINVAL,
				     "hr_rebalance_backend: enumerate_passes %zu is over 16",
				     out->enumerate_passes);
	if (out->name && (!*out->name || strlen(out->name) > 64))
		return hr__error_set(err, HR_EINVAL,
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
		return hr__error_set(err, HR_EINVAL,
				     "hr_rebalance_config: keys_per_s must be a finite number >= 0");
	if (!isfinite(out->bytes_per_s) || out->bytes_per_s < 0)
		return hr__error_set(err, HR_EINVAL,
				     "hr_rebalance_config: bytes_per_s must be a finite number >= 0");
	if (!out->ack_prefix || !*out->ack_prefix || strlen(out->ack_prefix) > PREFIX_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "hr_rebalance_config: ack_prefix must hold 1..%d bytes",
				     PREFIX_MAX);
	if (out->wait_timeout_ms < 0 || out->progress_interval_ms < 0)
		return hr__error_set(err, HR_EINVAL, "hr_rebalance_config: %s must be >= 0",
				     out->wait_timeout_ms < 0 ? "wait_timeout_ms" :
				     "progress_interval_ms");
	if (out->flags & ~known)
		return hr__error_set(err, HR_EINVAL, "hr_rebalance_config: unknown flags 0x%x",
				     out->flags & ~known);
	if ((unsigned)out->log_level > HR_LOG_DEBUG)
		return hr__error_set(err, HR_EINVAL, "hr_rebalance_config: invalid log_level %d",
				     (int)out->log_level);
	return 0;
}
