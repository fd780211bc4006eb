//go:build !amd64 || purego

package quantize

// run is the split search of one IQ1_M group (iq1mSearch).
func (s *iq1mSearch) run(init float32) { s.runGeneric(init) }

// run is the split search of one IQ1_S group (iq1sSearch).
func (s *iq1sSearch) run(init float32) { s.runGeneric(init) }
