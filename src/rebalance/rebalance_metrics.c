/* SPDX-License-Identifier: MIT */
/* rebalance_metrics.c - the rebalancer's metric families
 * (hr_rebalancer_metrics_write; docs/metrics.md), written with libhashring's
 * hr_metrics_writer. */
#include "rebalance_impl.h"

#include <stdlib.h>

static const char *const result_names[HR__RB_COUNTS] = {
	[HR__RB_SCANNED] = "scanned", [HR__RB_MOVING] = "moving",
	[HR__RB_COPIED] = "copied", [HR__RB_PRESENT] = "present", [HR__RB_GONE] = "gone",
	[HR__RB_TAKEN_BACK] = "taken_back", [HR__RB_SKIPPED] = "skipped",
	[HR__RB_PURGED] = "purged", [HR__RB_PURGE_CHANGED] = "purge_changed",
};

static void rebalance_families(hr_metrics_writer *w, const hr_rebalance_progress *p,
			       const hr__rb_total *t, size_t n, uint64_t ok, uint64_t failed)
{
	hr_metrics_label l[2] = { { "node", NULL }, { "result", NULL } };

	hr_metrics_writer_family(w, "hashring_rebalance_keys_total", "counter",
				 "Keys the rebalancer handled, by source node and result.");
	for (size_t i = 0; i < n; i++) {
		l[0].value = t[i].node;
		for (int c = 0; c < HR__RB_COUNTS; c++) {
			if (!result_names[c])
				continue;
			l[1].value = result_names[c];
			hr_metrics_writer_u64(w, l, 2, t[i].n[c]);
		}
	}
	hr_metrics_writer_family(w, "hashring_rebalance_bytes_total", "counter",
				 "Value bytes the rebalancer copied, by source node.");
	for (size_t i = 0; i < n; i++) {
		l[0].value = t[i].node;
		hr_metrics_writer_u64(w, l, 1, t[i].n[HR__RB_BYTES]);
	}
	hr_metrics_writer_family(w, "hashring_rebalance_step", "gauge",
				 "1 for the step the rebalancer is in, 0 for the others.");
	for (int s = HR_REBALANCE_STEP_IDLE; s <= HR_REBALANCE_STEP_FAILED; s++) {
		hr_metrics_label sl = { "step", hr_rebalance_step_name((hr_rebalance_step)s) };

		hr_metrics_writer_u64(w, &sl, 1, p->step == (hr_rebalance_step)s);
	}
	hr_metrics_writer_family(w, "hashring_rebalance_keys_per_second", "gauge",
				 "Keys the running step handles a second, over the last second.");
	hr_metrics_writer_double(w, NULL, 0, p->keys_per_s);
	hr_metrics_writer_family(w, "hashring_rebalance_eta_seconds", "gauge",
				 "Seconds left in the running copy at the current rate; -1: unknown.");
	hr_metrics_writer_double(w, NULL, 0, p->eta_s);
	hr_metrics_writer_family(w, "hashring_rebalance_runs_total", "counter",
				 "Rebalancer steps ended, by result.");
	l[0] = (hr_metrics_label){ "result", "ok" };
	hr_metrics_writer_u64(w, l, 1, ok);
	l[0].value = "failed";
	hr_metrics_writer_u64(w, l, 1, failed);
}

int hr_rebalancer_metrics_write(hr_rebalancer *rb, hr_metrics_write_fn write_fn,
				void *userdata, const hr_metrics_options *opts,
				hr_error *err)
{
	hr_rebalance_progress p;
	hr__rb_total *totals = NULL;
	hr_metrics_writer *w;
	uint64_t ok, failed;
	size_t n = 0;
	int rc;

	if (!rb || !write_fn)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalancer_metrics_write: %s is NULL",
					rb ? "write_fn" : "rebalancer");
	rc = hr_metrics_writer_new(write_fn, userdata, opts, &w, err);
	if (rc)
		return rc;
	/* A failure here ends the exposition before its first byte. */
	rc = hr__rb_snapshot(rb, &p, &totals, &n, &ok, &failed, err);
	if (!rc)
		rebalance_families(w, &p, totals, n, ok, failed);
	free(totals);
	if (rc) {
		hr_metrics_writer_free(w);
		return rc;
	}
	return hr_metrics_writer_free(w);
}
