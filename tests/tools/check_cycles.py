#!/usr/bin/python3
"""check_cycles.py - no two library files depend on each other.

Reads the symbol tables of a static library's objects (`nm`): object A
depends on object B when A uses a function or a table that B defines.  The
dependencies must form no cycle, so that every file of src/ can be read,
tested and replaced knowing only the files below it.  Prints the cycles
(with one path through each) and exits 1, or prints the order from the
files that depend on nothing up and exits 0.

    tests/tools/check_cycles.py build/libhashring.a
"""
import subprocess
import sys


def dependencies(library):
    out = subprocess.run(["nm", "-A", library], check=True,
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


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_cycles.py LIBRARY.a")
    graph = dependencies(sys.argv[1])
    found = cycles(graph)
    for comp in found:
        print("cycle: " + " -> ".join(path_in(graph, comp)))
    if found:
        sys.exit(1)
    depth = layers(graph)
    for level in range(max(depth.values()) + 1):
        names = sorted(o[:-4] for o, k in depth.items() if k == level)
        print("%d: %s" % (level, " ".join(names)))
    print("no cycle among %d objects" % len(graph))


if __name__ == "__main__":
    main()
