# SPDX-License-Identifier: MIT
"""Registrar against a real etcd: the record under its lease, states and
weights, leaving with a drain, and a process killed with SIGKILL whose
node goes when its lease expires."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import etcd_server
import hashring
from conftest import python_path, wait_for


def record_of(etcd, prefix, node_id):
    value = etcd.get_prefix(prefix).get(prefix + node_id)
    return json.loads(value) if value is not None else None


def test_register_update_and_leave(etcd, prefix):
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        reg = hashring.Registrar(etcd.url, prefix, id="n1", addr="127.0.0.1:11211",
                                 zone="z1", ttl_s=5, log_level="warn")
        assert reg.id == "n1" and reg.lease > 0 and not reg.closed
        assert "lease=" in repr(reg)
        assert record_of(etcd, prefix, "n1") == {"addr": "127.0.0.1:11211", "zone": "z1",
                                                 "weight": 1, "state": "warming"}
        wait_for(lambda: "n1" in client.ring(), what="the node")
        assert client.ring().find("n1").state is hashring.State.WARMING
        reg.update(state="active")
        wait_for(lambda: client.ring().find("n1").state == "active", what="active")
        reg.update(weight=3, state=hashring.State.ACTIVE)
        wait_for(lambda: client.ring().find("n1").weight == 3, what="weight 3")
        assert reg.status() is None
        lease = reg.lease
        reg.close(drain=0.3)
        assert reg.closed and reg.lease == 0
        # Drained, then gone.
        assert "n1" not in client.ring() or client.ring().find("n1").state == "draining"
        wait_for(lambda: "n1" not in client.ring(), what="the node leaving")
        assert record_of(etcd, prefix, "n1") is None and lease
        reg.close()
        with pytest.raises(hashring.ClosedError):
            reg.update(weight=1)
        with pytest.raises(hashring.ClosedError):
            reg.status()


def test_drain_is_seen_by_clients(etcd, prefix):
    states = []
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        client.on_change(lambda old, new: states.append(
            new.find("d1").state if "d1" in new else None))
        with hashring.Registrar(etcd.url, prefix, id="d1", addr="127.0.0.2:1", state="active",
                                log_level="warn") as reg:
            wait_for(lambda: "active" in states, what="active")
            reg.close(drain=0.5)
        wait_for(lambda: states[-1] is None, what="the leave")
    assert states[states.index("active"):] == ["active", "draining", None]


def test_deregister_and_context_manager(etcd, prefix):
    with hashring.Registrar(etcd.url, prefix, id="c1", addr="127.0.0.3:1") as reg:
        assert record_of(etcd, prefix, "c1")
        reg.deregister()
        reg.deregister()
        assert record_of(etcd, prefix, "c1") is None
        with pytest.raises(hashring.ClosedError):
            reg.status()
    assert reg.closed
    with pytest.raises(hashring.ClosedError, match="closed"):
        with reg:
            pytest.fail("entered a closed registrar")
    with hashring.Registrar(etcd.url, prefix, id="c2", addr="127.0.0.3:2"):
        assert record_of(etcd, prefix, "c2")
    assert record_of(etcd, prefix, "c2") is None


def test_deregister_after_a_takeover_raises(etcd, prefix):
    first = hashring.Registrar(etcd.url, prefix, id="t1", addr="127.0.0.4:1", ttl_s=3)
    second = hashring.Registrar(etcd.url, prefix, id="t1", addr="127.0.0.4:2", ttl_s=3,
                                replace=True)
    try:
        wait_for(lambda: first.lease == 0, timeout=15, what="the loss")
        # Our own lease goes; the record, the new holder's, stays: said so.
        with pytest.raises(hashring.ExistsError, match="t1"):
            first.deregister()
        with pytest.raises(hashring.ExistsError):
            first.deregister()
        assert record_of(etcd, prefix, "t1")["addr"] == "127.0.0.4:2"
        first.close()  # a leave after a loss is not an error
        assert second.status() is None
    finally:
        first.close()
        second.close()


def test_prefix_defaults_to_the_commands(etcd):
    default = "/hashring/nodes/"
    for obj in (hashring.Client, hashring.Registrar, hashring.acks, hashring.wait_acks,
                hashring.update_node):
        assert "prefix='%s'" % default in obj.__doc__
    with hashring.Registrar(etcd.url, id="default-prefix", addr="127.0.0.5:1",
                            state="active"):
        assert record_of(etcd, default, "default-prefix")["addr"] == "127.0.0.5:1"
        with hashring.Client(etcd.url) as client:
            assert "default-prefix" in client.ring()
            hashring.update_node("default-prefix", weight=2, endpoints=etcd.url)
            wait_for(lambda: client.ring().find("default-prefix").weight == 2, what="weight 2")
        assert hashring.acks(etcd.url).ring_revision > 0
    assert record_of(etcd, default, "default-prefix") is None


def test_id_held_by_another(etcd, prefix):
    with hashring.Registrar(etcd.url, prefix, id="x1", addr="127.0.0.4:1"):
        with pytest.raises(hashring.ExistsError, match="x1"):
            hashring.Registrar(etcd.url, prefix, id="x1", addr="127.0.0.4:2")


def test_update_node(etcd, prefix):
    with hashring.Registrar(etcd.url, prefix, id="u1", addr="127.0.0.5:1") as reg:
        hashring.update_node("u1", state="active", weight=2, endpoints=etcd.url, prefix=prefix)
        rec = record_of(etcd, prefix, "u1")
        assert rec["state"] == "active" and rec["weight"] == 2
        assert reg.status() is None  # the lease was kept


def test_tokens_are_allocated_and_handed_over(etcd, prefix):
    opts = dict(placement="tokens", vnodes_per_weight=16, log_level="warn")
    regs = [hashring.Registrar(etcd.url, prefix, id="t%d" % i, addr="127.0.1.%d:1" % i,
                               state="active", tokens=16, **opts) for i in range(3)]
    try:
        with hashring.Client(etcd.url, prefix, **opts) as client:
            wait_for(lambda: len(client.nodes()) == 3, what="three nodes")
            assert all(n.vnodes == 16 for n in client.nodes())
            regs[0].close()  # hands its tokens to heirs, then leaves
            wait_for(lambda: len(client.nodes()) == 2, what="the leave")
            assert sum(n.vnodes for n in client.nodes()) == 48
            regs[1].close()
            # The last node with tokens has no heir: it says so, and leaves.
            with pytest.warns(RuntimeWarning, match="no other node"):
                regs[2].close()
            wait_for(lambda: not client.nodes(), what="every leave")
    finally:
        for r in regs:
            r.close()


CHILD = """
import sys, time, hashring
r = hashring.Registrar(sys.argv[1], sys.argv[2], id="killed", addr="127.0.0.6:1", ttl_s=2,
                       state="active")
