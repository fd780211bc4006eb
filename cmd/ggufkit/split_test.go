package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSplitMergeCommands: split cuts the file into the planned shards,
// refuses to overwrite them without --force, and merge --strip-split-keys
// gives back the original bytes.
func TestSplitMergeCommands(t *testing.T) {
	const in = "../../testdata/stories260K/gguf/stories260K-F16.gguf"
	dir := t.TempDir()
	prefix := filepath.Join(dir, "s")

	out, errs, code := runCLI(t, "split", "--split-max-tensors", "20", "--dry-run", in, prefix)
	if code != 0 || !strings.Contains(out, "n_split: 3") {
		t.Fatalf("dry run: code %d, stdout %q, stderr %q", code, out, errs)
	}
	if m, _ := filepath.Glob(prefix + "*"); len(m) != 0 {
		t.Fatalf("dry run wrote %v", m)
	}
	if _, errs, code = runCLI(t, "split", "--split-max-tensors", "20", in, prefix); code != 0 {
		t.Fatalf("split: code %d, stderr %q", code, errs)
	}
	first := prefix + "-00001-of-00003.gguf"
	for _, n := range []string{first, prefix + "-00002-of-00003.gguf", prefix + "-00003-of-00003.gguf"} {
		if _, err := os.Stat(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, errs, code = runCLI(t, "split", "--split-max-tensors", "20", in, prefix); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("second split without --force: code %d, stderr %q", code, errs)
	}
	if _, errs, code = runCLI(t, "split", "--split-max-tensors", "20", "--split-max-size", "1M", in, prefix); code != 2 {
		t.Errorf("both limits: code %d, stderr %q", code, errs)
	}

	merged := filepath.Join(dir, "merged.gguf")
	if _, errs, code = runCLI(t, "merge", "--strip-split-keys", first, merged); code != 0 {
		t.Fatalf("merge: code %d, stderr %q", code, errs)
	}
	want, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("merge --strip-split-keys: %d bytes, not the original %d", len(got), len(want))
	}
	if _, errs, code = runCLI(t, "merge", prefix+"-00002-of-00003.gguf", filepath.Join(dir, "m2.gguf")); code == 0 {
		t.Errorf("merge from the second shard succeeded: stderr %q", errs)
	}
}
