package tokenizer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestUnicodeTablesMatchLlamaCpp compares, for every codepoint, the flags
// (category and whitespace), the lowercase mapping and the first codepoint
// of the NFD decomposition with llama.cpp's src/unicode.cpp, through the
// sha256 of the stream testdata/gen/unicode_digest.cpp prints.
func TestUnicodeTablesMatchLlamaCpp(t *testing.T) {
	const want = "89ad39173e0c354ca2a3979d20372ebfdeb9159b5eeaed5135c03b460806b5c1"
	ft := flags()
	h := sha256.New()
	var rec [10]byte
	for c := uint32(0); c < maxCodepoint; c++ {
		binary.LittleEndian.PutUint16(rec[0:], cptFlags(ft, c)&0x1FF)
		binary.LittleEndian.PutUint32(rec[2:], toLower(c))
		binary.LittleEndian.PutUint32(rec[6:], nfdFirst(c))
		h.Write(rec[:])
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("sha256 %s, llama.cpp's tables give %s", got, want)
	}
}

// TestDecodeLenient pins the decoder on the forms llama.cpp's
// unicode_cpt_from_utf8 accepts that strict UTF-8 does not.
func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		in   string
		want []uint32
	}{
		{"", nil},
		{"a\u00e9\u4e2d\U0001F999", []uint32{'a', 0xE9, 0x4E2D, 0x1F999}},
		{"\xc0\x80", []uint32{0}},                    // overlong NUL
		{"\xed\xa0\x80", []uint32{0xD800}},           // surrogate
		{"\xf7\xbf\xbf\xbf", []uint32{0x1FFFFF}},     // beyond U+10FFFF
		{"\xe2\x82", []uint32{0xFFFD, 0xFFFD}},       // truncated
		{"\x80a\xff", []uint32{0xFFFD, 'a', 0xFFFD}}, // continuation, 0xFF
		{"\xf8\x88\x80\x80\x80", []uint32{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%x", tc.in), func(t *testing.T) {
			if got := decodeLenient(tc.in); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("decodeLenient(%q) = %X, want %X", tc.in, got, tc.want)
			}
		})
	}
}

// TestStdSortMatchesLibstdcxx checks that stdSort leaves equal keys in the
// order libstdc++'s std::sort leaves them (and heapSort in the order of
// std::partial_sort), from testdata/stdsort.golden.
func TestStdSortMatchesLibstdcxx(t *testing.T) {
	for _, line := range readRawLines(t, "testdata/stdsort.golden") {
		head, rest, _ := strings.Cut(line, ":")
		heap := strings.HasPrefix(head, "h ")
		n, err := strconv.Atoi(strings.TrimPrefix(head, "h "))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(head, func(t *testing.T) {
			key := make([]int, n)
			idx := make([]int, n)
			x := 0x9E3779B97F4A7C15 ^ uint64(n)
			for i := range key {
				x = x*6364136223846793005 + 1442695040888963407
				key[i] = int(x >> 33 % 8)
				idx[i] = i
			}
			less := func(a, b int) bool { return key[a] > key[b] }
			if heap {
				heapSort(idx, less)
			} else {
				stdSort(idx, less)
			}
			if got, want := strings.TrimSpace(fmt.Sprint(idx)), "["+strings.TrimSpace(rest)+"]"; got != want {
				t.Fatalf("got  %.200s\nwant %.200s", got, want)
			}
		})
	}
}
