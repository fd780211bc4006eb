package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ggufkit/ggufkit/convert"
)

// CheckpointReference is a Reference made of a source checkpoint through
// the converter's own plan: the architecture plugin's tensor mapping and
// transforms (Q/K permutation, norm offsets, fused-QKV splits …), applied in
// float32, and the metadata and tokenizer keys the converter derives. Each
// GGUF tensor is so compared with exactly what its source tensors become,
// nothing undone by hand.
//
// It is built by converting the checkpoint to an F32 GGUF in a temporary
// file (as large as the model in float32) that Close removes.
type CheckpointReference struct {
	Reference
	f    *File
	path string
}

// OpenCheckpoint converts the checkpoint at src (anything convert.Run reads:
// a Hugging Face folder, a safetensors or PyTorch file, a cache entry) into
// a temporary F32 GGUF under tmpDir ("" for os.TempDir) and opens it as a
// Reference. threads bounds the conversion's parallelism (0: all CPUs).
func OpenCheckpoint(ctx context.Context, src, tmpDir string, threads int) (*CheckpointReference, error) {
	dir, err := os.MkdirTemp(tmpDir, "ggufkit-verify-")
	if err != nil {
		return nil, fmt.Errorf("verify: reference of %s: %w", src, err)
	}
	path := filepath.Join(dir, "reference-f32.gguf")
	if _, err := convert.Run(ctx, src, convert.Options{OutType: "f32", OutFile: path, Threads: threads}); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("verify: converting the reference %s: %w", src, err)
	}
	f, err := Open(path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("verify: reference of %s: %w", src, err)
	}
	return &CheckpointReference{Reference: GGUFReference(f), f: f, path: dir}, nil
}

// Close releases the reference and removes its temporary file.
func (r *CheckpointReference) Close() error {
	return errors.Join(r.f.Close(), os.RemoveAll(r.path))
}
