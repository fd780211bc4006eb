package arch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestGemma3ConditionalGenerationFilter checks that the text tower of a
// Gemma3ForConditionalGeneration checkpoint maps under both the Hub's
// transformers-4.50 layout and transformers 5's, and that the SigLIP tower
// and the projector are dropped (TextModel.filter_tensors).
func TestGemma3ConditionalGenerationFilter(t *testing.T) {
	const cfg = `{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3_text","num_hidden_layers":2,` +
		`"hidden_size":8,"head_dim":4,"vocab_size":16,"sliding_window":16}`
	m, err := New(hp(t, cfg), "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Arch() != "gemma3" {
		t.Fatalf("arch %q", m.Arch())
	}
	for _, c := range []struct{ in, out string }{
		{"language_model.model.layers.1.self_attn.q_proj.weight", "blk.1.attn_q.weight"},
		{"model.language_model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
		{"language_model.model.norm.weight", "output_norm.weight"},
		{"vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", ""},
		{"model.vision_tower.embeddings.patch_embedding.weight", ""},
		{"multi_modal_projector.mm_input_projection_weight", ""},
		{"model.multi_modal_projector.mm_soft_emb_norm.weight", ""},
	} {
		name, ok := m.Filter(c.in)
		if c.out == "" {
			if ok {
				t.Errorf("%s kept as %s", c.in, name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s dropped", c.in)
			continue
		}
		outs, err := m.Modify(Input{Name: name, Source: c.in, Shape: []int64{8, 8}}, BlockID(name))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if len(outs) != 1 || outs[0].Name != c.out {
			t.Errorf("%s: outputs %+v, want %s", c.in, outs, c.out)
		}
	}
	if _, err := m.Modify(Input{Name: "model.layers.2.mlp.up_proj.weight", Shape: []int64{8, 8}}, 2); err == nil {
		t.Error("block 2 of 2 accepted")
	}
}

// TestEmbeddingGemmaSlidingWindow checks that the sliding window comes from
// config.json as written (not the hparams) and that its absence is an error,
// as EmbeddingGemma.set_gguf_parameters has it.
func TestEmbeddingGemmaSlidingWindow(t *testing.T) {
	const base = `"architectures":["Gemma3TextModel"],"model_type":"gemma3_text","num_hidden_layers":2,` +
		`"hidden_size":8,"head_dim":4,"vocab_size":16`
	for _, c := range []struct {
		name, file string
		want       uint32 // 0: an error
	}{
		{"as written", `{` + base + `,"sliding_window":257}`, 257},
		{"absent", `{` + base + `}`, 0},
		{"null", `{` + base + `,"sliding_window":null}`, 0},
		{"not a number", `{` + base + `,"sliding_window":"x"}`, 0},
		{"no config.json", "", 0},
		{"broken config.json", `{` + base, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The hparams say 512 (the converter's hparams are Gemma3TextConfig's, not the file).
			m, err := New(hp(t, `{`+base+`,"sliding_window":512}`), dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Arch() != "gemma-embedding" {
				t.Fatalf("arch %q", m.Arch())
			}
			kvs, err := m.Params(gguf.FileTypeAllF32)
			if c.want == 0 {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var l gguf.KVList
			l.Append(kvs...)
			v, ok := l.Get("gemma-embedding.attention.sliding_window")
			if !ok || v != gguf.Uint32(c.want) {
				t.Errorf("sliding_window %v, want %d", v, c.want)
			}
		})
	}
}
