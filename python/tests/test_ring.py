# SPDX-License-Identifier: MIT
"""Offline rings: building them every way, every placement, the answers
and their objects, shares and diffs."""
import json
import math
import pathlib

import pytest

import hashring

PLACEMENTS = ["xxh3", "ketama", "maglev", "rendezvous", "tokens"]


def members(n=10, **extra):
    return [dict(id="n%02d" % i, addr="127.0.0.%d:11211" % (i + 1), **extra) for i in range(n)]


def test_build_from_dicts_and_answers():
    ring = hashring.Ring(members(10))
    assert len(ring) == 10 and ring.points == 2000 and ring.revision == 0
    assert "n03" in ring and "zz" not in ring and 3 not in ring
    assert [n.id for n in ring] == ["n%02d" % i for i in range(10)]
    owner = ring.lookup("hello")
    assert isinstance(owner, hashring.Owner)
    assert owner.node in ring and owner.read_node == owner.node
    assert owner.addr == ring.find(owner.node).addr == owner.read_addr
    assert owner.state is hashring.State.ACTIVE and owner.state == "active"
    assert owner.revision == 0 and owner.digest == ring.digest
    node, addr, read_node, read_addr, state, read_state, revision, digest = owner
    assert (node, revision) == (owner.node, 0)


def test_answers_are_shared_objects():
    ring = hashring.Ring(members(5))
    # str, bytes and any buffer of the same bytes are the same key.
    a = ring.lookup("key-1")
    assert ring.lookup(b"key-1") is a
    assert ring.lookup(bytearray(b"key-1")) is a
    assert ring.lookup(memoryview(b"xkey-1")[1:]) is a
    # One Owner per pair of owners, one Node per node.
    owners = {id(o) for o in ring.lookup_many("k%d" % i for i in range(2000))}
    assert len(owners) == 5
    assert ring.replicas("k", 5)[0] is ring.nodes()[ring.nodes().index(ring.replicas("k", 1)[0])]


def test_utf8_keys_hash_as_their_bytes():
    ring = hashring.Ring(members(20))
    for key in ["é", "キー", "\U0001F600", "a\x00b", ""]:
        assert ring.lookup(key) == ring.lookup(key.encode())
        assert hashring.hash_key(key) == hashring.hash_key(key.encode())


def test_lookup_many_equals_lookup():
    ring = hashring.Ring(members(30, zone="z"))
    keys = ["key:%d" % i for i in range(5000)] + [b"\xff\x00", bytearray(b"ba"), ""]
    assert ring.lookup_many(keys) == [ring.lookup(k) for k in keys]
    assert ring.lookup_many(tuple(keys[:10])) == ring.lookup_many(iter(keys[:10]))
    assert ring.lookup_many([]) == []


def test_states_split_write_and_read_owners():
    nodes = members(6)
    nodes[0]["state"] = "warming"
    nodes[1]["state"] = hashring.State.DRAINING
    ring = hashring.Ring(nodes)
    split = [o for o in ring.lookup_many("k%d" % i for i in range(20000)) if o.node != o.read_node]
    assert split, "a warming and a draining node split some keys"
    for o in split:
        assert o.node != "n01" and o.read_node != "n00"
        assert o.node == "n00" or o.read_node == "n01"
    assert {o.state for o in split} <= {"active", "warming"}
    assert set(ring.shares("write")) == {"n00", "n02", "n03", "n04", "n05"}
    assert set(ring.shares(view="read")) == {"n01", "n02", "n03", "n04", "n05"}


