# SPDX-License-Identifier: MIT
"""A pre-forking WSGI service whose workers route by the host's ring.

One `hashring agent` per host watches etcd; this app attaches to its
directory once, in gunicorn's master (--preload), and every worker forked
from it looks up in the same mapped ring: no watcher, no etcd connection
and no copy of the ring per worker (docs/agent.md).

    hashring agent --dir /run/hashring &
    HASHRING_AGENT_DIR=/run/hashring \
        gunicorn --preload --workers 8 --bind 127.0.0.1:8000 gunicorn_app:app

GET /route/KEY answers {"key", "node", "addr", "revision", "worker"}.
"""
import json
import os

import hashring

# Before the fork: the workers inherit the client, which follows each new
# ring the agent publishes at its next lookup.
client = hashring.Client(agent_dir=os.environ.get("HASHRING_AGENT_DIR", "/run/hashring"))


def app(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if not path.startswith("/route/") or len(path) == len("/route/"):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"GET /route/KEY\n"]
    key = path[len("/route/"):]
    try:
        owner = client.lookup(key)
    except hashring.EmptyRingError:
        start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
        return [b"no node in the ring\n"]
    body = json.dumps({"key": key, "node": owner.node, "addr": owner.addr,
                       "revision": owner.revision, "worker": os.getpid()}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body + b"\n"]
