package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The readers' test data, generated (and cross-checked) with torch and
// safetensors in Python; see each folder's README and gen/ script.
const (
	pytorchData     = "../../readers/pytorch/testdata/generated"
	hfData          = "../../readers/hf/testdata"
	safetensorsData = "../../readers/safetensors/testdata"
	storiesData     = "../../testdata/stories260K"
)

// sourceJSON is inspect --json's output for a checkpoint.
type sourceJSON struct {
	Format  string `json:"format"`
	Tensors []struct {
		Name   string  `json:"name"`
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		File   string  `json:"file"`
		SHA256 string  `json:"sha256"`
	} `json:"tensors"`
	Config json.RawMessage `json:"config"`
}

// wantTensor is one tensor of the readers' expected.json files, whose
// digests torch computed (sha256_f32le: the values as float32 LE, row-major).
type wantTensor struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	File   string  `json:"file"`
	SHA256 string  `json:"sha256_f32le"`
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// expected gathers the expected tensors of every fixture the tests open,
// keyed by the path given to inspect.
func expected(t *testing.T) map[string][]wantTensor {
	t.Helper()
	var pt struct {
		Files map[string][]wantTensor `json:"files"`
	}
	readJSONFile(t, pytorchData+"/expected.json", &pt)
	var hf map[string]json.RawMessage
	readJSONFile(t, hfData+"/expected.json", &hf)
	var st struct {
		Sources map[string]struct {
			Tensors []wantTensor `json:"tensors"`
		} `json:"sources"`
	}
	readJSONFile(t, safetensorsData+"/expected.json", &st)

	want := map[string][]wantTensor{}
	for name, ts := range pt.Files {
		want[pytorchData+"/"+name] = ts
	}
	for _, name := range []string{"tiny-pt", "meta"} {
		var e struct {
			Tensors []wantTensor `json:"tensors"`
		}
		if err := json.Unmarshal(hf[name], &e); err != nil {
			t.Fatal(err)
		}
		want[hfData+"/"+name] = e.Tensors
	}
	want[safetensorsData+"/dtypes.safetensors"] = st.Sources["dtypes"].Tensors
	want[safetensorsData+"/torch-bert"] = st.Sources["torch-bert"].Tensors
	want[storiesData+"/source-sharded"] = st.Sources["stories260K-sharded"].Tensors
	want[storiesData+"/source-sharded/model.safetensors.index.json"] = st.Sources["stories260K-sharded"].Tensors
	return want
}

