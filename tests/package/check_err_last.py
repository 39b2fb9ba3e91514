#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_err_last.py - every exported function that can fail takes an
`hr_error *` as its last argument (docs/abi.md, "Naming and errors").

A function that returns int returns an error code, so it must end with
`hr_error *err`; the exceptions are listed below, each with the reason the
header gives.  Run with the public headers:

    check_err_last.py include/hashring/*.h
"""
import re
import sys

# Functions returning int without a trailing hr_error *, and why.
ALLOWED = {
    # Never fails: the version as a number.
    "hr_version_number": "cannot fail",
    # A writer's failures go to the hr_error given to hr_metrics_writer_new,
    # which the writer keeps (hashring/metrics.h).
    "hr_metrics_writer_free": "reports into the writer's hr_error",
    # Returns a count; its one failure is a bad view (HR_EINVAL), the
    # caller's constant, as for hr_ring_moved_share() (hashring/ring.h).
    "hr_ring_node_shares": "a count, or HR_EINVAL for a bad view",
}

DECL = re.compile(r"HR_EXPORT\s+([^;{()]*?)\b(hr_\w+)\s*\(([^;]*?)\)\s*;", re.S)
ERR_LAST = re.compile(r"hr_error\s*\*\s*\w*$")


def declarations(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    for m in DECL.finditer(text):
        ret = " ".join(m.group(1).split())
        params = " ".join(m.group(3).split())
        yield ret, m.group(2), params


def main(headers):
    bad, seen = [], set()
    for path in headers:
        for ret, name, params in declarations(path):
            seen.add(name)
            if ret != "int" or name in ALLOWED:
                continue
            if not ERR_LAST.search(params.split(",")[-1].strip()):
                bad.append(f"{path}: int {name}({params})")
    stale = sorted(set(ALLOWED) - seen)
    for line in bad:
        print(f"FAIL: no trailing hr_error *: {line}", file=sys.stderr)
    for name in stale:
        print(f"FAIL: allowed exception {name} is not exported", file=sys.stderr)
    if bad or stale or not seen:
        return 1
    print(f"ok: {len(seen)} exported functions; every fallible one takes "
          f"hr_error * last, {len(ALLOWED)} documented exceptions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
