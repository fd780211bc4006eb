package arch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// materializedNames is gguf.TensorNameMap as the converter builds it:
// every block's names spelled out, later keys replacing earlier ones.
func materializedNames(t *testing.T, arch string, nBlocks int) map[string]mapped {
	t.Helper()
	tb, err := loadTables()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]mapped{}
	a := tb.Archs[arch]
	for _, e := range a.Map {
		if !strings.Contains(e[0], "{bid}") && !strings.Contains(e[2], "{bid}") {
			m[e[0]] = mapped{Kind(e[1]), e[2]}
		}
	}
	for bid := range nBlocks {
		b := strconv.Itoa(bid)
		for _, e := range a.Map {
			if strings.Contains(e[0], "{bid}") || strings.Contains(e[2], "{bid}") {
				m[strings.ReplaceAll(e[0], "{bid}", b)] = mapped{Kind(e[1]), strings.ReplaceAll(e[2], "{bid}", b)}
			}
		}
	}
	return m
}

// TestNameMapMatchesMaterialized: the lazily matched block names give
// exactly the map gguf.TensorNameMap spells out, for every architecture of
// the tables, and nothing for a block past the count or a block number
// not written as Python's str writes it.
func TestNameMapMatchesMaterialized(t *testing.T) {
	tb, err := loadTables()
	if err != nil {
		t.Fatal(err)
	}
	const nBlocks = 3
	for arch := range tb.Archs {
		nm, err := NewNameMap(arch, nBlocks)
		if err != nil {
			t.Fatal(err)
		}
		want := materializedNames(t, arch, nBlocks)
		for key, w := range want {
			for _, suffix := range []string{"", ".weight", ".bias"} {
				k, name, ok := nm.Lookup(key + suffix)
				if !ok || k != w.kind || name != w.name+suffix {
					t.Fatalf("%s: Lookup(%q) = %s %q %v, want %s %q", arch, key+suffix, k, name, ok, w.kind, w.name+suffix)
				}
			}
		}
		for key := range materializedNames(t, arch, nBlocks+2) {
			if _, in := want[key]; in {
				continue
			}
			if _, name, ok := nm.Lookup(key); ok {
				t.Fatalf("%s: %q (a block past %d) mapped to %q", arch, key, nBlocks, name)
			}
		}
	}
	nm, err := NewNameMap("llama", 12)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"model.layers.01.mlp.up_proj.weight", "model.layers.-1.mlp.up_proj.weight", "model.layers.+1.mlp.up_proj.weight", "model.layers..mlp.up_proj.weight"} {
		if _, name, ok := nm.Lookup(bad); ok {
			t.Errorf("%q mapped to %q", bad, name)
		}
	}
}

