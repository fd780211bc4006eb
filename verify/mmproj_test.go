package verify

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
)

// TestMMProj converts each fixture's projector and verifies it, alone and
// against its checkpoint; then breaks it (a tensor missing, a width key
// that disagrees with the shapes) and expects the structural check to say
// so.
func TestMMProj(t *testing.T) {
	for _, name := range []string{"gemma3mm", "mistral3", "pixtral", "qwen25vl", "qwen3vl", "llama4", "glm4v", "smolvlm", "lfm2vl", "qwen2audio", "voxtral", "qwen2vl", "gemma4", "gemma4moe", "internvl", "internvlchat", "ultravox", "kimivl", "qwen25omni"} {
		t.Run(name, func(t *testing.T) {
			src := assembleFixture(t, name)
			out := filepath.Join(t.TempDir(), "mmproj.gguf")
			if _, err := convert.Run(context.Background(), src, convert.Options{OutType: "f16", OutFile: out, MMProj: true}); err != nil {
				t.Fatal(err)
			}
			f := open(t, out)
			if rep := run(t, f, nil, Options{}); !rep.OK || rep.Arch != "clip" {
				t.Fatalf("structure: %v", rep.Problems)
			}
			ref, err := OpenMMProjCheckpoint(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			if rep := run(t, f, ref, Options{}); !rep.OK {
				t.Fatalf("against the checkpoint: %v", rep.Problems)
			}
			info, probs := ReadMMProj(f)
			if len(probs) > 0 || !info.Known || info.Vision == nil && info.Audio == nil || !strings.Contains(info.Describe(), " tower: ") {
				t.Errorf("ReadMMProj: %+v %v", info, probs)
			}

			broken := &File{Name: "broken", KVs: slices.Clone(f.KVs), close: func() error { return nil }}
			for _, ti := range f.Tensors {
				if !strings.HasSuffix(ti.Name, ".blk.0.ln1.weight") {
					broken.Tensors = append(broken.Tensors, ti)
				}
			}
			for i, kv := range broken.KVs {
				if strings.HasSuffix(kv.Key, ".feed_forward_length") {
					broken.KVs[i].Value = gguf.Uint32(7)
				}
			}
			broken.index()
			v := &verifier{f: broken, rep: &Report{}}
			v.checkMMProj()
			got := ""
			for _, p := range v.rep.Problems {
				got += p.String() + "\n"
			}
			wants := []string{"blk.0.ln1.weight: missing", "blk.0.ffn_up.weight: shape"}
			if projectorRules[info.Projector].anyFFN {
				wants = wants[:1] // feed_forward_length is not checked against the blocks
			}
			for _, want := range wants {
				if !strings.Contains(got, want) {
					t.Errorf("broken file: no %q in\n%s", want, got)
				}
			}
		})
	}
}

// TestMMProjGemma4Audio checks Gemma 4's two-tower file against both its
// tables: the fixture's F32, F16 and Q8_0 conversions pass, and files with
// a gemma4a tensor missing, misshapen or a clip.audio.* key that disagrees
// with the shapes fail naming the audio tensor (and no vision one).
func TestMMProjGemma4Audio(t *testing.T) {
	dir := assembleFixture(t, "gemma4")
	for _, outType := range []string{"f32", "f16", "q8_0"} {
		t.Run(outType, func(t *testing.T) {
			if got := mmprojProblems(open(t, convertMMProj(t, dir, outType))); got != "" {
				t.Fatalf("structure:\n%s", got)
			}
		})
	}
	f := open(t, convertMMProj(t, dir, "f16"))
	drop := func(name string) func(*File) {
		return func(b *File) {
			b.Tensors = slices.DeleteFunc(b.Tensors, func(ti gguf.TensorInfo) bool { return ti.Name == name })
		}
	}
	reshape := func(name string, shape ...uint64) func(*File) {
		return func(b *File) {
			for i := range b.Tensors {
				if b.Tensors[i].Name == name {
					b.Tensors[i].Shape = shape
				}
			}
		}
	}
	setKey := func(key string, n uint32) func(*File) {
		return func(b *File) {
			for i := range b.KVs {
				if b.KVs[i].Key == key {
					b.KVs[i].Value = gguf.Uint32(n)
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		break_ func(*File)
		want   string
	}{
		{"subsampling convolution missing", drop("a.conv1d.1.weight"), "a.conv1d.1.weight: missing (projector gemma4a needs it)"},
		{"input projection missing", drop("a.input_projection.weight"), "a.input_projection.weight: missing"},
		{"depthwise convolution missing", drop("a.blk.0.conv_dw.weight"), "a.blk.0.conv_dw.weight: missing"},
		{"second half-step FFN missing", drop("a.blk.0.ffn_down_1.weight"), "a.blk.0.ffn_down_1.weight: missing"},
		{"two-channel input convolution", reshape("a.conv1d.0.weight", 3, 3, 2, 8), "a.conv1d.0.weight: shape [3 3 2 8]: dimension 2 is 2, the projector needs 1"},
		{"depthwise kernel of 3", reshape("a.blk.0.conv_dw.weight", 3, 16), "a.blk.0.conv_dw.weight: shape [3 16]"},
		{"pointwise convolution without its gate half", reshape("a.blk.0.conv_pw1.weight", 16, 16), "a.blk.0.conv_pw1.weight: shape [16 16]: dimension 1 is 16, the clip.* keys give 32 (2 × embedding_length)"},
		{"relative-position keys misshapen", reshape("a.blk.0.attn_k_rel.weight", 16, 8), "a.blk.0.attn_k_rel.weight: shape [16 8]"},
		{"per_dim_scale over the width", reshape("a.blk.0.per_dim_scale.weight", 16), "a.blk.0.per_dim_scale.weight: shape [16]: dimension 0 is 16, the clip.* keys give 8"},
		{"clamp bound not a scalar", reshape("a.blk.0.attn_q.input_max", 2), "a.blk.0.attn_q.input_max: shape [2]"},
		{"output projection misshapen", reshape("a.pre_encode.out.weight", 8, 16), "a.pre_encode.out.weight: shape [8 16]"},
		{"wrong audio FFN width", setKey("clip.audio.feed_forward_length", 7), "a.blk.0.ffn_up_1.weight: shape"},
		{"wrong audio width", setKey("clip.audio.embedding_length", 7), "a.input_projection.weight: shape"},
		{"wrong audio projection dim", setKey("clip.audio.projection_dim", 7), "mm.a.input_projection.weight: shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &File{Name: "broken", KVs: slices.Clone(f.KVs), close: func() error { return nil }}
			for _, ti := range f.Tensors {
				ti.Shape = slices.Clone(ti.Shape)
				b.Tensors = append(b.Tensors, ti)
			}
			tc.break_(b)
			b.index()
			got := mmprojProblems(b)
			if !strings.Contains(got, tc.want) {
				t.Errorf("no %q in\n%s", tc.want, got)
			}
			if strings.Contains(got, "\nv.") || strings.HasPrefix(got, "v.") || strings.Contains(got, "mm.input_projection") {
				t.Errorf("a vision tensor reported for an audio break:\n%s", got)
			}
		})
	}
}

// mmprojProblems runs checkMMProj alone and returns its problems, one a line.
func mmprojProblems(f *File) string {
	v := &verifier{f: f, rep: &Report{}}
	v.checkMMProj()
	got := ""
	for _, p := range v.rep.Problems {
		got += p.String() + "\n"
	}
	return got
}
