# SPDX-License-Identifier: MIT
"""hashring for asyncio: AsyncClient, AsyncRegistrar (docs/python.md, "asyncio").

Nothing here blocks the event loop.  A client's ring changes reach the loop
through one eventfd per client (loop.add_reader): the library's watcher
queues each change in a few slots (python/src/aio.c) and counts on the
eventfd; the loop's reader takes them and hands them to the waiters and the
changes() iterators.  The calls that talk to etcd and have no non-blocking
form in the C API (a registrar's opening, updates and leave, an acks read,
a client's close) run one at a time in the loop's default executor, each
for the length of one request: no thread waits on behalf of a coroutine.
"""
import asyncio
import collections
import functools
import warnings
import weakref

from . import _hashring
from ._hashring import ClosedError, Client, Registrar, TimeoutError

# While the first sync is awaited, the client is also asked this often (a
# failure, AuthError..., sends no ring change); once it has its ring, while
# its first ack is awaited (ack_client_id), this often.
_SYNC_POLL_S = 0.2
_ACK_POLL_S = 0.02
# Acks are read this often while a wait_acks() waits (as the C wait does).
_ACKS_POLL_S = 0.1


def _running_loop(obj):
    loop = asyncio.get_running_loop()
    if obj._loop is not None and loop is not obj._loop:
        raise RuntimeError("%s is bound to another event loop than the one running: use it "
                           "from the loop it was opened in" % type(obj).__name__)
    return loop


async def _or_closed(obj, fut):
    """Awaits `fut`, or raises ClosedError if `obj` closes meanwhile."""
    if obj._closed_fut.done():
        fut.cancel()
        raise ClosedError("%s closed" % type(obj).__name__)
    done, _ = await asyncio.wait({fut, obj._closed_fut}, return_when=asyncio.FIRST_COMPLETED)
    if fut in done:
        return fut.result()
    fut.cancel()
    raise ClosedError("%s closed while awaited" % type(obj).__name__)


async def _sentinel(ref):
    """An async generator the loop finalises when it shuts down
    (loop.shutdown_asyncgens(), as asyncio.run() does): an object still
    open then is warned about and closed.  It holds the object weakly, so
    that one dropped unclosed is collected (and warned about) as ever."""
    try:
        yield
    finally:
        obj = ref()
        if obj is not None and not obj.closed:
            warnings.warn("unclosed %r at the event loop's shutdown" % obj, ResourceWarning,
                          source=obj)
            obj._close_now()


async def _end_sentinel(obj):
    """Finishes the sentinel of an object closed, so that the loop has
    nothing left to finalise for it."""
    gen, obj._sentinel = obj._sentinel, None
    if gen is not None:
        await gen.aclose()


def _start_sentinel(obj):
    gen = _sentinel(weakref.ref(obj))
    # The loop's asyncgen hooks see it from its first step on.
    try:
        gen.asend(None).send(None)
    except StopIteration:
        pass
    return gen


def _field(name, doc):
    return property(lambda self: getattr(self, name), doc=doc)


class RingChange:
    """One change of AsyncClient.changes(): `old` and `new` rings, `missed`
    (changes folded into this one while the consumer was behind: 0 when
    it keeps up) and `diff` (new.diff(old), with diff=True; else None)."""

    __slots__ = ("_old", "_new", "_missed", "_diff")

    def __init__(self, old, new, missed, diff=None):
        self._old, self._new, self._missed, self._diff = old, new, missed, diff

    old = _field("_old", "the ring before the change (Ring)")
    new = _field("_new", "the ring after it (Ring)")
    missed = _field("_missed", "changes folded into this one (0 while the consumer keeps up)")
    diff = _field("_diff", "new.diff(old) with changes(diff=True), else None")

    def __repr__(self):
        return "RingChange(revision %d -> %d, %d nodes, missed=%d)" % (
            self.old.revision, self.new.revision, len(self.new), self.missed)


