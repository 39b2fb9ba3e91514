#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dashboard_cdp.py - the dashboard page in a real headless Chromium.

Drives Debian's chromium over the DevTools protocol on a pipe
(--remote-debugging-pipe: no port is opened), so that one page load can be
watched as it updates: the page must render and list every node, then
show the lookups made through /lookup (rates, the hot key and its owner); after
`etcdctl put` of a new node it must show the new ring without a reload, and
the numbers the server writes as null (not finite) it shows as "-", and a
count of 1 with a singular noun.
Screenshots and the DOM of both moments are written to --out.  In a window
of --window (1280x900 by default) no table may be cut off: neither the
page nor any of its sections scrolls sideways.

With --big N the ring has N nodes (node-000000...): the page must stay
small (a page of rows, not every node), cost a few hundred bytes a second
while the ring does not change, keep updating once a second, find a node
by its id, and show the ring after the put; the figures measured are
printed as one JSON line.

Chromium runs as root in CI, hence --no-sandbox, with a temporary profile,
and may reach nothing but loopback: every name but 127.0.0.1 resolves to
nothing, and the background services (updates, sync, safe browsing...) are
off.  Traced with strace, its only other connect() is its IPv6
reachability probe: a UDP socket connected to a public address to learn
the route, on which nothing is ever sent.

    dashboard_cdp.py --chromium PATH --url URL --out DIR [--window W,H]
                     (--nodes a,b,c | --big N) --etcdctl PATH --endpoints EPS
                     --put KEY VALUE --new-node ID
Exit status 0 when every check held; 1 with the reason on stderr.
"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-extensions", "--disable-breakpad", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--safebrowsing-disable-auto-update",
    "--no-pings", "--disable-features=Translate,MediaRouter,OptimizationHints,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=direct://", "--disable-dev-shm-usage", "--remote-debugging-pipe",
]