func inspectSourceJSON(t *testing.T, args ...string) (sourceJSON, string) {
	t.Helper()
	out, errs, code := runCLI(t, append([]string{"inspect", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got sourceJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return got, out
}

// TestInspectSourceChecksums opens every kind of checkpoint and compares
// names, dtypes, shapes, files and --checksum digests with what torch
// computed; the tiny model's five containers must also agree with each
// other.
func TestInspectSourceChecksums(t *testing.T) {
	want := expected(t)
	var sharded []wantTensor
	for _, shard := range []string{"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"} {
		for _, e := range want[pytorchData+"/sharded/"+shard] {
			e.File = shard
			sharded = append(sharded, e)
		}
	}
	want[pytorchData+"/sharded"] = sharded

	tiny := map[string]map[string]string{} // container → tensor → digest
	for _, c := range []struct {
		path, format, file, config string
	}{
		{pytorchData + "/tiny/zip.bin", "pytorch-zip", "zip.bin", ""},
		{pytorchData + "/tiny/legacy.bin", "pytorch-legacy", "legacy.bin", ""},
		{pytorchData + "/tiny/deflated.bin", "pytorch-zip", "deflated.bin", ""},
		{pytorchData + "/tiny/bigendian.bin", "pytorch-zip", "bigendian.bin", ""},
		{pytorchData + "/tiny/model.safetensors", "safetensors", "model.safetensors", ""},
		{pytorchData + "/wrapped.pt", "pytorch-zip", "wrapped.pt", ""},
		{pytorchData + "/sharded", "pytorch-zip", "", ""},
		{pytorchData + "/meta-llama2", "meta-consolidated", "consolidated.00.pth", "params.json"},
		{pytorchData + "/meta-llama3", "meta-consolidated", "consolidated.00.pth", "params.json"},
		{hfData + "/tiny-pt", "pytorch-zip", "pytorch_model.bin", "config.json"},
		{hfData + "/meta", "meta-consolidated", "consolidated.00.pth", "params.json"},
		{safetensorsData + "/dtypes.safetensors", "safetensors", "", ""},
		{safetensorsData + "/torch-bert", "safetensors", "", "config.json"},
		{storiesData + "/source-sharded", "safetensors", "", "config.json"},
		{storiesData + "/source-sharded/model.safetensors.index.json", "safetensors", "", "config.json"},
	} {
		name := strings.TrimPrefix(strings.TrimPrefix(c.path, "../../"), "readers/")
		t.Run(name, func(t *testing.T) {
			exp, ok := want[c.path]
			if !ok || len(exp) == 0 {
				t.Fatalf("no expected tensors for %s", c.path)
			}
			got, _ := inspectSourceJSON(t, "--checksum", c.path)
			if got.Format != c.format {
				t.Errorf("format %q, want %q", got.Format, c.format)
			}
			checkConfig(t, got.Config, c.path, c.config)
			if len(got.Tensors) != len(exp) {
				t.Fatalf("%d tensors, want %d", len(got.Tensors), len(exp))
			}
			byName := map[string]wantTensor{}
			for _, e := range exp {
				byName[e.Name] = e
			}
			digests := map[string]string{}
			for _, g := range got.Tensors {
				e, ok := byName[g.Name]
				switch {
				case !ok:
					t.Errorf("unexpected tensor %q", g.Name)
					continue
				case g.DType != e.DType || !slices.Equal(g.Shape, e.Shape):
					t.Errorf("%s: %s %v, want %s %v", g.Name, g.DType, g.Shape, e.DType, e.Shape)
				case g.SHA256 != e.SHA256:
					t.Errorf("%s: sha256 %s, want %s", g.Name, g.SHA256, e.SHA256)
				}
				wantFile := cmp(c.file, e.File)
				if g.File != wantFile {
					t.Errorf("%s: file %q, want %q", g.Name, g.File, wantFile)
				}
				digests[g.Name] = g.SHA256
			}
			if strings.Contains(c.path, "/tiny/") {
				tiny[c.path] = digests
			}
		})
	}
	// The same weights in five containers give the same digests.
	var first map[string]string
	for path, d := range tiny {
		if first == nil {
			first = d
			continue
		}
		if len(d) != 12 || !equalMaps(d, first) {
			t.Errorf("%s: digests differ from another container's", path)
		}
	}
	if len(tiny) != 5 {
		t.Errorf("compared %d tiny containers, want 5", len(tiny))
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkConfig checks the "config" member: null without a config file, else
// the file's object, compacted, keys in file order.
func checkConfig(t *testing.T, got json.RawMessage, path, config string) {
	t.Helper()
	if config == "" {
		if string(got) != "null" {
			t.Errorf("config %s, want null", got)
		}
		return
	}
	dir := path
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir = filepath.Dir(path)
	}
	b, err := os.ReadFile(filepath.Join(dir, config))
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("config:\n got %s\nwant %s", got, want.Bytes())
	}
}

// TestInspectSourceJSONShape pins the exact output: member names and order,
// no sha256 without --checksum, config as read.
func TestInspectSourceJSONShape(t *testing.T) {
	_, out := inspectSourceJSON(t, hfData+"/meta")
	want := `{"format": "meta-consolidated",
 "tensors": [{"name": "tok_embeddings.weight", "dtype": "BF16", "shape": [40, 64], "file": "consolidated.00.pth"},
  {"name": "layers.0.attention.wq.weight", "dtype": "BF16", "shape": [64, 64], "file": "consolidated.00.pth"},
  {"name": "layers.0.feed_forward.w1.weight", "dtype": "BF16", "shape": [224, 64], "file": "consolidated.00.pth"},
  {"name": "norm.weight", "dtype": "BF16", "shape": [64], "file": "consolidated.00.pth"}],
 "config": {"dim":64,"n_layers":1,"n_heads":4,"n_kv_heads":2,"vocab_size":-1,"multiple_of":32,"ffn_dim_multiplier":1.3,"norm_eps":1e-05,"rope_theta":500000.0,"use_scaled_rope":true}}
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}

	for _, c := range []struct {
		name       string
		args       []string
		tensorKeys []string
	}{
		{"plain", []string{pytorchData + "/tiny/zip.bin"}, []string{"dtype", "file", "name", "shape"}},
		{"checksum", []string{"--checksum", pytorchData + "/tiny/zip.bin"}, []string{"dtype", "file", "name", "sha256", "shape"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, out := inspectSourceJSON(t, c.args...)
			var top map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &top); err != nil {
				t.Fatal(err)
			}
			if keys := sortedKeys(top); !slices.Equal(keys, []string{"config", "format", "tensors"}) {
				t.Errorf("top-level members %v", keys)
			}
			var tensors []map[string]json.RawMessage
			if err := json.Unmarshal(top["tensors"], &tensors); err != nil {
				t.Fatal(err)
			}
			for _, ts := range tensors {
				if keys := sortedKeys(ts); !slices.Equal(keys, c.tensorKeys) {
					t.Fatalf("tensor members %v, want %v", keys, c.tensorKeys)
				}
			}
			if string(top["config"]) != "null" {
				t.Errorf("config %s, want null", top["config"])
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestInspectCacheEntry opens a Hugging Face hub cache entry (refs/main →
// snapshot whose files are symlinks into blobs, as the hub lays it out).
func TestInspectCacheEntry(t *testing.T) {
	entry := filepath.Join(t.TempDir(), "models--org--tiny")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	snap := filepath.Join(entry, "snapshots", commit)
	for _, dir := range []string{filepath.Join(entry, "refs"), filepath.Join(entry, "blobs"), snap} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(entry, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"config.json", "tokenizer_config.json", "pytorch_model.bin"} {
		b, err := os.ReadFile(filepath.Join(hfData, "tiny-pt", name))
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(entry, "blobs", "blob"+string(rune('0'+i)))
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), filepath.Join(snap, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := inspectSourceJSON(t, "--checksum", entry)
	want := expected(t)[hfData+"/tiny-pt"]
	if got.Format != "pytorch-zip" || len(got.Tensors) != len(want) {
		t.Fatalf("format %q, %d tensors", got.Format, len(got.Tensors))
	}
	for i, g := range got.Tensors {
		if g.Name != want[i].Name || g.SHA256 != want[i].SHA256 || g.File != "pytorch_model.bin" {
			t.Errorf("tensor %d: %+v, want %+v", i, g, want[i])
		}
	}
	checkConfig(t, got.Config, filepath.Join(hfData, "tiny-pt"), "config.json")

	out, errs, code := runCLI(t, "inspect", entry)
	if code != 0 || !strings.Contains(out, "snapshot: "+snap) || !strings.Contains(out, "pytorch-zip, 4 tensors in 1 file") {
		t.Errorf("exit %d (%s), output:\n%s", code, errs, out)
	}
}

// TestInspectSourceText checks the table: one line per tensor with dtype,
// shape, file and, with --checksum, the digest.
func TestInspectSourceText(t *testing.T) {
	out, errs, code := runCLI(t, "inspect", "--checksum", storiesData+"/source-sharded")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{
		"safetensors, 47 tensors in 3 files",
		"config: " + storiesData + "/source-sharded/config.json (LlamaForCausalLM)",
		"SHA256 (float32 LE)",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	row := "0 model.embed_tokens.weight F32 [512 64] 128.0 KiB model-00001-of-00003.safetensors 452158377d2f8703b5b38935f894b628d3c7e2ac26bc167bfbfc68655dfe2c8a"
	found := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == row {
			found++
		}
	}
	if found != 1 || strings.Count(out, ".safetensors ") != 47 {
		t.Errorf("row %q found %d times; output:\n%s", row, found, out)
	}
}

// TestInspectDetectsGGUFByMagic: a GGUF named like a checkpoint is still
// read as GGUF, and --checksum (a checkpoint option) is refused for it.
func TestInspectDetectsGGUFByMagic(t *testing.T) {
	b, err := os.ReadFile("../../testdata/gguf/stories260K-Q8_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "inspect", "--json", path)
	var got inspectJSON
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Version != 3 || len(got.Tensors) != 47 {
		t.Fatalf("exit %d (%s), version %d, %d tensors", code, errs, got.Version, len(got.Tensors))
	}
	out, errs, code = runCLI(t, "inspect", "--checksum", path)
	if code != 2 || out != "" || !strings.Contains(errs, "is a GGUF file") {
		t.Errorf("--checksum on GGUF: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestInspectSourceErrors: what is neither GGUF nor a checkpoint, and a Git
// LFS pointer, give one clear line and exit status 1.
func TestInspectSourceErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"text file", write("notes.txt", "hello\n"), "not a GGUF file"},
		{"short file", write("x.gguf", "GG"), "not a GGUF file"},
		{"lfs pointer", write("model.safetensors", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 123\n"), "git lfs pull"},
		{"missing", filepath.Join(dir, "absent"), "no such file"},
		{"forbidden global", "../../readers/pytorch/testdata/torch-edge/malicious/os_system.pt", `"os.system"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runCLI(t, "inspect", "--json", "--checksum", c.path)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
}
