//go:build !purego

package forward

import "testing"

// TestKFusedAVX2 runs checkKFused with the AVX2 four-input kernels where
// the CPU would pick the VNNI ones, so both stay exact.
func TestKFusedAVX2(t *testing.T) {
	if !useVNNI {
		t.Skip("the VNNI kernels are not in use: TestKFused ran the AVX2 ones")
	}
	useVNNI = false
	defer func() { useVNNI = true }()
	checkKFused(t)
}
