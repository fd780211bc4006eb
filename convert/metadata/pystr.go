package metadata

import (
	"strings"
	"unicode"
)

// This file holds the few Python str methods gguf-py's naming code calls, with
// CPython 3.11's semantics where they differ from Go's strings package:
// Python's whitespace set is wider than unicode.IsSpace, str.upper and
// str.title use the full (multi-character) case mappings, and the Lowercase /
// Uppercase properties include Other_Lowercase / Other_Uppercase.

// pyIsSpace reports str.isspace for one code point: CPython's whitespace is
// bidirectional class WS, B or S, or category Zs. That is unicode.IsSpace plus
// the four information separators U+001C–U+001F.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is str.strip() without arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyFields is str.split() without arguments: runs of whitespace separate, and
// leading or trailing whitespace yields no empty field.
func pyFields(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// pyIsLowerRune is CPython's _PyUnicode_IsLowercase (the Lowercase property).
func pyIsLowerRune(r rune) bool { return unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r) }

// pyIsUpperRune is CPython's _PyUnicode_IsUppercase (the Uppercase property).
func pyIsUpperRune(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }

// pyIsCasedRune is CPython's _PyUnicode_IsCased (the Cased property).
func pyIsCasedRune(r rune) bool { return pyIsLowerRune(r) || pyIsUpperRune(r) || unicode.IsTitle(r) }

// pyIsLower is str.islower(): no upper- or titlecase character and at least
// one lowercase one.
func pyIsLower(s string) bool {
	cased := false
	for _, r := range s {
		if pyIsUpperRune(r) || unicode.IsTitle(r) {
			return false
		}
		if pyIsLowerRune(r) {
			cased = true
		}
	}
	return cased
}

// pyIsDecimal is str.isdecimal() for one code point (category Nd).
func pyIsDecimal(r rune) bool { return unicode.Is(unicode.Nd, r) }

// pyIsAlpha is str.isalpha() for one code point (categories Lu Ll Lt Lm Lo).
func pyIsAlpha(r rune) bool { return unicode.IsLetter(r) }

// pyUpper is str.upper().
func pyUpper(s string) string {
	var b strings.Builder
	for _, r := range s {
		if m, ok := fullUpper[r]; ok {
			b.WriteString(m)
		} else {
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// pyLower is str.lower(). U+0130 is the one code point whose full lowercase
// mapping is two characters (SpecialCasing.txt).
func pyLower(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == 0x130 {
			b.WriteString("i\u0307")
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// pyTitle is str.title(): a character that follows a cased one is lowercased,
// any other is titlecased (CPython's do_title). Words passed here are already
// lowercase, so the final-sigma rule of lowercasing never applies.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		switch {
		case prevCased:
			b.WriteString(pyLower(string(r)))
		default:
			if m, ok := fullTitle[r]; ok {
				b.WriteString(m)
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
		}
		prevCased = pyIsCasedRune(r)
	}
	return b.String()
}
