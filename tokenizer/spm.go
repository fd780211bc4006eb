package tokenizer

import "strings"

// symbol is llm_symbol: a span of the text in a doubly linked list; n = 0
// once merged into its left neighbour.
type symbol struct {
	prev, next int
	off, n     int
}

// splitSymbols cuts s into one symbol per UTF-8 sequence, by lead byte only
// (unicode_len_utf8), the last one clipped to the end.
func splitSymbols(s string, syms []symbol) []symbol {
	syms = syms[:0]
	for off := 0; off < len(s); {
		n := min(utf8Len(s[off]), len(s)-off)
		next := len(syms) + 1
		if off+n == len(s) {
			next = -1
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: next, off: off, n: n})
		off += n
	}
	return syms
}

// spmBigram is llm_bigram_spm (int32 fields: a text is cut into symbols
// by the int32 offsets of Encode's limit).
type spmBigram struct {
	left, right int32
	score       float32
	size        int32
}

// before orders the SPM work queue: llm_bigram_spm::comparator makes the
// highest score pop first, then the leftmost pair.
func (a spmBigram) before(b spmBigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

// spmSpace is the escaped space SPM texts and tokens hold.
const spmSpace = "\u2581"

// noCutAfter returns the texts after which a run of "▁" must not be cut
// off: every suffix of up to 4 bytes (the longest symbol splitSymbols
// makes) of what precedes a "▁" inside one of texts. A symbol of the
// merge (every merged symbol is one of texts) spanning a cut would have to
// hold the symbol before the cut and then "▁"; with the symbol before each
// cut outside this set, none can.
func noCutAfter(texts []string) map[string]bool {
	m := map[string]bool{}
	for _, tx := range texts {
		for k := 1; k < len(tx); k++ {
			i := strings.Index(tx[k:], spmSpace)
			if i < 0 {
				break
			}
			k += i
			for l := 1; l <= min(4, k); l++ {
				m[tx[k-l:k]] = true
			}
		}
	}
	return m
}

// spmScratch holds the buffers of SPM sessions run one after another.
type spmScratch struct {
	syms []symbol
	q    heap[spmBigram]
}

// encodeSPM is llm_tokenizer_spm_session::tokenize (L115-239) on s.
//
// llama.cpp merges the whole fragment in one session, whose queue holds a
// pair per character: for a long text the queue no longer fits in cache.
// Here s is cut before each run of "▁" whose preceding symbol (as the
// whole text splits it) is not in Tokenizer.noCut, and each piece gets its
// own session: no symbol can span a cut, so no pair of the whole-text
// session crosses one, and each piece's pairs pop in the same relative
// order (score, then position) as in the whole session. The ids are the
// same; TestSpaceCut checks it.
func (t *Tokenizer) encodeSPM(s string, out []int) ([]int, error) {
	var sc spmScratch
	if t.noCut == nil {
		return t.spmSession(s, out, &sc)
	}
	cache := newWordCache(len(s))
	session := func(p string, out []int) ([]int, error) { return t.spmSession(p, out, &sc) }
	err := cutBeforeSpaceRuns(s, t.noCut, func(p string) error {
		var err error
		out, err = cache.encode(p, out, session)
		return err
	})
	return out, err
}

// spmSession merges the adjacent pair whose union is the highest-scored
// token until none is left, then emits each symbol's token or, failing
// that, its bytes. At equal scores (the all-zero-score conversions) the
// leftmost pair wins, as in llama.cpp; tokenizer.ggml.merges plays no part
// for SPM.
func (t *Tokenizer) spmSession(s string, out []int, sc *spmScratch) ([]int, error) {
	syms := splitSymbols(s, sc.syms)
	sc.syms = syms
	q := &sc.q
	q.items = q.items[:0]
	add := func(l, r int) {
		if l == -1 || r == -1 {
			return
		}
		text := s[syms[l].off : syms[l].off+syms[l].n+syms[r].n]
		id, ok := t.ids[text]
		if !ok {
			return
		}
		q.push(spmBigram{left: int32(l), right: int32(r), score: t.scores[id], size: int32(len(text))})
	}
	for i := 1; i < len(syms); i++ {
		add(i-1, i)
	}
	for q.len() > 0 {
		b := q.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != int(b.size) {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = int(b.left)
		}
		add(l.prev, int(b.left))
		add(int(b.left), l.next)
	}
	// resegment: a merged symbol is always a token (only tokens are merged),
	// so llama.cpp's rev_merge lookup never finds anything for a symbol that
	// is not one; such a symbol is a single character, emitted as bytes.
	for i := 0; i != -1 && len(syms) > 0; i = syms[i].next {
		sy := syms[i]
		text := s[sy.off : sy.off+sy.n]
		if id, ok := t.ids[text]; ok {
			out = append(out, int(id))
			continue
		}
		for j := 0; j < len(text); j++ {
			id, err := t.byteToken(text[j])
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
	}
	return out, nil
}

// heap is a binary heap whose top is the element that goes before all
// others. Equal elements may pop in any order: in both merge loops two
// queued pairs with the same priority never both still apply (a symbol has
// one right neighbour at a time, and stale pairs are skipped), so the order
// among them cannot change the result.
type heap[T interface{ before(T) bool }] struct {
	items []T
}

func (h *heap[T]) len() int { return len(h.items) }

func (h *heap[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].before(h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

// pop removes the top. Like libstdc++'s __adjust_heap it walks the hole
// left by the top down to a leaf along the better children (one comparison
// per level) and then sifts the last element up from there, which for a
// large queue touches less memory than sifting it down from the root.
func (h *heap[T]) pop() T {
	items := h.items
	top := items[0]
	n := len(items) - 1
	last := items[n]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && items[c+1].before(items[c]) {
			c++
		}
		items[i] = items[c]
		i = c
	}
	for i > 0 {
		p := (i - 1) / 2
		if !last.before(items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = last
	h.items = items[:n]
	return top
}
