package mix

import (
	"fmt"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// mixtral builds the quantizable tensors of an 8-expert, 32-layer GQA model
// (Mixtral 8x7B shapes; stacked experts are 3-D).
func mixtral() (Model, []Tensor) {
	m := Model{Arch: "llama", Layers: 32, Heads: 32, HeadsKV: 8, Experts: 8}
	ts := []Tensor{
		{Name: "token_embd.weight", Shape: []uint64{4096, 32000}},
		{Name: "output.weight", Shape: []uint64{4096, 32000}},
	}
	for l := range m.Layers {
		add := func(n string, shape ...uint64) {
			ts = append(ts, Tensor{Name: fmt.Sprintf("blk.%d.%s.weight", l, n), Shape: shape})
		}
		add("attn_q", 4096, 4096)
		add("attn_k", 4096, 1024)
		add("attn_v", 4096, 1024)
		add("attn_output", 4096, 4096)
		add("ffn_gate_inp", 4096, 8)
		add("ffn_gate_exps", 4096, 14336, 8)
		add("ffn_up_exps", 4096, 14336, 8)
		add("ffn_down_exps", 14336, 4096, 8)
	}
	for i := range ts {
		ts[i].Type = gguf.F16
	}
	Sort(ts)
	return m, ts
}

// TestMoEDecisions checks the expert-count rules of llama_tensor_get_type_impl
// (expectations read off llama-quant.cpp L490-711).
func TestMoEDecisions(t *testing.T) {
	m, ts := mixtral()
	cases := []struct {
		preset string
		want   map[string]gguf.Type
	}{
		{"Q4_K_M", map[string]gguf.Type{
			"output.weight":               gguf.Q6_K,
			"token_embd.weight":           gguf.Q4_K,
			"blk.0.attn_v.weight":         gguf.Q8_0, // n_expert == 8
			"blk.0.attn_k.weight":         gguf.Q8_0, // n_expert == 8
			"blk.0.attn_output.weight":    gguf.Q5_K, // 8 experts and Q4_K_M
			"blk.0.attn_q.weight":         gguf.Q4_K,
			"blk.0.ffn_gate_inp.weight":   gguf.F16,  // never quantized
			"blk.0.ffn_down_exps.weight":  gguf.Q6_K, // layer 0 < 32/8: more bits
			"blk.5.ffn_down_exps.weight":  gguf.Q4_K, // (5-4)%3 == 1: no more bits
			"blk.6.ffn_down_exps.weight":  gguf.Q6_K, // (6-4)%3 == 2
			"blk.7.ffn_down_exps.weight":  gguf.Q4_K,
			"blk.31.ffn_down_exps.weight": gguf.Q6_K, // last eighth
			"blk.3.ffn_up_exps.weight":    gguf.Q4_K,
		}},
		{"Q2_K", map[string]gguf.Type{
			"blk.0.attn_v.weight":        gguf.Q8_0,
			"blk.0.attn_output.weight":   gguf.Q5_K,
			"blk.0.ffn_down_exps.weight": gguf.Q3_K,
			"blk.0.ffn_gate_exps.weight": gguf.Q2_K,
			"output.weight":              gguf.Q6_K,
		}},
		{"IQ2_XS", map[string]gguf.Type{
			"blk.0.attn_v.weight":        gguf.Q4_K, // n_gqa 4 / n_expert ≥ 4
			"blk.0.attn_k.weight":        gguf.Q4_K, // n_expert == 8
			"blk.0.attn_output.weight":   gguf.Q5_K,
			"blk.0.ffn_down_exps.weight": gguf.Q2_K, // i_ffn_down < n_ffn_down/8
			"blk.9.ffn_down_exps.weight": gguf.IQ2_XS,
			"token_embd.weight":          gguf.Q2_K,
			"output.weight":              gguf.Q5_K,
		}},
		{"MXFP4_MOE", map[string]gguf.Type{
			"blk.0.ffn_down_exps.weight": gguf.MXFP4,
			"blk.0.ffn_up_exps.weight":   gguf.MXFP4,
			"blk.0.attn_q.weight":        gguf.Q8_0,
			"output.weight":              gguf.Q8_0,
			"token_embd.weight":          gguf.Q8_0, // the MXFP4_MOE branch comes before the token_embd one
		}},
	}
	for _, c := range cases {
		t.Run(c.preset, func(t *testing.T) {
			target, err := ParseTarget(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			def, _ := DefaultType(target.Preset.FileType)
			ds, err := Plan(m, ts, def, &Options{FileType: target.Preset.FileType})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for i, d := range ds {
				if want, ok := c.want[ts[i].Name]; ok {
					seen++
					if d.Type != want {
						t.Errorf("%s: %s, want %s", ts[i].Name, d.Type, want)
					}
				}
			}
			if seen != len(c.want) {
				t.Fatalf("only %d of %d tensors found", seen, len(c.want))
			}
		})
	}
}

func TestMoELayerFromName(t *testing.T) {
	m := Model{Arch: "llama", Layers: 4, Experts: 8}
	_, err := Plan(m, []Tensor{{Name: "blk.x.ffn_down_exps.weight", Type: gguf.F16, Shape: []uint64{256, 256, 8}}},
		gguf.Q4_K, &Options{FileType: gguf.FileTypeQ4_K_M})
	if err == nil {
		t.Fatal("unparsable layer accepted")
	}
	_, err = Plan(m, []Tensor{{Name: "blk.9.ffn_down_exps.weight", Type: gguf.F16, Shape: []uint64{256, 256, 8}}},
		gguf.Q4_K, &Options{FileType: gguf.FileTypeQ4_K_M})
	if err == nil {
		t.Fatal("layer beyond block_count accepted")
	}
}

func TestParseTarget(t *testing.T) {
	cases := []struct {
		in     string
		preset string
		typ    gguf.Type
	}{
		{"q4_k_m", "Q4_K_M", 0},
		{"Q4_K", "Q4_K", 0}, // alias, ftype Q4_K_M
		{"IQ2_S", "IQ2_S", 0},
		{"15", "Q4_K", 0}, // the first preset with ftype 15 is the alias, as in try_parse_ftype
		{"0", "F32", 0},
		{"COPY", "COPY", 0},
		{"MXFP4", "", gguf.MXFP4},
		{"NVFP4", "", gguf.NVFP4},
		{"ggml:IQ2_S", "", gguf.IQ2_S},
		{"ggml:q4_k", "", gguf.Q4_K},
	}
	for _, c := range cases {
		got, err := ParseTarget(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if c.preset != "" && (got.Preset == nil || got.Preset.Name != c.preset) || c.preset == "" && (got.Preset != nil || got.Type != c.typ) {
			t.Errorf("%s: %+v", c.in, got)
		}
	}
	for _, bad := range []string{"Q4_K_X", "ggml:Q4_2", "99", ""} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
