# SPDX-License-Identifier: MIT
"""on_change: on a Python thread, under churn, during and from close(),
its exceptions reported; a registrar's on_lost likewise."""
import collections
import gc
import os
import sys
import threading
import time

import pytest

import etcd_server
import hashring
from conftest import wait_for


def put_nodes(etcd, prefix, n):
    return etcd.txn(puts={prefix + "n%02d" % i: etcd_server.record("127.0.0.1:%d" % i)
                          for i in range(n)})


def test_first_sync_and_python_thread(etcd, prefix):
    put_nodes(etcd, prefix, 3)
    calls = []

    def on_change(old, new):
        calls.append((old, new, threading.current_thread()))

    with hashring.Client(etcd.url, prefix, on_change=on_change, log_level="warn") as client:
        wait_for(lambda: calls, what="the first call")
        old, new, thread = calls[0]
        assert isinstance(old, hashring.Ring) and isinstance(new, hashring.Ring)
        assert old.revision == 0 and len(old) == 0 and new.digest == client.ring().digest
        assert thread is not threading.main_thread() and thread.daemon
        assert thread.name == "hashring-client-callbacks"


def test_churn_chains_and_ends_at_the_last_ring(etcd, prefix, sanitized):
    put_nodes(etcd, prefix, 10)
    seen = []
    slow = threading.Event()

    with hashring.Client(etcd.url, prefix, log_level="warn") as client:
        @client.on_change
        def on_change(old, new):
            seen.append((old.digest, new.digest, new.revision))
            if slow.is_set():
                time.sleep(0.002)  # a callback slower than the changes

        for i in range(100 if sanitized else 300):
            if i == 100:
                slow.set()
            rev = etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:0", weight=1 + i % 5))
        final = client.ring
        wait_for(lambda: seen and seen[-1][2] == rev, what="the last ring's call")
        # Coalesced or not, each call's old ring is the previous call's new.
        for (_, prev_new, _), (old, _, _) in zip(seen, seen[1:]):
            assert old == prev_new
        assert seen[-1][1] == final().digest
        assert [r for _, _, r in seen] == sorted(r for _, _, r in seen)


def test_close_waits_for_a_running_callback(etcd, prefix):
    put_nodes(etcd, prefix, 3)
    inside, release, done = threading.Event(), threading.Event(), []
    client = hashring.Client(etcd.url, prefix, log_level="warn")

    @client.on_change
    def on_change(old, new):
        inside.set()
        release.wait(5)
        # The client still answers while close() waits for us.
        done.append(client.lookup("k").node)

    etcd.put(prefix + "x", etcd_server.record("127.0.0.9:1"))
    assert inside.wait(10)
    closer = threading.Thread(target=client.close)
    closer.start()
    time.sleep(0.2)
    assert closer.is_alive(), "close() must wait for the callback"
    release.set()
    closer.join(10)
    assert not closer.is_alive() and client.closed and done


def test_close_from_the_callback(etcd, prefix):
    put_nodes(etcd, prefix, 3)
    client = hashring.Client(etcd.url, prefix, log_level="warn")
    closed = threading.Event()

    def on_change(old, new):
        client.close()
        closed.set()

    client.on_change(on_change)
    etcd.put(prefix + "x", etcd_server.record("127.0.0.9:1"))
    assert closed.wait(10) and client.closed


def test_callbacks_under_churn_while_closing(etcd, prefix, sanitized):
    """Changes keep coming while clients with callbacks open and close."""
    put_nodes(etcd, prefix, 5)
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:0", weight=1 + i % 3))
            i += 1

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        for _ in range(5 if sanitized else 20):
            calls = []
            client = hashring.Client(etcd.url, prefix, log_level="warn",
                                     on_change=lambda o, n: calls.append(n.revision))
            wait_for(lambda: len(calls) >= 2, what="two calls")
            client.close()
            n = len(calls)
            time.sleep(0.05)
            assert len(calls) == n, "no call after close() returned"
    finally:
        stop.set()
        writer.join()


def test_callback_exceptions_are_reported(etcd, prefix, monkeypatch):
    put_nodes(etcd, prefix, 3)
    reported, calls = [], []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def bad(old, new):
        raise ValueError("callback failed")

    with hashring.Client(etcd.url, prefix, log_level="warn", on_change=bad) as client:
        client.on_change(lambda old, new: calls.append(new.revision))
        rev = etcd.put(prefix + "x", etcd_server.record("127.0.0.9:1"))
        wait_for(lambda: rev in calls, what="the second callback, after the first raised")
    assert reported and isinstance(reported[0].exc_value, ValueError)
    assert reported[0].object is bad


def test_registrar_on_lost(etcd, prefix):
    lost = []
    first = hashring.Registrar(etcd.url, prefix, id="n1", addr="127.0.0.1:1", ttl_s=3,
                               on_lost=lambda exc: lost.append((exc, threading.current_thread())))
    first.status()
    second = hashring.Registrar(etcd.url, prefix, id="n1", addr="127.0.0.2:1", ttl_s=3,
                                replace=True)
    try:
        wait_for(lambda: lost, timeout=15, what="on_lost")
        exc, thread = lost[0]
        assert isinstance(exc, hashring.ExistsError) and "n1" in str(exc)
        assert thread is not threading.main_thread()
        with pytest.raises(hashring.ExistsError):
            first.status()
        with pytest.raises(hashring.ExistsError):
            first.update(weight=2)
        assert first.lease == 0
        first.close()  # only our own lease goes: the record is the new holder's
        assert second.lease and second.status() is None
        value = etcd.get_prefix(prefix)[prefix + "n1"]
        assert b"127.0.0.2:1" in value
    finally:
        first.close()
        second.close()


def _task_count():
    """The process's threads, the library's included."""
    return len(os.listdir("/proc/self/task"))


def test_dropped_clients_with_callbacks_referring_to_them_are_collected(etcd, prefix):
    # A callback that uses its client makes a cycle (client -> callbacks
    # -> client); the callbacks' running thread must not keep it alive.
    put_nodes(etcd, prefix, 1)
    gc.collect()
    threads_before, tasks_before = threading.active_count(), _task_count()
    fired = collections.Counter()

    def open_one(i):
        client = hashring.Client(etcd.url, prefix)
        client.on_change(lambda old, new: fired.update([i]) if client.revision else None)
        return client

    clients = [open_one(i) for i in range(20)]
    rev = etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:7"))
    wait_for(lambda: all(c.revision >= rev for c in clients), what="every client")
    wait_for(lambda: len(fired) == 20, what="every callback")
    assert threading.active_count() > threads_before
    del clients
    gc.collect()
    wait_for(lambda: threading.active_count() == threads_before, what="the Python threads gone")
    wait_for(lambda: _task_count() == tasks_before, what="the library's threads gone")
    fired.clear()
    etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:8"))
    time.sleep(1.0)
    assert not fired
