//go:build !purego

package quantize

import "math/bits"

// The amd64 kernel of IQ1_M's split search (iq1_amd64.s); the purego build
// tag turns it off, and TestEncodeAsmMatchesGeneric checks it against the
// Go form.

// iq1mPassAVX2 evaluates, after setI1, the candidates of the eight
// boundaries i2 whose prefix sums start at tab (&iq1mSearch.tab[0][i2]),
// all four shift combinations each, and returns a bit per i2 (lane) set
// when some combination has Σq² > 0 and Σqx² > best·Σq², each product
// rounded as ggml's.
//
//go:noescape
func iq1mPassAVX2(c *[16]float32, tab *float32) int

// run is the split search of one IQ1_M group (iq1mSearch), with init as the
// scale when no candidate is found. The kernel tests eight boundaries i2 at
// a time against the best score so far; when none passes, the scalar scan
// would not change anything either (it compares each with that same best),
// so the batch is skipped. Otherwise the scalar scan runs from the first
// boundary that passes to the end of the batch, in ggml's order.
func (s *iq1mSearch) run(init float32) {
	if !useAVX2 {
		s.runGeneric(init)
		return
	}
	s.start(init)
	for i1 := 0; i1 <= 16; i1++ {
		s.setI1(i1)
		for base := i1; base <= 16; base += 8 {
			m := iq1mPassAVX2(&s.c, &s.tab[0][base])
			if n := 17 - base; n < 8 {
				m &= 1<<n - 1
			}
			if m != 0 {
				s.scan(i1, base+bits.TrailingZeros(uint(m)), min(base+7, 16))
			}
		}
	}
}
