package main

import (
	"os"
	"syscall"
	"testing"
)

// TestSignalStatus checks the exit statuses of a run stopped by a signal.
func TestSignalStatus(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		if got := (signalError{tc.sig}).status(); got != tc.want {
			t.Errorf("%v: status %d, want %d", tc.sig, got, tc.want)
		}
	}
}
