# SPDX-License-Identifier: MIT
"""hashring: a consistent-hash ring of cluster nodes, kept in sync with etcd.

The package embeds libhashring (the C library): a Client follows the node
records under an etcd prefix and answers lookups from the newest ring
without blocking; a Registrar announces a node under a lease; a Ring is
a ring built offline from members.  docs/python.md is the guide.
"""
import atexit as _atexit
import logging as _logging
import os as _os

from ._hashring import (
    METRICS_CONTENT_TYPE,
    Ack,
    Acks,
    Arc,
    ArcTotal,
    AuthError,
    ClosedError,
    Client,
    CompactedError,
    ConflictError,
    ConnectError,
    Diff,
    DuplicateError,
    EmptyRingError,
    Error,
    EtcdError,
    ExistsError,
    FileError,
    InvalidArgumentError,
    LimitError,
    Node,
    NoMemoryError,
    NotFoundError,
    Owner,
    ParseError,
    PermissionDeniedError,
    Registrar,
    Ring,
    State,
    Status,
    TimeoutError,
    TLSError,
    __version__,
    acks,
    hash_key,
    libhashring_version,
    update_node,
    wait_acks,
)
from ._hashring import _close_all, _forget_all

__all__ = [
    "METRICS_CONTENT_TYPE", "Ack", "Acks", "Arc", "ArcTotal", "AsyncClient", "AsyncRegistrar",
    "AuthError", "ClosedError", "Client", "CompactedError", "ConflictError", "ConnectError",
    "Diff", "DuplicateError", "EmptyRingError", "Error", "EtcdError", "ExistsError", "FileError",
    "InvalidArgumentError", "LimitError", "Node", "NoMemoryError", "NotFoundError", "Owner",
    "ParseError", "PermissionDeniedError", "Registrar", "RegistrarEvent", "Ring", "RingChange",
    "State", "Status",
    "TimeoutError", "TLSError", "acks", "hash_key", "libhashring_version", "log_to",
    "update_node", "wait_acks",
]

# The asyncio classes (hashring/_aio.py), imported on first use: a program
# without asyncio does not pay for importing it.
_ASYNC_NAMES = ("AsyncClient", "AsyncRegistrar", "RegistrarEvent", "RingChange")


def __getattr__(name):
    if name in _ASYNC_NAMES:
        from . import _aio
        return getattr(_aio, name)
    raise AttributeError("module 'hashring' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_ASYNC_NAMES))


# Clients and registrars left open are closed at exit, while their
# callbacks' thread can still finish: a registrar's node then leaves at
# once rather than when its lease expires.
_atexit.register(_close_all)
# A child of fork() has none of the library's threads: the clients and
# registrars it inherits are closed there (their methods raise
# ClosedError); it opens its own.
_os.register_at_fork(after_in_child=_forget_all)

_LEVELS = {
    "error": _logging.ERROR,
    "warn": _logging.WARNING,
    "info": _logging.INFO,
    "debug": _logging.DEBUG,
}


def log_to(logger):
    """A `log=` callable that passes the library's lines to a logging.Logger.

    Each line is logfmt ("level=warn event=stale ..."), logged at its level.
    """
    def log(level, line):
        logger.log(_LEVELS.get(level, _logging.INFO), "%s", line)

    return log


# Where a Client's or a Registrar's lines go without log=: the logger
# "hashring", so that the application's logging configuration applies.
_default_log = log_to(_logging.getLogger("hashring"))
