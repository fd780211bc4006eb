package convert

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/writer"
)

// stTensor is one F32 tensor of a test checkpoint; nan puts a NaN in its
// last value.
type stTensor struct {
	name  string
	shape []int64
	nan   bool
	zero  bool // all values 0
}

// safetensorsFile encodes F32 tensors as a safetensors file, with small
// values that every output type holds.
func safetensorsFile(ts []stTensor) []byte {
	hdr := map[string]any{}
	var data []byte
	for _, t := range ts {
		n := int64(1)
		for _, d := range t.shape {
			n *= d
		}
		begin := len(data)
		for i := range n {
			v := float32(i%7)*0.01 + 0.001
			if t.zero {
				v = 0
			}
			if t.nan && i == n-1 {
				v = float32(math.NaN())
			}
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		hdr[t.name] = map[string]any{"dtype": "F32", "shape": t.shape, "data_offsets": []int{begin, len(data)}}
	}
	h, _ := json.Marshal(hdr)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// tinyLlamaConfig is a one-block LlamaForCausalLM config for
// tinyLlamaTensors and stories260K's 512-token tokenizer.
const tinyLlamaConfig = `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":16,"intermediate_size":32,
"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":512,"max_position_embeddings":64,
"rms_norm_eps":1e-05,"rope_theta":10000.0,"tie_word_embeddings":true}`

// tinyLlamaTensors are the tensors of tinyLlamaConfig's model.
func tinyLlamaTensors() []stTensor {
	p := "model.layers.0."
	return []stTensor{
		{name: "model.embed_tokens.weight", shape: []int64{512, 16}},
		{name: "model.norm.weight", shape: []int64{16}},
		{name: p + "self_attn.q_proj.weight", shape: []int64{16, 16}},
		{name: p + "self_attn.k_proj.weight", shape: []int64{8, 16}},
		{name: p + "self_attn.v_proj.weight", shape: []int64{8, 16}},
		{name: p + "self_attn.o_proj.weight", shape: []int64{16, 16}},
		{name: p + "mlp.gate_proj.weight", shape: []int64{32, 16}},
		{name: p + "mlp.up_proj.weight", shape: []int64{32, 16}},
		{name: p + "mlp.down_proj.weight", shape: []int64{16, 32}},
		{name: p + "input_layernorm.weight", shape: []int64{16}},
		{name: p + "post_attention_layernorm.weight", shape: []int64{16}},
	}
}

// modelFolder writes a model folder: config.json, the tensors as
// model.safetensors and stories260K's tokenizer files.
func modelFolder(t *testing.T, config string, ts []stTensor) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join("../testdata/stories260K/source", f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, f, string(b))
	}
	write(t, dir, "config.json", config)
	write(t, dir, "model.safetensors", string(safetensorsFile(ts)))
	return dir
}

// convertModes runs every way convert reads a model: Plan (and reading
// each planned tensor), a dry run, and real runs to a converter type, a
// split output and a one-pass preset, split too. It returns the first
// error of each, keyed by mode, and checks that no run left a file behind.
func convertModes(t *testing.T, dir string) map[string]error {
	t.Helper()
	ctx := context.Background()
	errs := map[string]error{}
	p, err := Plan(ctx, dir, Options{})
	if err == nil {
		for _, pt := range p.Tensors() {
			n := uint64(1)
			for _, d := range pt.Shape {
				n *= d
			}
			if err = p.ReadFloat32(ctx, pt.Name, make([]float32, n)); err != nil {
				break
			}
		}
		p.Close()
	}
	errs["plan"] = err
	for mode, opts := range map[string]Options{
		"dry":          {OutType: "Q4_K_M", DryRun: true},
		"f16":          {OutType: "f16"},
		"q8_0 split":   {OutType: "q8_0", SplitMaxTensors: 3},
		"Q4_K_M":       {OutType: "Q4_K_M"},
		"Q4_K_M split": {OutType: "Q4_K_M", SplitMaxTensors: 3},
	} {
		out := t.TempDir()
		opts.OutFile = filepath.Join(out, "out.gguf")
		_, errs[mode] = Run(ctx, dir, opts)
		ents, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if errs[mode] != nil && len(ents) > 0 {
			t.Errorf("%s: failed (%v) and left %s behind", mode, errs[mode], ents[0].Name())
		}
	}
	return errs
}

