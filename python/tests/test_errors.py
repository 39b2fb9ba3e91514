# SPDX-License-Identifier: MIT
"""Errors: the exception hierarchy, and bad input of every kind raising
TypeError or ValueError (the library's refusals are ValueErrors too,
with its own messages) - never a crash.  faulthandler is on (pytest's
default, and PYTHONFAULTHANDLER in ctest), so a crash shows its stack."""
import math
import time

import pytest

import hashring

CODES = {
    -1: ("InvalidArgumentError", ValueError), -2: ("NoMemoryError", MemoryError),
    -3: ("EmptyRingError", LookupError), -4: ("DuplicateError", ValueError),
    -5: ("LimitError", ValueError), -6: ("ParseError", ValueError), -7: ("FileError", OSError),
    -8: ("ConnectError", ConnectionError), -9: ("TimeoutError", TimeoutError),
    -10: ("EtcdError", None), -11: ("AuthError", None),
    -12: ("PermissionDeniedError", PermissionError), -13: ("TLSError", None),
    -14: ("NotFoundError", LookupError), -15: ("ExistsError", None),
    -16: ("ClosedError", None), -17: ("CompactedError", None), -18: ("ConflictError", None),
}

GOOD = [{"id": "a", "addr": "h:1"}, {"id": "b", "addr": "h:2"}]


class Weird:
    """An object that fails every protocol it is asked for."""

    def __index__(self):
        raise RuntimeError("no index")

    def __fspath__(self):
        raise RuntimeError("no path")

    def __iter__(self):
        raise RuntimeError("no iteration")


def failing_iter():
    yield "k1"
    raise RuntimeError("stopped half way")


def test_hierarchy():
    for code, (name, builtin) in CODES.items():
        cls = getattr(hashring, name)
        assert issubclass(cls, hashring.Error) and cls.__module__ == "hashring"
        if builtin:
            assert issubclass(cls, builtin), name
    assert issubclass(hashring.TimeoutError, TimeoutError)
    with pytest.raises(hashring.DuplicateError) as e:
        hashring.Ring([GOOD[0], GOOD[0]])
    assert e.value.code == -4 and e.value.message == str(e.value) == 'node "a": duplicate node id'


RING_BAD = [
    ((None,), TypeError), ((1,), TypeError), ((1.5,), TypeError), ((object(),), TypeError),
    (({"a": "h:1"},), TypeError), (([1],), TypeError), (([None],), TypeError),
    (([{}],), ValueError), (([{"id": "a"}],), ValueError), (([{"addr": "h:1"}],), ValueError),
    (([{"id": 1, "addr": "h:1"}],), TypeError), (([{"id": "a\x00", "addr": "h:1"}],), ValueError),
    (([{"id": "a", "addr": b"h:1"}],), TypeError),
    (([{"id": "a", "addr": "h:1", "weight": "1"}],), TypeError),
    (([{"id": "a", "addr": "h:1", "weight": True}],), TypeError),
    (([{"id": "a", "addr": "h:1", "weight": math.nan}],), hashring.InvalidArgumentError),
    (([{"id": "a", "addr": "h:1", "weight": -1}],), hashring.InvalidArgumentError),
    (([{"id": "a", "addr": "h:1", "weight": 0}],), hashring.InvalidArgumentError),
    (([{"id": "a", "addr": "h:1", "weight": 1e300}],), hashring.LimitError),
    (([{"id": "a", "addr": "h:1", "weight": 10**400}],), OverflowError),
    (([{"id": "a", "addr": "h:1", "state": "bogus"}],), ValueError),
    (([{"id": "a", "addr": "h:1", "state": 1}],), TypeError),
    (([{"id": "a", "addr": "h:1", "zone": 3}],), TypeError),
    (([{"id": "a", "addr": "h:1", "tokens": "12"}],), TypeError),
    (([{"id": "a", "addr": "h:1", "tokens": 12}],), TypeError),
    (([{"id": "a", "addr": "h:1", "tokens": [1.5]}],), TypeError),
    (([{"id": "a", "addr": "h:1", "tokens": [-1]}],), ValueError),
    (([{"id": "a", "addr": "h:1", "tokens": [2**64]}],), ValueError),
    (([{"id": "a", "addr": "h:1", "tokens": [1]}],), hashring.InvalidArgumentError),
    (([{"id": "a", "addr": "h:1", "colour": "red"}],), TypeError),
    (([{1: "a"}],), TypeError),
    (([{"id": "a/b", "addr": "h:1"}],), hashring.InvalidArgumentError),
    (([{"id": "", "addr": "h:1"}],), hashring.InvalidArgumentError),
    (([{"id": "a b", "addr": "h:1"}],), hashring.InvalidArgumentError),
    (([{"id": "x" * 300, "addr": "h:1"}],), hashring.LimitError),
    (([{"id": "a", "addr": ""}],), hashring.InvalidArgumentError),
    (([{"id": "a", "addr": "h\n1"}],), hashring.InvalidArgumentError),
    (([{"id": "\udc80", "addr": "h:1"}],), UnicodeEncodeError),
    (([GOOD[0], GOOD[0]],), hashring.DuplicateError),
    ((failing_iter(),), RuntimeError),
    ((Weird(),), RuntimeError),
    (("/nonexistent/members.json",), hashring.FileError),
    (("/",), hashring.FileError),
    (("bad\x00path",), ValueError),
    ((GOOD, GOOD), TypeError),
    ((), TypeError),
]


