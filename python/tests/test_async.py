# SPDX-License-Identifier: MIT
"""hashring.AsyncClient and AsyncRegistrar (docs/python.md, "asyncio")
against a real etcd, each test under the default loop and under uvloop
(Debian's python3-uvloop, which deploy/install-deps.sh installs)."""
import asyncio
import gc
import os
import threading
import warnings

import pytest
import uvloop

import etcd_server
import hashring

LOOPS = ["asyncio", "uvloop"]
DOWN = "http://127.0.0.1:1"  # nothing listens there


@pytest.fixture(params=LOOPS)
def event_loop(request):
    """pytest-asyncio's loop, of either kind; shut down as asyncio.run()
    shuts its loop down."""
    loop = uvloop.new_event_loop() if request.param == "uvloop" else asyncio.new_event_loop()
    yield loop
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def aio(test):
    """An asyncio test, run once per kind of loop."""
    return pytest.mark.asyncio(pytest.mark.usefixtures("event_loop")(test))


def put_nodes(etcd, prefix, n, weight=1):
    return etcd.txn(puts={prefix + "n%02d" % i: etcd_server.record("127.0.0.1:%d" % (7000 + i),
                                                                   weight=weight)
                          for i in range(n)})


async def until(cond, timeout=10.0, what="the condition"):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            pytest.fail("timed out waiting for " + what)
        await asyncio.sleep(0.01)


def threads_named(name):
    return [t for t in threading.enumerate() if t.name == name]


@aio
async def test_open_lookup_and_changes(etcd, prefix):
    put_nodes(etcd, prefix, 3)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        assert len(client.ring()) == 3 and client.revision > 0
        assert client.lookup("user:1").node in {"n00", "n01", "n02"}
        assert len(client.lookup_many(["a", "b", "c"])) == 3
        assert len(client.replicas("k", 2)) == 2
        changes = client.changes(diff=True)
        plain = client.changes()
        first = client.ring()
        rev = etcd.put(prefix + "n03", etcd_server.record("127.0.0.1:7003"))
        change = await asyncio.wait_for(changes.__anext__(), 10)
        assert isinstance(change, hashring.RingChange)
        assert change.old.digest == first.digest and change.new.revision == rev
        assert len(change.new) == 4 and change.missed == 0
        assert isinstance(change.diff, hashring.Diff) and change.diff.moved > 0
        other = await asyncio.wait_for(plain.__anext__(), 10)
        assert other.new is change.new and other.diff is None
        rev = etcd.delete(prefix + "n00")
        change2 = await asyncio.wait_for(changes.__anext__(), 10)
        # Each change starts at the ring the previous one ended at.
        assert change2.old is change.new and change2.new.revision == rev
        assert "n00" not in change2.new
    assert client.closed
    with pytest.raises(hashring.ClosedError):
        client.lookup("x")
    with pytest.raises(StopAsyncIteration):
        await changes.__anext__()


@aio
async def test_the_first_sync_is_a_change(etcd, prefix):
    put_nodes(etcd, prefix, 2)
    client = hashring.AsyncClient(etcd.url, prefix, log_level="warn")
    try:
        changes = client.changes()  # before the first sync is awaited
        await client
        first = await asyncio.wait_for(changes.__anext__(), 10)
        assert first.old.revision == 0 and len(first.old) == 0
        assert first.new.digest == client.ring().digest and first.missed == 0
    finally:
        await client.aclose()


@aio
async def test_slow_consumer_is_told_what_it_missed(etcd, prefix):
    put_nodes(etcd, prefix, 2)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        changes = client.changes(maxsize=2)
        start = client.ring()
        n = 30
        for i in range(n):
            rev = etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:7000", weight=2 + i))
            await asyncio.sleep(0.005)  # the loop runs: the changes queue here, not in C
        got = []
        while not got or got[-1].new.revision != rev:
            got.append(await asyncio.wait_for(changes.__anext__(), 10))
        assert len(got) < n / 2  # folded while nobody consumed
        assert sum(1 + c.missed for c in got) == n
        assert got[0].old.digest == start.digest
        for a, b in zip(got, got[1:]):
            assert b.old is a.new
        assert got[-1].new.digest == client.ring().digest


