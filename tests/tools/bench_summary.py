#!/usr/bin/python3
"""Best and median of the lookup figures over several hashring-bench runs.

    bench_summary.py RUN.json...

Each RUN.json is the output of `hashring-bench --json` (for instance with
--lookups-only).  On a noisy machine one run says little: this prints, per
ring size, the best (lowest) and the median per-key time of single and
batch lookups, through the API and on the raw ring, and the same for the
speedup (single over batch, each run's own ratio: highest is best).
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


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench_summary.py RUN.json...")
    runs = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            runs.append(json.load(f))
    sizes = [(c["nodes"], c["vnodes"]) for c in runs[0]["configs"]]
    print("%d runs, %d keys per batch; best / median" %
          (len(runs), runs[0].get("batch_keys", 0)))
    print("  %-11s" % "nodes x vn" +
          "".join(" %15s" % label for _, label, _ in FIGURES))
    for nodes, vnodes in sizes:
        row = "  %-11s" % ("%d x %d" % (nodes, vnodes))
        for key, _, unit in FIGURES:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
