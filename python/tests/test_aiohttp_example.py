# SPDX-License-Identifier: MIT
"""examples/aiohttp_service.py against a real etcd: it listens on a free
loopback port, routes keys by the ring, logs a ring change from its
`async for`, registers itself active, and on SIGTERM drains, leaves and
exits 0."""
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request

import etcd_server
import hashring
from conftest import ROOT, python_path, wait_for


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        return r.status, r.read()


def test_aiohttp_service(etcd, prefix):
    etcd.put(prefix + "a", etcd_server.record("127.0.0.1:7401"))
    port = etcd_server._free_port()
    env = dict(os.environ, PYTHONPATH=python_path(), HASHRING_ENDPOINTS=etcd.url,
               HASHRING_PREFIX=prefix, PORT=str(port), NODE_ID="svc-1",
               NODE_ADDR="127.0.0.1:%d" % port, DRAIN_SECONDS="0.5")
    lines = []
    service = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "aiohttp_service.py")],
                               env=env, stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: lines.extend(service.stderr))
    reader.start()
    try:
        wait_for(lambda: any("registered svc-1 active" in line for line in lines), timeout=30,
                 what="the service registered")
        assert get(port, "/healthz") == (200, b"ok\n")
        with hashring.Client(etcd.url, prefix, log_level="warn") as client:
            wait_for(lambda: "svc-1" in client.ring() and
                     client.ring().find("svc-1").state == "active", what="svc-1 active")
            rev = etcd.put(prefix + "b", etcd_server.record("127.0.0.1:7402"))
            wait_for(lambda: any("-> %d: 3 nodes" % rev in line for line in lines),
                     what="the service's log of the ring change")
            wait_for(lambda: client.revision >= rev, what="our client at the same ring")
            for key in ("user:1", "user:42", "cart:7"):
                status, body = get(port, "/route/" + key)
                answer = json.loads(body)
                want = client.lookup(key)
                assert status == 200 and answer["node"] == want.node, answer
                assert answer["addr"] == want.addr and answer["revision"] >= rev
            service.send_signal(signal.SIGTERM)
            assert service.wait(30) == 0, "".join(lines)
            wait_for(lambda: "svc-1" not in client.ring(), what="svc-1 gone")
    finally:
        if service.poll() is None:
            service.kill()
        reader.join(10)
    assert any("draining svc-1" in line for line in lines)
    assert "stopped" in lines[-1], lines
