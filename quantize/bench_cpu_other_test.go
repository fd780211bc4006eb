//go:build !unix

package quantize

// cpuSeconds is not measured here: the benchmarks report wall time only.
func cpuSeconds() float64 { return 0 }
