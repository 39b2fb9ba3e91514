#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dashboard_screenshot.py - makes docs/images/dashboard.png: the page of
`hashring serve` while a fourth node joins a three-node ring, warming.

    dashboard_screenshot.py HASHRING OUT.png [--width 1280] [--height 900]
                            [--vnodes-per-weight 50]

Starts its own etcd on free loopback ports (python/tests/etcd_server.py),
puts three active nodes, then a warming one, serves the ring with the given
CLI (fewer points than the default 200 a node, so that the arcs the
joining node takes over are wide enough to see), looks keys up through
/lookup all along (so that the page shows lookup rates and hot keys), and
takes the screenshot in headless Chromium, driven as
tests/integration/dashboard_cdp.py drives it.  Everything stops by PID.
"""
import argparse
import os
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import dashboard_cdp  # noqa: E402
import etcd_server  # noqa: E402

PREFIX = "/hashring/nodes/"
NODES = [("cache-a", "127.0.0.1:11211", "z1", "active"),
         ("cache-b", "127.0.0.2:11211", "z2", "active"),
         ("cache-c", "127.0.0.3:11211", "z3", "active"),
         ("cache-d", "127.0.0.4:11211", "z1", "warming")]
HOT = ("user:42", "user:7", "session:9")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hashring")
    ap.add_argument("out")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--vnodes-per-weight", default="50")
    a = ap.parse_args()

    etcd = etcd_server.Etcd().start()
    serve = browser = stop = lookups = None
    try:
        for node, addr, zone, state in NODES[:3]:
            etcd.put(PREFIX + node, etcd_server.record(addr, zone=zone, state=state))
        serve = subprocess.Popen([a.hashring, "serve", "--listen", "127.0.0.1:0",
                                  "--endpoints", etcd.url, "--prefix", PREFIX,
                                  "--vnodes-per-weight", a.vnodes_per_weight],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = serve.stdout.readline().split()[-1]  # "serving http://127.0.0.1:PORT/"
        time.sleep(1.5)
        node, addr, zone, state = NODES[3]
        etcd.put(PREFIX + node, etcd_server.record(addr, zone=zone, state=state))
        time.sleep(1.5)

        # Lookups through the server all along, a few keys hot: the page
        # shows their rates per node and the hot keys.
        stop = threading.Event()

        def look_up():
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            i = 0
            while not stop.wait(0.01):
                key = HOT[i % len(HOT)] if i % 4 else "user:%d" % i
                direct.open(url + "lookup?key=" + key, timeout=10).read()
                i += 1
        lookups = threading.Thread(target=look_up)
        lookups.start()

        browser = dashboard_cdp.Browser(a.chromium, os.devnull)
        browser.open(url)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": a.width, "height": a.height, "deviceScaleFactor": 1,
                      "mobile": False})
        dashboard_cdp.wait_for(browser, "the warming node and the lookups",
                               lambda s: "warming" in s["states"] and s["takeover"] > 0
                               and s["hot"] and s["updates"] >= 2)
        time.sleep(3)  # a few more polls: the rates settle
        browser.screenshot(a.out)
    finally:
        if stop:
            stop.set()
            lookups.join()
        if browser:
            browser.close()
        if serve:
            serve.terminate()
            serve.wait(10)
        etcd.stop()
    print("%s: %d bytes" % (a.out, os.path.getsize(a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
