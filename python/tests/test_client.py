# SPDX-License-Identifier: MIT
"""Client against a real etcd: it follows puts, deletes, transactions and
a restart of etcd, its rings equal the offline ring of the same records,
and its methods behave around close() and from many threads."""
import json
import logging
import threading
import time

import pytest

import etcd_server
import hashring
from conftest import wait_for


def put_nodes(etcd, prefix, ids, **fields):
    return etcd.txn(puts={prefix + i: etcd_server.record("127.0.0.1:%d" % n, **fields)
                          for n, i in enumerate(ids)})


def offline_ring(etcd, prefix, **opts):
    """The ring of the records etcd holds, built offline."""
    records = etcd.get_prefix(prefix)
    return hashring.Ring([dict(id=k[len(prefix):], **json.loads(v)) for k, v in records.items()],
                         **opts)


def synced(client, etcd, prefix, revision):
    wait_for(lambda: client.status().confirmed_revision >= revision, what="revision %d" % revision)
    assert client.ring().digest == offline_ring(etcd, prefix).digest


def test_follows_puts_deletes_and_txns(etcd, prefix):
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        assert client.nodes() == []
        with pytest.raises(hashring.EmptyRingError):
            client.lookup("k")
        assert client.lookup_many([]) == []
        rev = put_nodes(etcd, prefix, ["a", "b", "c"])
        synced(client, etcd, prefix, rev)
        assert client.revision == rev and [n.id for n in client.nodes()] == ["a", "b", "c"]
        keys = ["key-%d" % i for i in range(2000)]
        assert client.lookup_many(keys) == client.ring().lookup_many(keys)

        rev = etcd.put(prefix + "d", etcd_server.record("127.0.0.9:1", weight=2, zone="z2"))
        synced(client, etcd, prefix, rev)
        assert client.ring().find("d").weight == 2

        rev = etcd.delete(prefix + "a")
        synced(client, etcd, prefix, rev)
        assert "a" not in client.ring()

        # A transaction is one revision, and one ring.
        published = client.status().rings_published
        rev = etcd.txn(puts={prefix + "e": etcd_server.record("127.0.0.5:1"),
                             prefix + "b": etcd_server.record("127.0.0.2:1", state="draining")},
                       deletes=[prefix + "c"])
        synced(client, etcd, prefix, rev)
        assert client.status().rings_published == published + 1
        assert client.revision == rev
        assert [(n.id, n.state) for n in client.nodes()] == \
            [("b", "draining"), ("d", "active"), ("e", "active")]
        owners = client.lookup_many(keys)
        assert all(o.node != "b" and o.revision == rev for o in owners)
        assert owners == [client.lookup(k) for k in keys]

        rev = etcd.delete_prefix(prefix)
        synced(client, etcd, prefix, rev)
        with pytest.raises(hashring.EmptyRingError):
            client.lookup("k")


def test_follows_an_etcd_restart(prefix):
    server = etcd_server.Etcd().start()
    try:
        put_nodes(server, prefix, ["a", "b"])
        with hashring.Client(server.url, prefix, log_level="error", backoff_max_ms=200,
                             probe_interval_ms=200) as client:
            before = client.lookup("k")
            server.kill()
            # While etcd is away the last ring keeps answering.
            assert client.lookup("k") is before
            server.restart()
            rev = put_nodes(server, prefix, ["c"])
            wait_for(lambda: "c" in client.ring(), timeout=30, what="the put after the restart")
            assert client.revision == rev and client.status().reconnects >= 1
            assert client.ring().digest == offline_ring(server, prefix).digest
    finally:
        server.stop()


def test_lookup_answers_and_rings(etcd, prefix):
    put_nodes(etcd, prefix, ["n%d" % i for i in range(8)], zone="z")
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        ring = client.ring()
        assert client.ring() is ring  # the same while the ring does not change
        owner = client.lookup("k")
        assert client.lookup(b"k") is owner and client.lookup(bytearray(b"k")) is owner
        assert owner.revision == ring.revision == client.revision
        assert owner.digest == ring.digest == client.status().digest
        reps = client.replicas("k", 3)
        assert [n.id for n in reps] == [n.id for n in ring.replicas("k", 3)]
        assert reps[0].id == owner.node
        assert client.replicas("k", 3, view="read") == reps
        st = client.status()
        assert st.revision == ring.revision and st.unconfirmed_ms == 0
        assert st.endpoint == etcd.url and st.watcher_clients == 1 and st.rings_published >= 1
        # A ring taken is held: the client moves on, it stays.
        rev = etcd.put(prefix + "n9", etcd_server.record("127.0.0.9:1"))
        wait_for(lambda: client.revision == rev, what="the new ring")
        assert "n9" not in ring and "n9" in client.ring()
        assert ring.lookup("k") is owner


