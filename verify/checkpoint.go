package verify

import (
	"context"
	"fmt"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
)

// CheckpointReference is a Reference made of a source checkpoint through
// the converter's own plan (convert.Plan): the architecture plugin's tensor
// mapping and transforms (Q/K permutation, norm offsets, expert stacking,
// fused-QKV splits …), applied in float32 as the F32 conversion would, and
// the metadata and tokenizer keys the converter derives. Each GGUF tensor is
// so compared with exactly what its source tensors become, nothing undone by
// hand. Tensors are computed on demand from the checkpoint: nothing is
// written to disk.
type CheckpointReference struct {
	plan *convert.Planned
}

// OpenCheckpoint plans the F32 conversion of the checkpoint at src
// (anything convert.Run reads: a Hugging Face folder, a safetensors or
// PyTorch file, a cache entry, Meta's original layout) and opens it as a
// Reference.
func OpenCheckpoint(ctx context.Context, src string) (*CheckpointReference, error) {
	return openCheckpoint(ctx, src, convert.Options{})
}

// OpenMMProjCheckpoint is OpenCheckpoint for a multimodal projector: the
// checkpoint's towers and projector as the --mmproj conversion maps them.
func OpenMMProjCheckpoint(ctx context.Context, src string) (*CheckpointReference, error) {
	return openCheckpoint(ctx, src, convert.Options{MMProj: true})
}

func openCheckpoint(ctx context.Context, src string, opts convert.Options) (*CheckpointReference, error) {
	p, err := convert.Plan(ctx, src, opts)
	if err != nil {
		return nil, fmt.Errorf("verify: reference %s: %w", src, err)
	}
	return &CheckpointReference{plan: p}, nil
}

// KVs are the metadata the F32 conversion would write.
func (r *CheckpointReference) KVs() []gguf.KV { return r.plan.KVs() }

// Tensors lists the conversion's tensors.
func (r *CheckpointReference) Tensors() []RefTensor {
	pts := r.plan.Tensors()
	out := make([]RefTensor, len(pts))
	for i, t := range pts {
		out[i] = RefTensor{Name: t.Name, Shape: t.Shape}
	}
	return out
}

// ReadRows computes rows of a tensor from the checkpoint.
func (r *CheckpointReference) ReadRows(ctx context.Context, name string, row0, nrows int, dst []float32) error {
	return r.plan.ReadRows(ctx, name, row0, nrows, dst)
}

// Close releases the checkpoint.
func (r *CheckpointReference) Close() error { return r.plan.Close() }