@pytest.mark.parametrize("args,exc", RING_BAD)
def test_ring_bad_members(args, exc):
    with pytest.raises(exc):
        hashring.Ring(*args)


@pytest.mark.parametrize("kwargs,exc", [
    ({"placement": "bogus"}, ValueError), ({"placement": 1}, TypeError),
    ({"placement": None}, TypeError), ({"vnodes_per_weight": -1}, ValueError),
    ({"vnodes_per_weight": 2**40}, ValueError), ({"vnodes_per_weight": "1"}, TypeError),
    ({"vnodes_per_weight": True}, TypeError), ({"vnodes_per_weight": 1.0}, TypeError),
    ({"vnodes_per_weight": Weird()}, TypeError),
    ({"maglev_size": -1}, ValueError), ({"placement": "maglev", "maglev_size": 4},
                                        hashring.InvalidArgumentError),
    ({"revision": -1}, ValueError), ({"revision": 2**64}, ValueError),
    ({"colour": "red"}, TypeError),
    ({"placement": "ketama", "vnodes_per_weight": 7}, None),
])
def test_ring_bad_options(kwargs, exc):
    members = [{"id": "a", "addr": "h:1", "weight": 1.5}] if kwargs.get("placement") == "ketama" \
        else GOOD
    if exc is None:  # ketama refuses a weight that is not whole: the library says so
        with pytest.raises(hashring.InvalidArgumentError, match="whole"):
            hashring.Ring(members, **kwargs)
        return
    with pytest.raises(exc):
        hashring.Ring(members, **kwargs)


@pytest.mark.parametrize("doc,exc", [
    (1, TypeError), (None, TypeError), (bytearray(b"{}"), TypeError), ("{", hashring.ParseError),
    ("[]", hashring.ParseError), ('{"a": 1}', hashring.ParseError), ("[" * 5000, hashring.ParseError),
    ('{"a": {"addr": "h:1", "weight": "x"}}', hashring.ParseError),
])
def test_from_json_bad(doc, exc):
    with pytest.raises(exc):
        hashring.Ring.from_json(doc)


BAD_KEYS = [(None, TypeError), (1, TypeError), (1.0, TypeError), ([], TypeError),
            (object(), TypeError), ("\ud800", UnicodeEncodeError),
            (memoryview(b"abcdef")[::2], BufferError)]


