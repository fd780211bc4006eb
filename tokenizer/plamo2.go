package tokenizer

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// plamo2Model is llm_tokenizer_plamo2 (L1367-1627): an Aho-Corasick-like
// table over the reversed suffixes of all tokens, walked from the end of the
// text with an integer-scored Viterbi.
type plamo2Model struct {
	bytes    [256]int32
	suffixID map[int64]int32 // codepoint<<32 | suffix id of the rest → suffix id
	table    []plamoRow
}

// plamoRow is one row of the flattened table.
type plamoRow struct {
	length, token, score, pieceID int32
}

const (
	plamoInvalidScore = -20000000
	plamoUnknownScore = -10000000
)

// encodeCpts is unicode_cpts_to_utf8 over cpts; the codepoints come from
// decoding, so none is above U+1FFFFF, but those above U+10FFFF fail.
func encodeCpts(cpts []uint32) (string, error) {
	var b []byte
	var err error
	for _, c := range cpts {
		if b, err = appendCpt(b, c); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

// plamoMaxWork bounds the table construction, which (as in llama.cpp)
// re-encodes every prefix of every suffix of every token: about L³ steps
// for a token of L codepoints. Real PLaMo-2 vocabularies need a few 10⁷;
// a crafted one with long tokens would need unbounded time and memory.
const plamoMaxWork = 1 << 32

func newPLaMo2(t *Tokenizer) (*plamo2Model, error) {
	work := 0
	for id, w := range t.texts {
		if n := utf8.RuneCountInString(w); n > 0 {
			if work += n * n * n; n > 1<<10 || work > plamoMaxWork {
				return nil, fmt.Errorf("%w: PLaMo-2 tokens too long to index (token %d has %d codepoints; limits: 1024 per token, Σ L³ ≤ 2³²)", ErrVocab, id, n)
			}
		}
	}
	m := &plamo2Model{suffixID: map[int64]int32{}}
	score := map[string]float32{}
	for id, w := range t.texts {
		if t.attrs[id]&attrByte != 0 {
			if len(w) == 6 && strings.HasPrefix(w, "<0x") && w[5] == '>' && isHex(w[3]) && isHex(w[4]) {
				m.bytes[hexVal(w[3])<<4|hexVal(w[4])] = int32(id)
			}
			continue
		}
		score[w] = t.scores[id]
		cpts := decodeLenient(w)
		for i := 1; i < len(cpts); i++ {
			suf, err := encodeCpts(cpts[i:])
			if err != nil {
				return nil, fmt.Errorf("%w: token %d: %w", ErrVocab, id, err)
			}
			if _, ok := score[suf]; !ok {
				score[suf] = float32(math.NaN())
			}
		}
	}
	for b, id := range m.bytes {
		if id == 0 {
			return nil, fmt.Errorf("%w: byte token for <0x%02X> is not set", ErrVocab, b)
		}
	}
	suffixes := make([]string, 0, len(score)+1)
	for s := range score {
		suffixes = append(suffixes, s)
	}
	suffixes = append(suffixes, "")
	rev := func(s string) string {
		b := []byte(s)
		slices.Reverse(b)
		return string(b)
	}
	slices.SortFunc(suffixes, func(a, b string) int { return strings.Compare(rev(a), rev(b)) })

	sid := map[string]int32{}
	prefixes := func(s string) ([]string, []int32, error) {
		cpts := decodeLenient(s)
		var ps []string
		var ls []int32
		for n := len(cpts); n > 0; n-- {
			p, err := encodeCpts(cpts[:n])
			if err != nil {
				return nil, nil, err
			}
			if _, ok := score[p]; ok {
				ps = append(ps, p)
				ls = append(ls, int32(n))
			}
		}
		return ps, ls, nil
	}
	var numPieces int32
	for _, s := range suffixes {
		sid[s] = numPieces
		if s == "" {
			numPieces++
			continue
		}
		cpts := decodeLenient(s)
		rest, err := encodeCpts(cpts[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrVocab, err)
		}
		m.suffixID[int64(cpts[0])<<32|int64(sid[rest])] = numPieces
		ps, _, err := prefixes(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrVocab, err)
		}
		numPieces += 1 + int32(len(ps))
	}
	m.table = make([]plamoRow, 0, numPieces)
	for _, s := range suffixes {
		ps, ls, err := prefixes(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrVocab, err)
		}
		for k, p := range ps {
			r := plamoRow{length: ls[k], token: -1, score: plamoInvalidScore, pieceID: sid[p]}
			if id, ok := t.ids[p]; ok {
				r.token = id
			}
			if sc := float64(score[p]); !math.IsNaN(sc) && !math.IsInf(sc, 0) {
				r.score = int32(math.Round(sc * 1e4))
			}
			m.table = append(m.table, r)
		}
		m.table = append(m.table, plamoRow{length: 1, token: -1, score: plamoUnknownScore})
	}
	return m, nil
}

// encode is llm_tokenizer_plamo2::encode.
func (m *plamo2Model) encode(s string, out []int) ([]int, error) {
	cpts := decodeLenient(s)
	if len(cpts) > 0 && cpts[0] == 0xFEFF {
		cpts = cpts[1:]
	}
	n := len(cpts)
	if n == 0 {
		return out, nil
	}
	scores := make([]int64, n+1)
	for i := range scores {
		scores[i] = 1 << 60
	}
	scores[n] = 0
	type step struct{ length, token int32 }
	path := make([]step, n+1)
	suffix := int32(0)
	for i := n - 1; i >= 0; i-- {
		c := cpts[i]
		for p := int(suffix); p < len(m.table); p++ {
			suffix = m.suffixID[int64(c)<<32|int64(m.table[p].pieceID)]
			if suffix > 0 || m.table[p].score == plamoUnknownScore {
				break
			}
		}
		for p := int(suffix); p < len(m.table); p++ {
			r := m.table[p]
			if r.score > plamoInvalidScore {
				if s := scores[i+int(r.length)] - int64(r.score); s < scores[i] {
					scores[i] = s
					path[i] = step{length: r.length, token: r.token}
				}
			}
			if r.score == plamoUnknownScore {
				break
			}
		}
	}
	for pos := 0; pos < n; {
		st := path[pos]
		if st.token >= 0 {
			out = append(out, int(st.token))
		} else {
			c := cpts[pos]
			k := 1
			if c >= 0x80 {
				k++
			}
			if c >= 0x800 {
				k++
			}
			if c >= 0x10000 {
				k++
			}
			for i := 0; i < k; i++ {
				var b uint32
				switch {
				case k == 1:
					b = c
				case i == 0:
					b = (0xF00 >> k) & 0xFF
				default:
					b = 0x80
				}
				out = append(out, int(m.bytes[byte(b|(c>>((k-i-1)*6))&0x3F)]))
			}
		}
		if st.length <= 0 {
			return nil, fmt.Errorf("%w: PLaMo-2 path has no step at codepoint %d", ErrTokenize, pos)
		}
		pos += int(st.length)
	}
	return out, nil
}
