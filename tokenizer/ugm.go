package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ugmModel is llm_tokenizer_ugm (L903-1000).
type ugmModel struct {
	xcda         []uint32 // XOR-compressed compact double array of the charsmap
	replacements []byte   // NUL-terminated replacement strings
	tokens       *trie    // NORMAL, USER_DEFINED and UNUSED tokens
	userDefined  *trie
	unknownScore float32
}

// newUGM parses the precompiled charsmap (little-endian, as llama.cpp reads
// it on x86) and builds the token tries from the attributes as loaded.
func newUGM(t *Tokenizer, charsmap []byte) (*ugmModel, error) {
	m := &ugmModel{tokens: newTrie(), userDefined: newTrie()}
	if len(charsmap) > 0 {
		if len(charsmap) < 4 {
			return nil, fmt.Errorf("%w: precompiled_charsmap too small for xcda_blob_size header", ErrVocab)
		}
		blob := uint64(binary.LittleEndian.Uint32(charsmap))
		if blob+4 >= uint64(len(charsmap)) {
			return nil, fmt.Errorf("%w: precompiled_charsmap: xcda blob of %d bytes overruns the %d-byte map", ErrVocab, blob, len(charsmap))
		}
		m.xcda = make([]uint32, blob/4)
		for i := range m.xcda {
			m.xcda[i] = binary.LittleEndian.Uint32(charsmap[4+4*i:])
		}
		m.replacements = charsmap[4+blob:]
	}
	minScore, maxScore := float32(math.MaxFloat32), float32(-math.MaxFloat32)
	for id, a := range t.attrs {
		w := []byte(t.texts[id])
		if a&attrNormal != 0 {
			minScore = min(minScore, t.scores[id])
			maxScore = max(maxScore, t.scores[id])
		}
		if a&(attrNormal|attrUserDefined|attrUnused) != 0 {
			m.tokens.insert(w, int32(id))
		}
		if a&attrUserDefined != 0 {
			m.userDefined.insert(w, 0)
		}
	}
	m.tokens.freeze()
	m.userDefined.freeze()
	m.unknownScore = minScore - 10 // float arithmetic, as in llama.cpp
	return m, nil
}

// xcdaNode returns entry i of the double array.
func (m *ugmModel) xcdaNode(i uint32) (uint32, error) {
	if uint64(i) >= uint64(len(m.xcda)) {
		return 0, fmt.Errorf("%w: index out of array bounds in XCDA array", ErrTokenize)
	}
	return m.xcda[i], nil
}

// normalizePrefix is normalize_prefix (L1180-1250): the replacement of the
// longest charsmap match at s[off:], a user-defined token prefix verbatim,
// one valid UTF-8 sequence verbatim, or U+FFFD for one bad byte. It returns
// the output bytes and how many input bytes they consume.
func (m *ugmModel) normalizePrefix(s string, off int) (string, int, error) {
	if off == len(s) {
		return "", 0, nil
	}
	if n := m.userDefined.longestPath(s[off:]); n > 0 {
		return s[off : off+n], n, nil
	}
	longestLen, longestOff := 0, uint32(0)
	if len(m.xcda) > 0 {
		node, err := m.xcdaNode(0)
		if err != nil {
			return "", 0, err
		}
		idx := xcdaBase(node)
		for p := off; p < len(s); p++ {
			c := uint32(s[p])
			if c == 0 {
				break
			}
			idx ^= c
			node, err := m.xcdaNode(idx)
			if err != nil {
				return "", 0, err
			}
			if node&(1<<31|0xFF) != c { // LCHECK
				break
			}
			leaf := node>>8&1 != 0
			idx ^= xcdaBase(node)
			if leaf {
				longestLen = p - off + 1
				v, err := m.xcdaNode(idx)
				if err != nil {
					return "", 0, err
				}
				longestOff = v & (1<<31 - 1)
			}
		}
	}
	if longestLen > 0 {
		if uint64(longestOff) >= uint64(len(m.replacements)) {
			return "", 0, fmt.Errorf("%w: index out of array bounds in precompiled charsmap", ErrTokenize)
		}
		r := m.replacements[longestOff:]
		n := 0
		for n < len(r) && r[n] != 0 {
			n++
		}
		if n == len(r) {
			return "", 0, fmt.Errorf("%w: unterminated string in precompiled charsmap", ErrTokenize)
		}
		return string(r[:n]), longestLen, nil
	}
	if _, n, ok := decodeCpt(s, off); ok {
		return s[off : off+n], n, nil
	}
	return "\uFFFD", 1, nil
}

