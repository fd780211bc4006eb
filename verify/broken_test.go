package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// model is a GGUF held in memory so a test can break it.
type model struct {
	kvs     []gguf.KV
	tensors []tensor
}

type tensor struct {
	name  string
	typ   gguf.Type
	shape []uint64
	data  []byte
}

func loadModel(t testing.TB, path string) *model {
	t.Helper()
	f := open(t, path)
	m := &model{kvs: slices.Clone(f.KVs)}
	for _, info := range f.Tensors {
		data, err := f.TensorData(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		m.tensors = append(m.tensors, tensor{info.Name, info.Type, slices.Clone(info.Shape), slices.Clone(data)})
	}
	return m
}

func (m *model) tensor(t *testing.T, name string) *tensor {
	t.Helper()
	for i := range m.tensors {
		if m.tensors[i].name == name {
			return &m.tensors[i]
		}
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

func (m *model) setKV(key string, v gguf.Value) {
	for i := range m.kvs {
		if m.kvs[i].Key == key {
			m.kvs[i].Value = v
			return
		}
	}
	m.kvs = append(m.kvs, gguf.KV{Key: key, Value: v})
}

func (m *model) deleteKV(key string) {
	m.kvs = slices.DeleteFunc(m.kvs, func(kv gguf.KV) bool { return kv.Key == key })
}

func (m *model) kv(t *testing.T, key string) gguf.Value {
	t.Helper()
	for _, kv := range m.kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	t.Fatalf("no key %s", key)
	return gguf.Value{}
}

// write writes m with the writer package into the test's temporary folder.
func (m *model) write(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broken.gguf")
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range m.kvs {
		if kv.Key != gguf.KeyGeneralAlignment {
			w.SetKV(kv.Key, kv.Value)
		}
	}
	for _, ts := range m.tensors {
		if err := w.AddTensor(ts.name, ts.typ, ts.shape); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, ts := range m.tensors {
		if err := w.WriteTensor(ts.name, ts.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// F32 tensor access (the breakages below work on stories260K-F32.gguf).
func f32s(ts *tensor) []float32 {
	out := make([]float32, len(ts.data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(ts.data[4*i:]))
	}
	return out
}

func setF32s(ts *tensor, xs []float32) {
	for i, x := range xs {
		binary.LittleEndian.PutUint32(ts.data[4*i:], math.Float32bits(x))
	}
}

// hfPermute puts a ggml-order Q or K weight (RoPE pairs consecutive, as
// convert_hf_to_gguf leaves it after undoing the Hugging Face permutation)
// back into Hugging Face's rotate-half order: what a converter that forgot
// the permutation would write.
func hfPermute(ts *tensor, heads int) {
	cols, rows := int(ts.shape[0]), int(ts.shape[1])
	w := f32s(ts)
	out := make([]float32, len(w))
	hd := rows / heads
	for h := 0; h < heads; h++ {
		for i := 0; i < hd/2; i++ {
			for k := 0; k < 2; k++ {
				src := h*hd + 2*i + k
				dst := h*hd + k*hd/2 + i
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	setF32s(ts, out)
}

func transpose(ts *tensor) {
	cols, rows := int(ts.shape[0]), int(ts.shape[1])
	w := f32s(ts)
	out := make([]float32, len(w))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out[c*rows+r] = w[r*cols+c]
		}
	}
	ts.shape[0], ts.shape[1] = ts.shape[1], ts.shape[0]
	setF32s(ts, out)
}

func hasCheck(ps []Problem, c Check) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return p.Check == c })
}

// TestBrokenConversions breaks stories260K-F32.gguf the way a converter
// could and shows verify fails each, against the correct file as its
// reference. must lists the checks that have to report the mistake: the
// forward pass catches every mistake that changes the model's output, the
// tensor and metadata comparisons say where it is.
func TestBrokenConversions(t *testing.T) {
	const heads, headsKV = 8, 4
	tests := []struct {
		name   string
		break_ func(t *testing.T, m *model)
		must   []Check
	}{
		{"qk permutation left out", func(t *testing.T, m *model) {
			for il := 0; il < 5; il++ {
				hfPermute(m.tensor(t, fmt.Sprintf("blk.%d.attn_q.weight", il)), heads)
				hfPermute(m.tensor(t, fmt.Sprintf("blk.%d.attn_k.weight", il)), headsKV)
			}
		}, []Check{CheckReference, CheckForward}},
		{"two tensors swapped", func(t *testing.T, m *model) {
			g, u := m.tensor(t, "blk.2.ffn_gate.weight"), m.tensor(t, "blk.2.ffn_up.weight")
			g.data, u.data = u.data, g.data
		}, []Check{CheckReference, CheckForward}},
		{"wrong rms epsilon", func(t *testing.T, m *model) {
			m.setKV("llama.attention.layer_norm_rms_epsilon", gguf.Float32(1e-2))
		}, []Check{CheckReference, CheckForward}},
		// A realistic slip of the epsilon moves stories260K's logits by less
		// than float32 noise (KL ≈ 2e-10): only the metadata comparison can
		// see it, and it does.
		{"rms epsilon 1e-6 for 1e-5", func(t *testing.T, m *model) {
			m.setKV("llama.attention.layer_norm_rms_epsilon", gguf.Float32(1e-6))
		}, []Check{CheckReference}},
		{"BOS not added", func(t *testing.T, m *model) {
			m.setKV("tokenizer.ggml.add_bos_token", gguf.Bool(false))
		}, []Check{CheckTokenizer}},
		{"wrong rope base", func(t *testing.T, m *model) {
			m.setKV("llama.rope.freq_base", gguf.Float32(500000))
		}, []Check{CheckReference, CheckForward}},
		{"transposed matrix", func(t *testing.T, m *model) {
			transpose(m.tensor(t, "blk.0.attn_output.weight"))
		}, []Check{CheckReference, CheckForward}},
		// Both models run on the GGUF's token ids, so a wrong vocabulary shows
		// in the tokenization check (and the key comparison), not in KL.
		{"wrong tokenizer", func(t *testing.T, m *model) {
			// Another model's vocabulary (Llama 2's first 512 pieces).
			other := loadModel(t, "../testdata/gguf/ggml-vocab-llama-spm.gguf")
			tokens, _ := other.kv(t, "tokenizer.ggml.tokens").Strings()
			scores, _ := other.kv(t, "tokenizer.ggml.scores").Float32s()
			types, _ := other.kv(t, "tokenizer.ggml.token_type").Ints()
			ty := make([]int32, 512)
			for i := range ty {
				ty[i] = int32(types[i])
			}
			m.setKV("tokenizer.ggml.tokens", gguf.Array(tokens[:512]))
			m.setKV("tokenizer.ggml.scores", gguf.Array(scores[:512]))
			m.setKV("tokenizer.ggml.token_type", gguf.Array(ty))
		}, []Check{CheckTokenizer}},
	}
	ref := GGUFReference(open(t, storiesF32))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, storiesF32)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), ref, Options{NPredict: 16})
			if rep.OK {
				t.Fatalf("verify passes a broken file (forward %+v)", rep.Forward)
			}
			for _, c := range tc.must {
				if !hasCheck(rep.Problems, c) {
					t.Errorf("no %s problem; problems: %v", c, rep.Problems)
				}
			}
			if fw := rep.Forward; fw != nil {
				t.Logf("KL mean %.3g (limit %.3g), top-1 %.3f; %v", fw.KLMean, fw.KLLimit, fw.Top1, rep.Problems)
			}
		})
	}
}