def test_empty_views():
    ring = hashring.Ring([{"id": "w", "addr": "a:1", "state": "warming"}])
    o = ring.lookup("x")
    assert o.node == "w" and o.read_node is None and o.read_addr is None
    assert o.read_state is None
    empty = hashring.Ring([])
    assert len(empty) == 0 and empty.nodes() == [] and list(empty) == []
    with pytest.raises(hashring.EmptyRingError) as e:
        empty.lookup("x")
    assert isinstance(e.value, LookupError) and e.value.code == -3
    with pytest.raises(hashring.EmptyRingError):
        empty.lookup_many(["x"])
    assert empty.replicas("x", 3) == []


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_placement(placement, tmp_path):
    nodes = [dict(id="node-%d" % i, addr="127.0.0.%d:11211" % i, weight=1 + i % 3,
                  zone="z%d" % (i % 3)) for i in range(12)]
    if placement == "tokens":
        for i, n in enumerate(nodes[:6]):
            n["tokens"] = [(i * 7919 + t) * 1_000_000_000_007 % 2**64 for t in range(16)]
    ring = hashring.Ring(nodes, placement=placement)
    # The same members through a file and a JSON document.
    doc = {n["id"]: {k: (list(map(str, v)) if k == "tokens" else v)
                     for k, v in n.items() if k != "id"} for n in nodes}
    path = tmp_path / "members.json"
    path.write_text(json.dumps(doc))
    for other in (hashring.Ring(path, placement=placement),
                  hashring.Ring(str(path), placement=placement),
                  hashring.Ring(bytes(path), placement=placement),
                  hashring.Ring.from_json(json.dumps(doc), placement=placement),
                  hashring.Ring(ring.nodes(), placement=placement) if placement != "tokens"
                  else ring):
        assert other.digest == ring.digest
    keys = ["key-%d" % i for i in range(3000)]
    assert ring.lookup_many(keys) == [ring.lookup(k) for k in keys]
    shares = ring.shares()
    assert math.isclose(sum(shares.values()), 1.0, rel_tol=1e-9)
    reps = ring.replicas("key-1", 4)
    assert len({n.id for n in reps}) == 4 and reps[0].id == ring.lookup("key-1").node
    assert ring.replicas("key-1", 100) and len(ring.replicas("key-1", 100)) == 12
    if placement == "rendezvous":
        assert all(n.vnodes == 1 for n in ring)


def test_options():
    assert hashring.Ring(members(3), vnodes_per_weight=10).points == 30
    assert hashring.Ring(members(3), placement="maglev", maglev_size=101).points == 101
    assert hashring.Ring(members(3), revision=42).lookup("x").revision == 42
    with pytest.raises(hashring.InvalidArgumentError, match="prime"):
        hashring.Ring(members(3), placement="maglev", maglev_size=100)


def test_diff_and_moved_share():
    old = hashring.Ring(members(10))
    new = hashring.Ring(members(11))
    d = old.diff(new)
    assert d.view == "write" and 0 < d.moved < 0.2
    assert math.isclose(d.moved, old.moved_share(new), rel_tol=1e-12)
    assert all(a.new == "n10" for a in d.arcs) and {t.new for t in d.totals} == {"n10"}
    assert math.isclose(sum(t.share for t in d.totals), d.moved, rel_tol=1e-9)
    assert all(0 <= a.start < a.end <= 2**64 for a in d.arcs)
    for a in d.arcs[:50]:
        # A key at the arc's start moved from its old owner to the new one.
        assert a.old != a.new
    assert old.diff(old).arcs == [] and old.diff(old).moved == 0
    gone = old.diff(None, view="read")
    assert gone.moved == 1.0 and gone.view == "read"
    assert {t.new for t in gone.totals} == {None}
    rdv = hashring.Ring(members(4), placement="rendezvous")
    rd = rdv.diff(hashring.Ring(members(5), placement="rendezvous"))
    assert rd.arcs == [] and rd.totals and rd.moved > 0


def test_nodes_fields():
    ring = hashring.Ring([{"id": "a", "addr": "h:1", "zone": "z1", "weight": 2.5,
                           "state": "draining"}, {"id": "b", "addr": "h:2"}])
    a = ring.find("a")
    assert (a.id, a.addr, a.zone, a.weight, a.state, a.vnodes) == \
        ("a", "h:1", "z1", 2.5, "draining", 500)
    assert ring.find("b").zone == "" and ring.find("nope") is None
    assert ring.nodes() == list(ring)


