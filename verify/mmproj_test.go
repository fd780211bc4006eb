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
