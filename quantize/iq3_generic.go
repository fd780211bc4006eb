//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, the IQ3 grid searches run in plain Go.

// iq3Vec is empty: there is no vector layout of the neighbour lists.
type iq3Vec struct{}

func (*iq3Vec) init(*iq3Tables) {}

// quantGroups is quantGroupsGeneric.
func (t *iq3Tables) quantGroups(xval, waux *[32]float32, id, scale float32, idx *[8]int32) uint8 {
	return t.quantGroupsGeneric(xval, waux, id, scale, idx)
}
