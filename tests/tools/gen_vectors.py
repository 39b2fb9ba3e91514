#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate the placement contract vectors (tests/vectors/placement.json).

An independent implementation of docs/placement.md, written from the
document only, in plain Python with Debian's python3-xxhash.  The C tests
check the library against its output bit for bit, so the two
implementations keep each other honest.

Usage: gen_vectors.py [OUTPUT]   (default: ../vectors/placement.json)

Maglev's vectors (docs/placement.md section 14) go to maglev.json beside
OUTPUT, rendezvous' (section 15) to rendezvous.json, the tokens
placement's (section 16) to tokens.json.
"""

import bisect
import functools
import json
import math
import os
import random
import struct
import sys
from fractions import Fraction

import xxhash

STATES = ["active", "warming", "draining"]
REPLICAS = 3
KEYS_PER_SET = 2000


def h64(data):
    return xxhash.xxh3_64_intdigest(data)


def h64s(data, seed):
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def c_round(x):
    """C's round(): half away from zero (x > 0 here), on the exact double."""
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def record(value):
    """A members-file record: an object, or a string holding a bare address."""
    if isinstance(value, str):
        return {"addr": value.strip(" \t\r\n"), "weight": 1.0, "zone": "",
                "state": "active"}
    return {"addr": value["addr"], "weight": float(value.get("weight", 1)),
            "zone": value.get("zone", ""), "state": value.get("state", "active")}


class Ring:
    def __init__(self, members, vpw):
        self.vpw = vpw
        self.nodes = {nid: record(v) for nid, v in members.items()}
        self.ids = sorted(self.nodes, key=lambda s: s.encode())
        self.vnodes = {}
        points = []
        for nid in self.ids:
            n = max(1, c_round(self.nodes[nid]["weight"] * float(vpw)))
            self.vnodes[nid] = n
            for i in range(n):
                points.append((h64(b"%s#%d" % (nid.encode(), i)), nid.encode(), nid))
        # position, then id bytewise (bytes order puts a proper prefix first)
        # equal positions: a draining node's point first, then by id
        points.sort(key=lambda p: (p[0], self.nodes[p[2]]["state"] != "draining",
                                   p[1]))
        self.points = points
        self.views = {}
        for view, excluded in (("write", "draining"), ("read", "warming")):
            pts = [(p[0], p[2]) for p in points
                   if self.nodes[p[2]]["state"] != excluded]
            self.views[view] = ([p[0] for p in pts], [p[1] for p in pts])

    def digest(self):
        return h64(struct.pack("<I", self.vpw) + self.digest_nodes())

    def digest_nodes(self):
        """Section 7 after its opening: the node count, then the nodes."""
        out = struct.pack("<I", len(self.ids))
        for nid in self.ids:
            rec = self.nodes[nid]
            for s in (nid, rec["addr"], rec["zone"]):
                b = s.encode()
                out += bytes([len(b)]) + b
            out += struct.pack("<d", rec["weight"])
            out += bytes([STATES.index(rec["state"])])
        return out

    def owner_index(self, view, pos):
        positions = self.views[view][0]
        if not positions:
            return None
        i = bisect.bisect_left(positions, pos)
        return 0 if i == len(positions) else i

    def owner(self, view, key):
        i = self.owner_index(view, h64(key))
        return None if i is None else self.views[view][1][i]

    def preflist(self, view, key, r):
        i = self.owner_index(view, h64(key))
        if i is None:
            return []
        owners = self.views[view][1]
        taken, zones, skipped = [], set(), []
        for step in range(len(owners)):
            nid = owners[(i + step) % len(owners)]
            if nid in taken or nid in skipped:
                continue
            zone = self.nodes[nid]["zone"]
            if zone in zones:
                skipped.append(nid)
                continue
            taken.append(nid)
            zones.add(zone)
            if len(taken) == r:
                return taken
        return (taken + skipped)[:r]

    def share(self, view, nid):
        positions, owners = self.views[view]
        if not positions or nid not in owners:
            return 0.0
        total = 0
        for i, pos in enumerate(positions):
            if owners[i] == nid:
                total += (pos - positions[i - 1]) % 2**64
        return float(Fraction(total, 2**64))


