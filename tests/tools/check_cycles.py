#!/usr/bin/python3
"""check_cycles.py - no two library files depend on each other, and no
file reaches up to a higher layer.

Reads the symbol tables of the static libraries' objects (`nm`): object A
depends on object B when A uses a function or a table that B defines.  The
dependencies must form no cycle, so that every file of src/ can be read,
tested and replaced knowing only the files below it.  Prints the cycles
(with one path through each) and exits 1, or prints the order from the
files that depend on nothing up and exits 0.

With --src, every .c file of the library's folders must be among the
objects (so that the check covers them all), and every file of a layer
may include only headers of its own layer and of those below it
(LAYERS; the build enforces the same with each layer's include path,
docs/architecture.md draws it): a file that reaches up is named with
the header and the layer it belongs to.

    tests/tools/check_cycles.py [--src SRC_DIR] LIBRARY.a...
"""
import os
import re
import subprocess
import sys

# The folders of src/ that make the libraries, and the layers each may use
# (besides itself); the rebalancer uses the public API only.
LAYERS = {
    "base": [],
    "ring": ["base"],
    "members": ["ring", "base"],
    "etcd": ["base"],
    "client": ["members", "etcd", "ring", "base"],
    "cluster": ["client", "members", "etcd", "ring", "base"],
    "metrics": ["client", "members", "etcd", "ring", "base"],
    "rebalance": [],
}


def dependencies(libraries):
    out = subprocess.run(["nm", "-A"] + libraries, check=True,
                         capture_output=True, text=True).stdout
    defined, used = {}, {}
    for line in out.splitlines():
        # "lib.a:obj.c.o:<address> T name" or "lib.a:obj.c.o:<blanks> U name"
        head, _, rest = line.rpartition(".o:")
        if not head:
            continue
        obj = head.rsplit(":", 1)[-1] + ".o"
        fields = rest.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        used.setdefault(obj, set())
        if kind == "U":
            used[obj].add(name)
        elif kind.isupper():
            defined[name] = obj
    return {obj: {defined[s] for s in names if s in defined and defined[s] != obj}
            for obj, names in used.items()}


def cycles(graph):
    """Strongly connected components of more than one object (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def path_in(graph, comp):
    """One cycle through the component's first object."""
    start, members = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while prev[path[-1]]:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def layers(graph):
    """Objects by the length of their longest chain of dependencies."""
    depth = {}

    def d(v):
        if v not in depth:
            depth[v] = 1 + max((d(w) for w in graph[v]), default=-1)
        return depth[v]

    for v in graph:
        d(v)
    return depth


def layer_files(src):
    """{layer: [path, ...]} of the .c and .h files under each layer."""
    files = {}
    for layer in LAYERS:
        for root, _, names in os.walk(os.path.join(src, layer)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    files.setdefault(layer, []).append(os.path.join(root, name))
    return files


def layer_problems(src, objects):
    """Files the objects miss, and includes that reach up a layer."""
    files = layer_files(src)
    owner = {os.path.basename(f): layer
             for layer, fs in files.items() for f in fs if f.endswith(".h")}
    problems = []
    for layer, fs in sorted(files.items()):
        for path in fs:
            rel = os.path.relpath(path, src)
            name = os.path.basename(path)
            if name.endswith(".c") and name + ".o" not in objects:
                problems.append("%s: not in the libraries given" % rel)
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1) not in owner:
                        continue
                    to = owner[m.group(1)]
                    if to != layer and to not in LAYERS[layer]:
                        problems.append(
                            "%s:%d: includes %s of the %s layer, which the %s"
                            " layer may not use (it may use: %s)"
                            % (rel, number, m.group(1), to, layer,
                               ", ".join(LAYERS[layer]) or "the public API only"))
    return problems


def main():
    args = sys.argv[1:]
    src = None
    if args[:1] == ["--src"] and len(args) > 1:
        src, args = args[1], args[2:]
    if not args:
        sys.exit("usage: check_cycles.py [--src SRC_DIR] LIBRARY.a...")
    graph = dependencies(args)
    found = cycles(graph)
    for comp in found:
        print("cycle: " + " -> ".join(path_in(graph, comp)))
    problems = layer_problems(src, graph) if src else []
    for line in problems:
        print("layers: " + line)
    if found or problems:
        sys.exit(1)
    depth = layers(graph)
    for level in range(max(depth.values()) + 1):
        names = sorted(o[:-4] for o, k in depth.items() if k == level)
        print("%d: %s" % (level, " ".join(names)))
    print("no cycle among %d objects" % len(graph))
    if src:
        print("no file of src/ reaches up a layer")


if __name__ == "__main__":
    main()