// TestStructure breaks stories260K-F32.gguf in ways that need no reference.
func TestStructure(t *testing.T) {
	tests := []struct {
		name    string
		break_  func(t *testing.T, m *model)
		check   Check
		subject string
		msg     string
	}{
		{"NaN", func(t *testing.T, m *model) {
			ts := m.tensor(t, "blk.1.ffn_up.weight")
			xs := f32s(ts)
			xs[77] = float32(math.NaN())
			setF32s(ts, xs)
		}, CheckValues, "blk.1.ffn_up.weight", "non-finite value NaN at element 77"},
		{"Inf", func(t *testing.T, m *model) {
			ts := m.tensor(t, "output_norm.weight")
			xs := f32s(ts)
			xs[3] = float32(math.Inf(-1))
			setF32s(ts, xs)
		}, CheckValues, "output_norm.weight", "non-finite value -Inf at element 3"},
		{"missing tensor", func(t *testing.T, m *model) {
			m.tensors = slices.DeleteFunc(m.tensors, func(ts tensor) bool { return ts.name == "blk.3.ffn_down.weight" })
		}, CheckTensors, "blk.3.ffn_down.weight", "missing"},
		{"extra tensor", func(t *testing.T, m *model) {
			m.tensors = append(m.tensors, tensor{"blk.0.attn_extra.weight", gguf.F32, []uint64{4}, make([]byte, 16)})
		}, CheckTensors, "blk.0.attn_extra.weight", "not a tensor of llama"},
		{"wrong shape", func(t *testing.T, m *model) {
			ts := m.tensor(t, "blk.4.attn_norm.weight")
			ts.shape = []uint64{32}
			ts.data = ts.data[:128]
		}, CheckTensors, "blk.4.attn_norm.weight", "shape [32], llama expects [64]"},
		{"missing required key", func(t *testing.T, m *model) {
			m.deleteKV("llama.attention.layer_norm_rms_epsilon")
		}, CheckMetadata, "", "key not found in model: llama.attention.layer_norm_rms_epsilon"},
		{"key of the wrong type", func(t *testing.T, m *model) {
			m.setKV("llama.block_count", gguf.Uint64(5))
		}, CheckMetadata, "", "key llama.block_count has wrong type"},
		{"vocabulary missing", func(t *testing.T, m *model) {
			m.deleteKV("tokenizer.ggml.tokens")
		}, CheckTokenizer, "", "bad vocabulary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := loadModel(t, storiesF32)
			tc.break_(t, m)
			rep := run(t, open(t, m.write(t)), nil, Options{NPredict: 4})
			if rep.OK {
				t.Fatal("verify passes a broken file")
			}
			found := slices.ContainsFunc(rep.Problems, func(p Problem) bool {
				return p.Check == tc.check && p.Subject == tc.subject && strings.Contains(p.Msg, tc.msg)
			})
			if !found {
				t.Errorf("no %s problem on %q containing %q; problems: %v", tc.check, tc.subject, tc.msg, rep.Problems)
			}
		})
	}
}

