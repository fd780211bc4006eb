//go:build !purego

package readers

import "golang.org/x/sys/cpu"

// The amd64 kernels for the two conversions models use most (BF16 and F16
// weights). The purego build tag turns them off; tests check that both
// paths give identical bits.

//go:noescape
func bf16ToF32AVX2(dst *float32, src *byte, n int)

//go:noescape
func f16ToF32F16C(dst *float32, src *byte, n int)

var (
	useAVX2 = cpu.X86.HasAVX2
	useF16C = cpu.X86.HasAVX && cpu.X86.HasF16C
)

// bf16Fast converts the longest prefix of whole 16-value blocks it can and
// returns how many values it converted.
func bf16Fast(dst []float32, src []byte) int {
	n := len(dst) &^ 15
	if !useAVX2 || n == 0 {
		return 0
	}
	bf16ToF32AVX2(&dst[0], &src[0], n)
	return n
}

// f16Fast is bf16Fast for IEEE halves.
func f16Fast(dst []float32, src []byte) int {
	n := len(dst) &^ 15
	if !useF16C || n == 0 {
		return 0
	}
	f16ToF32F16C(&dst[0], &src[0], n)
	return n
}