MAGLEV_DIGEST_WORD = 0x6c67616d   # the ASCII bytes "magl", little endian


class MaglevRing(Ring):
    """Section 14: a table of m slots per view; slot j is a point at
    ceil((j + 1) 2^64 / m) - 1 and the generic walks of Ring apply."""

    def __init__(self, members, m):
        self.m = m
        self.nodes = {nid: record(v) for nid, v in members.items()}
        self.ids = sorted(self.nodes, key=lambda s: s.encode())
        positions = [(((j + 1) << 64) - 1) // m for j in range(m)]
        self.vnodes = {}
        self.views = {}
        for view, excluded in (("write", "draining"), ("read", "warming")):
            ids = [nid for nid in self.ids if self.nodes[nid]["state"] != excluded]
            if not ids:
                self.views[view] = ([], [])
                continue
            table, quotas = self.table(ids)
            self.views[view] = (positions, table)
            home = "read" if view == "read" else "write"
            for nid, q in zip(ids, quotas):
                if ("read" if self.nodes[nid]["state"] == "draining" else "write") == home:
                    self.vnodes[nid] = q
        for nid in self.ids:
            self.vnodes.setdefault(nid, 0)
        self.points = [None] * sum(self.vnodes.values())

    def relative(self, ids):
        most = max(self.nodes[nid]["weight"] for nid in ids)
        return [self.nodes[nid]["weight"] / most for nid in ids]

    def quotas(self, ids):
        m, n = self.m, len(ids)
        total = 0.0
        for u in self.relative(ids):
            total += u
        quotas, rems = [], []
        for u in self.relative(ids):
            q = (float(m) * u) / total
            f = min(math.floor(q), m)
            quotas.append(int(f))
            rems.append(q - f)
        order = sorted(range(n), key=lambda i: (-rems[i], i))
        s, k = sum(quotas), 0
        while s < m:
            quotas[order[k]] += 1
            k, s = (k + 1) % n, s + 1
        k = n - 1
        while s > m:
            if quotas[order[k]]:
                quotas[order[k]] -= 1
                s -= 1
            k = k - 1 if k else n - 1
        return quotas

    def table(self, ids):
        m = self.m
        quotas = self.quotas(ids)
        nxt = [h64s(nid.encode(), 1) % m for nid in ids]
        skip = [h64s(nid.encode(), 2) % (m - 1) + 1 for nid in ids]

        weight = self.relative(ids)

        def before(a, b):   # turn k of node i at (2k + 1) / w; ties by id
            ta = float(2 * a[1] + 1) * weight[b[0]]
            tb = float(2 * b[1] + 1) * weight[a[0]]
            return -1 if (ta, a[0]) < (tb, b[0]) else 1

        turns = [(i, k) for i in range(len(ids)) for k in range(quotas[i])]
        turns.sort(key=functools.cmp_to_key(before))
        table = [None] * m
        for i, _ in turns:
            c = nxt[i]
            while table[c] is not None:
                c = (c + skip[i]) % m
            table[c] = ids[i]
            nxt[i] = (c + skip[i]) % m
        return table, quotas

    def owner_index(self, view, pos):
        if not self.views[view][0]:
            return None
        return (pos * self.m) >> 64

    def digest(self):
        out = struct.pack("<III", 0, MAGLEV_DIGEST_WORD, self.m)
        return h64(out + self.digest_nodes())


RDV_DIGEST_WORD = 0x767a6472      # the ASCII bytes "rdzv", little endian
RDV_SQRT2 = float.fromhex("0x1.6a09e667f3bcdp+0")
RDV_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
RDV_COEF = [1.0 / (2 * k + 3) for k in range(10)]   # 1/3, 1/5, ..., 1/21


def rdv_ln(x):
    """Section 15's logarithm: Python floats are binary64 with each
    operation rounded to nearest and never fused, as the contract says."""
    frac, exp = math.frexp(x)          # x = frac 2^exp, 0.5 <= frac < 1
    m, e = frac * 2.0, exp - 1
    if m > RDV_SQRT2:
        m, e = m * 0.5, e + 1
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    c = RDV_COEF
    z2 = z * z
    z4 = z2 * z2
    z8 = z4 * z4
    low = (c[0] + c[1] * z) + (c[2] + c[3] * z) * z2
    high = (c[4] + c[5] * z) + (c[6] + c[7] * z) * z2
    p = (low + high * z4) + (c[8] + c[9] * z) * z8
    t = s + s
    return float(e) * RDV_LN2 + (t + t * (z * p))


class RendezvousRing(Ring):
    """Section 15: no points; a key of hash k goes to the node of highest
    -w / ln(h), h = (2u + 1) / 2^53 for the top 52 bits u of
    XXH3_64bits_withSeed(u64le(XXH3_64bits(id)), k); equal scores by id."""

    def __init__(self, members):
        self.nodes = {nid: record(v) for nid, v in members.items()}
        self.ids = sorted(self.nodes, key=lambda s: s.encode())
        self.seed_input = {nid: struct.pack("<Q", h64(nid.encode()))
                           for nid in self.ids}
        self.members = {}
        for view, excluded in (("write", "draining"), ("read", "warming")):
            self.members[view] = [nid for nid in self.ids
                                  if self.nodes[nid]["state"] != excluded]
        self.vnodes = {nid: 1 for nid in self.ids}
        self.points = self.ids

    def unit(self, nid, k):
        u = h64s(self.seed_input[nid], k) >> 12
        return (2 * u + 1) / 2**53          # exact: 2u + 1 < 2^53

    def score(self, nid, k):
        return -self.nodes[nid]["weight"] / rdv_ln(self.unit(nid, k))

    def walk(self, view, key):
        k = h64(key)
        ranked = [(-self.score(nid, k), nid.encode(), nid)
                  for nid in self.members[view]]
        return [nid for _, _, nid in sorted(ranked)]

    def owner(self, view, key):
        order = self.walk(view, key)
        return order[0] if order else None

    def preflist(self, view, key, r):
        taken, zones, skipped = [], set(), []
        for nid in self.walk(view, key):
            zone = self.nodes[nid]["zone"]
            if zone in zones:
                skipped.append(nid)
                continue
            taken.append(nid)
            zones.add(zone)
            if len(taken) == r:
                return taken
        return (taken + skipped)[:r]

    def share(self, view, nid):
        if nid not in self.members[view]:
            return 0.0
        total = 0.0
        for other in self.members[view]:
            total += self.nodes[other]["weight"]
        return self.nodes[nid]["weight"] / total

    def digest(self):
        out = struct.pack("<II", 0, RDV_DIGEST_WORD)
        return h64(out + self.digest_nodes())


def rendezvous_sets():
    """The rendezvous node sets: (name, members)."""
    sets = []
    sets.append(("five-equal",
                 {"node-%d" % i: "127.0.0.1:%d" % (11211 + i) for i in range(5)}))
    weights = [0.5, 1, 1.5, 2, 0.25, 3, 1, 1, 0.75, 1.25, 0.001, 2.5]
    zones = ["z-a", "z-b", "z-c", ""]
    sets.append(("weighted-zones", {
        "cache-%02d" % i: {"addr": "127.0.0.1:%d" % (12000 + i), "weight": w,
                           "zone": zones[i % 4]} for i, w in enumerate(weights)}))
    states = ["active", "active", "warming", "active", "draining", "active",
              "warming", "draining"]
    sets.append(("states", {
        "s%d" % i: {"addr": "127.0.0.1:%d" % (13000 + i),
                    "zone": "zone-%d" % (i % 3), "state": st}
        for i, st in enumerate(states)}))
    sets.append(("prefix-ids", {
        "a": "127.0.0.1:1", "a0": "127.0.0.1:2", "ab": "127.0.0.1:3",
        "a#1": "127.0.0.1:4", "A": " 127.0.0.1:5 ", "~x:y": "127.0.0.1:6",
    }))
    sets.append(("all-warming", {
        "w%d" % i: {"addr": "127.0.0.1:%d" % (14000 + i), "state": "warming"}
        for i in range(3)}))
    sets.append(("one-node", {"solo": "127.0.0.1:11211"}))
    # the ends of the weights rendezvous takes
    sets.append(("extreme-weights", {
        "e-huge": {"addr": "127.0.0.1:1", "weight": 1e290},
        "e-huge2": {"addr": "127.0.0.1:2", "weight": 5e289},
        "e-one": {"addr": "127.0.0.1:3", "weight": 1},
        "e-tiny": {"addr": "127.0.0.1:4", "weight": 1e-300},
    }))
    sets.append(("forty-zones", {
        "n%02d" % i: {"addr": "127.0.0.1:%d" % (15000 + i), "weight": 1 + i % 4,
                      "zone": "z%d" % (i % 5)} for i in range(40)}))
    return sets


def rendezvous_scores(rng):
    """Scores to the bit: [id, weight, key, h, ln(h), score] as hex floats."""
    out = []
    ring = RendezvousRing({})
    cases = [("a", 1.0, ""), ("node-0", 1.0, "key-0"), ("x" * 200, 3.5, "clé"),
             ("e-tiny", 1e-300, "k"), ("e-huge", 1e290, "k")]
    for i in range(60):
        cases.append(("n%d" % rng.randint(0, 999), rng.choice([0.5, 1.0, 7.25, 1e-3]),
                      "key-%d" % rng.randint(0, 10**6)))
    for nid, w, key in cases:
        ring.nodes[nid] = {"weight": w}
        ring.seed_input[nid] = struct.pack("<Q", h64(nid.encode()))
        h = ring.unit(nid, h64(key.encode()))
        out.append([nid, w, key, h.hex(), rdv_ln(h).hex(),
                    ring.score(nid, h64(key.encode())).hex()])
    # the ends of h: 2^-53 and 1 - 2^-53
    for h in (2.0**-53, 1 - 2.0**-53, 0.5, float.fromhex("0x1.6a09e667f3bcdp-1"),
              float.fromhex("0x1.6a09e667f3bcep-1")):
        out.append(["", 1.0, "", h.hex(), rdv_ln(h).hex(), (-1.0 / rdv_ln(h)).hex()])
    return out


TOKENS_DIGEST_WORD = 0x6e6b6f74   # the ASCII bytes "tokn", little endian


class TokensRing(Ring):
    """Section 16: a node with tokens has one point at each; a node without
    has section 3's points; the walks of Ring apply."""

    def __init__(self, members, vpw):
        self.vpw = vpw
        self.nodes = {nid: record(v) for nid, v in members.items()}
        self.tokens = {nid: sorted(int(t) for t in v["tokens"])
                       if isinstance(v, dict) and "tokens" in v else []
                       for nid, v in members.items()}
        self.ids = sorted(self.nodes, key=lambda s: s.encode())
        self.vnodes = {}
        points = []
        for nid in self.ids:
            if self.tokens[nid]:
                pos = self.tokens[nid]
            else:
                n = max(1, c_round(self.nodes[nid]["weight"] * float(vpw)))
                pos = [h64(b"%s#%d" % (nid.encode(), i)) for i in range(n)]
            self.vnodes[nid] = len(pos)
            points += [(p, nid.encode(), nid) for p in pos]
        # equal positions: a draining node's point first, then by id
        points.sort(key=lambda p: (p[0], self.nodes[p[2]]["state"] != "draining",
                                   p[1]))
        self.points = points
        self.views = {}
        for view, excluded in (("write", "draining"), ("read", "warming")):
            pts = [(p[0], p[2]) for p in points
                   if self.nodes[p[2]]["state"] != excluded]
            self.views[view] = ([p[0] for p in pts], [p[1] for p in pts])

    def share(self, view, nid):
        positions, owners = self.views[view]
        # section 6: points all at one position give the first the circle
        if positions and positions[0] == positions[-1]:
            return 1.0 if owners[0] == nid else 0.0
        return Ring.share(self, view, nid)

    def digest(self):
        out = struct.pack("<III", 0, TOKENS_DIGEST_WORD, self.vpw)
        out += struct.pack("<I", len(self.ids))
        for nid in self.ids:
            rec = self.nodes[nid]
            for s in (nid, rec["addr"], rec["zone"]):
                b = s.encode()
                out += bytes([len(b)]) + b
            out += struct.pack("<d", rec["weight"])
            out += bytes([STATES.index(rec["state"])])
            out += struct.pack("<I", len(self.tokens[nid]))
            out += b"".join(struct.pack("<Q", t) for t in self.tokens[nid])
        return h64(out)


def tokens_sets(rng):
    """The tokens node sets: (name, vnodes_per_weight, members).  Tokens are
    any positions (the ring does not care how they were chosen)."""
    def toks(n):
        return [str(rng.getrandbits(64)) for _ in range(n)]

    sets = []
    sets.append(("ten-equal", 200, {
        "node-%d" % i: {"addr": "127.0.0.1:%d" % (11211 + i), "tokens": toks(16)}
        for i in range(10)}))
    zones = ["z-a", "z-b", "z-c", ""]
    states = ["active", "warming", "active", "draining", "active", "active"]
    sets.append(("weights-zones-states", 16, {
        "cache-%02d" % i: {"addr": "127.0.0.1:%d" % (12000 + i), "weight": 1 + i % 4,
                           "zone": zones[i % 4], "state": states[i % 6],
                           "tokens": toks(16 * (1 + i % 4))} for i in range(12)}))
    # records without tokens have section 3's points
    members = {"t%d" % i: {"addr": "127.0.0.1:%d" % (13000 + i), "tokens": toks(16)}
               for i in range(4)}
    members["bare"] = "127.0.0.1:13100"
    members["plain"] = {"addr": "127.0.0.1:13101", "weight": 2}
    sets.append(("mixed", 16, members))
    # one token claimed by two nodes: the lower id keeps it; the edges
    shared = str(2**63)
    sets.append(("claimed-twice", 200, {
        "a": {"addr": "127.0.0.1:1", "tokens": [shared, "0"]},
        "b": {"addr": "127.0.0.1:2", "tokens": [str(2**64 - 1), shared]},
        "a0": {"addr": "127.0.0.1:3", "tokens": [shared, str(2**62)]},
    }))
    sets.append(("one-node", 200, {"solo": {"addr": "127.0.0.1:11211",
                                            "tokens": ["12345"]}}))
    # a draining node that handed tokens to heirs of lower and higher ids:
    # reads stay with it, writes go to the heirs; one token kept
    left = toks(6)
    sets.append(("handed-over", 16, {
        "m": {"addr": "127.0.0.1:14000", "state": "draining", "tokens": left},
        "a": {"addr": "127.0.0.1:14001", "tokens": toks(8) + left[0:2]},
        "z": {"addr": "127.0.0.1:14002", "tokens": toks(8) + left[2:5]},
        "k": {"addr": "127.0.0.1:14003", "state": "draining", "tokens": toks(4) + left[5:6]},
    }))
    return sets


def maglev_sets():
    """The Maglev node sets: (name, maglev_size, members)."""
    sets = []
    sets.append(("ten-equal", 65537,
                 {"node-%d" % i: "127.0.0.1:%d" % (11211 + i) for i in range(10)}))
    weights = [0.5, 1, 1.5, 2, 0.25, 3, 1, 1, 0.75, 1.25, 0.001, 2.5]
    zones = ["z-a", "z-b", "z-c", ""]
    sets.append(("weighted-zones", 1009, {
        "cache-%02d" % i: {"addr": "127.0.0.1:%d" % (12000 + i), "weight": w,
                           "zone": zones[i % 4]} for i, w in enumerate(weights)}))
    states = ["active", "active", "warming", "active", "draining", "active",
              "warming", "draining"]
    sets.append(("states", 251, {
        "s%d" % i: {"addr": "127.0.0.1:%d" % (13000 + i),
                    "zone": "zone-%d" % (i % 3), "state": st}
        for i, st in enumerate(states)}))
    sets.append(("prefix-ids", 101, {
        "a": "127.0.0.1:1", "a0": "127.0.0.1:2", "ab": "127.0.0.1:3",
        "a#1": "127.0.0.1:4", "A": " 127.0.0.1:5 ", "~x:y": "127.0.0.1:6",
    }))
    sets.append(("all-draining", 101, {
        "d%d" % i: {"addr": "127.0.0.1:%d" % (14100 + i), "state": "draining"}
        for i in range(3)}))
    sets.append(("one-node", 65537, {"solo": "127.0.0.1:11211"}))
    # weights at the ends of the doubles: their plain sum would overflow
    sets.append(("extreme-weights", 1009, {
        "e-huge": {"addr": "127.0.0.1:1", "weight": 9e307},
        "e-huge2": {"addr": "127.0.0.1:2", "weight": 1e308},
        "e-one": {"addr": "127.0.0.1:3", "weight": 1},
        "e-tiny": {"addr": "127.0.0.1:4", "weight": 5e-324},
    }))
    # more nodes than slots: some own none
    sets.append(("crowded", 101, {
        "c%03d" % i: {"addr": "127.0.0.1:%d" % (16000 + i), "weight": 1 + i % 3}
        for i in range(150)}))
    return sets


def node_sets():
    """The node sets of the vectors: (name, vnodes_per_weight, members)."""
    sets = []
    sets.append(("ten-equal", 200,
                 {"node-%d" % i: "127.0.0.1:%d" % (11211 + i) for i in range(10)}))

    weights = [0.5, 1, 1.5, 2, 0.25, 3, 1, 1, 0.75, 1.25, 0.001, 2.5]
    zones = ["z-a", "z-b", "z-c", ""]
    members = {}
    for i, w in enumerate(weights):
        members["cache-%02d" % i] = {"addr": "127.0.0.1:%d" % (12000 + i),
                                     "weight": w, "zone": zones[i % 4]}
    sets.append(("weighted-zones", 100, members))

    members = {}
    states = ["active", "active", "warming", "active", "draining", "active",
              "warming", "draining"]
    for i, st in enumerate(states):
        members["s%d" % i] = {"addr": "127.0.0.1:%d" % (13000 + i),
                              "zone": "zone-%d" % (i % 3), "state": st}
    sets.append(("states", 200, members))

    # vnodes_per_weight 1: rounding is visible (2.5 -> 3, 1.5 -> 2, 0.4 -> 1)
    sets.append(("rounding", 1, {
        "r-a": {"addr": "127.0.0.1:1", "weight": 2.5},
        "r-b": {"addr": "127.0.0.1:2", "weight": 1.5},
        "r-c": {"addr": "127.0.0.1:3", "weight": 0.4},
        "r-d": {"addr": "127.0.0.1:4", "weight": 0.5},
        "r-e": {"addr": "127.0.0.1:5", "weight": 7.49},
    }))

    # ids that are prefixes of each other and ids holding '#'
    sets.append(("prefix-ids", 50, {
        "a": "127.0.0.1:1", "a0": "127.0.0.1:2", "ab": "127.0.0.1:3",
        "a#1": "127.0.0.1:4", "A": " 127.0.0.1:5 ", "~x:y": "127.0.0.1:6",
    }))

    sets.append(("all-warming", 200, {
        "w%d" % i: {"addr": "127.0.0.1:%d" % (14000 + i), "state": "warming"}
        for i in range(4)}))

    sets.append(("all-draining", 200, {
        "d%d" % i: {"addr": "127.0.0.1:%d" % (14100 + i), "state": "draining"}
        for i in range(3)}))

    sets.append(("one-node", 200, {"solo": "127.0.0.1:11211"}))

    # two zones and the empty zone; fewer zones than replicas
    members = {}
    for i in range(9):
        members["m%d" % i] = {"addr": "127.0.0.1:%d" % (15000 + i),
                              "zone": ["east", "west", ""][i % 3] if i < 6 else "east",
                              "weight": 1 + (i % 2)}
    sets.append(("empty-zone", 64, members))
    return sets


def keys(rng):
    out = ["key-%d" % i for i in range(KEYS_PER_SET // 2)]
    out += ["", "clé-🙂", "x" * 300]
    while len(out) < KEYS_PER_SET:
        n = rng.randint(1, 40)
        out.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789:/_-é")
                           for _ in range(n)))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "vectors", "placement.json")
    rng = random.Random(20240601)
    doc = {
        "about": "placement contract vectors, see docs/placement.md; "
                 "generated by tests/tools/gen_vectors.py, do not edit",
        "replicas": REPLICAS,
        "hashes": [],
        "sets": [],
    }
    for s in ["", "a", "key-0", "node-0#0", "node-0#199", "a#1#0", "clé"]:
        doc["hashes"].append({"input": s, "hash": "%016x" % h64(s.encode())})

    for name, vpw, members in node_sets():
        doc["sets"].append(entry_of(Ring(members, vpw), name,
                                    {"vnodes_per_weight": vpw}, members, rng))

    write(path, doc, ("name", "vnodes_per_weight", "members", "digest",
                      "point_count", "vnodes", "share"))

    rng = random.Random(20261201)
    doc = {
        "about": "maglev placement vectors, see docs/placement.md section 14; "
                 "generated by tests/tools/gen_vectors.py, do not edit",
        "replicas": REPLICAS,
        "sets": [],
    }
    for name, m, members in maglev_sets():
        doc["sets"].append(entry_of(MaglevRing(members, m), name,
                                    {"maglev_size": m}, members, rng))
    write(os.path.join(os.path.dirname(path), "maglev.json"), doc,
          ("name", "maglev_size", "members", "digest", "point_count", "vnodes",
           "share"))

    rng = random.Random(20261202)
    doc = {
        "about": "rendezvous placement vectors, see docs/placement.md section 15; "
                 "generated by tests/tools/gen_vectors.py, do not edit",
        "replicas": REPLICAS,
        "scores": rendezvous_scores(rng),
        "sets": [],
    }
    for name, members in rendezvous_sets():
        doc["sets"].append(entry_of(RendezvousRing(members), name, {}, members,
                                    rng))
    write(os.path.join(os.path.dirname(path), "rendezvous.json"), doc,
          ("name", "members", "digest", "point_count", "vnodes", "share"))

    rng = random.Random(20261202)
    doc = {
        "about": "tokens placement vectors, see docs/placement.md section 16; "
                 "generated by tests/tools/gen_vectors.py, do not edit",
        "replicas": REPLICAS,
        "sets": [],
    }
    for name, vpw, members in tokens_sets(rng):
        doc["sets"].append(entry_of(TokensRing(members, vpw), name,
                                    {"vnodes_per_weight": vpw}, members, rng))
    write(os.path.join(os.path.dirname(path), "tokens.json"), doc,
          ("name", "vnodes_per_weight", "members", "digest", "point_count",
           "vnodes", "share"))


