#!/usr/bin/python3
"""Checks what libhashring exports against what its public headers declare.

    check_symbols.py LIBHASHRING_SO LIBHASHRING_A HEADER...

- Every function declared in the public headers carries HR_EXPORT.
- The dynamic symbols the shared library defines are exactly those
  functions: nothing internal (hr__*, static helpers) leaks out, and
  nothing declared is missing.
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


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: check_symbols.py LIB.so LIB.a HEADER...")
    shared, static, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
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
