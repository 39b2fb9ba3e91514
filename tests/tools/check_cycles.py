#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_cycles.py - no two library files depend on each other, and no
file reaches up to a higher layer.

Reads the symbol tables of the static libraries' objects (`nm`): object A
depends on object B when A uses a function or a table that B defines.  The
dependencies must form no cycle, so that every file of src/ can be read,
tested and replaced knowing only the files below it.  Prints the cycles
(with one path through each) and exits 1, or prints the order from the
files that depend on nothing up and exits 0.

With --src the same holds of names in every layer (NAME_LAYERS), which
no symbol table shows: a file depends on another when it uses a name that
the other's header defines (a macro, a type, a struct's tag or one of its
fields, an enum constant, an inline function, a declared function or
table), among the headers it includes, directly or through others.  A module is a .c file with its
header, or a header alone (path under src/ without the extension); the
modules, with the calls of the objects, must form no cycle either.  A
field name that several visible headers (or the public ones, or the file
itself) define says nothing: only names with one owner make an edge.

Also with --src, every .c file of the library's folders must be among the
objects (so that the check covers them all), and every file of a layer
may include only headers of its own layer and of those below it
(LAYERS; the build enforces the same with each layer's include path,
docs/architecture.md draws it): a file that reaches up is named with
the header and the layer it belongs to.  The tools (src/cli/) may include
public headers and the few internal interfaces of TOOL_INTERFACES only.

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
    "placement": ["base"],
    "ring": ["placement", "base"],
    "members": ["ring", "placement", "base"],
    "etcd": ["base"],
    "client": ["members", "etcd", "ring", "placement", "base"],
    "cluster": ["client", "members", "etcd", "ring", "placement", "base"],
    "metrics": ["client", "members", "etcd", "ring", "placement", "base"],
    "rebalance": [],
}

# The layers whose files must form no cycle by names either: all of them.
# The ring core was once a circle of files through each other's internals;
# elsewhere a header shared by a module's files does the same when one of
# its own files calls the others (rebalance_impl.h, watch_opts.h).
NAME_LAYERS = tuple(LAYERS)


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


# The tools of src/cli/ build on the public headers (include/) and on these
# internal interfaces only, each of which says so at its top
# (docs/architecture.md lists them): a tool reaching any other header of a
# layer would tie it to that layer's insides.
TOOLS = "cli"
TOOL_INTERFACES = {
    "clock.h": "base",          # hr__now_ms(): the library's one clock
    "escape.h": "base",         # control bytes shown as the library shows them
    "ring_inspect.h": "ring",   # the walk over a ring's points, its bytes
    "arc_sum.h": "ring",        # exact sums of arcs, as the shares are made
    "maglev.h": "placement",    # the table sizes Maglev takes
    "ack_record.h": "client",   # acknowledgement records and their prefixes
    "metrics_text.h": "metrics",  # the exposition's name and label rules
}


def tool_problems(src):
    """Includes of src/cli/ that are neither the tools' own, nor public,
    nor one of TOOL_INTERFACES; and interfaces that do not say they are."""
    files = layer_files(src)
    owner = {os.path.basename(f): layer
             for layer, fs in files.items() for f in fs if f.endswith(".h")}
    problems = []
    for name, layer in sorted(TOOL_INTERFACES.items()):
        path = os.path.join(src, layer, name)
        if owner.get(name) != layer or not os.path.exists(path):
            problems.append("%s/%s: a tools' interface that is not there" % (layer, name))
            continue
        with open(path, encoding="utf-8") as f:
            if "src/cli/" not in f.read(2000):
                problems.append("%s/%s: a tools' interface whose top comment does"
                                " not say src/cli/ may use it" % (layer, name))
    for root, _, names in os.walk(os.path.join(src, TOOLS)):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1) not in owner:
                        continue
                    if m.group(1) not in TOOL_INTERFACES:
                        problems.append(
                            "%s:%d: includes %s, private to the %s layer (the tools"
                            " may use: %s)" % (rel, number, m.group(1), owner[m.group(1)],
                                               ", ".join(sorted(TOOL_INTERFACES))))
    return problems


# ---- names --------------------------------------------------------------

KEYWORDS = set("""auto break case char const continue default do double else
enum extern float for goto if inline int long register restrict return
short signed sizeof static struct switch typedef union unsigned void
volatile while _Alignas _Alignof _Atomic _Bool _Generic _Noreturn
_Static_assert _Thread_local defined""".split())

