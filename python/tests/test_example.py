# SPDX-License-Identifier: MIT
"""docs/python.md's example service runs as written against a real etcd:
it joins warming, turns active, routes keys, logs ring changes, and on
SIGTERM drains, leaves and exits 0."""
import os
import re
import signal
import subprocess
import sys
import threading

import etcd_server
import hashring
from conftest import ROOT, python_path, wait_for


def example_source():
    text = open(os.path.join(ROOT, "docs", "python.md")).read()
    section = text.split("## A complete example service", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_example_service(etcd, prefix, tmp_path):
    script = tmp_path / "service.py"
    script.write_text(example_source())
    env = dict(os.environ, PYTHONPATH=python_path(), HASHRING_ENDPOINTS=etcd.url,
               HASHRING_PREFIX=prefix, NODE_ID="py-1", NODE_ADDR="127.0.0.1:7001",
               DRAIN_SECONDS="1")
    lines = []
    states = []
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        client.on_change(lambda old, new: states.append(
            new.find("py-1").state if "py-1" in new else None))
        service = subprocess.Popen([sys.executable, str(script)], env=env, cwd=str(tmp_path),
                                   stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=lambda: lines.extend(service.stderr))
        reader.start()
        try:
            wait_for(lambda: any("ready: py-1" in line for line in lines), timeout=30,
                     what="the service ready")
            wait_for(lambda: states and states[-1] == "active", what="the node active")
            rev = etcd.put(prefix + "other", etcd_server.record("127.0.0.1:7002"))
            wait_for(lambda: any("-> %d: 2 nodes" % rev in line for line in lines),
                     what="its log of the ring change")
            wait_for(lambda: any("user:42: read at 127.0.0.1:700" in line for line in lines),
                     what="a routed key")
            service.send_signal(signal.SIGTERM)
            assert service.wait(30) == 0, "".join(lines)
        finally:
            if service.poll() is None:
                service.kill()
            reader.join(10)
        wait_for(lambda: states[-1] is None, what="the node gone")
    changes = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert changes[changes.index("active"):] == ["active", "draining", None]
    assert "stopped" in lines[-1]
