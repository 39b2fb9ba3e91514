#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An aiohttp service that routes by the ring (docs/python.md, "asyncio").

GET /route/{key} answers which node owns `key` (write and read owners,
from client.lookup(), which never blocks); GET /healthz answers "ok" once
the ring is synced.  A task logs every ring change from
`async for change in client.changes()`.  With NODE_ID and NODE_ADDR set
the service also registers itself (warming, active once its ring is
synced, draining for DRAIN_SECONDS on SIGTERM or SIGINT, then gone).

    HASHRING_ENDPOINTS=http://127.0.0.1:2379 HASHRING_PREFIX=/hashring/nodes/ \\
        PORT=8080 /usr/bin/python3 examples/aiohttp_service.py

Needs Debian's python3-aiohttp.
"""
import asyncio
import logging
import os
import signal

from aiohttp import web

import hashring

log = logging.getLogger("service")


async def log_changes(client):
    async for change in client.changes(diff=True):
        log.info("ring %d -> %d: %d nodes, %.1f%% of keys moved%s",
                 change.old.revision, change.new.revision, len(change.new),
                 100.0 * change.diff.moved,
                 " (%d changes folded in)" % change.missed if change.missed else "")


def routes(client):
    async def route(request):
        key = request.match_info["key"]
        try:
            owner = client.lookup(key)
        except hashring.EmptyRingError:
            return web.json_response({"key": key, "error": "no node"}, status=503)
        return web.json_response({"key": key, "node": owner.node, "addr": owner.addr,
                                  "read_node": owner.read_node, "read_addr": owner.read_addr,
                                  "revision": owner.revision})

    async def healthz(request):
        return web.Response(text="ok\n")

    return [web.get("/route/{key}", route), web.get("/healthz", healthz)]


async def main():
    endpoints = os.environ.get("HASHRING_ENDPOINTS", "http://127.0.0.1:2379").split(",")
    prefix = os.environ.get("HASHRING_PREFIX", "/hashring/nodes/")
    port = int(os.environ.get("PORT", "8080"))
    node_id, node_addr = os.environ.get("NODE_ID"), os.environ.get("NODE_ADDR")
    drain = float(os.environ.get("DRAIN_SECONDS", "5"))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async with hashring.AsyncClient(endpoints, prefix) as client:
        logger = asyncio.ensure_future(log_changes(client))
        app = web.Application()
        app.add_routes(routes(client))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        log.info("listening on 127.0.0.1:%d, ring %d: %d nodes", port, client.revision,
                 len(client.ring()))
        reg = None
        if node_id and node_addr:
            reg = await hashring.AsyncRegistrar(endpoints, prefix, id=node_id, addr=node_addr)
            await reg.set_state("active")
            log.info("registered %s active", node_id)
            lost = asyncio.ensure_future(reg.wait_lost())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({lost, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if lost.done() and lost.exception():
                log.error("registration lost: %s", lost.exception())
            lost.cancel()
            stopped.cancel()
        else:
            await stop.wait()
        if reg is not None:
            log.info("draining %s for %.1f s", node_id, drain)
            await reg.aclose(drain=drain)
        await runner.cleanup()
        await client.aclose()  # ends log_changes() with its `async for`
        await logger
    log.info("stopped")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    asyncio.run(main())
