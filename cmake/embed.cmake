# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# Writes OUT defining `const unsigned char NAME[]` and `const size_t NAME_len`
# with the bytes of IN, so binaries carry the data instead of reading files.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
