package tokenizer

import (
	"errors"
	"fmt"
	"strings"
)

// bpeBigram is llm_bigram_bpe; leftN and rightN stand for its text: symbols
// only grow and never move, so the pair's text is unchanged exactly when
// both lengths are.
type bpeBigram struct {
	left, right   int
	rank          int32
	leftN, rightN int
}

// before is llm_bigram_bpe::comparator: lowest rank first, then leftmost.
func (a bpeBigram) before(b bpeBigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

// bpeSession holds the buffers of one encode call.
type bpeSession struct {
	t     *Tokenizer
	syms  []symbol
	q     heap[bpeBigram]
	key   []byte
	cache wordCache
}

// encodeBPE is llm_tokenizer_bpe_session::tokenize (L640-774): split s into
// words with the pre-tokenizer, merge each word by merge rank, then emit each
// symbol's token or, failing that, the tokens of its single bytes (missing
// ones are dropped, as in llama.cpp).
func (t *Tokenizer) encodeBPE(s string, out []int) ([]int, error) {
	words, err := t.pretok.split(s)
	if err != nil {
		if errors.Is(err, ErrTokenize) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrTokenize, err)
	}
	ss := &bpeSession{t: t, cache: newWordCache(len(s))}
	for _, w := range words {
		if out, err = ss.word(w, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// wordCache remembers the ids of the words (or cut pieces) of one long
// text: their ids depend on nothing but their text, and prose repeats its
// words. It is made per Encode call, so a Tokenizer stays immutable; only
// texts of wordCacheMinText bytes or more use it, and it holds at most
// wordCacheMax words of at most wordCacheMaxLen bytes.
type wordCache struct {
	on bool
	m  map[string][]int
}

const (
	wordCacheMinText = 4 << 10
	wordCacheMaxLen  = 64
	wordCacheMax     = 1 << 16
)

func newWordCache(textLen int) wordCache { return wordCache{on: textLen >= wordCacheMinText} }

// encode appends the ids of w, from the cache or from enc.
func (c *wordCache) encode(w string, out []int, enc func(string, []int) ([]int, error)) ([]int, error) {
	if !c.on || len(w) > wordCacheMaxLen {
		return enc(w, out)
	}
	if ids, ok := c.m[w]; ok {
		return append(out, ids...), nil
	}
	n0 := len(out)
	out, err := enc(w, out)
	if err != nil {
		return nil, err
	}
	if len(c.m) < wordCacheMax {
		if c.m == nil {
			c.m = make(map[string][]int)
		}
		c.m[w] = append([]int(nil), out[n0:]...)
	}
	return out, nil
}

// cutBeforeSpaceRuns calls f on the pieces of s cut before each run of "▁"
// whose preceding symbol (as splitSymbols cuts s) neither ends in "▁" nor
// is in noCut.
func cutBeforeSpaceRuns(s string, noCut map[string]bool, f func(piece string) error) error {
	start, prev := 0, ""
	for off := 0; off < len(s); {
		n := min(utf8Len(s[off]), len(s)-off)
		if off > start && strings.HasPrefix(s[off:], spmSpace) && !strings.HasSuffix(prev, spmSpace) && !noCut[prev] {
			if err := f(s[start:off]); err != nil {
				return err
			}
			start = off
		}
		prev = s[off : off+n]
		off += n
	}
	return f(s[start:])
}

// word encodes one word of the pre-tokenizer. Words holding "▁" (Gemma 4,
// whose words are whole lines) are merged in pieces cut before their runs
// of "▁", for the reason encodeSPM gives, with Tokenizer.noCut made from
// the texts merges make: no symbol can span a cut, and each piece's pairs
// pop in the same relative order (rank, then position). TestSpaceCut
// checks the ids are the same.
func (ss *bpeSession) word(w string, out []int) ([]int, error) {
	t := ss.t
	if id, ok := t.ids[w]; ok && (t.pre.ignoreMerges || t.pre.typ == preGemma4 && strings.Trim(w, "\n") == "") {
		// ignore_merges, and Gemma 4's runs of newlines (which are also
		// taken whole when they are a token): the word is one symbol, which
		// is its token.
		return append(out, int(id)), nil
	}
	if t.noCut == nil || !strings.Contains(w, spmSpace) {
		return ss.cache.encode(w, out, ss.merge)
	}
	err := cutBeforeSpaceRuns(w, t.noCut, func(p string) error {
		var err error
		out, err = ss.cache.encode(p, out, ss.merge)
		return err
	})
	return out, err
}

// merge is the merge loop of llm_tokenizer_bpe_session::tokenize on one
// word: join the pair of lowest merge rank (then leftmost) until none is
// left, then emit each symbol's token or, failing that, its bytes' tokens.
func (ss *bpeSession) merge(w string, out []int) ([]int, error) {
	t := ss.t
	ss.syms = ss.syms[:0]
	ss.q.items = ss.q.items[:0]
	ss.syms = splitSymbols(w, ss.syms)
	for i := 1; i < len(ss.syms); i++ {
		if err := ss.add(w, i-1, i); err != nil {
			return nil, err
		}
	}
	for ss.q.len() > 0 {
		b := ss.q.pop()
		l, r := &ss.syms[b.left], &ss.syms[b.right]
		if l.n == 0 || r.n == 0 || l.n != b.leftN || r.n != b.rightN {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			ss.syms[r.next].prev = b.left
		}
		if err := ss.add(w, l.prev, b.left); err != nil {
			return nil, err
		}
		if err := ss.add(w, b.left, l.next); err != nil {
			return nil, err
		}
	}
	// llama.cpp collects the surviving symbols of all words and walks them in
	// order; per word that is the same sequence.
	for _, sy := range ss.syms {
		if sy.n == 0 {
			continue
		}
		text := w[sy.off : sy.off+sy.n]
		if id, ok := t.ids[text]; ok {
			out = append(out, int(id))
			continue
		}
		for j := 0; j < len(text); j++ {
			var b string
			if t.pretok.byteEncode {
				b = text[j : j+1]
			} else {
				const hex = "0123456789ABCDEF"
				b = string([]byte{'<', '0', 'x', hex[text[j]>>4], hex[text[j]&15], '>'})
			}
			if id, ok := t.ids[b]; ok {
				out = append(out, int(id))
			}
		}
	}
	return out, nil
}

// add is add_new_bigram: queue the pair if a merge joins its two texts.
func (ss *bpeSession) add(w string, l, r int) error {
	if l == -1 || r == -1 {
		return nil
	}
	ls, rs := ss.syms[l], ss.syms[r]
	left, right := w[ls.off:ls.off+ls.n], w[rs.off:rs.off+rs.n]
	if strings.IndexByte(left, ' ') >= 0 || strings.IndexByte(right, ' ') >= 0 {
		// llama_vocab::find_bpe_rank asserts there is none.
		return fmt.Errorf("%w: BPE symbol %q/%q holds a space (llama.cpp asserts)", ErrTokenize, left, right)
	}
	ss.key = append(append(append(ss.key[:0], left...), ' '), right...)
	rank, ok := ss.t.ranks[string(ss.key)]
	if !ok {
		return nil
	}
	ss.q.push(bpeBigram{left: l, right: r, rank: rank, leftN: ls.n, rightN: rs.n})
	return nil
}

// dnaMarker is the suffix (U+E000) a hybriddna vocabulary appends to its
// k-mer tokens to keep them apart from BPE tokens of the same letters.
const dnaMarker = "\uE000"

// encodeHybridDNA is llm_tokenizer_hybriddna_session: text inside
// <dna>…</dna> becomes 6-mers (the last one padded with A, unknown ones
// <oov>), the rest is plain BPE.
func (t *Tokenizer) encodeHybridDNA(s string, out []int) ([]int, error) {
	const open, closeTag, k = "<dna>", "</dna>", 6
	begin, ok1 := t.ids[open]
	end, ok2 := t.ids[closeTag]
	oov, ok3 := t.ids["<oov>"]
	if !ok1 || !ok2 || !ok3 {
		return t.encodeBPE(s, out)
	}
	var err error
	for pos := 0; pos < len(s); {
		start := strings.Index(s[pos:], open)
		if start < 0 {
			return t.encodeBPE(s[pos:], out)
		}
		start += pos
		if start > pos {
			if out, err = t.encodeBPE(s[pos:start], out); err != nil {
				return nil, err
			}
		}
		out = append(out, int(begin))
		cs := start + len(open)
		ce := strings.Index(s[cs:], closeTag)
		contentEnd := len(s)
		if ce >= 0 {
			ce += cs
			contentEnd = ce
		}
		seq := []byte(s[cs:contentEnd])
		for i, c := range seq {
			if c >= 'a' && c <= 'z' {
				seq[i] = c - 32
			}
		}
		kmer := func(m string) int {
			if id, ok := t.ids[m+dnaMarker]; ok {
				return int(id)
			}
			return int(oov)
		}
		i := 0
		for ; i+k <= len(seq); i += k {
			out = append(out, kmer(string(seq[i:i+k])))
		}
		if i < len(seq) {
			out = append(out, kmer(string(seq[i:])+strings.Repeat("A", k-(len(seq)-i))))
		}
		if ce < 0 {
			break
		}
		out = append(out, int(end))
		pos = ce + len(closeTag)
	}
	return out, nil
}

// encodeWhitespace is llm_tokenizer_whitespace_session: whitespace ends a
// segment and is dropped, each segment (lowercased if the normalizer says
// so) is BPE-encoded.
func (t *Tokenizer) encodeWhitespace(s string, out []int) ([]int, error) {
	ft := flags()
	var seg []byte
	var err error
	flush := func() error {
		if len(seg) > 0 {
			if out, err = t.encodeBPE(string(seg), out); err != nil {
				return err
			}
			seg = seg[:0]
		}
		return nil
	}
	for _, c := range decodeLenient(s) {
		if cptFlags(ft, c)&flagWhitespace != 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if t.lowercase {
			c = toLower(c)
		}
		if seg, err = appendCpt(seg, c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTokenize, err)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
