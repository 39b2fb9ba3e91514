# SPDX-License-Identifier: MIT
"""hashring.Client(agent_dir=...): a client attached to the host's agent
(`hashring agent`, docs/agent.md) instead of etcd answers as etcd's
clients do and follows each change; in children of os.fork() too."""
import os
import subprocess

import pytest

import hashring
import etcd_server
from conftest import wait_for


@pytest.fixture
def agent(cli, etcd, prefix, tmp_path):
    d = tmp_path / "agent"
    etcd.put(prefix + "a", etcd_server.record("127.0.0.1:7001"))
    etcd.put(prefix + "b", etcd_server.record("127.0.0.1:7002"))
    p = subprocess.Popen([cli, "agent", "--dir", str(d), "--endpoints", etcd.url,
                          "--prefix", prefix, "--log-level", "warn"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("generation=")
    yield d
    p.terminate()
    assert p.wait(10) == 0


def test_answers_and_follows(agent, etcd, prefix):
    keys = ["user:%d" % i for i in range(200)]
    with hashring.Client(etcd.url, prefix, log_level="warn") as direct, \
            hashring.Client(agent_dir=agent) as attached:
        assert attached.status().endpoint == "agent:" + str(agent)
        assert [o.node for o in attached.lookup_many(keys)] == \
            [o.node for o in direct.lookup_many(keys)]
        rev = etcd.put(prefix + "c", etcd_server.record("127.0.0.1:7003"))
        wait_for(lambda: attached.lookup("k").revision >= rev, what="the agent's new ring")
        wait_for(lambda: direct.revision >= rev, what="etcd's client")
        assert [o.node for o in attached.lookup_many(keys)] == \
            [o.node for o in direct.lookup_many(keys)]
        assert len(attached.nodes()) == 3


def test_fork(agent, etcd, prefix):
    c = hashring.Client(agent_dir=str(agent))
    before = c.lookup("k").revision
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = c.lookup("k").revision == before
        os.read(r, 1)
        # The change made after the fork reaches the child's next lookups.
        for _ in range(1000):
            if c.lookup("k").revision > before:
                break
            os.sched_yield()
            import time
            time.sleep(0.01)
        else:
            ok = False
        os._exit(0 if ok else 1)
    etcd.put(prefix + "d", etcd_server.record("127.0.0.1:7004"))
    wait_for(lambda: c.lookup("k").revision > before, what="the parent's new ring")
    os.write(w, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    c.close()


def test_bad_input(tmp_path, agent):
    with pytest.raises(hashring.NotFoundError, match="no agent"):
        hashring.Client(agent_dir=tmp_path / "none")
    with pytest.raises(ValueError, match="on_change"):
        hashring.Client(agent_dir=agent, on_change=lambda old, new: None)
    with pytest.raises(TypeError):
        hashring.Client(agent_dir=42)
