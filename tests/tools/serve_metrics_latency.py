#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How long `hashring serve`'s /metrics takes on a big ring, and how long a
/lookup waits meanwhile.

    serve_metrics_latency.py [--nodes N] [--scrapes S] [--settle SECONDS]
                             ETCD_URL HASHRING...

Puts N node records (default 100,000; the first warming, the rest active)
under /hashring/nodes/ of the etcd at ETCD_URL (a throw-away one, such as
deploy/etcd-local.sh's: they are left there), 128 to a transaction.  Then
for each HASHRING binary given (say this build's and an older one, to
compare side by side) runs `serve` on a free loopback port, waits for its
first ring and SETTLE seconds more, and scrapes /metrics S times in a row
while a thread polls /lookup every 5 ms; prints the scrapes' times and the
/lookup latencies.  Only loopback addresses are used.
"""
import argparse
import base64
import http.client
import json
import socket
import statistics
import subprocess
import threading
import time
import urllib.request


def fill(url, n):
    def b64(s):
        return base64.b64encode(s.encode()).decode()

    ops = []

    def flush():
        if ops:
            body = json.dumps({"success": ops}).encode()
            urllib.request.urlopen(urllib.request.Request(url + "/v3/kv/txn", body)).read()
            ops.clear()

    for i in range(n):
        record = {"addr": "127.0.0.1:%d" % (20000 + i % 40000),
                  "state": "warming" if i == 0 else "active"}
        ops.append({"requestPut": {"key": b64("/hashring/nodes/node-%06d" % i),
                                   "value": b64(json.dumps(record))}})
        if len(ops) == 128:
            flush()
    flush()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t = time.monotonic()
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, len(body), time.monotonic() - t


def measure(binary, etcd, scrapes, settle):
    port = free_port()
    serve = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:%d" % port,
                              "--endpoints", etcd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        while True:
            try:
                if get(port, "/lookup?key=k")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - t0 > 300:
                raise SystemExit("%s: no ring after 300 s" % binary)
            time.sleep(0.1)
        time.sleep(settle)
        lat, times, sizes, done = [], [], [], threading.Event()

        def poll():
            i = 0
            while not done.is_set():
                lat.append(get(port, "/lookup?key=k%d" % i)[2])
                i += 1
                time.sleep(0.005)

        th = threading.Thread(target=poll)
        th.start()
        for _ in range(scrapes):
            status, size, dt = get(port, "/metrics")
            if status != 200:
                raise SystemExit("%s: /metrics answered %d" % (binary, status))
            times.append(dt)
            sizes.append(size)
        done.set()
        th.join()
    finally:
        serve.terminate()
        serve.wait()
    lat.sort()
    print("%s: /metrics %.1f MB, median %.3f s (%.3f-%.3f) of %d; /lookup meanwhile: %d, "
          "p50 %.1f ms, max %.1f ms" %
          (binary, statistics.median(sizes) / 1e6, statistics.median(times), min(times),
           max(times), scrapes, len(lat), 1e3 * lat[len(lat) // 2], 1e3 * lat[-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--settle", type=float, default=15.0)
    ap.add_argument("etcd")
    ap.add_argument("hashring", nargs="+")
    a = ap.parse_args()
    fill(a.etcd, a.nodes)
    for binary in a.hashring:
        measure(binary, a.etcd, a.scrapes, a.settle)


if __name__ == "__main__":
    main()
