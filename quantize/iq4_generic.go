//go:build !amd64 || purego

package quantize

// Without the amd64 assembly, IQ4_NL and IQ4_XS run in plain Go.

func iq4Trials(xb []float32, weight *[32]float32, ids *[16]float32, sums *[32]float32) {
	iq4TrialsGeneric(xb, weight, ids, sums)
}

func iq4Pack(qs []byte, xb []float32, id float32) { iq4PackGeneric(qs, xb, id) }

func iq4Weights(xb, qw []float32, sigma2 float32, weight *[32]float32) float32 {
	return iq4WeightsGeneric(xb, qw, sigma2, weight)
}
