//go:build !unix

package main

import "time"

// cpuTime is 0 where getrusage is not available: the CPU-seconds columns
// then stay empty.
func cpuTime() time.Duration { return 0 }
