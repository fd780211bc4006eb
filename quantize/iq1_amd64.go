//go:build !purego

package quantize

import (
	"math"
	"math/bits"
)

// The amd64 kernels of IQ1_S and IQ1_M (iq1_amd64.s): the split searches
// and the stable sorts. The purego build tag turns
// them off, TestEncodeAsmMatchesGeneric checks the encoders against the Go
// forms and iq1_amd64_test.go each kernel.

// The number of vectors of the first passes (iq1mVectors, iq1sVectors):
// their buffers hold four arrays of 8 floats per vector.
const (
	iq1mVecs = 81
	iq1sVecs = 153
)

// iq1Rank16AVX2 is iq1SortOrder for 16 values by ranks: value i goes to
// position #{j : x_j < x_i} + #{j < i : x_j == x_i}, which is where the
// stable insertion sort puts it when no value is NaN (−0 and +0 compare
// equal in both). It returns false, idx untouched, when a value is NaN.
//
//go:noescape
func iq1Rank16AVX2(xb *[16]float32, idx *[16]uint8) bool

// iq1SortOrder16 is iq1SortOrder for a group of 16.
func iq1SortOrder16(idx *[16]uint8, xb []float32) {
	if !useAVX2 || !iq1Rank16AVX2((*[16]float32)(xb[:16]), idx) {
		iq1SortOrder(idx[:], xb[:16])
	}
}

// iq1Rank32AVX2 is iq1Rank16AVX2 for 32 values.
//
//go:noescape
func iq1Rank32AVX2(xb *[32]float32, idx *[32]uint8) bool

// iq1SortOrder32 is iq1SortOrder for a group of 32.
func iq1SortOrder32(idx *[32]uint8, xb []float32) {
	if !useAVX2 || !iq1Rank32AVX2((*[32]float32)(xb[:32]), idx) {
		iq1SortOrder(idx[:], xb[:32])
	}
}

// iq1mSearchAVX2 is the split search of one IQ1_M group after the prefix
// sums: for each i1, the candidates of two boundaries i2, i2+1 in the
// lanes of a vector, lane 4j+k holding i2+j and the shift combination k,
// so that the lanes run in ggml's order (i1, i2, k). Each lane computes Σqx
// and Σq² as ggml does, from the lane constants (iq1mSearch.lanes), and
// is tested against the best score so far (Σq² > 0 and Σqx² > best·Σq²).
// When a lane passes, the candidates of the vector are taken in order: the
// first passing lane becomes the best (scale Σqx/Σq², score scale·Σqx, the
// vector's quotients computed together), the lanes after it are tested
// again against the new score, and so on; lanes that fail against the
// running best are exactly those ggml's scan skips. It returns the best
// candidate, k = −1 when there is none. lanes[8:10] is scratch.
//
//go:noescape
func iq1mSearchAVX2(tab *[4][24]float32, lanes *[10][8]float32) (i1, i2, k int, scale float32)

// iq1mLaneConsts are lanes[4:8] of iq1mSearchAVX2, per lane 4j+k the
// constants of the halves' shifts in the combination k: cp1 or cm1 for
// half 0 and half 1, then cp2 or cm2 for half 0 and half 1 (see setI1).
var iq1mLaneConsts = func() (c [4][8]float32) {
	cp1 := float32(iq1XP[0]*iq1XP[0]) - float32(iq1XP[1]*iq1XP[1])
	cp2 := float32(iq1XP[1]*iq1XP[1]) - float32(iq1XP[2]*iq1XP[2])
	cm1 := float32(iq1XM[0]*iq1XM[0]) - float32(iq1XM[1]*iq1XM[1])
	cm2 := float32(iq1XM[1]*iq1XM[1]) - float32(iq1XM[2]*iq1XM[2])
	for l := range 8 {
		k := l % 4
		c[0][l], c[1][l], c[2][l], c[3][l] = cp1, cp1, cp2, cp2
		if k >= 2 {
			c[0][l], c[2][l] = cm1, cm2
		}
		if k%2 != 0 {
			c[1][l], c[3][l] = cm1, cm2
		}
	}
	return c
}()

// iq1mBestAVX2 computes every candidate of the split search as
// iq1mSearchAVX2 does, vector v = 0..80 holding the pairs (i1, i2) of
// iq1mVectors[v], and each valid candidate's score S = (Σqx/Σq²)·Σqx (the
// value ggml's best score takes when it accepts it): buf gets, per
// candidate w = 8v+lane, S at w, Σqx² at n+w, Σq² (0 where not valid) at
// 2n+w, Σqx/Σq² at 3n+w (n = 8·iq1mVecs), then the state iq1PickAVX2
// starts from.
//
//go:noescape
func iq1mBestAVX2(tab *[4][24]float32, lanes *[10][8]float32, buf *[32*iq1mVecs + 24]float32)

// iq1PickAVX2 decides the split search from the first pass in buf (n32 =
// 32 × the number of vectors): it returns the position w of the first
// candidate with the largest S when ggml's scan provably ends there, −1
// when no candidate has Σq² > 0, and −2 otherwise. The proof: ggml's test
// Σqx² > best·Σq² is monotone in best (each product rounded), and its best
// score is always the S of an earlier candidate or −FLT_MAX; so if w passes
// against Mb, the largest S before it (or −FLT_MAX), it passes against
// ggml's best when the scan reaches it and becomes the best with score S
// of w; if then no later candidate passes against that score, nothing
// replaces it. A NaN S of a valid candidate also gives −2.
//
//go:noescape
func iq1PickAVX2(buf *float32, n32 int) int

// iq1mScratch is iq1mBestAVX2's buffer, kept in iq1mSearch.
type iq1mScratch struct {
	buf [32*iq1mVecs + 24]float32
}