@pytest.fixture(scope="module")
def ring():
    return hashring.Ring(GOOD)


@pytest.mark.parametrize("key,exc", BAD_KEYS)
def test_bad_keys(ring, key, exc):
    with pytest.raises(exc):
        ring.lookup(key)
    with pytest.raises(exc):
        ring.lookup_many(["ok", key])
    with pytest.raises(exc):
        ring.replicas(key)
    with pytest.raises(exc):
        hashring.hash_key(key)


@pytest.mark.parametrize("keys,exc", [
    (None, TypeError), (1, TypeError), ("abc", TypeError), (b"abc", TypeError),
    (bytearray(b"ab"), TypeError), (failing_iter(), RuntimeError), (Weird(), RuntimeError),
])
def test_bad_key_lists(ring, keys, exc):
    with pytest.raises(exc):
        ring.lookup_many(keys)


def test_bad_arguments(ring):
    for call, exc in [
        (lambda: ring.lookup(), TypeError), (lambda: ring.lookup("a", "b"), TypeError),
        (lambda: ring.replicas("k", -1), ValueError), (lambda: ring.replicas("k", "3"), TypeError),
        (lambda: ring.replicas("k", 2**70), ValueError), (lambda: ring.replicas("k", 1.0), TypeError),
        (lambda: ring.replicas("k", view="sideways"), ValueError),
        (lambda: ring.replicas("k", view=1), TypeError),
        (lambda: ring.replicas("k", 3, "read"), TypeError),
        (lambda: ring.shares("x"), ValueError), (lambda: ring.shares(view=None), TypeError),
        (lambda: ring.diff(1), TypeError), (lambda: ring.diff("ring"), TypeError),
        (lambda: ring.diff(ring, view="x"), ValueError),
        (lambda: ring.moved_share(object()), TypeError),
        (lambda: ring.find(1), TypeError), (lambda: ring.find("a\x00"), ValueError),
        (lambda: hashring.Ring.from_json("{}", revision=1), TypeError),
    ]:
        with pytest.raises(exc):
            call()
    assert ring.replicas("k", 0) == []


def test_client_bad_settings(etcd, prefix):
    url = etcd.url
    for kwargs, exc, message in [
        ({"prefix": None}, hashring.InvalidArgumentError, "prefix must be set"),
        ({"prefix": ""}, hashring.InvalidArgumentError, "prefix must be set"),
        ({"prefix": b"/p/"}, TypeError, "prefix must be str"),
        ({"prefix": prefix, "endpoints": 1}, TypeError, "endpoints"),
        ({"prefix": prefix, "endpoints": [1]}, TypeError, "endpoint"),
        ({"prefix": prefix, "endpoints": b"x"}, TypeError, "endpoints"),
        ({"prefix": prefix, "request_timeout_ms": 0}, hashring.InvalidArgumentError,
         "request_timeout_ms must be > 0 (is 0)"),
        ({"prefix": prefix, "request_timeout_ms": 2**31}, ValueError, "request_timeout_ms"),
        ({"prefix": prefix, "page_size": 0}, hashring.InvalidArgumentError,
         "page_size must be 1..100000 (is 0)"),
        ({"prefix": prefix, "page_size": -1}, ValueError, "page_size"),
        ({"prefix": prefix, "open_timeout_ms": "1"}, TypeError, "open_timeout_ms must be int"),
        ({"prefix": prefix, "open_nonblocking": 1}, TypeError, "open_nonblocking must be bool"),
        ({"prefix": prefix, "log_level": "loud"}, ValueError, "log_level must be one of"),
        ({"prefix": prefix, "log": 1}, TypeError, "log must be callable"),
        ({"prefix": prefix, "on_change": "f"}, TypeError, "on_change must be callable"),
        ({"prefix": prefix, "endpoint_order": "random"}, ValueError, "endpoint_order"),
        ({"prefix": prefix, "placement": "maglev", "maglev_size": 4},
         hashring.InvalidArgumentError, "4"),
        ({"prefix": prefix, "ack_client_id": "c1"}, hashring.InvalidArgumentError,
         "ack_client_id and ack_prefix go together"),
        ({"prefix": prefix, "ack_client_id": "c/1", "ack_prefix": "/acks/"},
         hashring.InvalidArgumentError, "byte 0x2f at offset 1"),
        ({"prefix": prefix, "ack_client_id": "c1", "ack_prefix": prefix},
         hashring.InvalidArgumentError, "is the ring prefix"),
        ({"prefix": prefix, "ca_file": 5}, TypeError, "ca_file must be a path"),
        ({"prefix": prefix, "ca_file": "a\x00b"}, ValueError, "NUL"),
        ({"prefix": prefix, "colour": "red"}, TypeError, "unexpected keyword argument 'colour'"),
    ]:
        kwargs.setdefault("endpoints", url)
        with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")
                           .replace(".", r"\.")):
            hashring.Client(**kwargs)
    with pytest.raises(TypeError):
        hashring.Client(url, prefix, "third")
    with pytest.raises(TypeError, match="multiple values"):
        hashring.Client(url, prefix, prefix=prefix)


