package mix

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

type snapshotModel struct {
	file     string
	arch     string
	nEmbd    uint64
	nFF      uint64
	nVocab   uint64
	nLayer   int
	nHead    int
	nHeadKV  int
	headDim  uint64
	tiedEmbd bool
}

var snapshotModels = []snapshotModel{
	{"meta-llama-3.1-70b-instruct", "llama", 8192, 28672, 128256, 80, 64, 8, 128, false},
	{"qwen3-0.6b", "qwen3", 1024, 3072, 151936, 28, 16, 8, 128, false},
	{"qwen3-14b", "qwen3", 5120, 17408, 151936, 40, 40, 8, 128, false},
	{"gemma-3-4b-it", "gemma3", 2560, 10240, 262144, 34, 8, 4, 256, true},
}

// tensors builds the quantizable tensors of a llama-family model.
func (s snapshotModel) tensors() []Tensor {
	ts := []Tensor{{Name: "token_embd.weight", Shape: []uint64{s.nEmbd, s.nVocab}}}
	if !s.tiedEmbd {
		ts = append(ts, Tensor{Name: "output.weight", Shape: []uint64{s.nEmbd, s.nVocab}})
	}
	q, kv := uint64(s.nHead)*s.headDim, uint64(s.nHeadKV)*s.headDim
	for l := range s.nLayer {
		add := func(n string, shape ...uint64) {
			ts = append(ts, Tensor{Name: fmt.Sprintf("blk.%d.%s.weight", l, n), Shape: shape})
		}
		add("attn_q", s.nEmbd, q)
		add("attn_k", s.nEmbd, kv)
		add("attn_v", s.nEmbd, kv)
		add("attn_output", q, s.nEmbd)
		add("ffn_gate", s.nEmbd, s.nFF)
		add("ffn_up", s.nEmbd, s.nFF)
		add("ffn_down", s.nFF, s.nEmbd)
	}
	for i := range ts {
		ts[i].Type = gguf.F32
	}
	Sort(ts)
	return ts
}

type snapshotSection struct {
	ftype     string
	def       gguf.Type
	overrides map[string]gguf.Type
}

func readSnapshot(t *testing.T, path string) []snapshotSection {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []snapshotSection
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			name, def, _ := strings.Cut(line[1:], "] ")
			out = append(out, snapshotSection{ftype: name, def: mustType(t, def), overrides: map[string]gguf.Type{}})
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[len(out)-1].overrides[line[:i]] = mustType(t, line[i+1:])
	}
	return out
}

// TestSnapshots checks every file type on four real models' shapes against
// llama.cpp's own snapshot of llama-quantize's choices.
func TestSnapshots(t *testing.T) {
	for _, sm := range snapshotModels {
		sections := readSnapshot(t, "testdata/"+sm.file+".schema")
		if len(sections) < 30 {
			t.Fatalf("%s: %d sections", sm.file, len(sections))
		}
		m := Model{Arch: sm.arch, Layers: sm.nLayer, Heads: sm.nHead, HeadsKV: sm.nHeadKV}
		m.Is70B = sm.arch == "llama" && sm.nLayer == 80 && sm.nHead != sm.nHeadKV
		tensors := sm.tensors()
		for _, sec := range sections {
			t.Run(sm.file+"/"+sec.ftype, func(t *testing.T) {
				target, err := ParseTarget(sec.ftype)
				if err != nil {
					t.Fatal(err)
				}
				def, ok := DefaultType(target.Preset.FileType)
				if !ok || def != sec.def {
					t.Fatalf("default %s, snapshot %s", def, sec.def)
				}
				ds, err := Plan(m, tensors, def, &Options{FileType: target.Preset.FileType})
				if err != nil {
					t.Fatal(err)
				}
				for i, d := range ds {
					want, ok := sec.overrides[tensors[i].Name]
					if !ok {
						want = sec.def
					}
					if d.Type != want {
						t.Errorf("%s: %s, llama-quantize %s", tensors[i].Name, d.Type, want)
					}
				}
			})
		}
	}
}

// TestSnapshotGPTOSS checks every file type on gpt-oss-120b's shapes (128
// experts; rows of 2880, not a multiple of 256, so the 256-block types fall
// back) against llama.cpp's snapshot. The schema lists, for Q2_K, every
// quantizable tensor, so the union of its names is the tensor set.
func TestSnapshotGPTOSS(t *testing.T) {
	const nEmbd, nVocab, headDim, nHead, nHeadKV, nExpert = 2880, 201088, 64, 64, 8, 128
	sections := readSnapshot(t, "testdata/gpt-oss-120b.schema")
	names := map[string]bool{}
	for _, sec := range sections {
		for n := range sec.overrides {
			names[n] = true
		}
	}
	var tensors []Tensor
	for n := range names {
		var shape []uint64
		switch {
		case n == "token_embd.weight" || n == "output.weight":
			shape = []uint64{nEmbd, nVocab}
		case strings.HasSuffix(n, ".attn_q.weight"):
			shape = []uint64{nEmbd, nHead * headDim}
		case strings.HasSuffix(n, ".attn_k.weight"), strings.HasSuffix(n, ".attn_v.weight"):
			shape = []uint64{nEmbd, nHeadKV * headDim}
		case strings.HasSuffix(n, ".attn_output.weight"):
			shape = []uint64{nHead * headDim, nEmbd}
		case strings.HasSuffix(n, "_exps.weight"):
			shape = []uint64{nEmbd, nEmbd, nExpert}
		default:
			t.Fatalf("unexpected tensor %s in the schema", n)
		}
		tensors = append(tensors, Tensor{Name: n, Type: gguf.F32, Shape: shape})
	}
	if len(tensors) != 2+36*7 {
		t.Fatalf("%d tensors in the schema, want 2 + 36 layers × 7", len(tensors))
	}
	Sort(tensors)
	m := Model{Arch: "gpt-oss", Layers: 36, Heads: nHead, HeadsKV: nHeadKV, Experts: nExpert}
	for _, sec := range sections {
		t.Run(sec.ftype, func(t *testing.T) {
			target, err := ParseTarget(sec.ftype)
			if err != nil {
				t.Fatal(err)
			}
			def, ok := DefaultType(target.Preset.FileType)
			if !ok || def != sec.def {
				t.Fatalf("default %s, snapshot %s", def, sec.def)
			}
			ds, err := Plan(m, tensors, def, &Options{FileType: target.Preset.FileType})
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range ds {
				want, ok := sec.overrides[tensors[i].Name]
				if !ok {
					want = sec.def
				}
				if d.Type != want {
					t.Errorf("%s: %s, llama-quantize %s", tensors[i].Name, d.Type, want)
				}
			}
		})
	}
}
