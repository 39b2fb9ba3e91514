/* SPDX-License-Identifier: MIT */
/* hrt_ring_fixture.c - see hrt_ring_fixture.h. */
#include "hrt_ring_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

hrt_nodes *hrt_nodes_new(size_t n, const char *id_fmt, const char *addr_fmt,
			 size_t addr_base)
{
	hrt_nodes *s = calloc(1, sizeof *s);
	size_t cap = n ? n : 1;

	ck_assert_ptr_nonnull(s);
	s->n = n;
	s->nodes = calloc(cap, sizeof *s->nodes);
	s->ids = calloc(cap, sizeof *s->ids);
	s->addrs = calloc(cap, sizeof *s->addrs);
	s->zones = calloc(cap, sizeof *s->zones);
	ck_assert(s->nodes && s->ids && s->addrs && s->zones);
	for (size_t i = 0; i < n; i++) {
		snprintf(s->ids[i], sizeof s->ids[i], id_fmt, i);
		if (addr_fmt)
			snprintf(s->addrs[i], sizeof s->addrs[i], addr_fmt, addr_base + i);
		else
			snprintf(s->addrs[i], sizeof s->addrs[i], "127.0.0.1:1");
		s->nodes[i] = (hr_node){ .id = s->ids[i], .addr = s->addrs[i],
					 .weight = 1, .state = HR_STATE_ACTIVE };
	}
	return s;
}

void hrt_nodes_zones(hrt_nodes *s, unsigned zones)
{
	for (size_t i = 0; i < s->n; i++) {
		if (i % (zones + 1) == zones) {
			s->nodes[i].zone = "";
		} else {
			snprintf(s->zones[i], sizeof s->zones[i], "zone-%zu", i % (zones + 1));
			s->nodes[i].zone = s->zones[i];
		}
	}
}

void hrt_nodes_free(hrt_nodes *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->ids);
	free(s->addrs);
	free(s->zones);
	free(s);
}

hr_ring *hrt_ring_build(const hr_node *nodes, size_t n, const hr_ring_options *opts,
			uint64_t revision)
{
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	int rc = hr_ring_build(nodes, n, opts, revision, &ring, &err);

	ck_assert_msg(rc == HR_OK, "build failed: %d %s", rc, err.message);
	ck_assert_ptr_nonnull(ring);
	return ring;
}

double hrt_node_share(const hr_ring *ring, const hr_node *node, hr_view view)
{
	size_t n = hr_ring_node_count(ring);
	double *shares = calloc(n ? n : 1, sizeof *shares), share = 0;
	int i = hr_ring_node_index(ring, node, NULL);

	ck_assert_ptr_nonnull(shares);
	hr_ring_node_shares(ring, view, shares, n);
	if (i >= 0)
		share = shares[i];
	free(shares);
	return share;
}

hr_ring *hrt_ring_generation(const char *tag, unsigned gen, unsigned vnodes)
{
	static const hr_state states[3] = { HR_STATE_ACTIVE, HR_STATE_DRAINING,
					    HR_STATE_WARMING };
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = vnodes };
	char ids[3][32], addrs[3][32];
	hr_node nodes[3];

	for (int i = 0; i < 3; i++) {
		snprintf(ids[i], sizeof ids[i], "%s%u-%c", tag, gen, 'a' + i);
		snprintf(addrs[i], sizeof addrs[i], "127.0.0.%d:%u", i + 1, gen);
		nodes[i] = (hr_node){ ids[i], addrs[i], "", 1.0, states[i], NULL, 0 };
	}
	return hrt_ring_build(nodes, 3, &opts, gen);
}

static void quiet(void *ud, hr_log_level level, const char *line)
{
}

hr_client *hrt_offline_client(const char *prefix)
{
	return hrt_offline_client_with(prefix, NULL);
}

hr_client *hrt_offline_client_with(const char *prefix, const hr_client_config *with)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_client *c = NULL;

	hr_etcd_config_init(&etcd);
	if (with)
		cfg = *with;
	else
		hr_client_config_init(&cfg);
	etcd.endpoints = "127.0.0.1:1";
	etcd.prefix = prefix;
	etcd.log = quiet;
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 5000;
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, NULL), 0);
	return c;
}

uint64_t hrt_tie_hash(const void *name, size_t len)
{
	const char *s = name;
	size_t i = len;
	uint64_t v = 0;

	while (i > 0 && s[i - 1] != '#')
		i--;
	for (; i < len; i++)	/* the name is not NUL-terminated */
		v = v * 10 + (uint64_t)(s[i] - '0');
	return (v + 1) << 40;
}

cJSON *hrt_load_json(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;
	cJSON *doc;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	doc = cJSON_Parse(buf);
	free(buf);
	ck_assert_msg(doc != NULL, "%s is not JSON", path);
	return doc;
}