def test_lookup_index(etcd, prefix):
    for part in range(3):  # etcd takes at most 128 operations a transaction
        put_nodes(etcd, prefix, ["n%03d" % i for i in range(part * 100, part * 100 + 100)])
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        # Before any lookup(): the client takes its ring for the ints.
        first = client.lookup_index("k")
        ring = client.ring()
        keys = ["key:%d" % i for i in range(3000)] + [b"k", bytearray(b"k"), ""]
        assert first == ring.lookup_index("k")
        for key in keys:
            i = client.lookup_index(key)
            assert type(i) is int and ring.lookup_index(key) == i
            assert ring.node(i).id == client.lookup(key).node
        big = next(k for k in keys if client.lookup_index(k) > 256)
        assert client.lookup_index(big) is client.lookup_index(big)
        for bad in (None, 1, 1.5, ["k"]):
            with pytest.raises(TypeError):
                client.lookup_index(bad)
        # A new ring: the indexes are the new ring's.
        rev = etcd.put(prefix + "a0", etcd_server.record("127.0.0.9:1"))
        wait_for(lambda: client.revision == rev, what="the new ring")
        new = client.ring()
        assert new.node(0).id == "a0"
        for key in keys[:500]:
            assert new.node(client.lookup_index(key)).id == new.lookup(key).node
    with hashring.Client(etcd.url, prefix + "none/", log_level="warn") as client:
        with pytest.raises(hashring.EmptyRingError):
            client.lookup_index("k")


def test_open_nonblocking_and_wait_synced(etcd, prefix):
    put_nodes(etcd, prefix, ["a"])
    with hashring.Client(etcd.url, prefix, open_nonblocking=True, log_level="warn") as client:
        client.wait_synced(10)
        client.wait_synced(0)
        assert [n.id for n in client.nodes()] == ["a"]
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with hashring.Client("127.0.0.1:%d" % port, prefix, open_nonblocking=True,
                         log_level="error") as client:
        with pytest.raises(hashring.TimeoutError) as e:
            client.wait_synced(0.3)
        assert isinstance(e.value, TimeoutError) and e.value.code == -9
        with pytest.raises(hashring.EmptyRingError):
            client.lookup("k")
        with pytest.raises(ValueError):
            client.wait_synced(-1)


def test_close(etcd, prefix):
    put_nodes(etcd, prefix, ["a", "b"])
    client = hashring.Client(etcd.url, prefix, log_level="warn")
    ring, owner = client.ring(), client.lookup("k")
    assert not client.closed
    client.close()
    client.close()
    assert client.closed
    for call in (lambda: client.lookup("k"), lambda: client.lookup_many(["k"]),
                 lambda: client.lookup_index("k"),
                 lambda: client.replicas("k"), client.nodes, client.ring, client.status,
                 lambda: client.revision, client.acks, lambda: client.wait_synced(1),
                 lambda: client.on_change(print), client.metrics, client.__enter__):
        with pytest.raises(hashring.ClosedError):
            call()
    with pytest.raises(hashring.ClosedError, match="closed"):
        with client:
            pytest.fail("entered a closed client")
    # What was taken stays valid.
    assert ring.lookup("k") is owner and owner.node in ("a", "b")
    with hashring.Client(etcd.url, prefix, log_level="warn") as c2:
        assert c2.lookup("k") == owner
    assert c2.closed


def test_close_while_threads_look_up(etcd, prefix):
    put_nodes(etcd, prefix, ["n%d" % i for i in range(20)])
    client = hashring.Client(etcd.url, prefix, log_level="warn")
    keys = ["k%d" % i for i in range(5000)]
    started = threading.Barrier(5)
    outcomes = []

    def reader(many):
        n = 0
        started.wait()
        try:
            while True:
                if many:
                    assert len(client.lookup_many(keys)) == len(keys)
                else:
                    assert client.lookup(keys[n % len(keys)]).node
                n += 1
        except hashring.ClosedError:
            outcomes.append(n)
        except BaseException as e:  # noqa: BLE001 - the test reports it
            outcomes.append(e)

    threads = [threading.Thread(target=reader, args=(i % 2,)) for i in range(4)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.1)
    client.close()
    for t in threads:
        t.join(10)
    assert len(outcomes) == 4 and all(isinstance(n, int) for n in outcomes), outcomes