@aio
async def test_the_loop_stalled_loses_no_change_in_the_chain(etcd, prefix):
    """A loop that does not run (blocked by someone else) folds the changes
    in the C slots: fewer items, every change counted."""
    import time
    put_nodes(etcd, prefix, 2)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        changes = client.changes(maxsize=64)
        start = client.ring()
        n = 40
        for i in range(n):
            rev = etcd.put(prefix + "n01", etcd_server.record("127.0.0.1:7001", weight=2 + i))
            time.sleep(0.005)  # blocks the loop on purpose
        got = []
        while not got or got[-1].new.revision != rev:
            got.append(await asyncio.wait_for(changes.__anext__(), 10))
        assert sum(1 + c.missed for c in got) == n
        assert len(got) < n
        assert got[0].old.digest == start.digest
        for a, b in zip(got, got[1:]):
            assert b.old is a.new


@aio
async def test_aclose_ends_iterators_and_waits(etcd, prefix):
    client = await hashring.AsyncClient(DOWN, prefix, open_nonblocking=True, log_level="error",
                                        connect_timeout_ms=200)
    changes = client.changes()

    async def consume():
        return [c async for c in changes]

    consumer = asyncio.ensure_future(consume())
    waiter = asyncio.ensure_future(client.wait_synced())
    acks = asyncio.ensure_future(client.wait_acks(5, timeout=30))
    await asyncio.sleep(0.1)
    assert not consumer.done() and not waiter.done()
    await client.aclose()
    assert await asyncio.wait_for(consumer, 5) == []
    with pytest.raises(hashring.ClosedError):
        await asyncio.wait_for(waiter, 5)
    with pytest.raises(hashring.ClosedError):
        await asyncio.wait_for(acks, 5)
    await client.aclose()  # twice: nothing
    with pytest.raises(hashring.ClosedError):
        await client.wait_synced(1)
    assert not threads_named("hashring-client-callbacks") or \
        all(not t.is_alive() for t in threads_named("hashring-client-callbacks"))


@aio
async def test_open_times_out_without_blocking(etcd, prefix):
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    t = asyncio.ensure_future(ticker())
    with pytest.raises(hashring.TimeoutError):
        await hashring.AsyncClient(DOWN, prefix, open_timeout_ms=500, log_level="error",
                                   connect_timeout_ms=100)
    t.cancel()
    assert ticks >= 20  # the loop ran meanwhile


@aio
async def test_cancelled_waits_leave_the_client_usable(etcd, prefix, ack_prefix):
    put_nodes(etcd, prefix, 1)
    async with hashring.AsyncClient(etcd.url, prefix, ack_client_id="c1", ack_prefix=ack_prefix,
                                    log_level="warn") as client:
        changes = client.changes()
        task = asyncio.ensure_future(changes.__anext__())
        acks = asyncio.ensure_future(client.wait_acks(10 ** 9, timeout=30))
        await asyncio.sleep(0.05)
        task.cancel()
        acks.cancel()
        for t in (task, acks):
            with pytest.raises(asyncio.CancelledError):
                await t
        rev = etcd.put(prefix + "n05", etcd_server.record("127.0.0.1:7005"))
        change = await asyncio.wait_for(changes.__anext__(), 10)
        assert change.new.revision == rev
        await client.wait_synced(1)
        assert client.lookup("k").node in ("n00", "n05")


@aio
async def test_wait_acks(etcd, prefix, ack_prefix):
    put_nodes(etcd, prefix, 2)
    async with hashring.AsyncClient(etcd.url, prefix, ack_client_id="c1", ack_prefix=ack_prefix,
                                    ack_interval_ms=10, log_level="warn") as client:
        acks = await client.wait_acks(timeout=10)
        assert [a.client_id for a in acks.acks] == ["c1"]
        rev = etcd.put(prefix + "n07", etcd_server.record("127.0.0.1:7007"))
        acks = await client.wait_acks(rev, timeout=10)
        assert acks.acks[0].revision >= rev
        with pytest.raises(hashring.TimeoutError):
            await client.wait_acks(rev + 1000, timeout=0.3)