class _Changes:
    """The async iterator of AsyncClient.changes()."""

    def __init__(self, client, maxsize, diff, view):
        self._client = client
        self._maxsize = maxsize
        self._diff = diff
        self._view = view
        self._items = collections.deque()
        self._waiter = None
        self._done = False

    def _put(self, old, new, missed):
        if self._done:
            return
        if len(self._items) >= self._maxsize:
            # Behind: the newest change joins the last one queued, whose
            # old ring stays, so that the chain of rings has no gap.
            last_old, _, last_missed = self._items.pop()
            self._items.append((last_old, new, last_missed + 1 + missed))
        else:
            self._items.append((old, new, missed))
        self._wake()

    def _end(self):
        self._done = True
        self._items.clear()
        self._wake()

    def _wake(self):
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def __aiter__(self):
        return self

    async def __anext__(self):
        loop = _running_loop(self._client)
        while not self._items:
            if self._done:
                raise StopAsyncIteration
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        old, new, missed = self._items.popleft()
        diff = None
        if self._diff:
            # A diff of big rings takes milliseconds (the GIL released):
            # not on the loop.
            diff = await loop.run_in_executor(
                None, functools.partial(new.diff, old, view=self._view))
        return RingChange(old, new, missed, diff)

    async def aclose(self):
        self._client._iterators.discard(self)
        self._end()


def _readable(ref):
    client = ref()
    if client is not None:
        client._on_readable()