def test_threads_under_churn(etcd, prefix, sanitized):
    """Four threads look up while the ring changes: nothing is lost."""
    put_nodes(etcd, prefix, ["n%02d" % i for i in range(30)])
    stop = threading.Event()
    errors, counts = [], [0] * 4
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        def reader(t):
            keys = ["t%d-%d" % (t, i) for i in range(1000)]
            try:
                while not stop.is_set():
                    for o in client.lookup_many(keys):
                        assert o.node is not None
                    for k in keys[:200]:
                        assert client.lookup(k).node is not None
                    counts[t] += 1200
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        changes = 50 if sanitized else 200
        for i in range(changes):
            etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:1", weight=1 + i % 3))
        rev = etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:1", weight=7))
        wait_for(lambda: client.revision == rev, what="the last change")
        stop.set()
        for t in threads:
            t.join()
        assert not errors and all(counts)
        assert client.ring().find("n00").weight == 7
        assert client.status().rings_published > 10


def test_log_lines(etcd, prefix, caplog):
    put_nodes(etcd, prefix, ["a"])
    lines = []
    with hashring.Client(etcd.url, prefix, log=lambda level, line: lines.append((level, line)),
                         log_level="info"):
        wait_for(lambda: any("event=synced" in line for _, line in lines), what="synced")
    assert all(level in ("error", "warn", "info", "debug") for level, _ in lines)
    logger = logging.getLogger("hashring-test")
    with caplog.at_level(logging.INFO, logger="hashring-test"):
        with hashring.Client(etcd.url, prefix, log=hashring.log_to(logger), log_level="info"):
            wait_for(lambda: any("event=synced" in r.getMessage() for r in caplog.records),
                     what="a logged line")


def _closed_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_default_log_is_the_logging_module_at_warning(etcd, prefix, caplog, capfd):
    put_nodes(etcd, prefix, ["a"])
    down = "http://127.0.0.1:%d" % _closed_port()
    with caplog.at_level(logging.DEBUG, logger="hashring"):
        # Info lines (event=synced) are not passed by default ...
        with hashring.Client(etcd.url, prefix):
            pass
        with hashring.Registrar(etcd.url, prefix, id="r1", addr="127.0.0.1:1"):
            pass
        assert not [r for r in caplog.records if r.name == "hashring"]
        # ... warnings are, to the logger "hashring", at WARNING.
        with hashring.Client(down, prefix, open_nonblocking=True):
            wait_for(lambda: [r for r in caplog.records if "event=sync_failed" in r.getMessage()],
                     what="a logged warning")
    record = next(r for r in caplog.records if "event=sync_failed" in r.getMessage())
    assert record.name == "hashring" and record.levelno == logging.WARNING
    assert "level=" not in capfd.readouterr().err
    # log=None: the library's own logfmt lines on stderr, as before.
    caplog.clear()
    with hashring.Client(down, prefix, open_nonblocking=True, log=None, log_level="info"):
        time.sleep(0.5)
    assert "level=warn event=sync_failed" in capfd.readouterr().err
    assert not [r for r in caplog.records if r.name == "hashring"]


def test_metrics(etcd, prefix):
    rev = put_nodes(etcd, prefix, ["a", "b"])
    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        client.lookup_many(["k%d" % i for i in range(100)])
        text = client.metrics()
        assert "hashring_ring_revision %d\n" % rev in text
        assert 'hashring_node_info{node="a",addr="127.0.0.1:0",zone=""} 1' in text
        assert "hashring_node_lookups_total" in text
        text = client.metrics(name_prefix="svc_", labels={"instance": "i1"})
        assert 'svc_hashring_ring_revision{instance="i1"} %d' % rev in text
        with pytest.raises(hashring.InvalidArgumentError, match="node"):
            client.metrics(labels={"node": "x"})
        with pytest.raises(TypeError):
            client.metrics(labels=["instance"])
        assert hashring.METRICS_CONTENT_TYPE.startswith("text/plain")


def test_fork(etcd, prefix):
    """A child of fork() has none of the library's threads: the clients
    it inherits are closed there, and it opens its own."""
    import os
    put_nodes(etcd, prefix, ["a", "b"])
    with hashring.Client(etcd.url, prefix, log_level="warn",
                         on_change=lambda old, new: None) as client:
        owner = client.lookup("k")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    client.lookup("k")
                except hashring.ClosedError as e:
                    assert "fork" in str(e)
                    client.close()
                    with hashring.Client(etcd.url, prefix, log_level="warn") as own:
                        code = 0 if own.lookup("k") == owner else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert client.lookup("k") is owner
