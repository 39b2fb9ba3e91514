#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every source file of the project says its license in its first lines.

    check_license.py SOURCE_DIR [--fix]

A file whose name ends in one of KINDS carries the SPDX identifier of
LICENSE (MIT) on its first line, or on its second after a `#!` line, in
the comment syntax of its kind.  Data (JSON, test vectors, fuzz corpora),
docs and generated files are not sources and carry none.  --fix adds the
line where it is missing.
"""
import os
import sys

TAG = "SPDX-License-Identifier: MIT"
C = "/* %s */" % TAG
HASH = "# %s" % TAG
# By the end of the name: the line that file kind carries.
KINDS = [(".c", C), (".h", C), (".h.in", C), (".go", "// %s" % TAG),
         (".py", HASH), (".pyi", HASH), (".sh", HASH), (".cmake", HASH), (".cmake.in", HASH),
         (".pc.in", HASH), (".yml", HASH), (".toml", HASH), (".service", HASH),
         ("CMakeLists.txt", HASH), ("Makefile", HASH), ("Dockerfile", HASH), (".ci/run", HASH)]
SKIP_DIRS = {".git", "__pycache__", "corpus"}


def sources(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                   and not os.path.exists(os.path.join(top, d, "CMakeCache.txt"))]
        for name in files:
            rel = os.path.relpath(os.path.join(top, name), root)
            for end, line in KINDS:
                if rel.endswith(end):
                    yield rel, line
                    break


def main():
    root, fix = sys.argv[1], "--fix" in sys.argv[2:]
    missing = []
    for rel, line in sorted(sources(root)):
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        head = text.split("\n", 2)
        at = 1 if text.startswith("#!") else 0
        if len(head) > at and head[at] == line:
            continue
        if not fix:
            missing.append(rel)
            continue
        if at:
            text = head[0] + "\n" + line + "\n" + text.split("\n", 1)[1]
        else:
            text = line + "\n" + text
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print("added:", rel)
    for rel in missing:
        print("%s: no '%s' line at its top" % (rel, TAG))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