print(r.lease, flush=True)
time.sleep(600)
"""


def test_sigkill_expiry(etcd, prefix):
    """A process registered, then killed -9: its record goes with its lease."""
    env = dict(os.environ, PYTHONPATH=python_path())
    child = subprocess.Popen([sys.executable, "-c", CHILD, etcd.url, prefix],
                             stdout=subprocess.PIPE, env=env, text=True)
    try:
        lease = int(child.stdout.readline())
        assert lease > 0 and record_of(etcd, prefix, "killed")["state"] == "active"
        with hashring.Client(etcd.url, prefix, log_level="warn") as client:
            assert "killed" in client.ring()
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            killed_at = time.monotonic()
            wait_for(lambda: "killed" not in client.ring(), timeout=15, what="the lease expiry")
            # Not at once (nobody revoked the lease): within its TTL.
            assert 0.5 < time.monotonic() - killed_at < 12
        assert record_of(etcd, prefix, "killed") is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_weight_outside_the_record_range_is_refused(etcd, prefix):
    """The record weight range (1e-6 to 1e290), as clients read records."""
    for weight in (1e-320, 1e-7, 2e290):
        with pytest.raises(hashring.InvalidArgumentError, match="outside a record's range"):
            hashring.Registrar(etcd.url, prefix, id="w", addr="127.0.0.9:1", weight=weight)
    assert record_of(etcd, prefix, "w") is None
    with hashring.Registrar(etcd.url, prefix, id="w", addr="127.0.0.9:1", weight=1e-6,
                            log_level="warn"):
        assert record_of(etcd, prefix, "w")["weight"] == 1e-6
        with pytest.raises(hashring.InvalidArgumentError, match="outside a record's range"):
            hashring.update_node("w", weight=1e-320, endpoints=etcd.url, prefix=prefix)
        assert record_of(etcd, prefix, "w")["weight"] == 1e-6
