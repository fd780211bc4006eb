//go:build !amd64 || purego

package quantize

// run is the split search of one IQ1_M group (iq1mSearch).
func (s *iq1mSearch) run(init float32) { s.runGeneric(init) }

// run is the split search of one IQ1_S group (iq1sSearch).
func (s *iq1sSearch) run(init float32) { s.runGeneric(init) }

// iq1mScratch is the buffer of the amd64 kernel (none here).
type iq1mScratch struct{}

// iq1SortOrder16 is iq1SortOrder for a group of 16.
func iq1SortOrder16(idx *[16]uint8, xb []float32) { iq1SortOrder(idx[:], xb[:16]) }

// iq1SortOrder32 is iq1SortOrder for a group of 32.
func iq1SortOrder32(idx *[32]uint8, xb []float32) { iq1SortOrder(idx[:], xb[:32]) }

// iq1sScratch is the buffer of the amd64 kernel (none here).
type iq1sScratch struct{}
