#!/usr/bin/python3
"""Best and median of the lookup figures over several hashring-bench runs.

    bench_summary.py RUN.json...

Each RUN.json is the output of `hashring-bench --json` (for instance with
--lookups-only).  On a noisy machine one run says little: this prints, per
ring size, the best (lowest) and the median per-key time of single and
batch lookups, through the API and on the raw ring, and the same for the
speedup (single over batch, each run's own ratio: highest is best), then
the cost of lookup counting: single and batch lookups through the API with
and without it, and each run's own difference; then the counting rounds of
their own (on and off side by side in each of many short rounds).
"""
import json
import statistics
import sys

FIGURES = [
    ("api_ns", "api", "ns"),
    ("batch_api_ns", "api batch", "ns"),
    ("batch_api_speedup", "api speedup", "x"),
    ("ring_ns", "ring", "ns"),
    ("batch_ring_ns", "ring batch", "ns"),
    ("batch_ring_speedup", "ring speedup", "x"),
]

COUNTING = [
    ("api_ns", "api", "ns"),
    ("api_uncounted_ns", "uncounted", "ns"),
    ("count_cost_ns", "cost", "ns"),
    ("batch_api_ns", "api batch", "ns"),
    ("batch_api_uncounted_ns", "uncounted", "ns"),
    ("batch_count_cost_ns", "cost", "ns"),
]

# The counting rounds of their own (HRB_COUNT_ROUNDS per run).
ROUNDS = [
    ("count_on_best_ns", "on, best", "ns"),
    ("count_off_best_ns", "off, best", "ns"),
    ("count_on_med_ns", "on, median", "ns"),
    ("count_off_med_ns", "off, median", "ns"),
    ("count_cost_med_ns", "cost, median", "ns"),
]


def table(runs, sizes, figures):
    print("  %-11s" % "nodes x vn" +
          "".join(" %15s" % label for _, label, _ in figures))
    for nodes, vnodes in sizes:
        row = "  %-11s" % ("%d x %d" % (nodes, vnodes))
        for key, _, unit in figures:
            values = [c[key] for r in runs for c in r["configs"]
                      if (c["nodes"], c["vnodes"]) == (nodes, vnodes)
                      and c.get(key) is not None]
            if not values:
                row += " %15s" % "-"
                continue
            best = max(values) if unit == "x" else min(values)
            fmt = "%.2fx / %.2fx" if unit == "x" else "%.1f / %.1f"
            row += " %15s" % (fmt % (best, statistics.median(values)))
        print(row)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench_summary.py RUN.json...")
    runs = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            runs.append(json.load(f))
    for r in runs:
        for c in r["configs"]:
            for cost, on, off in (("count_cost_ns", "api_ns", "api_uncounted_ns"),
                                  ("batch_count_cost_ns", "batch_api_ns",
                                   "batch_api_uncounted_ns")):
                if c.get(on) is not None and c.get(off) is not None:
                    c[cost] = c[on] - c[off]
    sizes = [(c["nodes"], c["vnodes"]) for c in runs[0]["configs"]]
    print("%d runs, %d keys per batch; best / median" %
          (len(runs), runs[0].get("batch_keys", 0)))
    table(runs, sizes, FIGURES)
    if any("api_uncounted_ns" in c for r in runs for c in r["configs"]):
        print("Lookup counting, ns per lookup or key; cost: each run's own "
              "difference")
        table(runs, sizes, COUNTING)
    if any("count_cost_med_ns" in c for r in runs for c in r["configs"]):
        print("Lookup counting in rounds of its own (hr_client_lookup, ns); "
              "cost: the median of a run's per-round differences")
        table(runs, sizes, ROUNDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