def test_addresses_keep_any_bytes():
    ring = hashring.Ring.from_json(b'{"a": {"addr": "caf\\u00e9:1", "zone": "\\u00fcber"}}')
    assert ring.find("a").addr == "café:1" and ring.find("a").zone == "über"


def test_members_file_errors_name_the_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"a": "h:1", "a": "h:2"}')
    with pytest.raises(hashring.DuplicateError, match="m.json"):
        hashring.Ring(path)
    with pytest.raises(hashring.FileError) as e:
        hashring.Ring(tmp_path / "missing.json")
    assert isinstance(e.value, OSError) and "missing.json" in str(e.value)
    path.write_text('{"a": ')
    with pytest.raises(hashring.ParseError, match="end of the document"):
        hashring.Ring(pathlib.Path(path))


def test_repr():
    ring = hashring.Ring(members(2), revision=7)
    assert repr(ring).startswith("<hashring.Ring revision=7 digest=") and "nodes=2" in repr(ring)
    assert "node=" in repr(ring.lookup("x"))


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_lookup_index_and_node(placement):
    ring = hashring.Ring(members(300), placement=placement, vnodes_per_weight=20)
    nodes = ring.nodes()
    keys = ["key:%d" % i for i in range(3000)] + [b"\xff\x00", bytearray(b"ba"), ""]
    for key in keys:
        i = ring.lookup_index(key)
        assert type(i) is int and 0 <= i < len(ring)
        assert ring.node(i) is nodes[i]
        assert ring.node(i).id == ring.lookup(key).node
    # Past CPython's small ints too: the same int object each time.
    big = next(k for k in keys if ring.lookup_index(k) > 256)
    assert ring.lookup_index(big) is ring.lookup_index(big)
    assert ring.node(len(ring) - 1) is nodes[-1]


def test_lookup_index_of_an_empty_write_view():
    # All draining: no write-view owner, None as lookup() gives.
    ring = hashring.Ring([dict(id="a", addr="h:1", state="draining"),
                          dict(id="b", addr="h:2", state="draining")])
    assert ring.lookup("k").node is None and ring.lookup_index("k") is None
    # The write view's owner, not the read view's.
    ring = hashring.Ring([dict(id="a", addr="h:1", state="draining"),
                          dict(id="b", addr="h:2", state="warming")])
    assert ring.lookup("k").read_node == "a" and ring.node(ring.lookup_index("k")).id == "b"


def test_lookup_index_and_node_bad_input():
    ring = hashring.Ring(members(3))
    for bad in (None, 1, 1.5, ["k"]):
        with pytest.raises(TypeError):
            ring.lookup_index(bad)
    for bad in (3, -1, -4, 2 ** 70, -(2 ** 70)):
        with pytest.raises(IndexError, match="out of range"):
            ring.node(bad)
    for bad in ("0", 1.0, None, True, b"\x00"):
        with pytest.raises(TypeError, match="int"):
            ring.node(bad)
    empty = hashring.Ring([])
    with pytest.raises(hashring.EmptyRingError):
        empty.lookup_index("x")
    with pytest.raises(IndexError):
        empty.node(0)
    with pytest.raises(TypeError):
        ring.lookup_index()
    with pytest.raises(TypeError):
        ring.node()


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_placement_and_options(placement):
    ring = hashring.Ring(members(4), placement=placement, vnodes_per_weight=50,
                         maglev_size=1021)
    assert ring.placement == placement
    assert ring.vnodes_per_weight == 50 and ring.maglev_size == 1021
    again = hashring.Ring(ring.nodes() if placement != "tokens" else members(4),
                          placement=ring.placement,
                          vnodes_per_weight=ring.vnodes_per_weight,
                          maglev_size=ring.maglev_size)
    if placement != "tokens":
        assert again.digest == ring.digest
    default = hashring.Ring(members(2))
    assert (default.placement, default.vnodes_per_weight, default.maglev_size) == \
        ("xxh3", 200, 65537)
    with pytest.raises(AttributeError):
        ring.placement = "xxh3"
