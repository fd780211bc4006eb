//go:build unix && !darwin && !ios

package main

import "syscall"

// peakRSS is the process's peak resident set size in bytes (getrusage;
// Linux and the BSDs count ru_maxrss in kilobytes).
func peakRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024
}
