package ggufread

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// FuzzReader parses arbitrary bytes. Whatever the header claims, parsing
// must not panic and must not allocate much more than the input holds (the
// measure is process-wide, so the bound has 32 MiB of slack for the fuzzing
// engine's own allocations; a hostile count would allocate gigabytes); a
// file that parses must re-encode to a header that parses to the same KVs
// and tensor infos.
func FuzzReader(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testdata, "*.gguf"))
	corpus, _ := filepath.Glob(filepath.Join(testdata, "fuzz-corpus", "*"))
	for _, p := range append(seeds, corpus...) {
		b, err := os.ReadFile(p)
		if err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		before := allocatedBytes()
		file, err := parseBytes(data, "fuzz")
		if alloc := allocatedBytes() - before; alloc > uint64(64*len(data))+32<<20 {
			t.Fatalf("allocated %d bytes for a %d-byte input", alloc, len(data))
		}
		if err != nil {
			return
		}
		// Re-encode the header and parse it again (tensor data zero-filled).
		e := gguf.NewEncoder(file.ByteOrder.(binary.AppendByteOrder))
		e.Header(file.Version, uint64(len(file.Tensors)), uint64(len(file.KVs)))
		for _, kv := range file.KVs {
			e.KV(kv)
		}
		for _, ti := range file.Tensors {
			e.TensorInfo(ti)
		}
		out := e.Bytes()
		if int64(len(out)) != file.HeaderSize {
			t.Fatalf("header re-encodes to %d bytes, read %d", len(out), file.HeaderSize)
		}
		out = append(out, data[len(out):]...)
		again, err := parseBytes(out, "fuzz-again")
		if err != nil {
			t.Fatalf("re-encoded file refused: %v", err)
		}
		if len(again.KVs) != len(file.KVs) || len(again.Tensors) != len(file.Tensors) {
			t.Fatal("re-encoded file differs")
		}
		for i := range file.KVs {
			if again.KVs[i].Key != file.KVs[i].Key || !again.KVs[i].Value.Equal(file.KVs[i].Value) {
				t.Fatalf("KV %d differs after re-encoding", i)
			}
		}
	})
}

// allocatedBytes is the cumulative heap allocation of the process
// (runtime/metrics does not stop the world, unlike runtime.ReadMemStats).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
