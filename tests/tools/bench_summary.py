#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Best and median of the lookup figures over several hashring-bench runs.

    bench_summary.py [--strict] RUN.json...

Each RUN.json is the output of `hashring-bench --json` (for instance with
--lookups-only; runs of several --placement values are summarised one
placement after the other).  On a noisy machine one run says little: this prints, per
ring size, the best (lowest) and the median per-key time of single and
batch lookups, through the API and on the raw ring, and the same for the
speedup (single over batch, each run's own ratio: highest is best), then
the cost of lookup counting: single and batch lookups through the API with
and without it, and each run's own difference; then the counting rounds of
their own (on and off side by side in each of many short rounds).

Runs of `hashring-bench --big N --json` are summarised the same way, per
node count: the first sync and its split, the one-node changes, the CLI
and the memory.  With --strict a big-ring figure that is null (not
measured) is an error: the smoke test's check that the mode measured
everything.
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


# (section, key, label) of the big-ring figures, all in ms but the memory.
BIG = [
    ("first_sync", "open_ms", "open -> first ring"),
    ("first_sync", "raw_range_ms", "bare paged range"),
    ("first_sync", "hashring_ms", "hashring's part"),
    ("first_sync", "list_ms", "watcher: list"),
    ("first_sync", "records_ms", "watcher: records"),
    ("first_sync", "build_ms", "watcher: build"),
    ("first_sync", "raw_etcd_cpu_ms", "etcd CPU, bare range"),
    ("first_sync", "sync_etcd_cpu_ms", "etcd CPU, sync"),
    ("first_sync", "sync_cpu_ms", "our CPU, sync"),
    ("add", "build_p50_ms", "new node: build p50"),
    ("add", "visible_p50_ms", "new node: visible p50"),
    ("weight", "build_p50_ms", "weight: build p50"),
    ("weight", "visible_p50_ms", "weight: visible p50"),
    ("delete", "build_p50_ms", "delete: build p50"),
    ("delete", "visible_p50_ms", "delete: visible p50"),
    ("cli", "nodes_ms", "hashring nodes"),
    ("cli", "diff_ms", "hashring diff"),
    ("lookups", "ring_ns", "hr_ring_lookup, ns"),
    ("lookups", "batch_ring_ns", "lookup_batch, ns/key"),
    ("memory", "rss_synced_mb", "RSS after sync, MiB"),
    ("memory", "bytes_per_node", "heap bytes per node"),
    ("memory", "ring_mb", "one ring, MiB"),
]


def big_figure(big, section, key):
    if section in ("add", "weight", "delete"):
        return big["changes"][section].get(key)
    return big.get(section, {}).get(key)


def big_tables(runs, strict):
    """Best and median of each big-ring figure per node count; with
    strict, the null figures of any run (returns how many)."""
    bigs = [r["big"] for r in runs if r.get("big")]
    nulls = 0
    for b in bigs:
        for section, key, label in BIG:
            if big_figure(b, section, key) is None:
                nulls += 1
                if strict:
                    print("%d nodes: %s (%s.%s) not measured" %
                          (b["nodes"], label, section, key), file=sys.stderr)
    for nodes in sorted({b["nodes"] for b in bigs}):
        same = [b for b in bigs if b["nodes"] == nodes]
        print("Big ring, %d nodes x %d vnodes, %d runs; best / median" %
              (nodes, same[0]["vnodes"], len(same)))
        for section, key, label in BIG:
            values = [v for v in (big_figure(b, section, key) for b in same)
                      if v is not None]
            if values:
                print("  %-24s %12.1f / %.1f" %
                      (label, min(values), statistics.median(values)))
            else:
                print("  %-24s %12s" % (label, "-"))
    return nulls


def main():
    args = sys.argv[1:]
    strict = bool(args) and args[0] == "--strict"
    if strict:
        args = args[1:]
    if not args:
        sys.exit("usage: bench_summary.py [--strict] RUN.json...")
    runs = []
    for path in args:
        with open(path, encoding="utf-8") as f:
            runs.append(json.load(f))
    nulls = big_tables(runs, strict)
    if strict and nulls:
        return 1
    runs = [r for r in runs if "configs" in r]
    placements = sorted({r.get("placement", "xxh3") for r in runs})
    for placement in placements:
        lookup_tables([r for r in runs if r.get("placement", "xxh3") == placement],
                      placement)
    return 0


def lookup_tables(runs, placement):
    """The lookup tables of runs of one placement."""
    for r in runs:
        for c in r["configs"]:
            for cost, on, off in (("count_cost_ns", "api_ns", "api_uncounted_ns"),
                                  ("batch_count_cost_ns", "batch_api_ns",
                                   "batch_api_uncounted_ns")):
                if c.get(on) is not None and c.get(off) is not None:
                    c[cost] = c[on] - c[off]
    sizes = [(c["nodes"], c["vnodes"]) for c in runs[0]["configs"]]
    print("%d runs, %s placement, %d keys per batch; best / median" %
          (len(runs), placement, runs[0].get("batch_keys", 0)))
    table(runs, sizes, FIGURES)
    if any("api_uncounted_ns" in c for r in runs for c in r["configs"]):
        print("Lookup counting, ns per lookup or key; cost: each run's own "
              "difference")
        table(runs, sizes, COUNTING)
    if any("count_cost_med_ns" in c for r in runs for c in r["configs"]):
        print("Lookup counting in rounds of its own (hr_client_lookup, ns); "
              "cost: the median of a run's per-round differences")
        table(runs, sizes, ROUNDS)


if __name__ == "__main__":
    sys.exit(main())
