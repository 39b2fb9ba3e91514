/* SPDX-License-Identifier: MIT */
/* cli_metrics.c - the options of the Prometheus exposition, shared by
 * `hashring metrics`, which prints it once, and `hashring serve`, which
 * serves it at /metrics: the same flags give the same text. */
#include "cli.h"
#include "metrics_text.h"

#include <stdlib.h>
#include <string.h>

void cli_metrics_init(struct cli_metrics *m)
{
	memset(m, 0, sizeof *m);
	hr_metrics_options_init(&m->opts);
	m->label_list = (struct cli_list){ .items = m->label_items, .max = CLI_LABELS_MAX,
					   .what = "label" };
}

void cli_metrics_free(struct cli_metrics *m)
{
	for (size_t i = 0; i < CLI_LABELS_MAX; i++)
		free(m->names[i]);
}

static int discard(void *userdata, const char *data, size_t len)
{
	(void)userdata, (void)data, (void)len;
	return 0;
}

/* NAME=VALUE into a label; "=" separates at the first one. */
static int parse_labels(struct cli_metrics *m, const char *cmd)
{
	for (size_t i = 0; i < m->label_list.n; i++) {
		const char *item = m->label_list.items[i], *eq = strchr(item, '=');

		if (!eq || eq == item)
			return cli_usage(cmd, "--label wants NAME=VALUE (got \"%s\")", item);
		m->names[i] = strndup(item, (size_t)(eq - item));
		if (!m->names[i])
			return cli_fail(cmd, HR_ENOMEM, NULL);
		m->labels[i] = (hr_metrics_label){ m->names[i], eq + 1 };
	}
	return CLI_EXIT_OK;
}

/* Bad options are a usage error, found before etcd is asked anything and
 * named as options (the library's rules, the library's reasons). */
static int check_names(const struct cli_metrics *m, const char *cmd)
{
	const hr_metrics_options *opts = &m->opts;
	hr_error err = { 0 };

	if (opts->name_prefix && hr__metrics_prefix_check(opts->name_prefix, &err))
		return cli_usage(cmd, "--name-prefix: %s", err.message);
	for (size_t i = 0; i < opts->label_count; i++) {
		const hr_metrics_label *l = &opts->labels[i];

		if (hr__metrics_label_check(l, &err))
			return cli_usage(cmd, "--label %.140s: %s", m->label_list.items[i],
					 err.message);
		for (size_t k = 0; k < i; k++) {
			if (!strcmp(l->name, opts->labels[k].name))
				return cli_usage(cmd, "--label %.140s: the name \"%.200s\" is given"
						 " twice", m->label_list.items[i], l->name);
		}
	}
	return CLI_EXIT_OK;
}

int cli_metrics_check(struct cli_metrics *m, const char *cmd)
{
	hr_ring *empty = NULL;
	hr_error err = { 0 };
	int rc = parse_labels(m, cmd);

	if (rc != CLI_EXIT_OK)
		return rc;
	m->opts.labels = m->labels;
	m->opts.label_count = m->label_list.n;
	m->opts.omit = (m->omit_nodes ? HR_METRICS_OMIT_NODES : 0) |
		       (m->omit_lookups ? HR_METRICS_OMIT_LOOKUPS : 0);
	rc = check_names(m, cmd);
	if (rc != CLI_EXIT_OK)
		return rc;
	/* Then the library checks them as it would before it writes a byte,
	 * here for an empty ring. */
	rc = hr_ring_build(NULL, 0, NULL, 0, &empty, &err);
	if (!rc)
		rc = hr_ring_metrics_write(empty, discard, NULL, &m->opts, &err);
	hr_ring_release(empty);
	return rc ? cli_fail_input(cmd, rc, &err) : CLI_EXIT_OK;
}
