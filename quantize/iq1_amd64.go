//go:build !purego

package quantize

import (
	"math"
	"math/bits"
)

// The amd64 kernel of IQ1_M's split search (iq1_amd64.s); the purego build
// tag turns it off, and TestEncodeAsmMatchesGeneric checks it against the
// Go form.

// iq1GridCodes holds the points of the IQ1 grid (iq1KGrid2048: level l of
// coordinate i in bits 2i, 2i+1) widened to 32 bits for the kernel's
// gather.
var iq1GridCodes = func() (t [2048]uint32) {
	for j, p := range iq1KGrid2048 {
		t[j] = uint32(p)
	}
	return t
}()

// iq1NearestAVX2 is nearest2Generic over the IQ1 grid, eight neighbours in
// the lanes: it reads the grid indices nb[0 : n rounded up to 8] (those
// past n only as memory, masked to the grid), gathers their points from
// codes, and computes each lane's distance in ggml's order (sv[l] − x[i],
// (w[i]·e)·e, the sum in index order). It returns the position of the first
// neighbour with the smallest distance below FLT_MAX, or −1. scratch gets
// the broadcasts of x and w.
//
//go:noescape
func iq1NearestAVX2(nb *uint16, n int, codes *[2048]uint32, x, w, sv *[8]float32, scratch *[16][8]float32) int

// nearest2 is the neighbour search of bestNeighbour2; g must be the IQ1
// grid (the kernel reads its points from iq1GridCodes).
func (g *iq2Grid) nearest2(nb []uint16, x, wa, sv *[8]float32) int {
	if !useAVX2 || len(g.levels) != len(iq1GridCodes) {
		return g.nearest2Generic(nb, x, wa, sv)
	}
	// The kernel reads whole vectors of eight indices; past the end of the
	// neighbour array the list is copied first.
	n := len(nb)
	r := (n + 7) &^ 7
	var buf [256]uint16
	p := &buf[0]
	switch {
	case r <= cap(nb):
		p = &nb[:r][0]
	case r <= len(buf):
		copy(buf[:], nb)
	default:
		return g.nearest2Generic(nb, x, wa, sv)
	}
	var scratch [16][8]float32
	if pos := iq1NearestAVX2(p, n, &iq1GridCodes, x, wa, sv, &scratch); pos >= 0 {
		return pos
	}
	return 0
}

// iq1mPassAVX2 evaluates, after setI1, the candidates of the eight
// boundaries i2 whose prefix sums start at tab (&iq1mSearch.tab[0][i2]),
// all four shift combinations each, and returns a bit per i2 (lane) set
// when some combination has Σq² > 0 and Σqx² > best·Σq², each product
// rounded as ggml's. out gets Σqx of combination k and lane j at 16k+j,
// Σq² at 16k+8+j.
//
//go:noescape
func iq1mPassAVX2(c *[16]float32, tab *float32, out *[64]float32) int

// run is the split search of one IQ1_M group (iq1mSearch), with init as the
// scale when no candidate is found. The kernel computes the candidates of
// eight boundaries i2 at a time and tests them against the best score so
// far; when none passes, the scalar scan would not change anything either
// (it compares each with that same best), so the batch is skipped.
// Otherwise the candidates from the first boundary that passes to the end
// of the batch are compared in ggml's order with the running best, from the
// kernel's Σqx and Σq² (the same rounded values the scalar scan computes).
func (s *iq1mSearch) run(init float32) {
	if !useAVX2 {
		s.runGeneric(init)
		return
	}
	s.start(init)
	var out [64]float32
	for i1 := 0; i1 <= 16; i1++ {
		s.setI1(i1)
		for base := i1; base <= 16; base += 8 {
			m := iq1mPassAVX2(&s.c, &s.tab[0][base], &out)
			n := min(17-base, 8)
			m &= 1<<n - 1
			if m == 0 {
				continue
			}
			bestScore := s.c[iq1mCBest]
			for j := bits.TrailingZeros(uint(m)); j < n; j++ {
				for k := range 4 {
					sqx, sq2 := out[16*k+j], out[16*k+8+j]
					if sq2 > 0 && sqx*sqx > bestScore*sq2 {
						s.scale = sqx / sq2
						bestScore = s.scale * sqx
						s.besti1, s.besti2, s.bestK = i1, base+j, k
					}
				}
			}
			s.c[iq1mCBest] = bestScore
		}
	}
}

// iq1sPassAVX2 evaluates, after setI1, the candidates of the eight
// boundaries i2 whose prefix sums start at tab (&iq1sSearch.tab[0][i2]),
// both shifts each, and returns a bit per i2 (lane) set when a shift has
// Σq² > 0 and Σqx² > best·Σq², each product rounded as ggml's. out gets Σqx
// of shift +1 and lane j at j, its Σq² at 8+j, and those of shift −1 at
// 16+j and 24+j.
//
//go:noescape
func iq1sPassAVX2(c *[16]float32, tab *float32, out *[32]float32) int

// run is the split search of one IQ1_S group (iq1sSearch), with init as the
// scale when no candidate is found, batched as iq1mSearch.run is.
func (s *iq1sSearch) run(init float32) {
	if !useAVX2 {
		s.runGeneric(init)
		return
	}
	s.besti1, s.besti2, s.bestShift, s.scale = -1, -1, 0, init
	s.c[iq1sCBest] = -float32(math.MaxFloat32)
	s.c[iq1sCV], s.c[iq1sCV+1], s.c[iq1sCV+2], s.c[iq1sCV+3] = iq1XP[1], iq1XP[2], iq1XM[1], iq1XM[2]
	var out [32]float32
	for i1 := 0; i1 <= 32; i1++ {
		s.setI1(i1)
		for base := i1; base <= 32; base += 8 {
			m := iq1sPassAVX2(&s.c, &s.tab[0][base], &out)
			n := min(33-base, 8)
			m &= 1<<n - 1
			if m == 0 {
				continue
			}
			bestScore := s.c[iq1sCBest]
			for j := bits.TrailingZeros(uint(m)); j < n; j++ {
				for h, shift := range [2]int{1, -1} {
					sqx, sq2 := out[16*h+j], out[16*h+8+j]
					if sq2 > 0 && sqx*sqx > bestScore*sq2 {
						s.scale = sqx / sq2
						bestScore = s.scale * sqx
						s.besti1, s.besti2, s.bestShift = i1, base+j, shift
					}
				}
			}
			s.c[iq1sCBest] = bestScore
		}
	}
}
