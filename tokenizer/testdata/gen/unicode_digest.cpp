// unicode_digest prints, for every codepoint 0..0x10FFFF, llama.cpp's view of it as
// little-endian binary: uint16 flags & 0x1FF (category bits + whitespace),
// uint32 unicode_tolower, uint32 first codepoint of unicode_cpts_normalize_nfd.
// TestUnicodeTablesMatchLlamaCpp compares the sha256 of this stream with the same
// stream computed from the Go tables.
//
//   L=llama.cpp checkout; g++ -O1 -std=c++17 -I$L/src -I$L/include gen/unicode_digest.cpp \
//       $L/src/unicode.cpp $L/src/unicode-data.cpp -o /tmp/unicode_digest && /tmp/unicode_digest | sha256sum
#include "unicode.h"
#include <cstdio>
#include <vector>

static void put(uint32_t v, int n) {
    for (int i = 0; i < n; i++) {
        std::putchar((v >> (8 * i)) & 0xFF);
    }
}

int main() {
    for (uint32_t c = 0; c < 0x110000; c++) {
        put(unicode_cpt_flags_from_cpt(c).as_uint() & 0x1FF, 2);
        put(unicode_tolower(c), 4);
        put(unicode_cpts_normalize_nfd({c})[0], 4);
    }
    return 0;
}