// xcdaBase is BASE of a packed node: bits 10-30, shifted left by 8 when
// bit 9 is set.
func xcdaBase(node uint32) uint32 { return (node >> 10) << ((node & (1 << 9)) >> 6) }

// normalize is llm_tokenizer_ugm_session::normalize: charsmap, then spaces
// escaped to "▁", a space prepended (add_space_prefix) and runs of spaces
// merged (remove_extra_whitespaces).
func (m *ugmModel) normalize(t *Tokenizer, s string) (string, error) {
	out := make([]byte, 0, 3*len(s))
	space := " "
	if t.escapeSpaces {
		space = "▁"
	}
	prepend := t.addSpacePrefix // treat_whitespace_as_suffix is never set
	merge := t.removeExtraWS
	prepended, inWord := false, false
	for off := 0; off < len(s); {
		norm, n, err := m.normalizePrefix(s, off)
		if err != nil {
			return "", err
		}
		for i := 0; i < len(norm); i++ {
			if c := norm[i]; c != ' ' {
				if !inWord {
					inWord = true
					if prepend && !prepended || merge {
						out = append(out, space...)
						prepended = true
					}
				}
				out = append(out, c)
			} else {
				inWord = false
				if !merge {
					out = append(out, space...)
				}
			}
		}
		off += n
	}
	return string(out), nil
}

// ugmBest is best_tokenization.
type ugmBest struct {
	id    int
	from  int
	score float64
}

// encode is llm_tokenizer_ugm_session::tokenize (L1000-1075): Viterbi over
// the normalized bytes, scores summed in double; a codepoint no token covers
// becomes the unknown token (score min - 10), and runs of unknown tokens
// collapse into one.
func (m *ugmModel) encode(t *Tokenizer, s string, out []int) ([]int, error) {
	norm, err := m.normalize(t, s)
	if err != nil {
		return nil, err
	}
	n := len(norm)
	if n == 0 {
		return out, nil
	}
	unk := t.special.unk
	best := make([]ugmBest, n+1)
	for i := range best {
		best[i] = ugmBest{id: unk, score: -math.MaxFloat64}
	}
	best[0] = ugmBest{id: unk, score: 0}
	for off := 0; off < n; {
		cpLen := min(utf8Len(norm[off]), n-off)
		cur := best[off]
		single := false
		node := m.tokens.child(0, norm[off])
		for p := off + 1; p <= n && node >= 0; p++ {
			if m.tokens.hasValue[node] {
				if p-off == cpLen {
					single = true
				}
				id := int(m.tokens.value[node])
				score := float64(t.scores[id])
				if t.attrs[id]&attrUserDefined != 0 {
					score = 0
				}
				if c := cur.score + score; c > best[p].score {
					best[p] = ugmBest{id: id, from: off, score: c}
				}
			}
			if p == n {
				break // llama.cpp reads the string's terminating NUL and stops
			}
			node = m.tokens.child(node, norm[p])
		}
		if !single {
			p := off + cpLen
			if c := cur.score + float64(m.unknownScore); c > best[p].score {
				best[p] = ugmBest{id: unk, from: off, score: c}
			}
		}
		off += cpLen
	}
	mark := len(out)
	prevUnk := false
	for b := best[n]; ; b = best[b.from] {
		isUnk := b.id == unk
		if !(prevUnk && isUnk) {
			if b.id == tokenNull {
				return nil, fmt.Errorf("%w: text needs the unknown token and the vocabulary has none", ErrTokenize)
			}
			out = append(out, b.id)
		}
		if b.from == 0 {
			break
		}
		prevUnk = isUnk
	}
	for i, j := mark, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
