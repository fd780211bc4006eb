//go:build !purego

package quantize

import "math"

// The amd64 kernel of the IQ3 grid search (iq3_amd64.s); the purego build
// tag turns it off, and TestIQ3GroupsAVX2 and TestEncodeAsmMatchesGeneric
// check it against the Go form.

// iq3NbrBlock holds eight entries of a neighbour list in the lanes: the
// four float values 2l+1 of each entry's grid point (coordinate c of entry
// j at q[c][j]) and its grid index. Lanes past the end of a list hold NaN
// values, whose distance is never below the best.
type iq3NbrBlock struct {
	q     [4][8]float32
	index [8]int32
}

// iq3Vec is the vector layout of an iq3Tables' map and neighbour lists.
type iq3Vec struct {
	// kmap is iq3Tables.kmap with, for a quadruple off the grid, ^(b<<3|n)
	// where blocks[b:b+n] hold its neighbour list.
	kmap   [4096]int32
	blocks []iq3NbrBlock
}

func (v *iq3Vec) init(t *iq3Tables) {
	nan := float32(math.NaN())
	for u, m := range t.kmap {
		if m >= 0 {
			v.kmap[u] = m
			continue
		}
		off := int(-m-1) + 1
		list := t.neighbours[off : off+int(t.neighbours[off-1])]
		start := len(v.blocks)
		for j := 0; j < len(list); j += 8 {
			var b iq3NbrBlock
			for i := range 8 {
				for c := range 4 {
					b.q[c][i] = nan
				}
				if j+i < len(list) {
					p := int32(list[j+i])
					b.index[i] = p
					for c := range 4 {
						b.q[c][i] = t.vals[p][c]
					}
				}
			}
			v.blocks = append(v.blocks, b)
		}
		v.kmap[u] = ^int32(start<<3 | (len(v.blocks) - start))
	}
}

// iq3GroupsAVX2 is quantGroupsGeneric on the tables kmap and blocks of an
// iq3Vec: the levels of all 32 values at once, the eight map lookups by a
// gather, then for each group off the grid the distances of eight
// neighbours at a time, each lane keeping its first best, and the first
// entry of the list among the lanes' best.
//
//go:noescape
func iq3GroupsAVX2(xval, waux *[32]float32, id, scale float32, kmap *[4096]int32, blocks *iq3NbrBlock, idx *[8]int32) uint8

// quantGroups is quantGroupsGeneric, in assembly where AVX2 is available.
func (t *iq3Tables) quantGroups(xval, waux *[32]float32, id, scale float32, idx *[8]int32) uint8 {
	if !useAVX2 {
		return t.quantGroupsGeneric(xval, waux, id, scale, idx)
	}
	return iq3GroupsAVX2(xval, waux, id, scale, &t.vec.kmap, &t.vec.blocks[0], idx)
}