def test_errors_name_the_keyword_not_the_struct(etcd, prefix):
    for make, keyword in [
        (lambda: hashring.Client(etcd.url, prefix, request_timeout_ms=0), "request_timeout_ms"),
        (lambda: hashring.Client(etcd.url, prefix, connect_timeout_ms=-1), "connect_timeout_ms"),
        (lambda: hashring.Client(etcd.url, prefix, open_timeout_ms=0), "open_timeout_ms"),
        (lambda: hashring.Client(etcd.url, prefix, probe_jitter_pct=99), "probe_jitter_pct"),
        (lambda: hashring.Client(etcd.url, prefix, ack_client_id="c1", ack_prefix="/a/",
                                 ack_ttl_s=1), "ack_ttl_s"),
        (lambda: hashring.Client(etcd.url, ""), "prefix"),
        (lambda: hashring.Registrar(etcd.url, prefix, id="a", addr="h:1", ttl_s=1), "ttl_s"),
        (lambda: hashring.Registrar(etcd.url, prefix, id="a", addr="h:1", open_timeout_ms=-1),
         "open_timeout_ms"),
        (lambda: hashring.Registrar(etcd.url, prefix, id="a", addr="h:1", backoff_initial_ms=0),
         "backoff_initial_ms"),
        (lambda: hashring.Ring(GOOD, placement="maglev", maglev_size=4), "maglev_size"),
    ]:
        with pytest.raises(hashring.InvalidArgumentError) as e:
            make()
        assert str(e.value).startswith(keyword + " "), str(e.value)
        assert "hr_" not in str(e.value) and e.value.message == str(e.value)


def test_client_unreachable(closed_port):
    with pytest.raises((hashring.ConnectError, hashring.TimeoutError)) as e:
        hashring.Client("http://127.0.0.1:%d" % closed_port, "/p/", open_timeout_ms=300,
                        connect_timeout_ms=200, log_level="error")
    assert "127.0.0.1:%d" % closed_port in str(e.value) or e.value.code == -9


def test_registrar_tries_an_unreachable_etcd_for_open_timeout_ms(closed_port):
    url = "http://127.0.0.1:%d" % closed_port
    start = time.monotonic()
    with pytest.raises(hashring.ConnectError, match=r"etcd unreachable for \d+ ms \(\d+ attempts\)"):
        hashring.Registrar(url, "/p/", id="a", addr="127.0.0.1:1", open_timeout_ms=500,
                           log_level="error")
    assert 0.5 <= time.monotonic() - start < 3.0
    start = time.monotonic()
    with pytest.raises(hashring.ConnectError) as e:
        hashring.Registrar(url, "/p/", id="a", addr="127.0.0.1:1", open_timeout_ms=0)
    assert "unreachable for" not in str(e.value)
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("endpoints", ["http://[::1", "[::1", "http://[::1:2379",
                                       ["http://127.0.0.1:2379", "https://[::1/v3"],
                                       "http://127.0.0.1:99999"])