// TestHostileCheckpoint: tensors that do not fit the config or that no
// output type can hold are refused by every mode with an error naming the
// model and the tensor, and no output file is left behind.
func TestHostileCheckpoint(t *testing.T) {
	with := func(f func(ts []stTensor) []stTensor) []stTensor { return f(tinyLlamaTensors()) }
	for _, tc := range []struct {
		name    string
		config  string
		tensors []stTensor
		want    string
		is      error
	}{
		// IssueScalarTensor: a 0-dimensional tensor under a known name
		// indexed its last dimension at -1.
		{"IssueScalarTensor", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[1].shape = []int64{}; return ts }),
			`tensor "output_norm.weight" (from "model.norm.weight"): convert: unusable tensor: a 0-dimensional tensor`, ErrTensor},
		// IssueZeroColumns: rows of no values divided by a zero row length.
		{"IssueZeroColumns", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[7].shape = []int64{32, 0}; return ts }),
			`tensor "blk.0.ffn_up.weight" (from "model.layers.0.mlp.up_proj.weight"): convert: unusable tensor: shape [32 0] has no values`, ErrTensor},
		{"zero rows", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[0].shape = []int64{0, 16}; return ts }),
			`tensor "token_embd.weight" (from "model.embed_tokens.weight"): convert: unusable tensor: shape [0 16] has no values`, ErrTensor},
		{"empty norm", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[9].shape = []int64{0}; return ts }),
			`unusable tensor: shape [0] has no values`, ErrTensor},
		{"Q rows not split into heads", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[2].shape = []int64{15, 16}; return ts }),
			`tensor "model.layers.0.self_attn.q_proj.weight": Q/K permutation: cannot permute shape [15 16] for 2 heads`, nil},
		// IssueDuplicateName: two checkpoint names of one GGUF tensor
		// (llama's name table knows both) were reported without naming them.
		{"IssueDuplicateName", tinyLlamaConfig,
			append(tinyLlamaTensors(), stTensor{name: "layers.0.attention.wq.weight", shape: []int64{16, 16}}),
			`tensors "layers.0.attention.wq.weight" and "model.layers.0.self_attn.q_proj.weight" both map to "blk.0.attn_q.weight"`, ErrTensor},
		{"block past num_hidden_layers", tinyLlamaConfig,
			append(tinyLlamaTensors(), stTensor{name: "model.layers.7.mlp.up_proj.weight", shape: []int64{32, 16}}),
			`can not map tensor "model.layers.7.mlp.up_proj.weight": block 7, but config.json has 1 blocks`, nil},
		{"heads as a string", strings.Replace(tinyLlamaConfig, `"num_attention_heads":2`, `"num_attention_heads":"2"`, 1), tinyLlamaTensors(),
			`config.json: num_attention_heads: "2" is not an integer`, arch.ErrConfig},
		{"block count as a string", strings.Replace(tinyLlamaConfig, `"num_hidden_layers":1`, `"num_hidden_layers":"1"`, 1), tinyLlamaTensors(),
			`config.json: num_hidden_layers: "1" is not an integer`, arch.ErrConfig},
		// IssueNaNMidConversion: a tensor that fails to encode once the
		// outputs exist (here a NaN) must leave no file behind, also for
		// split and one-pass quantized outputs (convertModes checks).
		{"IssueNaNMidConversion", tinyLlamaConfig, with(func(ts []stTensor) []stTensor { ts[8].nan = true; return ts }),
			`non-finite`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := modelFolder(t, tc.config, tc.tensors)
			for mode, err := range convertModes(t, dir) {
				if tc.name == "IssueNaNMidConversion" && (mode == "plan" || mode == "dry") {
					// Planning reads no values (and Plan is F32, which holds a NaN).
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
					t.Errorf("%s: error %v, want one naming %s and containing %q", mode, err, dir, tc.want)
					continue
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("%s: error %v does not wrap %v", mode, err, tc.is)
				}
			}
		})
	}
}

