# SPDX-License-Identifier: MIT
"""The package answers as the C library does: 100,000 keys on every
placement, against `hashring lookup --members FILE --json` (the command
takes its keys as arguments: a few thousand a run), for rings built from
a list of dicts, from the file, and followed from etcd by a Client."""
import json
import random
import subprocess

import pytest

import etcd_server
import hashring
from conftest import wait_for

KEYS = 100_000
CHUNK = 5_000
PLACEMENTS = ["xxh3", "ketama", "maglev", "rendezvous", "tokens"]


def make_members(placement):
    rnd = random.Random(7)
    nodes = []
    for i in range(60):
        node = {"id": "cache-%02d" % i, "addr": "10.1.%d.%d:11211" % (i // 200, i % 200 + 1),
                "weight": rnd.choice([1, 1, 2, 3]), "zone": "zone-%d" % (i % 4)}
        if i % 17 == 3:
            node["state"] = "warming"
        elif i % 17 == 9:
            node["state"] = "draining"
        if placement == "tokens" and i % 2:
            node["tokens"] = sorted({rnd.getrandbits(64) for _ in range(16)})
        nodes.append(node)
    return nodes


def record(node):
    rec = {k: v for k, v in node.items() if k != "id"}
    if "tokens" in rec:
        rec["tokens"] = [str(t) for t in rec["tokens"]]
    return rec


def make_keys():
    rnd = random.Random(11)
    keys = []
    for i in range(KEYS):
        if i % 3:
            keys.append(("user:%d:%d" % (i, rnd.randrange(10**6))).encode())
        else:  # any bytes but NUL: they pass through argv
            keys.append(bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(1, 24))))
    return keys


def cli_answers(cli, path, placement, keys):
    out = []
    for i in range(0, len(keys), CHUNK):
        r = subprocess.run([cli, "lookup", "--members", str(path), "--placement", placement,
                            "--json", "--replicas", "3", "--", *keys[i:i + CHUNK]],
                           stdout=subprocess.PIPE, check=True)
        out += [json.loads(line) for line in r.stdout.splitlines()]
    assert len(out) == len(keys)
    return out


@pytest.fixture(scope="module")
def keys():
    return make_keys()


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_same_answers_as_the_cli(placement, keys, cli, tmp_path, etcd, prefix):
    nodes = make_members(placement)
    path = tmp_path / "members.json"
    path.write_text(json.dumps({n["id"]: record(n) for n in nodes}))
    expected = cli_answers(cli, path, placement, keys)

    etcd.txn(puts={prefix + n["id"]: json.dumps(record(n)) for n in nodes})
    with hashring.Client(etcd.url, prefix, placement=placement, log_level="warn") as client:
        wait_for(lambda: len(client.nodes()) == len(nodes), what="every record")
        rings = {"dicts": hashring.Ring(nodes, placement=placement),
                 "file": hashring.Ring(path, placement=placement), "client": client.ring()}
        assert len({r.digest for r in rings.values()}) == 1
        answers = {name: ring.lookup_many(keys) for name, ring in rings.items()}
        answers["client"] = client.lookup_many(keys)
        answers["client single"] = [client.lookup(k) for k in keys]
        answers["ring single"] = [rings["file"].lookup(k) for k in keys]
    for name, got in answers.items():
        for key, want, owner in zip(keys, expected, got):
            assert (owner.node, owner.read_node) == (want["node"], want["read_node"]), (name, key)
    ring = rings["dicts"]
    for key, want in zip(keys[::10], expected[::10]):
        assert [n.id for n in ring.replicas(key, 3)] == want["replicas"], key
