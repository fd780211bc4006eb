package tokenizer

import "fmt"

// unescapeRWKV is llama_unescape_rwkv_token: RWKV's vocabulary stores
// arbitrary bytes with \t \n \r \xHH and \<char> escapes. Like llama.cpp it
// reads a hex digit c as c-'a'+10 when c ≥ 'a', else c-'0', unchecked.
func unescapeRWKV(s string) []byte {
	out := make([]byte, 0, len(s))
	escaping := false
	hexLeft, acc := 0, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case hexLeft > 0:
			v := c - '0'
			if c >= 'a' {
				v = c - 'a' + 10
			}
			acc = acc<<4 + v
			if hexLeft--; hexLeft == 0 {
				out = append(out, acc)
				acc = 0
			}
		case escaping:
			switch c {
			case 't':
				out = append(out, '\t')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 'x':
				hexLeft = 2
			default:
				out = append(out, c)
			}
			escaping = false
		case c == '\\':
			escaping = true
		default:
			out = append(out, c)
		}
	}
	return out
}

// encodeRWKV is llm_tokenizer_rwkv_session::tokenize (L1330-1365): greedy
// longest match in the byte trie, the unknown token for a byte no token
// starts with.
func (t *Tokenizer) encodeRWKV(s string, out []int) ([]int, error) {
	tr := t.rwkv
	for pos := 0; pos < len(s); {
		node := tr.child(0, s[pos])
		if node < 0 {
			if t.special.unk == tokenNull {
				return nil, fmt.Errorf("%w: byte 0x%02X has no token and the vocabulary no unknown token", ErrTokenize, s[pos])
			}
			out = append(out, t.special.unk)
			pos++
			continue
		}
		start := pos
		id, end := int32(0), 0
		for node >= 0 {
			if tr.hasValue[node] {
				id, end = tr.value[node], pos+1
			}
			if pos+1 >= len(s) {
				break
			}
			pos++
			node = tr.child(node, s[pos])
		}
		if end <= start {
			// No token is a prefix here: llama.cpp emits token 0 and jumps
			// back to the start of the text, forever.
			return nil, fmt.Errorf("%w: no RWKV token starts the text at byte %d (llama.cpp loops forever)", ErrTokenize, start)
		}
		out = append(out, int(id))
		pos = end
	}
	return out, nil
}
