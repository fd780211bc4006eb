package tokenizer

import "fmt"

// encodeWPM is llm_tokenizer_wpm_session::tokenize (L780-897): normalize
// and split into words, then cover each "▁"-prefixed word greedily with the
// longest tokens; a word that cannot be covered becomes the unknown token.
func (t *Tokenizer) encodeWPM(s string, out []int) ([]int, error) {
	words, err := t.wpmWords(s)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		w1 := "▁" + w
		mark := len(out)
		// llama.cpp tries every length from the longest token's down with a
		// map lookup each; the longest token that is a prefix is the same
		// answer, found here in one walk of the token trie.
		for i := 0; i < len(w1); {
			id, n := t.wpm.longestPrefix(w1[i:])
			if n == 0 {
				out = out[:mark]
				break
			}
			out = append(out, int(id))
			i += n
		}
		if len(out) == mark {
			if t.special.unk == tokenNull {
				return nil, fmt.Errorf("%w: word %q has no tokens and the vocabulary no unknown token", ErrTokenize, w)
			}
			out = append(out, t.special.unk)
		}
	}
	return out, nil
}

// wpmWords is llm_tokenizer_wpm_session::preprocess: BERT's normalizer
// (optional accent stripping through llama.cpp's first-codepoint NFD,
// optional lowercasing, control characters dropped) and its splitting at
// whitespace, punctuation, ASCII symbols and CJK ideographs.
func (t *Tokenizer) wpmWords(s string) ([]string, error) {
	ft := flags()
	var words []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	var err error
	for _, c := range decodeLenient(s) {
		if t.stripAccents {
			c = nfdFirst(c)
		}
		f := cptFlags(ft, c)
		if f&flagWhitespace != 0 {
			flush()
			continue
		}
		if c == 0 || c == replacement || f&flagControl != 0 {
			continue
		}
		if t.stripAccents && f&flagAccentMark != 0 {
			continue
		}
		lc := c
		if t.lowercase {
			lc = toLower(c)
		}
		if f&flagPunctuation != 0 || c < 0x7F && f&flagSymbol != 0 || isChineseChar(c) {
			flush()
		}
		if cur, err = appendCpt(cur, lc); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTokenize, err)
		}
		if f&flagPunctuation != 0 || c < 0x7F && f&flagSymbol != 0 || isChineseChar(c) {
			flush() // a single-character word
		}
	}
	flush()
	return words, nil
}

// isChineseChar is llm_tokenizer_wpm_session::is_chinese_char, with the
// 0x2B920 bound Hugging Face's Rust code has.
func isChineseChar(c uint32) bool {
	return c >= 0x4E00 && c <= 0x9FFF || c >= 0x3400 && c <= 0x4DBF ||
		c >= 0x20000 && c <= 0x2A6DF || c >= 0x2A700 && c <= 0x2B73F ||
		c >= 0x2B740 && c <= 0x2B81F || c >= 0x2B920 && c <= 0x2CEAF ||
		c >= 0xF900 && c <= 0xFAFF || c >= 0x2F800 && c <= 0x2FA1F
}
