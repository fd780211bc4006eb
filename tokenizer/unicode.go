package tokenizer

import (
	"fmt"
	"sort"
	"sync"
	"unicode"
)

//go:generate go run gen_unicode_tables.go -src $LLAMA_CPP/src/unicode-data.cpp

// The codepoint flags of llama.cpp's src/unicode.h (unicode_cpt_flags), same
// bit values. Exactly one category bit is set for every codepoint below
// U+110000 (flagUndefined for unassigned ones); flagWhitespace is a helper
// bit on top of the category.
const (
	flagUndefined   uint16 = 0x0001
	flagNumber      uint16 = 0x0002 // \p{N}
	flagLetter      uint16 = 0x0004 // \p{L}
	flagSeparator   uint16 = 0x0008 // \p{Z}
	flagAccentMark  uint16 = 0x0010 // \p{M}
	flagPunctuation uint16 = 0x0020 // \p{P}
	flagSymbol      uint16 = 0x0040 // \p{S}
	flagControl     uint16 = 0x0080 // \p{C}
	maskCategories  uint16 = 0x00FF
	flagWhitespace  uint16 = 0x0100 // \s
)

// maxCodepoint bounds the flag table: llama.cpp's MAX_CODEPOINTS.
const maxCodepoint = 0x110000

// outOfRange is what the pre-tokenizer fast paths read outside their span
// (llama.cpp's OUT_OF_RANGE in unicode.cpp); its flags are 0.
const outOfRange = 0xFFFFFFFF

// whitespaceCodepoints is llama.cpp's unicode_set_whitespace: the White_Space
// property of Unicode's PropList.txt (scripts/gen-unicode-data.py).
var whitespaceCodepoints = []uint32{
	0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
	0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
	0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
}

// flagTable is a two-stage lookup of the flags of every codepoint below
// maxCodepoint: blocks of 256 codepoints, identical blocks shared.
type flagTable struct {
	index  [maxCodepoint >> 8]uint16
	blocks [][256]uint16
}

// flags returns the table, built on first use from categoryRuns (llama.cpp's
// Unicode 15.1 data; Go's own unicode package is 15.0 and would miss the 627
// codepoints 15.1 assigned: U+2FFC–U+2FFF, U+31EF, U+2EBF0–U+2EE5D).
var flags = sync.OnceValue(func() *flagTable {
	all := make([]uint16, maxCodepoint)
	for i := 0; i+1 < len(categoryRuns); i++ {
		lo, hi := categoryRuns[i]>>8, categoryRuns[i+1]>>8
		f := uint16(categoryRuns[i] & 0xFF)
		for c := lo; c < hi; c++ {
			all[c] = f
		}
	}
	for _, c := range whitespaceCodepoints {
		all[c] |= flagWhitespace
	}
	t := &flagTable{}
	seen := map[[256]uint16]uint16{}
	for b := range t.index {
		var blk [256]uint16
		copy(blk[:], all[b<<8:])
		id, ok := seen[blk]
		if !ok {
			id = uint16(len(t.blocks))
			t.blocks = append(t.blocks, blk)
			seen[blk] = id
		}
		t.index[b] = id
	}
	return t
})

// cptFlags is unicode_cpt_flags_from_cpt: codepoints beyond the table (the
// lenient decoder produces up to U+1FFFFF) are undefined.
func cptFlags(t *flagTable, c uint32) uint16 {
	if c >= maxCodepoint {
		return flagUndefined
	}
	return t.blocks[t.index[c>>8]][c&0xFF]
}

// flagsAt is the fast paths' _get_flags: 0 outside [lo, hi).
func flagsAt(t *flagTable, cpts []uint32, lo, hi, pos int) uint16 {
	if pos < lo || pos >= hi {
		return 0
	}
	return cptFlags(t, cpts[pos])
}

// cptAt is the fast paths' _get_cpt: outOfRange outside [lo, hi).
func cptAt(cpts []uint32, lo, hi, pos int) uint32 {
	if pos < lo || pos >= hi {
		return outOfRange
	}
	return cpts[pos]
}

// toLower is unicode_tolower: the simple lowercase mapping of UnicodeData.txt.
// Go's unicode.ToLower uses the same mapping; TestUnicodeTablesMatchLlamaCpp
// checks it codepoint by codepoint against a digest of llama.cpp's table.
func toLower(c uint32) uint32 {
	if c >= maxCodepoint {
		return c
	}
	return uint32(unicode.ToLower(rune(c)))
}