// iq1mVectors lists the (i1, i2) of iq1mBestAVX2's vectors (each holds
// i2 and i2+1).
var iq1mVectors = iq1BoundaryPairs(16, 2)

// iq1BoundaryPairs lists, for each i1 = 0..n in ascending order, the pairs
// (i1, i2) for i2 = i1, i1+step, ... ≤ n: the first boundary i2 of each
// vector of a first pass (iq1mBestAVX2, iq1sBestAVX2).
func iq1BoundaryPairs(n, step int) (v [][2]uint8) {
	for i1 := 0; i1 <= n; i1++ {
		for i2 := i1; i2 <= n; i2 += step {
			v = append(v, [2]uint8{uint8(i1), uint8(i2)})
		}
	}
	return v
}

// lanes returns the lane constants of the kernels: lanes[0:4], per lane
// 4j+k, T·v2 of half 0 and half 1, W·v2² of half 0 and half 1, for the
// halves' shifts in the combination k; lanes[4:8] iq1mLaneConsts.
func (s *iq1mSearch) lanes() (lanes [10][8]float32) {
	for l := range 8 {
		k := l % 4
		lanes[0][l], lanes[2][l] = s.txp[0], s.twp[0]
		if k >= 2 {
			lanes[0][l], lanes[2][l] = s.txm[0], s.twm[0]
		}
		lanes[1][l], lanes[3][l] = s.txp[1], s.twp[1]
		if k%2 != 0 {
			lanes[1][l], lanes[3][l] = s.txm[1], s.twm[1]
		}
	}
	copy(lanes[4:8], iq1mLaneConsts[:])
	return lanes
}

// run is the split search of one IQ1_M group (iq1mSearch), with init as the
// scale when no candidate is found: iq1mBestAVX2 and iq1PickAVX2, and
// where they cannot decide, iq1mSearchAVX2, which follows ggml's scan
// candidate by candidate.
func (s *iq1mSearch) run(init float32) {
	if !useAVX2 {
		s.runGeneric(init)
		return
	}
	lanes := s.lanes()
	s.besti1, s.besti2, s.bestK, s.scale = -1, -1, -1, init
	iq1mBestAVX2(&s.tab, &lanes, &s.buf)
	switch w := iq1PickAVX2(&s.buf[0], 32*iq1mVecs); {
	case w >= 0:
		v, l := w/8, w%8
		s.besti1, s.besti2, s.bestK = int(iq1mVectors[v][0]), int(iq1mVectors[v][1])+l/4, l%4
		s.scale = s.buf[3*8*iq1mVecs+w]
	case w == -2:
		if i1, i2, k, scale := iq1mSearchAVX2(&s.tab, &lanes); k >= 0 {
			s.besti1, s.besti2, s.bestK, s.scale = i1, i2, k, scale
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

// iq1sBestAVX2 is iq1mBestAVX2 for IQ1_S: vector v = 0..152 holds the
// boundaries iq1sVectors[v] = (i1, i2), lane 2j+h the candidate (i1, i2+j)
// with the shift +1 (h = 0) or −1 (h = 1); buf as iq1mBestAVX2's with
// n = 8·iq1sVecs. lanes: x_p[1], x_m[1] alternating, the same for
// index 2, then 0, then sumx[32] and sumw[32] broadcast.
//
//go:noescape
func iq1sBestAVX2(tab *[2][48]float32, lanes *[5][8]float32, buf *[32*iq1sVecs + 24]float32)

// iq1sScratch is iq1sBestAVX2's buffer, kept in iq1sSearch.
type iq1sScratch struct {
	buf [32*iq1sVecs + 24]float32
}

// iq1sVectors lists the (i1, i2) of iq1sBestAVX2's vectors (each holds
// i2..i2+3).
var iq1sVectors = iq1BoundaryPairs(32, 4)

// run is the split search of one IQ1_S group (iq1sSearch), with init as the
// scale when no candidate is found: iq1sBestAVX2 and iq1PickAVX2, and
// where they cannot decide, runScan.
func (s *iq1sSearch) run(init float32) {
	if !useAVX2 {
		s.runGeneric(init)
		return
	}
	var lanes [5][8]float32
	for l := 0; l < 8; l += 2 {
		lanes[0][l], lanes[0][l+1] = iq1XP[1], iq1XM[1]
		lanes[1][l], lanes[1][l+1] = iq1XP[2], iq1XM[2]
		lanes[2][l], lanes[2][l+1] = iq1XP[0], iq1XM[0]
		lanes[3][l], lanes[3][l+1] = s.tab[0][32], s.tab[0][32]
		lanes[4][l], lanes[4][l+1] = s.tab[1][32], s.tab[1][32]
	}
	iq1sBestAVX2(&s.tab, &lanes, &s.buf)
	switch w := iq1PickAVX2(&s.buf[0], 32*iq1sVecs); {
	case w >= 0:
		v, l := w/8, w%8
		s.besti1, s.besti2, s.bestShift = int(iq1sVectors[v][0]), int(iq1sVectors[v][1])+l/2, 1-2*(l%2)
		s.scale = s.buf[3*8*iq1sVecs+w]
	case w == -1:
		s.besti1, s.besti2, s.bestShift, s.scale = -1, -1, 0, init
	default:
		s.runScan(init)
	}
}

// runScan is the split search of one IQ1_S group with iq1sPassAVX2, eight
// boundaries i2 at a time: a batch where no lane passes against the best
// score so far is skipped (ggml's scan would not change anything either);
// otherwise its candidates from the first lane that passes on are compared
// in ggml's order with the running best.
func (s *iq1sSearch) runScan(init float32) {
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
