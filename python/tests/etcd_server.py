# SPDX-License-Identifier: MIT
"""A real etcd on loopback for the Python suite and bench.py.

As tests/integration/etcd_fixture.c does: /usr/bin/etcd on free 127.0.0.1
ports, its data and log in a temporary directory, started with a death
signal so that it never outlives the test process, stopped by PID.  The
helpers write through etcd's v3 JSON gateway (urllib, no client library):
puts, deletes and transactions.
"""
import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ETCD = "/usr/bin/etcd"
PR_SET_PDEATHSIG = 1


def _b64(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.b64encode(s).decode()


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    # Runs in the child before exec: etcd gets SIGKILL when we go.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Etcd:
    """One etcd member on loopback.  start() it; stop() kills it by PID."""

    def __init__(self, keep_dir=False, extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="hrpy-etcd-")
        self.keep_dir = keep_dir
        self.extra_args = list(extra_args)  # more etcd flags (--max-txn-ops=...)
        self.proc = None
        self.client_port = self.peer_port = None
        self.generation = 0

    @classmethod
    def attach(cls, url):
        """The gateway helpers on an etcd started elsewhere (not stopped)."""
        e = cls.__new__(cls)
        e.proc, e.dir, e.keep_dir = None, None, True
        e.client_port = int(url.rsplit(":", 1)[1])
        return e

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.client_port

    def _spawn(self):
        c, p = self.url, "http://127.0.0.1:%d" % self.peer_port
        log = open(os.path.join(self.dir, "etcd.log"), "ab")
        args = [ETCD, "--name=m0", "--data-dir=" + os.path.join(self.dir, "data"),
                "--logger=zap", "--log-outputs=stderr",
                "--listen-client-urls=" + c, "--advertise-client-urls=" + c,
                "--listen-peer-urls=" + p, "--initial-advertise-peer-urls=" + p,
                "--initial-cluster=m0=" + p,
                "--initial-cluster-token=hrpy-%d-%s-%d" % (
                    os.getpid(), os.path.basename(self.dir), self.generation),
                "--initial-cluster-state=new", "--heartbeat-interval=50",
                "--election-timeout=500", "--auto-compaction-retention=0"] + self.extra_args
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=log, preexec_fn=_die_with_parent)
        log.close()

    def start(self, timeout=30):
        for _ in range(5):  # new ports if etcd lost a bind race
            self.client_port, self.peer_port = _free_port(), _free_port()
            self._spawn()
            if self.wait_healthy(timeout):
                return self
            self.kill()
        raise RuntimeError("etcd did not start: see " + os.path.join(self.dir, "etcd.log"))

    def healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                return json.load(r).get("health") == "true"
        except (OSError, ValueError):
            return False

    def wait_healthy(self, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            if self.healthy():
                return True
            time.sleep(0.02)
        return False

    def kill(self):
        """SIGKILL by PID and reap: a crash."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def restart(self, timeout=30):
        """Kills it and starts it again on the same ports and data."""
        self.kill()
        self._spawn()
        if not self.wait_healthy(timeout):
            raise RuntimeError("etcd did not restart")

    def stop(self):
        self.kill()
        if not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the v3 JSON gateway ------------------------------------------------

    def call(self, path, body):
        req = urllib.request.Request(self.url + "/v3/" + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def put(self, key, value, lease=0):
        body = {"key": _b64(key), "value": _b64(value)}
        if lease:
            body["lease"] = str(lease)
        return int(self.call("kv/put", body)["header"]["revision"])

    def delete(self, key):
        return int(self.call("kv/deleterange", {"key": _b64(key)})["header"]["revision"])

    def delete_prefix(self, prefix):
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        return int(self.call("kv/deleterange", {"key": _b64(prefix),
                                                "range_end": _b64(end)})["header"]["revision"])

    def txn(self, puts=(), deletes=()):
        """One transaction (one revision) of puts {key: value} and deletes."""
        ops = [{"request_put": {"key": _b64(k), "value": _b64(v)}} for k, v in dict(puts).items()]
        ops += [{"request_delete_range": {"key": _b64(k)}} for k in deletes]
        return int(self.call("kv/txn", {"success": ops})["header"]["revision"])

    def get_prefix(self, prefix):
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        r = self.call("kv/range", {"key": _b64(prefix), "range_end": _b64(end)})
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", ""))
                for kv in r.get("kvs", [])}


def record(addr, **fields):
    """A node record's JSON value."""
    return json.dumps(dict(addr=addr, **fields))