TOKEN = re.compile(r"[A-Za-z_]\w*|->|[{}()\[\];,.*:=]")


def strip(text):
    """The text without comments, string and character literals (kept as
    empty quotes) and line continuations."""
    text = text.replace("\\\n", " ")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_code(text):
    """(preprocessor lines, the rest) of stripped text."""
    pre, code = [], []
    for line in text.splitlines():
        (pre if line.lstrip().startswith("#") else code).append(line)
    return pre, "\n".join(code)


def declarators(decl):
    """The names a declaration inside a struct declares."""
    toks = TOKEN.findall(decl)
    for i in range(len(toks) - 2):
        if toks[i] == "(" and toks[i + 1] == "*" and re.match(r"\w", toks[i + 2]):
            return [toks[i + 2]]
    names, depth, last = [], 0, None
    for t in toks + [","]:
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif depth == 0 and t in ",:":
            if last:
                names.append(last)
            last = None if t == "," else last and None
        elif depth == 0 and re.match(r"[A-Za-z_]", t) and t not in KEYWORDS:
            last = t
    return names


def struct_members(code):
    """Every field name of the structs and unions defined in `code`, nested
    ones included."""
    members = set()
    for m in re.finditer(r"\b(?:struct|union)\b[^;{}()]*\{", code):
        depth, start, i = 1, m.end(), m.end()
        while i < len(code) and depth:
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
            i += 1
        body, level, piece = code[start:i - 1], 0, []
        for c in body:
            if c == "{":
                level += 1
                piece = []
            elif c == "}":
                level -= 1
                piece = []
            elif c == ";" and level == 0:
                members.update(declarators("".join(piece)))
                piece = []
            elif level == 0:
                piece.append(c)
    return members


def defined_names(pre, code):
    """(names, tags, members) a header defines: macros, typedef names,
    enum constants, functions and tables declared at file scope; tags of
    structs, unions and enums with a body; fields."""
    names = {m.group(1) for line in pre
             for m in [re.match(r"\s*#\s*define\s+(\w+)", line)] if m}
    tags = set(re.findall(r"\b(?:struct|union|enum)\s+(\w+)\s*\{", code))
    for m in re.finditer(r"\benum\b[^;{}]*\{([^}]*)\}", code):
        names.update(re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)", m.group(1)))
    toks = TOKEN.findall(code)
    depth, stmt = 0, []
    for i, t in enumerate(toks):
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
        if depth:
            continue
        if t == "(" and i and re.match(r"[A-Za-z_]", toks[i - 1]):
            prev = toks[i - 2] if i > 1 else ";"
            if (toks[i - 1] not in KEYWORDS and not toks[i - 1].startswith("__")
                    and (re.match(r"\w", prev) or prev == "*")):
                names.add(toks[i - 1])
        if t == ";":
            if stmt and stmt[0] in ("typedef", "extern"):
                decl = [x for x in stmt if re.match(r"[A-Za-z_]", x)]
                flat = " ".join(stmt)
                fn = re.search(r"\(\s*\*\s*(\w+)\s*\)", flat)
                if fn:
                    names.add(fn.group(1))
                elif "(" not in flat and decl:
                    names.add(decl[-1])
            stmt = []
        elif t not in "{}":
            stmt.append(t)
    return names - KEYWORDS, tags, struct_members(code)


class Source:
    """One library file: what it includes, defines and uses."""

    def __init__(self, path, rel):
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        pre, code = split_code(strip(raw))
        self.rel = rel
        self.module = os.path.splitext(rel)[0]
        self.includes = re.findall(r'(?m)^\s*#\s*include\s+"([^"]+)"', raw)
        self.names, self.tags, self.members = defined_names(pre, code)
        # A .c file's own macros and static names hide a header's.
        self.own = self.names | self.tags
        body = "\n".join(l for l in pre if not re.match(r"\s*#\s*include", l)) + code
        toks = TOKEN.findall(body)
        self.used = set(toks)
        self.used_tags = {toks[i + 1] for i, t in enumerate(toks[:-1])
                          if t in ("struct", "union", "enum")}
        self.used_members = {toks[i + 1] for i, t in enumerate(toks[:-1])
                             if t in (".", "->") and re.match(r"[A-Za-z_]", toks[i + 1])}