class Browser:
    def __init__(self, chromium, log_path, window="1280,900"):
        self.profile = tempfile.mkdtemp(prefix="hrt-chromium-")
        r1, w1 = os.pipe()  # we write, chromium reads on fd 3
        r2, w2 = os.pipe()  # chromium writes on fd 4, we read

        def fds():
            os.dup2(r1, 3)
            os.dup2(w2, 4)

        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [chromium] + FLAGS + ["--window-size=" + window, "--user-data-dir=" + self.profile,
                                  "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=self.log)
        os.close(r1)
        os.close(w2)
        self.w, self.r = w1, r2
        self.buf = b""
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m["result"]
            if time.monotonic() > deadline:
                raise RuntimeError("%s: no answer from chromium" % method)
            ready, _, _ = select.select([self.r], [], [], 1.0)
            if ready:
                data = os.read(self.r, 1 << 20)
                if not data:
                    raise RuntimeError("chromium went away (see its log)")
                self.buf += data

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        return r["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.session = None
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


# What the page shows, read from its DOM in one evaluation.
STATE = """(() => {
  const rows = [...document.querySelectorAll('#nodes tbody tr')];
  return {
    updates: +(document.body.getAttribute('data-updates') || 0),
    revision: document.body.getAttribute('data-revision'),
    nodes: rows.map(r => r.getAttribute('data-node')),
    states: rows.map(r => r.querySelector('.state').textContent),
    arcs: document.querySelectorAll('#ring path').length,
    takeover: document.querySelectorAll('#ring path.takeover').length,
    history: document.querySelectorAll('#history tbody tr').length,
    rates: rows.map(r => r.querySelector('[data-slot=lookups]').textContent),
    hot: [...document.querySelectorAll('#hotkeys tr[data-key]')].map(r =>
      [r.getAttribute('data-key'), r.cells[3].textContent]),
    conn: document.getElementById('conn').textContent,
    state: document.body.getAttribute('data-state'),
    stale: document.getElementById('stale').textContent,
    nodecount: document.getElementById('nodecount').textContent,
    loaded: window.__hrtLoaded || null,
    navigations: performance.getEntriesByType('navigation').length,
  };
})()"""


# How far the page and each section scroll sideways (0: all fits), and
# the window's width.
OVERFLOW = """(() => {
  const d = document.documentElement;
  return {
    width: window.innerWidth,
    page: d.scrollWidth - d.clientWidth,
    sections: [...document.querySelectorAll('section')].map(s =>
      [s.querySelector('h2').textContent, s.scrollWidth - s.clientWidth]),
  };
})()"""


def check_fits(browser, out, name):
    """No horizontal overflow of the page or a section; a screenshot."""
    browser.screenshot(os.path.join(out, name))
    o = browser.eval(OVERFLOW)
    cut = [s for s in o["sections"] if s[1] > 0]
    if o["page"] > 0 or cut:
        raise RuntimeError("at %d px the page overflows by %d px, sections %s (see %s)" %
                           (o["width"], o["page"], cut, name))
    return o


# What the page costs: its DOM, and the bytes it fetched so far.
COST = """(() => ({
  elements: document.getElementsByTagName('*').length,
  html: document.documentElement.outerHTML.length,
  fetched: performance.getEntriesByType('resource').reduce((n, e) =>
    n + (e.transferSize || e.encodedBodySize || 0), 0),
  fetches: performance.getEntriesByType('resource').length,
  updates: +(document.body.getAttribute('data-updates') || 0),
}))()"""


# The page's drawing functions given what the server writes for numbers it
# cannot (null: not finite, or a rate not measured yet), into the page's
# own elements: the texts they show, or the error thrown.
NULLS = """(() => {
  try {
    const ring = { revision: 7, nodes: 2, points: 2,
      states: { active: 2, warming: 0, draining: 0 }, zones: [{ zone: null, nodes: 2 }],
      zones_more: 0, load: { max: null, max_node: "n", min: null, min_node: "m" },
      owners: [{ id: "n", hue: 1 }], arcs: { write: [[0, 0], [0.5, 0], [null, 0]], read: [[null, 0]] },
      takeover: [[null, 0.5, 0, 0], [0.1, null, 0, 0]], takeover_share: null };
    drawRing(ring);
    drawSummary(ring);
    drawRows({ rows: [{ id: "n", addr: "a", zone: null, state: "active", hue: 1, weight: null,
      vnodes: 1, share_write: null, share_read: null, fair_write: null, fair_read: null,
      lookups: { write: 1, read: 1, write_per_s: 2, read_per_s: null } }],
      matched: 1, total: 1, offset: 0 });
    drawHistory([{ revision: 7, time_ms: 0, digest: "d", nodes: 2, moved_write: null,
      moved_read: null, moves: [{ from: null, to: "n", share: null }] }]);
    drawHotKeys([{ key: "k", len: 1, rate: null, share: null, error: null, spread: false,
      node: "n", read_node: "n" }]);
    const texts = sel => [...document.querySelectorAll(sel)].map(e => e.textContent);
    return { load: $("load").textContent, takeover: $("takeover").textContent,
      row: texts("#nodes tbody td"), history: texts("#history tbody td"),
      hot: texts("#hotkeys td"), paths: document.querySelectorAll("#ring path").length };
  } catch (e) {
    return { error: String(e) };
  }
})()"""


def check_nulls(b):
    """Nulls where numbers go show as "-", and throw nothing."""
    shown = b.eval(NULLS)
    if not shown or "error" in shown:
        raise RuntimeError("the page cannot show null numbers: %s" % shown)
    text = json.dumps(shown)
    for bad in ("null", "NaN", "Infinity", "undefined"):
        if bad in text:
            raise RuntimeError("the page shows %s for a null number: %s" % (bad, text))
    if shown["takeover"] != "-" or "-\u00d7" not in shown["load"] or "-" not in shown["row"]:
        raise RuntimeError("null numbers not shown as -: %s" % text)
    # The one arc whose start and end are numbers, of the write view.
    if shown["paths"] != 1:
        raise RuntimeError("arcs of null places drawn: %s" % text)
    return shown


# The counts the page writes with a noun, for 1 and for more: the ring's
# nodes under its circle, and the lookups in the summary.
PLURALS = """(() => {
  const ring = n => ({ revision: 7, nodes: n, arcs: { write: [], read: [] }, owners: [],
                       takeover: [] });
  const status = (n, rate) => ({ status: { revision: 7, digest: "d", endpoint: null,
    rings_published: 1, unconfirmed_ms: 0 }, ring: { revision: 7 },
    lookups: { write: n, write_per_s: rate }, hot_keys: [] });
  const shown = [];
  for (const n of [1, 1000]) {
    drawRing(ring(n));
    shown.push(document.querySelectorAll("#ring text")[1].textContent);
  }
  for (const [n, rate] of [[1, null], [2, null], [1, 0.5], [0, 0]]) {
    drawStatus(status(n, rate));
    shown.push($("rate").textContent);
  }
  return shown;
})()"""


def check_plurals(b):
    """"1 node", "1 lookup"; "1,000 nodes", "2 lookups"."""
    shown = b.eval(PLURALS)
    want = ["1 node", "1,000 nodes", "1 lookup", "2 lookups", "0.5 (1 lookup since the start)",
            "0.0 (0 lookups since the start)"]
    if shown != want:
        raise RuntimeError("the page counts %s, not %s" % (shown, want))
    return shown


def wait_for(browser, what, pred, timeout=30):
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = browser.eval(STATE)  # None while the page is loading
        if state and pred(state):
            return state
        time.sleep(0.2)
    raise RuntimeError("timed out waiting for %s; the page shows %s" % (what, state))


def small(b, a):
    """Three nodes, one warming: lookups, a put, etcd down at first."""
    nodes = a.nodes.split(",")
    if a.no_ring_file:
        down = wait_for(b, "no ring yet", lambda s: s["state"] == "no-ring" and
                        s["stale"].startswith("no ring yet") and s["conn"] == "live")
        b.eval("window.__hrtLoaded = 'no ring'")
        b.screenshot(os.path.join(a.out, "dashboard-no-ring.png"))
        print("etcd down: %s" % json.dumps(down))
        open(a.no_ring_file, "w").close()
    first = wait_for(b, "every node", lambda s: s["updates"] >= 1 and
                     all(n in s["nodes"] for n in nodes), timeout=60)
    if a.no_ring_file and first["loaded"] != "no ring":
        raise RuntimeError("the page was reloaded to show the ring: %s" % first)
    if "warming" not in first["states"] or first["takeover"] == 0:
        raise RuntimeError("no warming node or takeover arcs shown: %s" % first)
    # Lookups through the server: its page shows their rates and the
    # hot key, with the owner /lookup answered.
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for i in range(30):
        key = "hot" if i % 3 else "cold-%d" % i
        with direct.open(a.url + "lookup?key=" + key, timeout=10) as r:
            answer = json.load(r)
        if key == "hot":
            owner = answer["node"]
    first = wait_for(b, "the lookups", lambda s: s["hot"][:1] == [["hot", owner]] and
                     any(r not in ("-", "\u2026") for r in s["rates"]))
    # A mark that a reload would wipe out.
    b.eval("window.__hrtLoaded = 'first'")
    b.screenshot(os.path.join(a.out, "dashboard-warming.png"))
    with open(os.path.join(a.out, "dashboard-warming.html"), "w") as f:
        f.write(b.eval("document.documentElement.outerHTML"))

    put(a)
    second = wait_for(b, "the new ring", lambda s: a.new_node in s["nodes"] and
                      s["revision"] != first["revision"])
    if second["loaded"] != "first" or second["navigations"] != 1:
        raise RuntimeError("the page was reloaded: %s" % second)
    if second["history"] < 2 or second["updates"] <= first["updates"]:
        raise RuntimeError("no history of the new ring: %s" % second)
    b.screenshot(os.path.join(a.out, "dashboard-joined.png"))
    fits = check_fits(b, a.out, "dashboard-%s.png" % a.window.split(",")[0])
    with open(os.path.join(a.out, "dashboard-joined.html"), "w") as f:
        f.write(b.eval("document.documentElement.outerHTML"))
    print("first: %s" % json.dumps(first))
    print("after the put: %s" % json.dumps(second))
    print("fits: %s" % json.dumps(fits))
    # Last, as it draws into the page's elements: the next ring redraws.
    print("nulls: %s" % json.dumps(check_nulls(b)))
    print("plurals: %s" % json.dumps(check_plurals(b)))


def put(a):
    env = dict(os.environ, ETCDCTL_API="3")
    subprocess.run([a.etcdctl, "--endpoints", a.endpoints, "put", a.put[0], a.put[1]],
                   env=env, check=True, stdout=subprocess.DEVNULL, timeout=20)


def nodecount(s):
    return s["nodecount"].replace(",", "")


def big(b, a):
    """A ring of --big nodes: small, cheap, alive, searchable."""
    b.eval("performance.setResourceTimingBufferSize(100000)")
    b.call("Performance.enable")
    first = wait_for(b, "the ring", lambda s: s["updates"] >= 2 and
                     nodecount(s) == str(a.big), timeout=90)
    # The first page of rows: the most loaded.
    if not 0 < len(first["nodes"]) <= 100:
        raise RuntimeError("%d rows shown of %d nodes" % (len(first["nodes"]), a.big))
    # An unchanged ring, a while.
    before, busy0, t0 = b.eval(COST), renderer_s(b), time.monotonic()
    time.sleep(8)
    after, busy1, t1 = b.eval(COST), renderer_s(b), time.monotonic()
    cost = {
        "nodes": a.big,
        "elements": after["elements"],
        "html_bytes": after["html"],
        "bytes_per_s": round((after["fetched"] - before["fetched"]) / (t1 - t0)),
        "fetches_per_s": round((after["fetches"] - before["fetches"]) / (t1 - t0), 2),
        "updates_in_8s": after["updates"] - before["updates"],
        "renderer_busy_s_in_8s": round(busy1 - busy0, 2),
    }
    print("cost: %s" % json.dumps(cost))
    if after["elements"] > 20000 or after["html"] > 2000000:
        raise RuntimeError("the page is too big: %s" % cost)
    if cost["bytes_per_s"] > 20000:
        raise RuntimeError("an unchanged ring costs too much: %s" % cost)
    # Generous: a second each, on a loaded machine.
    if cost["updates_in_8s"] < 4:
        raise RuntimeError("the page does not keep up: %s" % cost)
    check_fits(b, a.out, "dashboard-big-%s.png" % a.window.split(",")[0])
    with open(os.path.join(a.out, "dashboard-big.html"), "w") as f:
        f.write(b.eval("document.documentElement.outerHTML"))
    # A search by id.
    want = "node-%06d" % (a.big // 2)
    b.eval("(() => { const q = document.getElementById('q'); q.value = '%s';"
           " q.dispatchEvent(new Event('input')); })()" % want)
    wait_for(b, "the search", lambda s: s["nodes"] == [want])
    # A node joins: found once the page has the new ring.
    b.eval("(() => { const q = document.getElementById('q'); q.value = '%s';"
           " q.dispatchEvent(new Event('input')); })()" % a.new_node)
    t0 = time.monotonic()
    put(a)
    joined = wait_for(b, "the new node", lambda s: s["nodes"] == [a.new_node] and
                      nodecount(s) == str(a.big + 1), timeout=60)
    print("joined after %.2f s: %s" % (time.monotonic() - t0, json.dumps(joined)[:300]))
    b.screenshot(os.path.join(a.out, "dashboard-big-joined.png"))


def renderer_s(b):
    """The page's renderer's time on its tasks so far, in seconds."""
    m = b.call("Performance.getMetrics")["metrics"]
    return next((x["value"] for x in m if x["name"] == "TaskDuration"), 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--window", default="1280,900")
    ap.add_argument("--nodes")
    ap.add_argument("--big", type=int)
    ap.add_argument("--etcdctl", required=True)
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--put", nargs=2, required=True)
    ap.add_argument("--new-node", required=True)
    # etcd is down at first: the page must say there is no ring yet; then
    # this file is made, for the test to start etcd.
    ap.add_argument("--no-ring-file")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    b = Browser(a.chromium, os.path.join(a.out, "chromium%s.log" % ("-big" if a.big else "")),
                a.window)
    try:
        b.open(a.url)
        if a.big:
            big(b, a)
        else:
            small(b, a)
    except Exception as e:
        print("dashboard_cdp: %s" % e, file=sys.stderr)
        return 1
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
