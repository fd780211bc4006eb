//go:build !unix && !windows

package main

// peakRSS is 0 where the system has no way to tell the peak memory.
func peakRSS() uint64 { return 0 }
