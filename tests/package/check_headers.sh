#!/bin/bash
# SPDX-License-Identifier: MIT
# check_headers.sh - every public header compiles on its own, as strict C11
# and, when a C++ compiler is installed, as C++: a program may include any
# one of them first (hashring.h includes all but hashring/rebalance.h).
#
#   check_headers.sh INCLUDE_DIR CC
set -euo pipefail

include=$1 cc=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/hashring-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT

n=0
for header in "$include"/hashring.h "$include"/hashring/*.h; do
	name=${header#"$include"/}
	# Something after the header, so that a header of macros alone is not
	# an empty translation unit.
	printf '#include "%s"\nint hr_header_check;\n' "$name" >"$work/one.c"
	"$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
		-I"$include" "$work/one.c" ||
		{ echo "FAIL: $name does not compile alone as C" >&2; exit 1; }
	if command -v c++ >/dev/null; then
		c++ -x c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only \
			-I"$include" "$work/one.c" ||
			{ echo "FAIL: $name does not compile alone as C++" >&2; exit 1; }
	fi
	n=$((n + 1))
done
echo "ok: $n headers compile alone$(command -v c++ >/dev/null && echo ', as C and C++')"