class AsyncClient:
    """AsyncClient(endpoints=None, prefix='/hashring/nodes/', **options)

    hashring.Client for asyncio, with the same options.  Opening starts the
    watcher at once (validating every option as Client does) without
    waiting; `await client.open()` (or `async with`) then waits up to
    open_timeout_ms for the first sync, unless open_nonblocking=True.
    Lookups, batches, replicas, ring() and status() are the Client's plain
    calls: they never block.
    """

    def __init__(self, *args, **options):
        self._loop = None
        self._fd = None
        self._iterators = set()
        self._waiters = set()
        self._closed_fut = None
        self._sentinel = None
        self._last = None
        self._nonblocking = bool(options.get("open_nonblocking", False))
        timeout_ms = options.get("open_timeout_ms", 10000)
        opts = dict(options, open_nonblocking=True, _sink=True)
        self._c = Client(*args, **opts)
        # Checked by Client already: an int.
        self._open_timeout = timeout_ms / 1000.0
        try:
            self._fd = self._c._sink_fd()
        except BaseException:
            self._c.close()
            raise

    def __repr__(self):
        return "<hashring.AsyncClient %s>" % ("closed" if self.closed else
                                              "revision %d" % self._c.revision)

    # ---- the loop's side ------------------------------------------------------

    def _bind(self):
        loop = _running_loop(self)
        if self._loop is None:
            if self._c.closed:
                self._c.status()  # ClosedError, naming fork() if that is why
            self._loop = loop
            self._closed_fut = loop.create_future()
            # Weakly: a client dropped unclosed is collected (and warned
            # about), not kept by its loop.
            loop.add_reader(self._fd, _readable, weakref.ref(self))
            self._sentinel = _start_sentinel(self)
        return loop

    def _on_readable(self):
        try:
            changes = self._c._take_changes()
        except ClosedError:
            return
        for old, new, missed in changes:
            last = self._last
            if last is not None and old.revision == last.revision and \
                    old.digest == last.digest:
                old = last
            self._last = new
            for it in list(self._iterators):
                it._put(old, new, missed)
        if changes:
            self._wake_waiters()

    def _wake_waiters(self):
        waiters, self._waiters = self._waiters, set()
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _next_change(self, loop, timeout):
        """Until the next change, `timeout` s, or the close."""
        w = loop.create_future()
        self._waiters.add(w)
        try:
            await asyncio.wait({w, self._closed_fut}, timeout=timeout)
        finally:
            self._waiters.discard(w)
            w.cancel()

    # ---- opening and waits ------------------------------------------------------

    async def open(self):
        """Binds the client to the running loop and, unless opened with
        open_nonblocking=True, waits open_timeout_ms for the first sync
        (closing it, and raising, if it does not come)."""
        self._bind()
        if not self._nonblocking:
            try:
                await self.wait_synced(self._open_timeout)
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc_info):
        await self.aclose()
        return False

    def __await__(self):
        return self.open().__await__()

    async def wait_synced(self, timeout=None):
        """Waits up to `timeout` s (None: for ever) for the first ring (and
        first ack, with ack_client_id), as Client.wait_synced()."""
        timeout_ms = _hashring._timeout_ms(timeout, "timeout", -1)
        loop = self._bind()
        end = None if timeout_ms < 0 else loop.time() + timeout_ms / 1000.0
        while True:
            if self._closed_fut.done():
                raise ClosedError("AsyncClient closed while awaited")
            try:
                self._c.wait_synced(0)
                return
            except TimeoutError:
                left = None if end is None else end - loop.time()
                if left is not None and left <= 0:
                    raise
            poll = _ACK_POLL_S if self._c.revision else _SYNC_POLL_S
            await self._next_change(loop, poll if left is None else min(left, poll))

    async def wait_acks(self, revision=None, timeout=30.0):
        """Waits until every live client acknowledges `revision` (default:
        the current ring's), as Client.wait_acks(): the acks are read (one
        request in the default executor) at each ring change and every
        100 ms, for up to `timeout` s."""
        timeout_ms = _hashring._timeout_ms(timeout, "timeout", 30000)
        loop = self._bind()
        if revision is None:
            revision = self._c.revision
            if revision == 0:
                raise ValueError("wait_acks(): the client has no ring from etcd yet: "
                                 "give a revision")
        end = loop.time() + timeout_ms / 1000.0
        while True:
            fut = loop.run_in_executor(None, self._c.wait_acks, revision, 0)
            try:
                return await _or_closed(self, fut)
            except TimeoutError:
                left = end - loop.time()
                if left <= 0:
                    raise
            await self._next_change(loop, min(left, _ACKS_POLL_S))

    def acks(self):
        """Not provided (it would block the loop): await wait_acks(), or call
        hashring.acks() in an executor."""
        raise TypeError("AsyncClient.acks() is not provided: a read of etcd would block "
                        "the loop; await wait_acks(), or call hashring.acks() in an executor")

    def changes(self, maxsize=16, *, diff=False, view="write"):
        """An async iterator of the rings the client publishes from now on:
        RingChange(old, new, missed, diff).  At most `maxsize` wait for a
        slow consumer; beyond, changes fold into the last one (`missed`).
        Ends (StopAsyncIteration) at aclose()."""
        if isinstance(maxsize, bool) or not isinstance(maxsize, int):
            raise TypeError("changes(): maxsize must be an int, not %s" % type(maxsize).__name__)
        if maxsize < 1:
            raise ValueError("changes(): maxsize must be at least 1, not %d" % maxsize)
        if not isinstance(diff, bool):
            raise TypeError("changes(): diff must be a bool, not %s" % type(diff).__name__)
        if view not in ("write", "read"):
            raise ValueError("changes(): view must be 'write' or 'read', not %r" % (view,))
        self._bind()
        # Changes published before now, still queued, are the others'.
        self._on_readable()
        it = _Changes(self, maxsize, diff, view)
        if self._closed_fut.done():
            it._end()
        else:
            self._iterators.add(it)
        return it

    # ---- closing ------------------------------------------------------------------

    @property
    def closed(self):
        """Whether aclose() was called (or the client was closed otherwise)."""
        return self._c.closed if self._closed_fut is None else \
            (self._closed_fut.done() or self._c.closed)

    def _shut(self):
        """Ends what awaits; the reader goes.  The library's client stays."""
        if self._closed_fut is not None and not self._closed_fut.done():
            self._closed_fut.set_result(None)
        if self._loop is not None and self._fd is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._fd = None
        for it in list(self._iterators):
            it._end()
        self._iterators.clear()
        self._wake_waiters()

    def _close_now(self):
        self._shut()
        self._c.close()

    async def aclose(self):
        """Ends every changes() iterator, makes what awaits raise
        ClosedError, and closes the client (the watcher's join and the ack
        lease's revocation in the default executor).  A second call does
        nothing."""
        if self._loop is not None:
            loop = _running_loop(self)
        else:
            loop = asyncio.get_running_loop()
        if self._c.closed:
            self._shut()
        else:
            self._shut()
            await loop.run_in_executor(None, self._c.close)
        await _end_sentinel(self)

    def __del__(self):
        c = getattr(self, "_c", None)
        if c is not None and not c.closed:
            try:
                warnings.warn("unclosed %r" % self, ResourceWarning, source=self)
            except Exception:  # at the interpreter's exit
                pass
            if self._loop is not None and not self._loop.is_closed() and \
                    self._fd is not None:
                try:
                    self._loop.remove_reader(self._fd)
                except Exception:
                    pass
            c.close()

    # ---- the plain calls ------------------------------------------------------------

    # The Client's own, plain calls: none of them blocks.

    @property
    def revision(self):
        """etcd revision of the current ring (Client.revision)."""
        return self._c.revision

    def lookup(self, key):
        """Client.lookup(): the owners of `key` in the current ring."""
        return self._c.lookup(key)

    def lookup_index(self, key):
        """Client.lookup_index(): the write owner's index in the current ring."""
        return self._c.lookup_index(key)

    def lookup_many(self, keys):
        """Client.lookup_many(): the owners of every key, from one ring."""
        return self._c.lookup_many(keys)

    def replicas(self, key, n=3, *, view="write"):
        """Client.replicas(): the preference list of `key`."""
        return self._c.replicas(key, n, view=view)

    def nodes(self):
        """Client.nodes(): the nodes of the current ring."""
        return self._c.nodes()

    def ring(self):
        """Client.ring(): the current ring, held."""
        return self._c.ring()

    def status(self):
        """Client.status(): what the watcher knows."""
        return self._c.status()

    def metrics(self, *, name_prefix=None, labels=None):
        """Client.metrics(): the Prometheus exposition."""
        return self._c.metrics(name_prefix=name_prefix, labels=labels)