// nfdFirst is unicode_cpts_normalize_nfd for one codepoint: llama.cpp keeps
// only the first codepoint of the decomposition.
func nfdFirst(c uint32) uint32 {
	i := sort.Search(len(nfdRanges), func(i int) bool { return nfdRanges[i][0] > c }) - 1
	if r := nfdRanges[i]; r[0] <= c && c <= r[1] {
		return r[2]
	}
	return c
}

// utf8Len is unicode_len_utf8: the sequence length announced by a lead byte
// (1 for continuation bytes), without validation.
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

// decodeCpt is unicode_cpt_from_utf8: it decodes one sequence at s[i:] and
// reports false where llama.cpp throws. Like llama.cpp it accepts overlong
// forms, surrogates and lead bytes up to 0xF7 (codepoints up to U+1FFFFF),
// and checks only the continuation bytes' top bits.
func decodeCpt(s string, i int) (c uint32, n int, ok bool) {
	b0 := s[i]
	switch {
	case b0&0x80 == 0:
		return uint32(b0), 1, true
	case b0&0x40 == 0:
		return 0, 0, false
	case b0&0x20 == 0:
		if i+1 >= len(s) || s[i+1]&0xC0 != 0x80 {
			return 0, 0, false
		}
		return uint32(b0&0x1F)<<6 | uint32(s[i+1]&0x3F), 2, true
	case b0&0x10 == 0:
		if i+2 >= len(s) || s[i+1]&0xC0 != 0x80 || s[i+2]&0xC0 != 0x80 {
			return 0, 0, false
		}
		return uint32(b0&0x0F)<<12 | uint32(s[i+1]&0x3F)<<6 | uint32(s[i+2]&0x3F), 3, true
	case b0&0x08 == 0:
		if i+3 >= len(s) || s[i+1]&0xC0 != 0x80 || s[i+2]&0xC0 != 0x80 || s[i+3]&0xC0 != 0x80 {
			return 0, 0, false
		}
		return uint32(b0&0x07)<<18 | uint32(s[i+1]&0x3F)<<12 | uint32(s[i+2]&0x3F)<<6 | uint32(s[i+3]&0x3F), 4, true
	}
	return 0, 0, false
}

// decodeLenient is unicode_cpts_from_utf8: every byte that does not start a
// valid sequence becomes U+FFFD and decoding resumes at the next byte.
func decodeLenient(s string) []uint32 {
	out := make([]uint32, 0, len(s))
	for i := 0; i < len(s); {
		c, n, ok := decodeCpt(s, i)
		if !ok {
			out = append(out, 0xFFFD)
			i++
			continue
		}
		out = append(out, c)
		i += n
	}
	return out
}

// errCodepoint reports a codepoint llama.cpp's unicode_cpt_to_utf8 refuses
// (it throws "invalid codepoint"): one above U+10FFFF, which the lenient
// decoder yields for the lead bytes 0xF5–0xF7.
type errCodepoint uint32

func (e errCodepoint) Error() string {
	return fmt.Sprintf("invalid codepoint U+%X (llama.cpp throws \"invalid codepoint\")", uint32(e))
}

// appendCpt is unicode_cpt_to_utf8: surrogates are encoded as is.
func appendCpt(b []byte, c uint32) ([]byte, error) {
	switch {
	case c <= 0x7F:
		return append(b, byte(c)), nil
	case c <= 0x7FF:
		return append(b, 0xC0|byte(c>>6&0x1F), 0x80|byte(c&0x3F)), nil
	case c <= 0xFFFF:
		return append(b, 0xE0|byte(c>>12&0x0F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F)), nil
	case c <= 0x10FFFF:
		return append(b, 0xF0|byte(c>>18&0x07), 0x80|byte(c>>12&0x3F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F)), nil
	}
	return b, errCodepoint(c)
}

// byteRunes is GPT-2's byte-to-unicode table (unicode_byte_to_utf8_map):
// printable Latin-1 bytes map to themselves, the other 68 to U+0100 upwards.
var byteRunes = func() (t [256]string) {
	n := 0
	for b := 0; b < 256; b++ {
		if b >= 0x21 && b <= 0x7E || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			t[b] = string(rune(b))
		} else {
			t[b] = string(rune(256 + n))
			n++
		}
	}
	return t
}()

// runeBytes inverts byteRunes (unicode_utf8_to_byte_map).
var runeBytes = func() map[string]byte {
	m := make(map[string]byte, 256)
	for b, s := range byteRunes {
		m[s] = byte(b)
	}
	return m
}()
