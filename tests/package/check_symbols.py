#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks what libhashring exports against what its public headers declare.

    check_symbols.py SYMBOLS_TXT LIBHASHRING_SO LIBHASHRING_A HEADER...

- Every function declared in the public headers carries HR_EXPORT.
- The dynamic symbols the shared library defines are exactly those
  functions: nothing internal (hr__*, static helpers) leaks out, and
  nothing declared is missing.
- They are exactly the functions SYMBOLS_TXT lists ("MAJOR.MINOR name",
  the release that added each): within a major version functions are only
  added, so one that left the header and the library together still
  fails, and none is listed as newer than the headers' version.
- Every global symbol of the static library is in the hr_ namespace, so a
  program linking it statically cannot clash with us.
"""
import re
import subprocess
import sys


def strip_comments_and_directives(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    return re.sub(r"^[ \t]*#[^\n]*", " ", text, flags=re.M)


def top_level_statements(text):
    """Splits C declarations on ';' outside braces; 'extern "C" {' is a
    wrapper, not a block, so it is removed first."""
    text = re.sub(r'extern\s+"C"\s*\{', " ", text)
    statements, depth, current = [], 0, []
    for ch in text:
        current.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
        elif ch == ";" and depth == 0:
            statements.append(" ".join("".join(current).split()))
            current = []
    return statements


def declared_functions(headers):
    """Returns {name: has HR_EXPORT} for every function declared at file
    scope (typedefs, struct and enum definitions are not functions)."""
    found = {}
    for path in headers:
        with open(path, encoding="utf-8") as f:
            text = strip_comments_and_directives(f.read())
        for st in top_level_statements(text):
            if st.startswith("typedef") or "{" in st:
                continue
            m = re.search(r"\b([A-Za-z_]\w*)\s*\(", st)
            while m and m.group(1) in ("__attribute__", "HR_EXPORT"):
                m = re.search(r"\b([A-Za-z_]\w*)\s*\(", st[m.end():])
            if m:
                found[m.group(1)] = st.split()[0] == "HR_EXPORT"
    return found


ODR_ASAN = "__odr_asan."


def nm(args):
    out = subprocess.run(["nm"] + args, check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        # "address type name" for defined symbols; archive member headers
        # and blank lines have fewer fields.
        if len(parts) == 3:
            names.add(parts[2])
    return names


def header_version(headers):
    """(major, minor) from HR_VERSION_MAJOR and HR_VERSION_MINOR."""
    found = {}
    for path in headers:
        with open(path, encoding="utf-8") as f:
            for m in re.finditer(r"^#define HR_VERSION_(MAJOR|MINOR) +(\d+)$",
                                 f.read(), flags=re.M):
                found[m.group(1)] = int(m.group(2))
    return found.get("MAJOR"), found.get("MINOR")


def listed_functions(path, failures):
    """{name: (major, minor)} from the list of public functions."""
    listed = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"(\d+)\.(\d+) +(hr_\w+)", line)
            if not m:
                failures.append("%s:%d: not 'MAJOR.MINOR hr_name': %s"
                                % (path, number, line))
                continue
            if m.group(3) in listed:
                failures.append("%s:%d: %s listed twice"
                                % (path, number, m.group(3)))
            listed[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return listed


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: check_symbols.py SYMBOLS.txt LIB.so LIB.a HEADER...")
    listing, shared, static = sys.argv[1], sys.argv[2], sys.argv[3]
    headers = sys.argv[4:]
    failures = []

    declared = declared_functions(headers)
    if len(declared) < 10:
        failures.append("only %d functions found in the headers: the "
                        "parser is broken" % len(declared))
    for name, exported in sorted(declared.items()):
        if not exported:
            failures.append("declared without HR_EXPORT: " + name)
        if not name.startswith("hr_") or name.startswith("hr__"):
            failures.append("public function outside hr_: " + name)

    exported = nm(["-D", "--defined-only", shared])
    for name in sorted(exported - set(declared)):
        failures.append("exported but not declared in a public header: "
                        + name)
    for name in sorted(set(declared) - exported):
        failures.append("declared but not exported: " + name)

    listed = listed_functions(listing, failures)
    major, minor = header_version(headers)
    for name in sorted(set(declared) - set(listed)):
        failures.append("public function missing from %s (with the release "
                        "that adds it): %s" % (listing, name))
    for name in sorted(set(listed) - set(declared)):
        failures.append("listed in %s but no longer declared (functions are "
                        "only removed in a major release): %s"
                        % (listing, name))
    for name, (ma, mi) in sorted(listed.items()):
        if ma != major or mi > minor:
            failures.append("%s is listed as added in %d.%d, but the headers "
                            "are version %s.%s" % (name, ma, mi, major, minor))

    for name in sorted(nm(["-g", "--defined-only", static])):
        # ASan marks each instrumented global with "__odr_asan.<name>"
        # (its one-definition-rule check): the name inside is what counts.
        name = name[len(ODR_ASAN):] if name.startswith(ODR_ASAN) else name
        if not name.startswith("hr_"):
            failures.append("global symbol of the static library outside "
                            "the hr_ namespace: " + name)

    for line in failures:
        print("FAIL:", line)
    print("%d public functions, %d exported symbols" %
          (len(declared), len(exported)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
