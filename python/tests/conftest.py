# SPDX-License-Identifier: MIT
"""Fixtures of the Python suite: a real etcd on loopback (etcd_server.py),
a fresh key prefix per test, the hashring command, and waits.

Run by ctest (python.pytest, with the build tree's package on PYTHONPATH
and HASHRING_CLI set; tests/run.sh runs it) or by hand:
    PYTHONPATH=build/python HASHRING_CLI=build/hashring \
        /usr/bin/python3 -m pytest python/tests
"""
import os
import re
import shutil
import time

import pytest

import etcd_server

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def wait_for(cond, timeout=10.0, what="the condition"):
    """Polls cond() until it is true; fails the test after `timeout` s."""
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.01)


@pytest.fixture(scope="session")
def etcd():
    server = etcd_server.Etcd().start()
    yield server
    server.stop()


@pytest.fixture
def prefix(request):
    """A prefix of this test's own: tests share the session's etcd."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:80]
    return "/hrpy/%s/nodes/" % name


@pytest.fixture
def ack_prefix(prefix):
    return prefix.replace("/nodes/", "/acks/")


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("HASHRING_CLI") or os.path.join(ROOT, "build", "hashring")
    if not os.access(path, os.X_OK):
        pytest.fail("the hashring command is needed: build it, or set HASHRING_CLI")
    return path


@pytest.fixture(scope="session")
def sanitized():
    """Under the ASan build (LD_PRELOAD of its runtime) loops are shorter."""
    return bool(os.environ.get("HASHRING_SANITIZED"))


def python_path():
    """The PYTHONPATH a child process needs to import the package tested."""
    import hashring
    return os.path.dirname(os.path.dirname(os.path.abspath(hashring.__file__)))


def which(name):
    return shutil.which(name)
