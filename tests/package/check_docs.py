#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What README.md and docs/*.md show, checked.

    check_docs.py SOURCE_DIR LIBHASHRING CC HASHRING_CLI

- Every C block (a fence whose info string is `c`) compiles with
  -std=c11 -Wall -Wextra -Werror against SOURCE_DIR's headers and links
  with LIBHASHRING (the build tree's libhashring.so).  A block is a
  complete program unless the line before its fence is one of:

    <!-- c: fragment -->       statements: compiled inside a function,
                               after the usual headers and the
                               declarations blocks before it in the file,
                               with `etcd`, `client`, `me`, `ring`, `err`,
                               `key` and `key_len` declared
    <!-- c: declarations -->   file-scope code: compiled, not linked
    <!-- c: examples/F.c -->   a program that is examples/F.c verbatim
                               (less its license line)

- The README's programs run against a real etcd on loopback
  (python/tests/etcd_server.py) and print the owners `hashring lookup`
  gives for the keys they are given.
- Every relative link (and image) of those files points to a file that
  exists, and its #anchor to a heading of that file.
- docs/embedding.md names every field of the answer of hr_client_lookup()
  (struct hr_owner, include/hashring/client.h), each as `field`.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(```|~~~)\s*(\S*)")
MARKER = re.compile(r"^<!--\s*c:\s*(.+?)\s*-->$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
KEYS = ["user:%d" % i for i in range(20)]
PREFIX = "/hashring/nodes/"
SPDX = "/* SPDX-License-Identifier: MIT */\n"

# What a fragment may take for granted.
PRELUDE = """#define _POSIX_C_SOURCE 200809L
#include <hashring.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
"""
CONTEXT = """
hr_etcd_config etcd;
hr_client *client;
hr_registrar *me;
hr_ring *ring;
hr_error err;
const char *key = "user:42";
size_t key_len = 7;
"""


class Fail(Exception):
    pass


def blocks(text):
    """(line number, info string, marker or None, body) of each fenced block."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = MARKER.match(lines[prev].strip()) if prev >= 0 else None
        out.append((start + 1, info, marker.group(1) if marker else None,
                    "\n".join(lines[start + 1:j]) + "\n"))
        i = j + 1
    return out


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    inside = False
    for line in text.split("\n"):
        if FENCE.match(line):
            inside = not inside
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not inside:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else "%s-%d" % (base, n))
    return out


class Docs:
    def __init__(self, src, lib, cc, cli, work):
        self.src, self.lib, self.cc, self.cli, self.work = src, lib, cc, cli, work
        self.files = [os.path.join(src, "README.md")] + sorted(
            glob.glob(os.path.join(src, "docs", "*.md")))
        self.count = 0
        self.etcd = None

    def rel(self, path):
        return os.path.relpath(path, self.src)

    def compile(self, where, source, link, extra=()):
        self.count += 1
        path = os.path.join(self.work, "block%d.c" % self.count)
        with open(path, "w") as f:
            f.write(source)
        out = path[:-2]
        argv = [self.cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *extra,
                "-I" + os.path.join(self.src, "include"), path]
        if link:
            libdir = os.path.dirname(self.lib)
            argv += ["-o", out, "-L" + libdir, "-lhashring", "-pthread",
                     "-Wl,-rpath," + libdir]
        else:
            argv += ["-c", "-o", out + ".o"]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            numbered = "\n".join("%4d  %s" % (n + 1, line)
                                 for n, line in enumerate(source.split("\n")))
            raise Fail("%s: the C block does not compile:\n%s\n%s" % (where, p.stdout, numbered))
        return out

    def check_c_blocks(self):
        """Compiles every C block; returns the README's programs."""
        readme_programs = []
        for path in self.files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            declarations = []
            for line, info, marker, body in blocks(text):
                where = "%s:%d" % (self.rel(path), line)
                if info.lower() != "c":
                    if marker:
                        raise Fail("%s: a C marker before a %r block" % (where, info))
                    continue
                if marker == "fragment":
                    # Wrapping leaves the declarations before it unused.
                    self.compile(where, PRELUDE + "".join(declarations) + CONTEXT +
                                 "\nint hr_doc_fragment(void);\nint hr_doc_fragment(void)\n{\n" +
                                 body + "\treturn 0;\n}\n", False, ["-Wno-unused-function"])
                elif marker == "declarations":
                    self.compile(where, PRELUDE + body, False, ["-Wno-unused-function"])
                    declarations.append(body)
                elif marker is None or marker.startswith("examples/"):
                    if marker:
                        with open(os.path.join(self.src, marker), encoding="utf-8") as f:
                            if f.read().removeprefix(SPDX) != body:
                                raise Fail("%s: the block is not %s as it stands" % (where, marker))
                    exe = self.compile(where, body, True)
                    if path.endswith("README.md"):
                        readme_programs.append((where, exe))
                else:
                    raise Fail("%s: unknown C block marker %r" % (where, marker))
        return readme_programs

    def check_owner_fields(self):
        """Returns the fields of hr_owner, each of which embedding.md names."""
        with open(os.path.join(self.src, "include", "hashring", "client.h"),
                  encoding="utf-8") as f:
            m = re.search(r"typedef struct hr_owner \{(.*?)\} hr_owner;", f.read(), re.S)
        if not m:
            raise Fail("include/hashring/client.h: no struct hr_owner")
        body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
        fields = re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body)
        with open(os.path.join(self.src, "docs", "embedding.md"), encoding="utf-8") as f:
            guide = f.read()
        missing = [name for name in fields if "`%s`" % name not in guide]
        if not fields or missing:
            raise Fail("docs/embedding.md does not name hr_owner's %s"
                       % ", ".join(missing or ["fields"]))
        return fields

    def check_links(self):
        problems = []
        for path in self.files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            inside = False
            for n, line in enumerate(text.split("\n"), 1):
                if FENCE.match(line):
                    inside = not inside
                    continue
                if inside:
                    continue
                for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                    if re.match(r"^[a-z]+:", target):
                        continue
                    file, _, anchor = target.partition("#")
                    dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) \
                        if file else path
                    where = "%s:%d: %s" % (self.rel(path), n, target)
                    if not os.path.exists(dest):
                        problems.append(where + ": no such file")
                    elif anchor and dest.endswith(".md"):
                        with open(dest, encoding="utf-8") as f:
                            if anchor not in anchors(f.read()):
                                problems.append(where + ": no such heading")
                    elif anchor:
                        problems.append(where + ": an anchor into a file that is not markdown")
        if problems:
            raise Fail("broken links:\n  " + "\n  ".join(problems))

    def run_readme_programs(self, programs):
        if not programs:
            raise Fail("README.md has no C program")
        sys.path.insert(0, os.path.join(self.src, "python", "tests"))
        import etcd_server
        self.etcd = etcd_server.Etcd().start()
        # A warming node: some keys' write and read owners differ.
        for i, state in enumerate(("active", "active", "active", "warming")):
            self.etcd.put(PREFIX + "cache-%c" % "abcd"[i],
                          etcd_server.record("127.0.0.%d:11211" % (i + 1), state=state))
        p = subprocess.run([self.cli, "lookup", "--endpoints", self.etcd.url, "--json"] + KEYS,
                           stdout=subprocess.PIPE, text=True, timeout=60, check=True)
        want = ""
        for row in map(json.loads, p.stdout.splitlines()):
            want += "\t".join((row["key"], row["node"], row["addr"], row["read_node"],
                               row["read_addr"])) + "\n"
        if "cache-d\t127.0.0.4:11211\tcache-" not in want:
            raise Fail("no key of %d moves its writes to the warming node" % len(KEYS))
        env = dict(os.environ, HASHRING_ENDPOINTS=self.etcd.url)
        env.pop("HASHRING_PREFIX", None)
        for where, exe in programs:
            p = subprocess.run([exe] + KEYS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=60, env=env)
            if p.returncode != 0 or p.stdout != want:
                raise Fail("%s: the program exited %d and printed\n%s%s\nnot\n%s" %
                           (where, p.returncode, p.stdout, p.stderr, want))


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: check_docs.py SOURCE_DIR LIBHASHRING CC HASHRING_CLI")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="hashring-docs.") as work:
        docs = Docs(*sys.argv[1:], work)
        try:
            programs = docs.check_c_blocks()
            print("ok: %d C blocks compile" % docs.count)
            docs.run_readme_programs(programs)
            print("ok: the README's program runs against etcd")
        except Fail as e:
            print("FAIL: %s" % e)
            failures += 1
        finally:
            if docs.etcd:
                docs.etcd.stop()
        try:
            fields = docs.check_owner_fields()
            print("ok: docs/embedding.md names hr_owner's %d fields" % len(fields))
        except Fail as e:
            print("FAIL: %s" % e)
            failures += 1
        try:
            docs.check_links()
            print("ok: the relative links of %d files" % len(docs.files))
        except Fail as e:
            print("FAIL: %s" % e)
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
