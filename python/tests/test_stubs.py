# SPDX-License-Identifier: MIT
"""The type stubs (hashring/__init__.pyi) cover the package: every public
name, and every public method and attribute of its classes, has a stub,
and every stub names something that exists."""
import ast
import os

import hashring

# Names a stub may add for the annotations alone.
STUB_ONLY = {"Key", "View", "Placement", "LogLevel", "StrPath", "LogFn", "MemberDict"}
# Dunders that are part of an API (the rest are the object model's).
API_DUNDERS = {"__enter__", "__exit__", "__len__", "__contains__", "__iter__", "__new__"}


def stubs():
    path = os.path.join(os.path.dirname(hashring.__file__), "__init__.pyi")
    tree = ast.parse(open(path).read())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            members[node.name] = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members[node.name].add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    members[node.name].add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members[node.name].update(t.id for t in item.targets)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names, members


def public_members(cls):
    """What the class itself defines (not its builtin bases)."""
    own = set()
    for klass in cls.__mro__:
        if klass.__module__ != "hashring":
            continue
        own.update(n for n in vars(klass) if not n.startswith("_") or n in API_DUNDERS)
    return own


def test_every_public_name_has_a_stub():
    names, _ = stubs()
    missing = set(hashring.__all__) - names
    assert not missing, "no stub for %s" % sorted(missing)
    assert "__version__" in names


def test_every_stub_exists():
    names, _ = stubs()
    stale = {n for n in names - STUB_ONLY if not hasattr(hashring, n)}
    assert not stale, "stubs of nothing: %s" % sorted(stale)


def test_every_member_has_a_stub():
    _, members = stubs()
    for name in hashring.__all__:
        obj = getattr(hashring, name)
        if not isinstance(obj, type):
            continue
        missing = public_members(obj) - members[name] - {"__new__"}
        if issubclass(obj, hashring.State):
            missing -= {m.name for m in obj}
        assert not missing, "%s: no stub for %s" % (name, sorted(missing))
        stale = {m for m in members[name] - API_DUNDERS
                 if not hasattr(obj, m) and m not in ("code", "message")}
        assert not stale, "%s: stubs of nothing: %s" % (name, sorted(stale))


def test_errors_carry_code_and_message():
    _, members = stubs()
    assert members["Error"] == {"code", "message"}


def test_stubs_ship_with_the_package():
    here = os.path.dirname(hashring.__file__)
    assert os.path.exists(os.path.join(here, "py.typed"))


def test_docstrings():
    for name in hashring.__all__:
        obj = getattr(hashring, name)
        if callable(obj):
            assert obj.__doc__, name
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for m in public_members(obj) - API_DUNDERS:
                assert getattr(obj, m).__doc__, "%s.%s" % (name, m)
