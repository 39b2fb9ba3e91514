# SPDX-License-Identifier: MIT
"""Acknowledged epochs: clients that ack their rings, hashring.acks() and
wait_acks(), from the module and from a client."""
import pytest

import etcd_server
import hashring


def test_acks_and_wait(etcd, prefix, ack_prefix):
    etcd.put(prefix + "a", etcd_server.record("127.0.0.1:1"))
    opts = dict(ack_prefix=ack_prefix, log_level="warn")
    with hashring.Client(etcd.url, prefix, ack_client_id="c1", ack_interval_ms=10, **opts) as c1, \
            hashring.Client(etcd.url, prefix, ack_client_id="c2", ack_interval_ms=10, **opts) as c2:
        acks = hashring.acks(etcd.url, prefix, ack_prefix=ack_prefix)
        assert [a.client_id for a in acks.acks] == ["c1", "c2"]
        assert acks.ring_revision == c1.revision
        for a in acks.acks:
            assert a.revision >= c1.revision and a.lag == 0 and a.lease > 0
            assert a.digest == c1.ring().digest and not a.conflict
            assert a.version == hashring.libhashring_version and a.time_ms > 1.5e12
        assert c2.acks() == hashring.acks(endpoints=etcd.url, prefix=prefix, ack_prefix=ack_prefix)
        rev = etcd.put(prefix + "b", etcd_server.record("127.0.0.2:1"))
        done = hashring.wait_acks(rev, 10, endpoints=etcd.url, prefix=prefix,
                                  ack_prefix=ack_prefix)
        assert all(a.revision >= rev for a in done.acks)
        assert c1.wait_acks(timeout=10).acks[0].revision >= rev
        assert c1.wait_acks(rev, timeout=5) == c2.wait_acks(rev, 5)
        # A revision nobody reaches: the clients behind are named.
        with pytest.raises(hashring.TimeoutError) as e:
            hashring.wait_acks(rev + 1000, 0.3, endpoints=etcd.url, prefix=prefix,
                               ack_prefix=ack_prefix)
        assert "c1" in str(e.value) and isinstance(e.value, TimeoutError)
        assert [a.client_id for a in e.value.acks.acks] == ["c1", "c2"]
    # Closed clients revoke their acks.
    assert hashring.acks(etcd.url, prefix, ack_prefix=ack_prefix).acks == []


def test_ack_id_in_use(etcd, prefix, ack_prefix):
    with hashring.Client(etcd.url, prefix, ack_client_id="dup", ack_prefix=ack_prefix,
                         log_level="error"):
        with pytest.raises(hashring.ExistsError, match="dup"):
            hashring.Client(etcd.url, prefix, ack_client_id="dup", ack_prefix=ack_prefix,
                            log_level="error")


def test_no_client_is_success(etcd, prefix, ack_prefix):
    rev = etcd.put(prefix + "a", etcd_server.record("127.0.0.1:1"))
    acks = hashring.wait_acks(rev, timeout=1, endpoints=etcd.url, prefix=prefix,
                              ack_prefix=ack_prefix)
    assert acks.acks == [] and acks.ring_revision == rev