def test_malformed_endpoint_is_refused_at_once(endpoints):
    start = time.monotonic()
    with pytest.raises(hashring.InvalidArgumentError, match="endpoints: malformed URL"):
        hashring.Client(endpoints, "/p/", open_timeout_ms=5000)
    with pytest.raises(hashring.InvalidArgumentError, match="endpoints: malformed URL"):
        hashring.Registrar(endpoints, "/p/", id="a", addr="h:1", request_timeout_ms=5000)
    assert time.monotonic() - start < 1.0


@pytest.fixture
def closed_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_registrar_bad_settings(etcd, prefix):
    for kwargs, exc in [
        ({}, TypeError), ({"id": "a"}, TypeError), ({"addr": "h:1"}, TypeError),
        ({"id": 1, "addr": "h:1"}, TypeError), ({"id": "a", "addr": "h:1", "weight": "2"}, TypeError),
        ({"id": "a", "addr": "h:1", "weight": -2}, hashring.InvalidArgumentError),
        ({"id": "a", "addr": "h:1", "ttl_s": 1}, hashring.InvalidArgumentError),
        ({"id": "a", "addr": "h:1", "state": "asleep"}, ValueError),
        ({"id": "a", "addr": "h:1", "replace": "yes"}, TypeError),
        ({"id": "a", "addr": "h:1", "tokens": -1}, ValueError),
        ({"id": "a", "addr": "h:1", "on_lost": 3}, TypeError),
        ({"id": "a/b", "addr": "h:1"}, hashring.InvalidArgumentError),
        ({"id": "a", "addr": "h:1", "placement": "ketama", "weight": 1.5},
         hashring.InvalidArgumentError),
    ]:
        with pytest.raises(exc):
            hashring.Registrar(etcd.url, prefix, **kwargs)


def test_module_functions_bad_arguments(etcd, prefix):
    for call, exc in [
        (lambda: hashring.wait_acks(), TypeError),
        (lambda: hashring.wait_acks(-1, endpoints=etcd.url, prefix=prefix), ValueError),
        (lambda: hashring.wait_acks("1", endpoints=etcd.url, prefix=prefix), TypeError),
        (lambda: hashring.wait_acks(1, -1, endpoints=etcd.url, prefix=prefix), ValueError),
        (lambda: hashring.wait_acks(1, math.nan, endpoints=etcd.url, prefix=prefix), ValueError),
        (lambda: hashring.wait_acks(1, "1", endpoints=etcd.url, prefix=prefix), TypeError),
        (lambda: hashring.wait_acks(1, 1, 2), TypeError),
        (lambda: hashring.wait_acks(0, 0, endpoints=etcd.url, prefix=prefix),
         hashring.InvalidArgumentError),
        (lambda: hashring.acks(etcd.url, prefix, ack_prefix=prefix), hashring.InvalidArgumentError),
        (lambda: hashring.acks(etcd.url, prefix, log=print), TypeError),
        (lambda: hashring.update_node(), TypeError),
        (lambda: hashring.update_node(1), TypeError),
        (lambda: hashring.update_node("a", endpoints=etcd.url, prefix=prefix),
         hashring.InvalidArgumentError),
        (lambda: hashring.update_node("a", weight="2", endpoints=etcd.url, prefix=prefix),
         TypeError),
        (lambda: hashring.update_node("a", state="on", endpoints=etcd.url, prefix=prefix),
         ValueError),
        (lambda: hashring.update_node("nobody", state="active", endpoints=etcd.url,
                                      prefix=prefix), hashring.NotFoundError),
    ]:
        with pytest.raises(exc):
            call()
