#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Python package's figures, side by side in one run (docs/python.md).

On a ring of 100 nodes x 200 points followed from a real etcd on loopback:

  lookup       client.lookup(key): ns per call, keys taken in turn
  lookup_index client.lookup_index(key): the owner's index in the ring
  ring         Ring.lookup(key) and Ring.lookup_index(key) on the client's
               ring, held
  bisect       a textbook pure-Python ring over the very same points:
               XXH3-64 of "<id>#<i>" (python3-xxhash), a sorted list, bisect,
               the node id string as the answer (checked to agree)
  lookup_many  client.lookup_many(keys) on 10,000 keys: ns per key
  churn        four threads looking up while the ring is republished 100
               times a second: lookups a second, every answer checked

Single-thread figures are the thread's CPU time, not wall time (the machine
is shared: other processes take the CPU in the middle of a round), each the
median of rounds in which the methods take turns; --runs N repeats that N
times and gives each figure's median and range over the runs.  The figures
are ratios to read side by side, never asserted.  Run: python3 python/bench.py
[--quick] [--runs N]
(the package importable: PYTHONPATH=build/python after a build with
-DHR_BUILD_PYTHON=ON, or installed).  --compare MODULE adds the lookups of
another build of the extension, e.g. the full C API's (cmake --build build
--target hashring_python_full; build/python/full-api/_hashring.*.so).
"""
import bisect
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The package is imported as built or installed, not from its sources
# beside this file (which hold no extension).
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.join(HERE, "tests"))

import xxhash  # noqa: E402  (python3-xxhash)

import etcd_server  # noqa: E402
import hashring  # noqa: E402

NODES = 100
VNODES = 200
PREFIX = "/bench/nodes/"
KEYS = 100_000
MANY = 10_000
ROUNDS = 7
CHURN_THREADS = 4
CHURN_RATE = 100  # republications a second
CHURN_SECONDS = 5


class TextbookRing:
    """What a Python programmer writes: sorted points and bisect."""

    def __init__(self, ids, vnodes):
        points = sorted((xxhash.xxh3_64_intdigest("%s#%d" % (node, i)), node)
                        for node in ids for i in range(vnodes))
        self.positions = [p for p, _ in points]
        self.owners = [n for _, n in points]

    def lookup(self, key):
        i = bisect.bisect_left(self.positions, xxhash.xxh3_64_intdigest(key))
        return self.owners[i if i < len(self.owners) else 0]


def cpu_ns_per_call(fn, keys):
    start = time.thread_time_ns()
    for k in keys:
        fn(k)
    return (time.thread_time_ns() - start) / len(keys)


def single_thread(client, other=None):
    """The figures; with `other` (a client of another build of the
    module), its lookup and lookup_many beside ours."""
    ring = client.ring()
    textbook = TextbookRing([n.id for n in ring.nodes()], VNODES)
    keys = ["user:%d" % i for i in range(KEYS)]
    bkeys = [k.encode() for k in keys]
    for k in keys[:10_000]:
        assert textbook.lookup(k) == client.lookup(k).node, k
        assert ring.node(ring.lookup_index(k)).id == client.lookup(k).node, k
    methods = {
        "lookup (str keys)": lambda: cpu_ns_per_call(client.lookup, keys),
        "lookup (bytes keys)": lambda: cpu_ns_per_call(client.lookup, bkeys),
        "lookup_index (str)": lambda: cpu_ns_per_call(client.lookup_index, keys),
        "lookup_index (bytes)": lambda: cpu_ns_per_call(client.lookup_index, bkeys),
        "Ring.lookup": lambda: cpu_ns_per_call(ring.lookup, keys),
        "Ring.lookup_index": lambda: cpu_ns_per_call(ring.lookup_index, keys),
        "bisect ring": lambda: cpu_ns_per_call(textbook.lookup, keys),
        "empty loop": lambda: cpu_ns_per_call(len, keys),
    }
    many = keys[:MANY]

    def lookup_many():
        start = time.thread_time_ns()
        for _ in range(10):
            client.lookup_many(many)
        return (time.thread_time_ns() - start) / (10 * MANY)

    methods["lookup_many, per key"] = lookup_many
    if other is not None:
        methods["lookup, full API"] = lambda: cpu_ns_per_call(other.lookup, keys)

        def other_many():
            start = time.thread_time_ns()
            for _ in range(10):
                other.lookup_many(many)
            return (time.thread_time_ns() - start) / (10 * MANY)

        methods["lookup_many, full API"] = other_many
    rounds = {name: [] for name in methods}
    for _ in range(ROUNDS):
        for name, run in methods.items():
            rounds[name].append(run())
    return {name: statistics.median(v) for name, v in rounds.items()}


def churn(etcd, client, seconds):
    """Lookups on four threads while a node's weight changes 100 times a
    second: every answer must come and name a node, and a sample of them
    must match the ring of their digest (the weights cycle through four
    values, so on_change gives the rings of every digest)."""
    rings = {}
    client.on_change(lambda old, new: rings.setdefault(new.digest, new))
    stop = threading.Event()
    counts = [0] * CHURN_THREADS
    errors = []
    samples = [[] for _ in range(CHURN_THREADS)]

    def reader(t):
        keys = ["t%d:%d" % (t, i) for i in range(4096)]
        lookup = client.lookup
        n = 0
        try:
            while not stop.is_set():
                for k in keys:
                    if lookup(k).node is None:
                        errors.append("no owner for %r" % k)
                n += len(keys)
                k = keys[(n // len(keys)) % len(keys)]
                o = lookup(k)
                samples[t].append((k, o.node, o.digest))
                n += 1
        except Exception as e:  # noqa: BLE001 - reported as a loss
            errors.append(repr(e))
        counts[t] = n

    # The writer is a process of its own: a thread here would wait for
    # the GIL behind the four readers and publish far less often.
    writer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--churn-writer",
                               etcd.url, str(seconds)], stdout=subprocess.PIPE, text=True)

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(CHURN_THREADS)]
    rings_before = client.status().rings_published
    start = time.monotonic()
    for t in threads:
        t.start()
    puts, put_seconds = writer.communicate()[0].split()
    puts = int(puts)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    checked = mismatched = 0
    for per_thread in samples:
        for key, node, digest in per_thread:
            ring = rings.get(digest)
            if ring is not None:
                checked += 1
                mismatched += ring.lookup(key).node != node
    return {
        "lookups": sum(counts), "per_s": sum(counts) / elapsed, "puts": puts,
        "puts_per_s": puts / float(put_seconds),
        "rings": client.status().rings_published - rings_before,
        "errors": errors, "checked": checked, "mismatched": mismatched,
    }


def churn_writer(url, seconds):
    """Changes node-000's weight CHURN_RATE times a second (cycling through
    four values), then prints how many puts it made and in how long."""
    etcd = etcd_server.Etcd.attach(url)
    period, puts = 1.0 / CHURN_RATE, 0
    start = next_t = time.monotonic()
    while time.monotonic() - start < seconds:
        etcd.put(PREFIX + "node-000", etcd_server.record("127.0.0.0:11211", weight=1 + puts % 4))
        puts += 1
        next_t += period
        time.sleep(max(0.0, next_t - time.monotonic()))
    print(puts, time.monotonic() - start)


def load_module(path):
    """Another build of the extension (hashring._hashring), beside ours."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("hashring_compared._hashring", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    if sys.argv[1:2] == ["--churn-writer"]:
        return churn_writer(sys.argv[2], float(sys.argv[3]))
    quick = "--quick" in sys.argv
    nruns = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 1
    other_module = None
    if "--compare" in sys.argv:
        other_module = load_module(sys.argv[sys.argv.index("--compare") + 1])
    etcd = etcd_server.Etcd().start()
    try:
        etcd.txn(puts={PREFIX + "node-%03d" % i:
                       etcd_server.record("127.0.%d.%d:11211" % (i // 250, i % 250))
                       for i in range(NODES)})
        with hashring.Client(etcd.url, PREFIX, log_level="warn",
                             vnodes_per_weight=VNODES) as client:
            abi = "abi3" if ".abi3." in hashring._hashring.__file__ else "full API"
            print("hashring %s (%s), %d nodes x %d points, Python %s" % (
                hashring.__version__, abi, NODES, VNODES, sys.version.split()[0]))
            other = None
            if other_module is not None:
                other = other_module.Client(etcd.url, PREFIX, log_level="warn")
            runs = [single_thread(client, other) for _ in range(nruns)]
            if other is not None:
                other.close()
            if nruns == 1:
                print("\nsingle thread, CPU ns per key (median of %d rounds):" % ROUNDS)
            else:
                print("\nsingle thread, CPU ns per key (each run the median of %d rounds; "
                      "median [range] of %d runs):" % (ROUNDS, nruns))
            for name in runs[0]:
                values = [r[name] for r in runs]
                ns = statistics.median(values)
                ratios = [r["bisect ring"] / r[name] for r in runs]
                spread = "" if nruns == 1 else " [%.1f-%.1f]" % (min(values), max(values))
                ratio = "" if name.startswith("empty") else \
                    "  %5.1fx the bisect ring" % statistics.median(ratios)
                print("  %-22s %7.1f ns%-14s%s" % (name, ns, spread, ratio))
            r = churn(etcd, client, 1 if quick else CHURN_SECONDS)
            print("\nchurn: %d threads looking up, the ring republished %.0f times a second:"
                  % (CHURN_THREADS, r["puts_per_s"]))
            print("  %d lookups (%.0f a second, all threads), %d puts, %d rings published"
                  % (r["lookups"], r["per_s"], r["puts"], r["rings"]))
            print("  %d answers checked against their ring: %d wrong; %d lookups failed%s"
                  % (r["checked"], r["mismatched"], len(r["errors"]),
                     (": " + "; ".join(r["errors"][:3])) if r["errors"] else ""))
    finally:
        etcd.stop()


if __name__ == "__main__":
    main()