// TestHostileCheckpointBaseline: the tiny model of TestHostileCheckpoint
// converts in every mode.
func TestHostileCheckpointBaseline(t *testing.T) {
	for mode, err := range convertModes(t, modelFolder(t, tinyLlamaConfig, tinyLlamaTensors())) {
		if err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

// torchPickle is a minimal protocol-2 pickle writer for a state dict of
// float32 tensors (torch._utils._rebuild_tensor_v2 over FloatStorage), as
// torch.save writes one.
type torchPickle []byte

func (p torchPickle) op(b ...byte) torchPickle { return append(p, b...) }

func (p torchPickle) str(s string) torchPickle {
	return append(binary.LittleEndian.AppendUint32(append(p, 'X'), uint32(len(s))), s...)
}

func (p torchPickle) global(module, name string) torchPickle {
	return append(append(p, 'c'), module+"\n"+name+"\n"...)
}

func (p torchPickle) int4(n int32) torchPickle {
	return binary.LittleEndian.AppendUint32(append(p, 'J'), uint32(n))
}

func (p torchPickle) ints(ns ...int32) torchPickle {
	p = p.op('(')
	for _, n := range ns {
		p = p.int4(n)
	}
	return p.op('t')
}

// torchTensor is one entry of a torch.save zip: its storage key, the
// storage's float32 count, and the view's size and stride.
type torchTensor struct {
	name, key    string
	numel        int32
	size, stride []int32
}

// torchZip is a torch.save zip archive of views over zero-filled storages.
func torchZip(t *testing.T, ts []torchTensor) []byte {
	t.Helper()
	p := torchPickle{0x80, 2, '}', '('}
	for _, x := range ts {
		p = p.str(x.name).global("torch._utils", "_rebuild_tensor_v2").op('(')
		p = p.op('(').str("storage").global("torch", "FloatStorage").str(x.key).str("cpu").int4(x.numel).op('t', 'Q')
		p = p.int4(0).ints(x.size...).ints(x.stride...)
		p = p.op(0x89).global("collections", "OrderedDict").op(')', 'R').op('t', 'R')
	}
	p = p.op('u', '.')
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	add := func(name string, data []byte) {
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err == nil {
			_, err = f.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	add("archive/data.pkl", p)
	add("archive/byteorder", []byte("little"))
	for _, x := range ts {
		add("archive/data/"+x.key, make([]byte, 4*x.numel))
	}
	add("archive/version", []byte("3\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIssueExpandedView: a PyTorch view repeating a 16-value storage
// (stride 0) as a 2^24 × 16 Q projection passed every reader check, and
// the Q/K permutation allocated its 1 GiB of float32 values. The plan now
// refuses a tensor larger than its file.
func TestIssueExpandedView(t *testing.T) {
	var ts []torchTensor
	for i, x := range tinyLlamaTensors() {
		tt := torchTensor{name: x.name, key: strconv.Itoa(i)}
		n := int32(1)
		for _, d := range x.shape {
			tt.size = append(tt.size, int32(d))
			n *= int32(d)
		}
		tt.numel = n
		for d := range tt.size {
			s := int32(1)
			for _, e := range tt.size[d+1:] {
				s *= e
			}
			tt.stride = append(tt.stride, s)
		}
		if x.name == "model.layers.0.self_attn.q_proj.weight" {
			tt.numel, tt.size, tt.stride = 16, []int32{1 << 24, 16}, []int32{0, 1}
		}
		ts = append(ts, tt)
	}
	dir := modelFolder(t, tinyLlamaConfig, nil)
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "pytorch_model.bin", string(torchZip(t, ts)))
	before := allocatedBytes()
	errs := convertModes(t, dir)
	if alloc := allocatedBytes() - before; alloc > 256<<20 {
		t.Errorf("the conversions allocated %d bytes", alloc)
	}
	for mode, err := range errs {
		want := `tensor "model.layers.0.self_attn.q_proj.weight": convert: unusable tensor: shape [16777216 16] (268435456 values of F32) takes more bytes than its file pytorch_model.bin holds`
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrTensor) {
			t.Errorf("%s: error %v, want one containing %q", mode, err, want)
		}
	}
}

// TestIssueSplitShardPublished: the shards of a split output are published
// one after another; when a later one failed (here its name appeared while
// the model was converted), the earlier ones stayed behind, a partial
// model. Now none of this run's files is left, and the file that appeared
// is not touched.
func TestIssueSplitShardPublished(t *testing.T) {
	dir := modelFolder(t, tinyLlamaConfig, tinyLlamaTensors())
	for _, outType := range []string{"f16", "Q4_K_M"} {
		t.Run(outType, func(t *testing.T) {
			out := t.TempDir()
			opts := Options{OutType: outType, OutFile: filepath.Join(out, "m.gguf"), SplitMaxTensors: 3}
			dry := opts
			dry.DryRun = true
			plan, err := Run(context.Background(), dir, dry)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Outputs) < 3 {
				t.Fatalf("%d shards, want 3 or more", len(plan.Outputs))
			}
			last := plan.Outputs[len(plan.Outputs)-1]
			created := false
			opts.OnTensor = func(TensorReport) {
				if !created {
					created = true
					if err := os.WriteFile(last, []byte("someone else's"), 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			_, err = Run(context.Background(), dir, opts)
			if !errors.Is(err, writer.ErrExists) {
				t.Fatalf("error %v, want writer.ErrExists", err)
			}
			ents, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || filepath.Join(out, ents[0].Name()) != last {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Fatalf("left %v, want only %s", names, filepath.Base(last))
			}
			if b, _ := os.ReadFile(last); string(b) != "someone else's" {
				t.Errorf("%s changed", last)
			}
		})
	}
}

// TestHostileTokenizer: a missing or broken tokenizer, or a vocab_size the
// loaders cannot use, fails every mode with the tokenizer loader's error
// wrapped with the model folder.
func TestHostileTokenizer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		files  map[string]string // written over the folder's; "" removes
		want   string
	}{
		{"no tokenizer", tinyLlamaConfig, map[string]string{"tokenizer.json": "", "tokenizer.model": "", "tokenizer_config.json": "", "special_tokens_map.json": ""}, "tokenizer"},
		{"broken tokenizer.model", tinyLlamaConfig, map[string]string{"tokenizer.model": "\x0a\xff\xff\xff\xff\x0f"}, "tokenizer"},
		{"vocab_size as a string", strings.Replace(tinyLlamaConfig, `"vocab_size":512`, `"vocab_size":"512"`, 1), nil, `config.json: vocab_size: "512" is not an integer`},
		{"type_vocab_size as a float", strings.Replace(tinyLlamaConfig, `"vocab_size":512`, `"vocab_size":512,"type_vocab_size":1.5`, 1), nil, `config.json: type_vocab_size: 1.5 is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := modelFolder(t, tc.config, tinyLlamaTensors())
			for f, content := range tc.files {
				if content == "" {
					if err := os.Remove(filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				write(t, dir, f, content)
			}
			for mode, err := range convertModes(t, dir) {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
					t.Errorf("%s: error %v, want one naming %s and containing %q", mode, err, dir, tc.want)
				}
			}
		})
	}
}

// TestCancelLeavesNothing: a conversion cancelled after its first tensor
// (Ctrl-C) fails with the context's error and leaves no output or
// temporary file, split or not, one-pass quantized or not.
func TestCancelLeavesNothing(t *testing.T) {
	dir := modelFolder(t, tinyLlamaConfig, tinyLlamaTensors())
	for _, opts := range []Options{{OutType: "f16"}, {OutType: "q8_0", SplitMaxTensors: 3}, {OutType: "Q4_K_M"}, {OutType: "Q4_K_M", SplitMaxTensors: 3}} {
		t.Run(fmt.Sprintf("%s/split%d", opts.OutType, opts.SplitMaxTensors), func(t *testing.T) {
			out := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts.OutFile = filepath.Join(out, "m.gguf")
			opts.Threads = 1
			opts.OnTensor = func(TensorReport) { cancel() }
			_, err := Run(ctx, dir, opts)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Fatalf("left %s behind", ents[0].Name())
			}
		})
	}
}

// TestIssueShardCount: one tensor per shard of a model with more than
// 65535 tensors gave split.count and split.no uint16 values that wrapped
// around; the split is refused instead. The model (65536 blocks of one
// norm each) also converts through the name map without spelling out its
// blocks.
func TestIssueShardCount(t *testing.T) {
	const blocks = 1 << 16
	ts := []stTensor{{name: "model.embed_tokens.weight", shape: []int64{512, 16}}}
	for b := range blocks {
		ts = append(ts, stTensor{name: fmt.Sprintf("model.layers.%d.input_layernorm.weight", b), shape: []int64{1}})
	}
	config := strings.Replace(tinyLlamaConfig, `"num_hidden_layers":1`, fmt.Sprintf(`"num_hidden_layers":%d`, blocks), 1)
	dir := modelFolder(t, config, ts)
	for _, outType := range []string{"f32", "Q8_0"} {
		_, err := Run(context.Background(), dir, Options{OutType: outType, DryRun: true, SplitMaxTensors: 1, OutFile: filepath.Join(t.TempDir(), "m.gguf")})
		want := "convert: the split options give 65537 shards, more than split.count can number (65535)"
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", outType, err, want)
		}
	}
}

// TestCohere2NonZeroBias: Cohere2Model leaves bias tensors out only when
// they are all zero (torch.any(data != 0) raises); a non-zero one is
// refused, naming it.
func TestCohere2NonZeroBias(t *testing.T) {
	config := `{"architectures":["Cohere2ForCausalLM"],"model_type":"cohere2","hidden_size":16,"intermediate_size":32,
"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":512,"logit_scale":0.25,
"sliding_window":4096,"rotary_pct":1.0}`
	var ts []stTensor
	for _, x := range tinyLlamaTensors() {
		if !strings.Contains(x.name, "post_attention_layernorm") {
			ts = append(ts, x)
		}
	}
	zero := append(slices.Clone(ts), stTensor{name: "model.layers.0.self_attn.q_proj.bias", shape: []int64{16}, zero: true})
	p, err := Plan(context.Background(), modelFolder(t, config, zero), Options{TokenizerPre: "gpt-2"})
	if err != nil {
		t.Fatalf("zero bias: %v", err)
	}
	defer p.Close()
	for _, x := range p.Tensors() {
		if strings.Contains(x.Name, "bias") {
			t.Errorf("zero bias written as %s", x.Name)
		}
	}
	ts = append(ts, stTensor{name: "model.layers.0.self_attn.q_proj.bias", shape: []int64{16}})
	_, err = Plan(context.Background(), modelFolder(t, config, ts), Options{TokenizerPre: "gpt-2"})
	if err == nil || !errors.Is(err, ErrTensor) || !strings.Contains(err.Error(), "q_proj.bias") {
		t.Fatalf("error %v, want ErrTensor naming q_proj.bias", err)
	}
}

// TestCheckOutputPadding: a plugin may pad its sources with zeros (Gemma
// 3n's vocabulary padding) by at most as many values as they hold, so a
// hostile vocab_size cannot size a buffer.
func TestCheckOutputPadding(t *testing.T) {
	src := []arch.Input{{Name: "e", Source: "e", Shape: []int64{4, 8}}}
	for _, c := range []struct {
		rows, pad int64
		ok        bool
	}{
		{4, 0, true},
		{6, 16, true},
		{8, 32, true},
		{9, 40, false}, // more padding than the sources hold
		{6, 8, false},  // the shape needs more than sources + padding
		{4, -1, false},
	} {
		o := arch.Output{Name: "x", Shape: []int64{c.rows, 8}, Sources: src, PadValues: c.pad}
		if err := checkOutput(&o); (err == nil) != c.ok {
			t.Errorf("rows %d, pad %d: error %v", c.rows, c.pad, err)
		}
	}
}