class RegistrarEvent:
    """An event of AsyncRegistrar.events(): `kind` ("lost": the id was
    taken over) and `error` (the ExistsError)."""

    __slots__ = ("_kind", "_error")

    def __init__(self, kind, error):
        self._kind, self._error = kind, error

    kind = _field("_kind", 'what happened: "lost" (the id was taken over)')
    error = _field("_error", "the exception that tells it (ExistsError)")

    def __repr__(self):
        return "RegistrarEvent(%r, %r)" % (self.kind, self.error)


class _Events:
    def __init__(self, reg):
        self._reg = reg
        self._items = collections.deque()
        self._waiter = None
        self._done = False

    def _put(self, event):
        self._items.append(event)
        self._wake()

    def _end(self):
        self._done = True
        self._wake()

    def _wake(self):
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self):
        return self

    async def __anext__(self):
        loop = _running_loop(self._reg)
        while not self._items:
            if self._done:
                raise StopAsyncIteration
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    async def aclose(self):
        self._reg._iterators.discard(self)
        self._end()


class AsyncRegistrar:
    """AsyncRegistrar(endpoints=None, prefix='/hashring/nodes/', *, id, addr, **options)

    hashring.Registrar for asyncio, with the same options: `async with`
    (or `await reg.open()`) registers, its etcd requests in the default
    executor.  The loss of the id comes to the loop: events() yields a
    RegistrarEvent("lost", ExistsError) and ends, wait_lost() raises the
    ExistsError, and the calls raise it from then on.  on_lost= is called
    on the loop.
    """

    def __init__(self, *args, **options):
        self._args = args
        self._user_on_lost = options.pop("on_lost", None)
        if self._user_on_lost is not None and not callable(self._user_on_lost):
            raise TypeError("AsyncRegistrar(): on_lost must be callable or None, not %s"
                            % type(self._user_on_lost).__name__)
        self._options = options
        self._r = None
        self._loop = None
        self._closed_fut = None
        self._lost_fut = None
        self._lost = None
        self._iterators = set()
        self._sentinel = None
        self._shutting = False

    def __repr__(self):
        return "<hashring.AsyncRegistrar %s>" % ("closed" if self.closed else
                                                 "id %r" % self._r.id if self._r else "unopened")

    def _bind(self):
        loop = _running_loop(self)
        if self._loop is None:
            self._loop = loop
            self._closed_fut = loop.create_future()
            self._lost_fut = loop.create_future()
        return loop

    def _on_lost_thread(self, exc):
        # On the registrar's callback thread: to the loop, if it still runs.
        try:
            self._loop.call_soon_threadsafe(self._on_lost, exc)
        except RuntimeError:
            pass

    def _on_lost(self, exc):
        self._lost = exc
        if not self._lost_fut.done():
            self._lost_fut.set_exception(exc)
            self._lost_fut.exception()  # retrieved: awaiting it is optional
        for it in list(self._iterators):
            it._put(RegistrarEvent("lost", exc))
            it._end()
        if self._user_on_lost is not None:
            self._user_on_lost(exc)

    async def open(self):
        """Registers (hashring.Registrar's opening, in the default executor),
        bound to the running loop."""
        loop = self._bind()
        if self._r is not None:
            if self.closed:
                raise ClosedError("registrar closed")
            return self
        make = functools.partial(Registrar, *self._args, on_lost=self._on_lost_thread,
                                 **self._options)
        self._r = await loop.run_in_executor(None, make)
        self._sentinel = _start_sentinel(self)
        return self

    async def __aenter__(self):
        return await self.open()

    async def __aexit__(self, *exc_info):
        await self.aclose()
        return False

    def __await__(self):
        return self.open().__await__()

    def _registrar(self):
        if self._r is None:
            raise ClosedError("registrar not opened: await open() or use async with")
        return self._r

    async def _call(self, fn, *args, **kwargs):
        loop = self._bind()
        r = self._registrar()
        if r.closed or self._closed_fut.done():
            r.status()  # ClosedError, naming fork() if that is why
            raise ClosedError("registrar closed")
        fut = loop.run_in_executor(None, functools.partial(getattr(r, fn), *args, **kwargs))
        return await _or_closed(self, fut)

    async def update(self, *, state=None, weight=None, heirs=False):
        """Registrar.update(), awaited."""
        await self._call("update", state=state, weight=weight, heirs=heirs)

    async def set_state(self, state):
        """The node's state ("warming", "active", "draining" or a State)."""
        await self._call("update", state=state)

    async def drain(self, seconds=None):
        """Turns the node draining (its tokens to heirs, as close(drain=...)
        does), then waits `seconds` on the loop (None: not at all); a later
        aclose() does not drain again."""
        ms = _hashring._timeout_ms(seconds, "seconds", 0)
        await self._call("_start_drain")
        if ms:
            await asyncio.sleep(ms / 1000.0)

    async def deregister(self):
        """Registrar.deregister(), awaited: revokes the lease now."""
        await self._call("deregister")

    def status(self):
        """Never blocks: returns while the registration holds, else raises."""
        return self._registrar().status()

    async def wait_lost(self):
        """Waits until the id is taken over, and raises that ExistsError
        (ClosedError if the registrar closes first)."""
        self._bind()
        await _or_closed(self, asyncio.shield(self._lost_fut))

    def events(self):
        """An async iterator of RegistrarEvent: "lost" (then it ends); ends at
        aclose()."""
        self._bind()
        it = _Events(self)
        if self._lost is not None:
            it._put(RegistrarEvent("lost", self._lost))
            it._end()
        elif self._closed_fut.done():
            it._end()
        else:
            self._iterators.add(it)
        return it

    @property
    def id(self):
        """The node id."""
        return self._registrar().id

    @property
    def lease(self):
        """The lease the record is attached to now (0 once lost or left)."""
        return self._registrar().lease

    @property
    def closed(self):
        """Whether aclose() was called."""
        return self._r is not None and (self._r.closed or self._closed_fut.done())

    def _shut(self):
        if self._closed_fut is not None and not self._closed_fut.done():
            self._closed_fut.set_result(None)
        for it in list(self._iterators):
            it._end()
        self._iterators.clear()

    def _close_now(self):
        self._shut()
        if self._r is not None:
            self._r.close()

    async def aclose(self, drain=None):
        """Leaves: with `drain` seconds, drain() first; then the lease is
        revoked and the registrar closed (in the default executor)."""
        loop = self._bind()
        if self._r is None or self._r.closed or self._shutting:
            self._shut()
            return
        self._shutting = True
        try:
            if drain is not None and self._lost is None:
                await self.drain(drain)
        finally:
            self._shut()
            await loop.run_in_executor(None, self._r.close)
            await _end_sentinel(self)

    def __del__(self):
        r = getattr(self, "_r", None)
        if r is not None and not r.closed:
            try:
                warnings.warn("unclosed %r" % self, ResourceWarning, source=self)
            except Exception:  # at the interpreter's exit
                pass
            r.close()


for _cls in (RingChange, AsyncClient, RegistrarEvent, AsyncRegistrar):
    _cls.__module__ = "hashring"
del _cls
