# SPDX-License-Identifier: MIT
"""No reference leaks: after a million lookups and a thousand ring changes
(a registrar's updates, followed by a client with a callback), the
interpreter's objects and allocated blocks and the process's RSS are
where they were.  The figures are printed (pytest -s) for docs/python.md."""
import gc
import os
import sys

import hashring
from conftest import wait_for

LOOKUPS = 1_000_000
CHANGES = 1_000


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def measure():
    gc.collect()
    return len(gc.get_objects()), sys.getallocatedblocks(), rss_kib()


def lookups(client, ring, n):
    keys = ["user:%d" % i for i in range(10_000)]
    bkeys = [k.encode() for k in keys]
    done = 0
    while done < n:
        for k in keys:
            client.lookup(k)
        for k in bkeys[:5000]:
            ring.lookup(k)
        client.lookup_many(keys)
        ring.lookup_many(bkeys[:5000])
        for k in keys[:200]:
            client.replicas(k, 3)
        client.nodes()
        client.status()
        done += 30_000
    return done


def test_no_leaks(etcd, prefix, sanitized):
    n_lookups = LOOKUPS // 10 if sanitized else LOOKUPS
    n_changes = CHANGES // 10 if sanitized else CHANGES
    regs = [hashring.Registrar(etcd.url, prefix, id="n%02d" % i, addr="127.0.0.%d:1" % i,
                               state="active", log_level="warn") for i in range(100)]
    seen = []
    try:
        with hashring.Client(etcd.url, prefix, log_level="warn") as client:
            client.on_change(lambda old, new: seen.append(new.revision) if len(seen) < 5 else None)
            wait_for(lambda: len(client.nodes()) == 100, what="every node")

            def changes(n):
                for i in range(n):
                    regs[0].update(weight=1 + i % 2)
                    if i % 10 == 0:
                        client.lookup_many(["k%d" % j for j in range(100)])
                wait_for(lambda: client.ring().find("n00").weight == 1 + (n - 1) % 2,
                         what="the last change")

            # Warm-up: caches, interned objects, and the allocator's arenas
            # of the library's threads, which grow over the first few
            # hundred rings and then stay.
            lookups(client, client.ring(), 100_000)
            changes(n_changes // 3)
            lookups(client, client.ring(), 30_000)  # the answers' objects of this ring
            before = measure()
            done = lookups(client, client.ring(), n_lookups)
            after_lookups = measure()
            changes(n_changes // 2)
            lookups(client, client.ring(), 30_000)
            half_changes = measure()
            changes(n_changes - n_changes // 2)
            lookups(client, client.ring(), 30_000)
            after_changes = measure()
    finally:
        for r in regs:
            r.close()
    print("\nleaks: objects, blocks, RSS KiB: before %s, after %d lookups %s, "
          "after %d ring changes %s, %d %s" % (before, done, after_lookups, n_changes // 2,
                                               half_changes, n_changes, after_changes))
    for label, m in (("lookups", after_lookups), ("ring changes", after_changes)):
        assert m[0] - before[0] < 500, (label, "objects", before, m)
        assert m[1] - before[1] < 2000, (label, "blocks", before, m)
        if not sanitized:
            assert m[2] - before[2] < 8 * 1024, (label, "RSS", before, m)
    # A leak grows with the work: the second half of the changes adds
    # nothing the first half did not.
    assert after_changes[1] - half_changes[1] < 500
    if not sanitized:
        assert after_changes[2] - half_changes[2] < 2048
