package convert

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
)

// allocatedBytes is the cumulative heap allocation of the process
// (runtime/metrics does not stop the world, unlike runtime.ReadMemStats).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// fuzzModels are the checkpoints FuzzConvertConfig pairs with a mutated
// config.json: the tiny llama of TestHostileCheckpoint and wave-1 fixtures
// whose plugins do the most with the config (Q/K permutation and llama3
// rope factors, experts stacked, the embedding cut to the vocabulary,
// longrope factors, pooling and labels, xIELU values as metadata, a fused
// QKV regrouped); all have small tokenizers, so that a run costs
// milliseconds.
var fuzzModels = []string{"tiny", "mixtral", "llama3tied", "gemma3", "phi3", "bert", "apertus", "internlm2"}

// linkModel makes a folder of symbolic links to a fixture's files (as
// TestFixtures assembles them) or to the tiny llama's, without its
// config.json, and returns it with the original config.json.
func linkModel(tb testing.TB, dir, name string) (string, []byte) {
	tb.Helper()
	out := filepath.Join(dir, name)
	if err := os.Mkdir(out, 0o755); err != nil {
		tb.Fatal(err)
	}
	link := func(src, dst string) {
		abs, err := filepath.Abs(src)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(out, dst)); err != nil {
			tb.Fatal(err)
		}
	}
	linkDir := func(src string) {
		ents, err := os.ReadDir(src)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range ents {
			if !e.IsDir() && e.Name() != "config.json" {
				link(filepath.Join(src, e.Name()), e.Name())
			}
		}
	}
	if name == "tiny" {
		src := filepath.Join(dir, "tiny-files")
		if err := os.Mkdir(src, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "model.safetensors"), safetensorsFile(tinyLlamaTensors()), 0o644); err != nil {
			tb.Fatal(err)
		}
		for _, f := range []string{"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"} {
			link(filepath.Join("../testdata/stories260K/source", f), f)
		}
		linkDir(src)
		return out, []byte(tinyLlamaConfig)
	}
	fx := filepath.Join(fixtures, name)
	m := loadFixture(tb, fx)
	var overrides []string
	for f := range m.Files {
		if o, ok := strings.CutPrefix(f, "tokenizer-override/"); ok {
			overrides = append(overrides, o)
		} else if sub, _, ok := strings.Cut(f, "/"); ok {
			// A folder (sentence-transformers' 1_Pooling/): linked whole.
			if _, err := os.Lstat(filepath.Join(out, sub)); err != nil {
				link(filepath.Join(fx, sub), sub)
			}
		} else if f != "config.json" {
			link(filepath.Join(fx, f), f)
		}
	}
	tdir := filepath.Join(fixtures, "tokenizers", m.Tokenizer)
	ents, err := os.ReadDir(tdir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if !contains(overrides, e.Name()) {
			link(filepath.Join(tdir, e.Name()), e.Name())
		}
	}
	for _, o := range overrides {
		link(filepath.Join(fx, "tokenizer-override", o), o)
	}
	config, err := os.ReadFile(filepath.Join(fx, "config.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return out, config
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzConvertConfig pairs a mutated config.json with a real checkpoint and
// runs convert.Plan and a one-pass Q4_K_M dry run on it: no panic, and no
// allocation that grows with the config's numbers rather than with the
// model (the checkpoints are under 1 MB; their tokenizers' loading is the
// bulk of what a run allocates).
func FuzzConvertConfig(f *testing.F) {
	base := f.TempDir()
	dirs := make([]string, len(fuzzModels))
	for i, name := range fuzzModels {
		var config []byte
		dirs[i], config = linkModel(f, base, name)
		f.Add(uint8(i), config)
	}
	f.Add(uint8(0), []byte(strings.Replace(tinyLlamaConfig, `"num_hidden_layers":1`, `"num_hidden_layers":65536`, 1)))
	f.Add(uint8(1), []byte(`{"architectures":["MixtralForCausalLM"],"model_type":"mixtral","hidden_size":64,"num_hidden_layers":2,`+
		`"num_attention_heads":4,"num_key_value_heads":2,"num_local_experts":0,"vocab_size":512,"rope_scaling":{"rope_type":"llama3"},"head_dim":1099511627776}`))
	f.Fuzz(func(t *testing.T, which uint8, config []byte) {
		if len(config) > 1<<16 {
			return
		}
		src := dirs[int(which)%len(dirs)]
		// A fresh folder of links to the model, with this config.json.
		dir := filepath.Join(t.TempDir(), filepath.Base(src))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			target, err := os.Readlink(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644); err != nil {
			t.Fatal(err)
		}
		before := allocatedBytes()
		if p, err := Plan(context.Background(), dir, Options{}); err == nil {
			p.Close()
		}
		_, _ = Run(context.Background(), dir, Options{OutType: "Q4_K_M", DryRun: true, OutFile: filepath.Join(t.TempDir(), "out.gguf")})
		if alloc := allocatedBytes() - before; alloc > uint64(64*len(config))+256<<20 {
			t.Fatalf("planning allocated %d bytes for a %d-byte config.json", alloc, len(config))
		}
	})
}