// TestCannotRun: what verify cannot judge is an error, not a verdict.
func TestCannotRun(t *testing.T) {
	m := loadModel(t, storiesF32)
	m.setKV(gguf.KeyGeneralArchitecture, gguf.String("baichuan"))
	_, err := Run(context.Background(), open(t, m.write(t)), nil, Options{Threads: 1})
	if !errors.Is(err, ErrCannotRun) {
		t.Fatalf("err = %v, want ErrCannotRun", err)
	}
	if !strings.Contains(err.Error(), `architecture "baichuan"`) {
		t.Errorf("err = %v, want it to name the architecture", err)
	}
}

// TestChunkedComparison compares a tensor larger than one chunk (chunkValues)
// with a reference differing in one value of its second chunk, with 1 and 3
// threads: the statistics see exactly that value.
func TestChunkedComparison(t *testing.T) {
	const cols, rows = 1024, chunkValues/1024 + 76
	xs := make([]float32, cols*rows)
	for i := range xs {
		xs[i] = float32(i%97) / 97
	}
	big := func(xs []float32) *model {
		m := loadModel(t, storiesF32)
		ts := tensor{"blk.0.big.weight", gguf.F32, []uint64{cols, rows}, make([]byte, 4*len(xs))}
		setF32s(&ts, xs)
		m.tensors = append(m.tensors, ts)
		return m
	}
	got := open(t, big(xs).write(t))
	const at, delta = (rows-10)*cols + 5, 0.5
	ys := slices.Clone(xs)
	ys[at] += delta
	ref := GGUFReference(open(t, big(ys).write(t)))
	for _, threads := range []int{1, 3} {
		rep := run(t, got, ref, Options{Threads: threads, SkipForward: true})
		i := slices.IndexFunc(rep.Tensors, func(r TensorResult) bool { return r.Name == "blk.0.big.weight" })
		if i < 0 {
			t.Fatalf("%d threads: no comparison of the big tensor", threads)
		}
		r := rep.Tensors[i]
		if r.Elements != cols*rows || r.MaxAbs != delta || math.Abs(r.RMSE-delta/math.Sqrt(cols*rows)) > 1e-12 || r.OK {
			t.Errorf("%d threads: %+v", threads, r)
		}
	}
}

// TestSplitSet verifies a gguf-split set as one model, against the single
// file and as the reference of it; a missing shard cannot be opened.
func TestSplitSet(t *testing.T) {
	dir := t.TempDir()
	if _, err := convert.Run(context.Background(), "../testdata/stories260K/source",
		convert.Options{OutType: "f32", OutFile: filepath.Join(dir, "s.gguf"), SplitMaxTensors: 20}); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "s-00001-of-00003.gguf")
	set := open(t, first)
	if len(set.Tensors) != 47 {
		t.Fatalf("%d tensors in the set", len(set.Tensors))
	}
	for _, tc := range []struct {
		name     string
		got, ref *File
	}{{"set against file", set, open(t, storiesF32)}, {"file against set", open(t, storiesF32), set}} {
		rep := run(t, tc.got, GGUFReference(tc.ref), Options{NPredict: 4})
		if !rep.OK || len(rep.Tensors) != 47 {
			t.Errorf("%s: OK %v, %d tensors, problems %v", tc.name, rep.OK, len(rep.Tensors), rep.Problems)
		}
		for _, r := range rep.Tensors {
			if r.RelError != 0 {
				t.Errorf("%s: %s differs (%.3g)", tc.name, r.Name, r.RelError)
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, "s-00003-of-00003.gguf")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(first); err == nil || !strings.Contains(err.Error(), "shard 3 of 3 is missing") {
		t.Errorf("missing shard: err = %v", err)
	}
}