def test_bad_input_is_checked_as_for_client(etcd, prefix):
    with pytest.raises(TypeError, match="no_such_option"):
        hashring.AsyncClient(etcd.url, prefix, no_such_option=1)
    with pytest.raises(TypeError, match="page_size"):
        hashring.AsyncClient(etcd.url, prefix, page_size="many")
    with pytest.raises(TypeError):
        hashring.AsyncClient(etcd.url, prefix, open_timeout_ms=1.5)
    with pytest.raises(TypeError):
        hashring.AsyncRegistrar(etcd.url, prefix, id="a", addr="b", on_lost=3)


@aio
async def test_bad_arguments_of_the_calls(etcd, prefix):
    put_nodes(etcd, prefix, 1)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        with pytest.raises(ValueError, match="timeout"):
            await client.wait_synced(-1)
        with pytest.raises(TypeError):
            await client.wait_synced("soon")
        with pytest.raises(TypeError, match="maxsize"):
            client.changes(maxsize="2")
        with pytest.raises(ValueError, match="maxsize"):
            client.changes(maxsize=0)
        with pytest.raises(TypeError, match="diff"):
            client.changes(diff=1)
        with pytest.raises(ValueError, match="view"):
            client.changes(view="both")
        with pytest.raises(TypeError):
            client.lookup(3)
    async with hashring.AsyncRegistrar(etcd.url, prefix, id="r1", addr="127.0.0.1:1") as reg:
        with pytest.raises(ValueError):
            await reg.set_state("asleep")
    with pytest.raises(hashring.InvalidArgumentError):
        await hashring.AsyncRegistrar(etcd.url, prefix, id="bad id!", addr="127.0.0.1:1")


@aio
async def test_another_loop_is_refused(etcd, prefix):
    put_nodes(etcd, prefix, 1)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        errors = []

        def other():
            try:
                asyncio.run(client.wait_synced(1))
            except RuntimeError as e:
                errors.append(e)

        t = threading.Thread(target=other)
        t.start()
        await asyncio.get_running_loop().run_in_executor(None, t.join)
        assert errors and "another event loop" in str(errors[0])
        assert client.lookup("k").node == "n00"  # plain calls work from anywhere


def test_the_loop_closing_with_a_client_open_warns_and_leaks_nothing(etcd, prefix):
    put_nodes(etcd, prefix, 1)
    # uvloop opens a pipe of its own once per process, at its first loop.
    uvloop.new_event_loop().close()
    for kind in LOOPS:
        fds = len(os.listdir("/proc/self/fd"))
        threads = threading.active_count()
        holder = []

        async def main():
            holder.append(await hashring.AsyncClient(etcd.url, prefix, log_level="warn"))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kind == "uvloop":
                uvloop.install()
            try:
                asyncio.run(main())
            finally:
                asyncio.set_event_loop_policy(None)
        assert any(issubclass(w.category, ResourceWarning) and "unclosed" in str(w.message)
                   for w in caught), kind
        assert holder[0].closed
        del holder[:]
        gc.collect()
        assert len(os.listdir("/proc/self/fd")) <= fds, kind
        # The callbacks' thread is joined; the executor's went with the loop.
        assert threading.active_count() <= threads, (kind, threading.enumerate())


def test_a_dropped_client_warns(etcd, prefix):
    put_nodes(etcd, prefix, 1)

    async def main():
        c = await hashring.AsyncClient(etcd.url, prefix, log_level="warn")
        with pytest.warns(ResourceWarning, match="unclosed"):
            del c
            gc.collect()

    asyncio.run(main())


@aio
async def test_fork(etcd, prefix):
    put_nodes(etcd, prefix, 1)
    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                try:
                    client.lookup("k")
                except hashring.ClosedError as e:
                    if "fork" in str(e):
                        code = 0
                try:
                    asyncio.run(hashring.AsyncClient(DOWN, prefix, open_nonblocking=True,
                                                     log_level="error").aclose())
                except Exception:
                    code = 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert client.lookup("k").node == "n00"  # the parent's carries on