def public_members(src):
    """Fields of the public headers' structs: too common to tell whose."""
    members = set()
    inc = os.path.join(os.path.dirname(os.path.abspath(src)), "include")
    for root, _, names in os.walk(inc):
        for name in names:
            if name.endswith(".h"):
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    members |= struct_members(split_code(strip(f.read()))[1])
    return members


def name_graph(src):
    """{module: {module: {names}}}: module A uses names module B's header
    defines, B among the headers A's files include (directly or not)."""
    files = {}
    for layer in NAME_LAYERS:
        for root, _, names in os.walk(os.path.join(src, layer)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    path = os.path.join(root, name)
                    rel = os.path.relpath(path, src)
                    files[rel] = Source(path, rel)
    headers = {os.path.basename(r): f for r, f in files.items() if r.endswith(".h")}
    public = public_members(src)

    def visible(f, seen):
        for inc in f.includes:
            h = headers.get(os.path.basename(inc))
            if h and h.rel not in seen:
                seen.add(h.rel)
                visible(h, seen)
        return seen

    graph = {}
    for f in files.values():
        edges = graph.setdefault(f.module, {})
        seen = [files[r] for r in sorted(visible(f, set())) if files[r].module != f.module]
        owners = {}
        for h in seen:
            for m in h.members:
                owners.setdefault(m, set()).add(h.module)
        own_members = f.members if f.rel.endswith(".c") else set()
        for h in seen:
            why = {n for n in (h.names & f.used) if n not in f.own}
            why |= {"struct " + t for t in h.tags & f.used_tags if t not in f.own}
            why |= {"->" + m for m in h.members & f.used_members
                    if owners[m] == {h.module} and m not in public and m not in own_members}
            if why:
                edges.setdefault(h.module, set()).update(why)
    return graph


def object_modules(graph, src):
    """The object graph as modules: an object's module is its source's."""
    where = {}
    for layer in NAME_LAYERS:
        for root, _, names in os.walk(os.path.join(src, layer)):
            for name in names:
                if name.endswith(".c"):
                    rel = os.path.relpath(os.path.join(root, name), src)
                    where[name + ".o"] = os.path.splitext(rel)[0]
    out = {}
    for obj, deps in graph.items():
        if obj not in where:
            continue
        edges = out.setdefault(where[obj], {})
        for d in deps:
            if d in where:
                edges.setdefault(where[d], set()).add("calls")
    return out


def merge(a, b):
    out = {}
    for g in (a, b):
        for v, edges in g.items():
            mine = out.setdefault(v, {})
            for w, why in edges.items():
                mine.setdefault(w, set()).update(why)
    return out


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
    problems = layer_problems(src, graph) + tool_problems(src) if src else []
    for line in problems:
        print("layers: " + line)
    modules = merge(name_graph(src), object_modules(graph, src)) if src else {}
    plain = {v: set(edges) - {v} for v, edges in modules.items()}
    named = cycles(plain)
    for comp in named:
        path = path_in(plain, comp)
        print("cycle of names: " + " -> ".join(path))
        if len(comp) > len(path) - 1:
            print("  (a knot of %d: %s)" % (len(comp), " ".join(comp)))
        for v, w in zip(path, path[1:]):
            why = sorted(modules[v][w])
            print("  %s -> %s: %s%s" % (v, w, ", ".join(why[:6]),
                                        " ..." if len(why) > 6 else ""))
    if found or problems or named:
        sys.exit(1)
    if src:
        depth = layers(plain)
        for level in range(max(depth.values()) + 1):
            names = sorted(m for m, k in depth.items() if k == level)
            print("%d: %s" % (level, " ".join(names)))
        print("no cycle among %d objects, nor among the %d modules by names"
              % (len(graph), len(plain)))
        print("no file of src/ reaches up a layer, and src/%s/ includes only"
              " public headers and %d internal interfaces" % (TOOLS, len(TOOL_INTERFACES)))
        return
    depth = layers(graph)
    for level in range(max(depth.values()) + 1):
        names = sorted(o[:-4] for o, k in depth.items() if k == level)
        print("%d: %s" % (level, " ".join(names)))
    print("no cycle among %d objects" % len(graph))


if __name__ == "__main__":
    main()