// allocatedBytes is the cumulative heap allocation of the process
// (runtime/metrics does not stop the world, unlike runtime.ReadMemStats).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestIssueBlockCountAllocation: a config.json claiming 65536 blocks (the
// most newText accepts) allocated the names of every block up front, about
// 3 GB for llama; the name map now costs the same for any block count.
func TestIssueBlockCountAllocation(t *testing.T) {
	before := allocatedBytes()
	m, err := New(hp(t, `{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 65536}`), "")
	if alloc := allocatedBytes() - before; alloc > 8<<20 {
		t.Fatalf("New allocated %d bytes", alloc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, name, ok := m.Names().Lookup("model.layers.65535.mlp.up_proj.weight"); !ok || name != "blk.65535.ffn_up.weight" {
		t.Errorf("last block: %q %v", name, ok)
	}
	if _, name, ok := m.Names().Lookup("model.layers.65536.mlp.up_proj.weight"); ok {
		t.Errorf("block 65536 mapped to %q", name)
	}
}

// TestHostileConfig: config.json values a model class cannot use are
// refused with an error naming the key (or the GGUF key it feeds) and
// showing the value as JSON has it, never a panic or an allocation sized
// by the value.
func TestHostileConfig(t *testing.T) {
	const llama = `"architectures":["LlamaForCausalLM"],"model_type":"llama","num_hidden_layers":1,"hidden_size":16,` +
		`"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":8,"max_position_embeddings":64`
	const mixtral = `"architectures":["MixtralForCausalLM"],"model_type":"mixtral","num_hidden_layers":1,"hidden_size":4,` +
		`"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":10`
	const phi3 = `"architectures":["Phi3ForCausalLM"],"model_type":"phi3","num_hidden_layers":1,"hidden_size":64,` +
		`"num_attention_heads":8,"num_key_value_heads":8,"rms_norm_eps":1e-5,"max_position_embeddings":64,"intermediate_size":32,"rope_theta":10000`
	const longrope = `"rope_scaling":{"type":"longrope","long_factor":[1,1,1,1],"short_factor":[1,1,1,1],"original_max_position_embeddings":`
	const neox = `"architectures":["GPTNeoXForCausalLM"],"model_type":"gpt_neox","num_hidden_layers":1,"hidden_size":16,` +
		`"num_attention_heads":2,"max_position_embeddings":64,"intermediate_size":32,"layer_norm_eps":1e-5`
	expert := Input{Name: "model.layers.0.block_sparse_moe.experts.0.w1.weight", Shape: []int64{3, 4}}
	qproj := Input{Name: "model.layers.0.self_attn.q_proj.weight", Shape: []int64{16, 16}}
	for _, tc := range []struct {
		name, config string
		// run is the step that must fail: "params", "extra" or "modify" (of in).
		run  string
		in   Input
		want string
	}{
		// IssueQuotedValues: an integer given as a string read as the number in
		// the message.
		{"IssueQuotedValues", llama + `,"num_attention_heads":"2"`, "modify", qproj, `config.json: num_attention_heads: "2" is not an integer`},
		{"heads as an object", llama + `,"num_attention_heads":{}`, "modify", qproj, `config.json: num_attention_heads: an object is not an integer`},
		{"head_dim as a string", llama + `,"head_dim":"8"`, "params", Input{}, `llama.attention.key_length: "8" is not a uint32`},
		// IssueFloat32Overflow: 1e300 was written as +Inf (struct.pack
		// refuses it).
		{"IssueFloat32Overflow", llama + `,"rms_norm_eps":1e300`, "params", Input{}, `llama.attention.layer_norm_rms_epsilon: 1e300 is out of float32 range`},
		{"rope base beyond float32", llama + `,"rope_theta":-1e39`, "params", Input{}, `llama.rope.freq_base: -1e39 is out of float32 range`},
		// IssueInt32ArrayTruncated: a per-layer value past int32 was
		// silently truncated.
		{"IssueInt32ArrayTruncated", llama + `,"intermediate_size":[32,4294967296]`, "params", Input{}, `llama.feed_forward_length[1]: 4294967296 is not an int32`},
		{"mrope section beyond int32", llama + `,"rope_scaling":{"mrope_section":[16,-2147483649]}`, "params", Input{}, `mrope_section[1]: -2147483649 is not an int32`},
		// IssueZeroExperts: 0 experts made a block complete before any
		// expert arrived and the stacker indexed an empty list.
		{"IssueZeroExperts", mixtral + `,"num_local_experts":0`, "modify", expert, `config.json: num_local_experts: 0 is not an expert count`},
		// IssueNegativeExperts: make([]held, -1).
		{"IssueNegativeExperts", mixtral + `,"num_local_experts":-1`, "modify", expert, `num_local_experts: -1 is not an expert count`},
		// IssueExpertCountOverflow: 2^62 experts × 3 projections
		// overflowed to a negative tensor count.
		{"IssueExpertCountOverflow", mixtral + `,"num_local_experts":4611686018427387904`, "modify", expert, `num_local_experts: 4611686018427387904 is not an expert count`},
		// IssueLlama3RopeHeadDim: llama3 rope factors were generated
		// for any head_dim, 2^40 of them for head_dim 2^41.
		{"IssueLlama3RopeHeadDim", llama + `,"head_dim":2199023255552,"rope_scaling":{"rope_type":"llama3"}`, "extra", Input{}, `config.json: head_dim: 2199023255552 is not a head size for llama3 rope factors`},
		{"llama3 rope zero head_dim", llama + `,"head_dim":0,"rope_scaling":{"rope_type":"llama3"}`, "extra", Input{}, `config.json: head_dim: 0 is not a head size`},
		{"llama3 rope factor as a string", llama + `,"rope_scaling":{"rope_type":"llama3","factor":"x"}`, "extra", Input{}, `config.json: rope_scaling.factor: "x" is not a number`},
		// IssuePartialRotaryOverflow: int64(1e300 × 64) is out of range; it
		// became a negative rope dimension count.
		{"IssuePartialRotaryOverflow", phi3 + `,"partial_rotary_factor":1e300,` + longrope + `32}`, "params", Input{}, `config.json: partial_rotary_factor: 1e300 gives 6.4e+301 rotary dimensions of 64`},
		{"IssueNeoXRotaryOverflow", neox + `,"rotary_pct":1e300`, "params", Input{}, `config.json: rotary_pct: 1e300 gives 8e+300 rotary dimensions`},
		// IssuePhi3ZeroOriginalContext: the converter's division by zero
		// gave an infinite scale and a NaN attention factor.
		{"IssuePhi3ZeroOriginalContext", phi3 + `,` + longrope + `0}`, "extra", Input{}, `config.json: original_max_position_embeddings: 0 is not a context length`},
		// IssuePhi3LogZero: log(1) = 0 divided: an infinite attention factor.
		{"IssuePhi3LogZero", phi3 + `,` + longrope + `1}`, "extra", Input{}, `config.json: original_max_position_embeddings: 1 gives attention factor +Inf`},
		{"zero heads", phi3 + `,"num_attention_heads":0,` + longrope + `32}`, "params", Input{}, `config.json: num_attention_heads: 0 is not a head count`},
		// IssueArchitecturesType: a string or a list of numbers was
		// reported as no architectures or as architecture "".
		{"IssueArchitecturesType", `"architectures":"LlamaForCausalLM"`, "new", Input{}, `config.json: architectures: "LlamaForCausalLM" is not a list of model class names`},
		{"architectures of numbers", `"architectures":[5]`, "new", Input{}, `config.json: architectures[0]: 5 is not a model class name`},
		// IssueRopeScalingType: a rope_scaling that is not an object was
		// ignored, where the converter fails on it.
		{"IssueRopeScalingType", llama + `,"rope_scaling":"linear"`, "new", Input{}, `config.json: rope_scaling: "linear" is not an object`},
		{"rope_parameters as a list", llama + `,"rope_parameters":[1]`, "new", Input{}, `config.json: rope_parameters: an array of 1 is not an object`},
		{"block past the count", llama, "modify", Input{Name: "model.layers.7.mlp.up_proj.weight", Shape: []int64{4, 4}}, `block 7, but config.json has 1 blocks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, "{"+tc.config+"}"), "")
			if err == nil {
				switch tc.run {
				case "params":
					_, err = m.Params(gguf.FileTypeF16)
				case "extra":
					_, err = m.Extra()
				case "modify":
					_, err = m.Modify(tc.in, BlockID(tc.in.Name))
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrConfig) && tc.name != "block past the count" {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
}

// TestIssueExpertPastCount: with fewer experts in config.json than in the
// checkpoint, a block filled up with a stray expert and the error named
// only a missing one; it now names the stray too.
func TestIssueExpertPastCount(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","num_hidden_layers":1,"hidden_size":4,
		"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":10,"num_local_experts":1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"experts.1.w1", "experts.0.w2", "experts.0.w3"} {
		full := "model.layers.0.block_sparse_moe." + name + ".weight"
		if _, err = m.Modify(Input{Name: full, Source: full, Shape: []int64{3, 4}}, 0); err != nil {
			break
		}
	}
	want := `block 0: expert tensor "model.layers.0.block_sparse_moe.experts.0.w1.weight" missing (1 experts expected, "model.layers.0.block_sparse_moe.experts.1.w1.weight" is not one of them)`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}

// TestIssueFusedExpertCount: transformers 5's fused expert tensors were
// split whatever their expert count, so a GGUF could say 3 experts and
// hold 4.
func TestIssueFusedExpertCount(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe","num_hidden_layers":1,"hidden_size":4,
		"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":10,"num_experts":3}`), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Input{
		{Name: "model.layers.0.mlp.experts.gate_up_proj", Shape: []int64{4, 8, 4}},
		{Name: "model.layers.0.mlp.experts.down_proj", Shape: []int64{4, 4, 4}},
		{Name: "model.layers.0.mlp.experts.down_proj", Shape: []int64{12, 4}},
	} {
		_, err := m.Modify(in, 0)
		want := fmt.Sprintf("fused expert tensor of shape %v, want [3, rows, columns] for 3 experts", in.Shape)
		if err == nil || err.Error() != want {
			t.Errorf("%s %v: error %v, want %s", in.Name, in.Shape, err, want)
		}
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.mlp.experts.gate_up_proj", Shape: []int64{3, 8, 4}}, 0); err != nil {
		t.Errorf("3 experts refused: %v", err)
	}
}

// TestHostilePooling: a sentence-transformers modules.json naming a module
// outside the model folder, or too large to be one, is refused before
// anything is read from it.
func TestHostilePooling(t *testing.T) {
	h := `{"architectures":["BertModel"],"model_type":"bert","num_hidden_layers":1,"hidden_size":4,"num_attention_heads":2,"vocab_size":10}`
	for _, tc := range []struct{ name, modules, want string }{
		{"IssuePoolingPathEscapes", `[{"type":"sentence_transformers.models.Pooling","path":"../elsewhere"}]`, `modules.json: module path "../elsewhere" leaves the model folder`},
		{"IssuePoolingFileSize", "[" + strings.Repeat(" ", maxSmallFile) + "]", "modules.json is larger than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "modules.json"), []byte(tc.modules), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := New(hp(t, h), dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Params(gguf.FileTypeF16)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
