# SPDX-License-Identifier: MIT
# embed.cmake - a file as a C array, for the page `hashring serve` serves:
#   cmake -DINPUT=file -DOUTPUT=file.c -DNAME=symbol -P embed.cmake
# writes `const char NAME[]` (the bytes, then a NUL) and `NAME_len`.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# About 16 bytes a line, so that the file stays readable in a diff tool.
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}"
  "/* Generated from ${INPUT} by cmake/embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "extern const char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
  "const char ${NAME}[] = {\n${bytes}\n0x00 };\n"
  "const size_t ${NAME}_len = ${len};\n")