@aio
async def test_registrar_states_drain_and_leave(etcd, prefix):
    async with hashring.AsyncClient(etcd.url, prefix, open_nonblocking=True,
                                    log_level="warn") as client:
        changes = client.changes()

        async def state_of(node, want):
            while True:
                c = await asyncio.wait_for(changes.__anext__(), 10)
                n = c.new.find(node)
                if (n.state if n else None) == want:
                    return

        async with hashring.AsyncRegistrar(etcd.url, prefix, id="w1", addr="127.0.0.1:7101",
                                           ttl_s=3, log_level="warn") as reg:
            assert reg.id == "w1" and reg.lease > 0
            await state_of("w1", "warming")
            await reg.set_state("active")
            await state_of("w1", "active")
            reg.status()
            await reg.drain()
            await state_of("w1", "draining")
        await state_of("w1", None)
        assert reg.closed
        with pytest.raises(hashring.ClosedError):
            await reg.set_state("active")


@aio
async def test_registrar_lost_reaches_the_loop(etcd, prefix):
    reg = await hashring.AsyncRegistrar(etcd.url, prefix, id="l1", addr="127.0.0.1:7201",
                                        ttl_s=3, log_level="error")
    seen_on_loop = []
    events = reg.events()
    lost = asyncio.ensure_future(reg.wait_lost())
    with hashring.Registrar(etcd.url, prefix, id="l1", addr="127.0.0.1:7202", replace=True,
                            log_level="error") as thief:
        event = await asyncio.wait_for(events.__anext__(), 15)
        seen_on_loop.append(threading.current_thread() is threading.main_thread())
        assert event.kind == "lost" and isinstance(event.error, hashring.ExistsError)
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()
        with pytest.raises(hashring.ExistsError):
            await lost
        with pytest.raises(hashring.ExistsError):
            await reg.set_state("active")
        await reg.aclose()
        assert thief.status() is None  # the record stays the new holder's
    assert seen_on_loop == [True]


@aio
async def test_registrar_closed_while_awaited(etcd, prefix):
    reg = await hashring.AsyncRegistrar(etcd.url, prefix, id="c1", addr="127.0.0.1:7301",
                                        log_level="error")
    lost = asyncio.ensure_future(reg.wait_lost())
    events = reg.events()
    ev = asyncio.ensure_future(events.__anext__())
    await asyncio.sleep(0.05)
    await reg.aclose()
    with pytest.raises(hashring.ClosedError):
        await asyncio.wait_for(lost, 5)
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(ev, 5)


@aio
async def test_no_leaks(etcd, prefix, sanitized):
    """Ring changes through changes() (one consumer keeping up, one never
    reading), and clients opened and closed, leave the interpreter's
    objects and blocks and the process's descriptors where they were."""
    import sys
    n = 40 if sanitized else 200
    put_nodes(etcd, prefix, 20)

    def fds():
        """Descriptors but sockets: the open client's etcd connections
        come and go (libcurl's), the eventfds and pipes must not."""
        out = set()
        for f in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink("/proc/self/fd/" + f)
            except OSError:
                continue
            if not target.startswith("socket:"):
                out.add((f, target))
        return out

    def measure():
        gc.collect()
        return len(gc.get_objects()), sys.getallocatedblocks(), fds()

    async def churn(client, changes, count, start):
        for i in range(count):
            rev = etcd.put(prefix + "n00", etcd_server.record("127.0.0.1:7000", weight=start + i))
            while True:
                c = await asyncio.wait_for(changes.__anext__(), 10)
                if c.new.revision == rev:
                    break
            client.lookup("k%d" % i)

    async def open_close(count):
        for _ in range(count):
            async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as c:
                c.changes()
                c.lookup("x")

    async with hashring.AsyncClient(etcd.url, prefix, log_level="warn") as client:
        changes = client.changes()
        idle = client.changes(maxsize=2)  # never read: stays bounded
        await churn(client, changes, n // 4, 2)
        await open_close(5)
        before = measure()
        await churn(client, changes, n, 1000)
        await open_close(n // 10)
        after = measure()
        assert len(idle._items) <= 2
    assert after[0] - before[0] < 500, (before, after)
    assert after[1] - before[1] < 2000, (before, after)
    assert after[2] - before[2] == set(), (before[2], after[2])