def entry_of(ring, name, options, members, rng):
    entry = {"name": name}
    entry.update(options)
    entry.update({
        "members": members,
        "digest": "%016x" % ring.digest(),
        "point_count": len(ring.points),
        "vnodes": {nid: ring.vnodes[nid] for nid in ring.ids},
        "share": {v: {nid: ring.share(v, nid) for nid in ring.ids}
                  for v in ("write", "read")},
        "keys": [],
    })
    for key in keys(rng):
        kb = key.encode()
        entry["keys"].append([key, ring.owner("write", kb),
                              ring.owner("read", kb),
                              ring.preflist("write", kb, REPLICAS),
                              ring.preflist("read", kb, REPLICAS)])
    return entry


def write(path, doc, fields):
    # one key entry per line keeps the file readable and diffs small
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for field in [k for k in ("about", "replicas", "hashes", "scores")
                      if k in doc]:
            f.write("%s: %s,\n" % (json.dumps(field),
                                   json.dumps(doc[field], ensure_ascii=False)))
        f.write('"sets": [\n')
        for n, entry in enumerate(doc["sets"]):
            f.write("{\n")
            for field in fields:
                f.write("%s: %s,\n" % (json.dumps(field),
                                       json.dumps(entry[field], ensure_ascii=False)))
            f.write('"keys": [\n')
            lines = [json.dumps(k, ensure_ascii=False) for k in entry["keys"]]
            f.write(",\n".join(lines))
            f.write("\n]\n}%s\n" % ("," if n + 1 < len(doc["sets"]) else ""))
        f.write("]\n}\n")


if __name__ == "__main__":
    main()
