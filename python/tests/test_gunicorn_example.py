# SPDX-License-Identifier: MIT
"""examples/gunicorn_app.py under Debian's gunicorn: 8 workers forked
from a master that attached to one agent (--preload) answer as a client
of etcd does, and every worker follows a ring change."""
import json
import os
import shutil
import subprocess
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

import etcd_server
import hashring
from conftest import ROOT, python_path, wait_for

GUNICORN = shutil.which("gunicorn") or "/usr/bin/gunicorn"


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        return json.loads(r.read())


def test_gunicorn_workers_follow_the_agent(cli, etcd, prefix, tmp_path):
    if not os.access(GUNICORN, os.X_OK):
        pytest.fail("gunicorn is needed (Debian's gunicorn package)")
    agent_dir = tmp_path / "agent"
    etcd.put(prefix + "a", etcd_server.record("127.0.0.1:7501"))
    etcd.put(prefix + "b", etcd_server.record("127.0.0.1:7502"))
    agent = subprocess.Popen([cli, "agent", "--dir", str(agent_dir), "--endpoints", etcd.url,
                              "--prefix", prefix, "--log-level", "warn"],
                             stdout=subprocess.PIPE, text=True)
    assert agent.stdout.readline().startswith("generation=")
    port = etcd_server._free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([python_path(), os.path.join(ROOT, "examples")]),
               HASHRING_AGENT_DIR=str(agent_dir))
    server = subprocess.Popen([GUNICORN, "--preload", "--workers", "8", "--bind",
                               "127.0.0.1:%d" % port, "--log-level", "warning",
                               "gunicorn_app:app"], env=env)
    keys = ["user:%d" % i for i in range(40)]
    try:
        wait_for(lambda: _up(port), timeout=30, what="gunicorn listening")
        with hashring.Client(etcd.url, prefix, log_level="warn") as direct, \
                ThreadPoolExecutor(32) as pool:
            def ask_all():
                # Many at once, so that every worker takes some.
                answers = list(pool.map(lambda k: get(port, "/route/" + k), keys * 20))
                return {a["worker"]: a for a in answers}, answers
            workers = {}
            def many_workers():
                # Rounds until most of the 8 have answered (the kernel
                # hands connections to workers as they ask for them).
                by_worker, answers = ask_all()
                for a in answers:
                    assert a["node"] == direct.lookup(a["key"]).node
                workers.update(by_worker)
                return len(workers) >= 6
            wait_for(many_workers, timeout=20, what="6 of the 8 workers answering")
            rev = etcd.put(prefix + "c", etcd_server.record("127.0.0.1:7503"))
            wait_for(lambda: direct.revision >= rev, what="etcd's client")
            # Each worker answers from the new ring at its next request
            # after the agent published it.
            newest = {}
            def all_new():
                by_worker, answers = ask_all()
                for a in answers:
                    if a["revision"] >= rev:
                        assert a["node"] == direct.lookup(a["key"]).node
                    newest[a["worker"]] = max(newest.get(a["worker"], 0), a["revision"])
                return set(workers) <= set(newest) and min(newest.values()) >= rev
            wait_for(all_new, timeout=20, what="every worker on the new ring")
    finally:
        server.terminate()
        server.wait(20)
        agent.terminate()
        assert agent.wait(10) == 0


def _up(port):
    try:
        get(port, "/route/x")
        return True
    except OSError:
        return False
