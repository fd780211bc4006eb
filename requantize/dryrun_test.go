package requantize

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/mix"
)

// dryRunFile is testdata/dryrun.json, made by scripts/gendryrun from
// llama-quantize --dry-run (see testdata/README.md).
type dryRunFile struct {
	Models []struct {
		Name string `json:"name"`
		KVs  []struct {
			Key   string `json:"key"`
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"kvs"`
		Type    string `json:"tensor_type"`
		Tensors []struct {
			Name  string   `json:"name"`
			Shape []uint64 `json:"shape"`
		} `json:"tensors"`
		Choices map[string]struct {
			Types   string `json:"types"`
			Imatrix bool   `json:"requires_imatrix"`
			Error   string `json:"error"`
		} `json:"choices"`
	} `json:"models"`
}

// metaModel is a Model with metadata and tensor infos only: enough for a
// dry run, which never reads tensor data.
type metaModel struct {
	kvs     []gguf.KV
	tensors []InputTensor
}

func (m *metaModel) KVs() []gguf.KV { return m.kvs }
func (m *metaModel) KV(key string) (gguf.Value, bool) {
	for _, kv := range m.kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return gguf.Value{}, false
}
func (m *metaModel) Alignment() int            { return 32 }
func (m *metaModel) Shards() int               { return 1 }
func (m *metaModel) TensorList() []InputTensor { return m.tensors }
func (m *metaModel) Data(*InputTensor) ([]byte, error) {
	return nil, errors.New("metadata-only model: no tensor data")
}

// TestDryRunMatchesLlamaQuantize: for a 32-layer GQA model, an 8-expert
// MoE and a model whose rows are not multiples of 256, every llama-quantize
// type gives each tensor the type llama-quantize's own --dry-run chose (or
// fails where it failed), and flags the need for an imatrix as it did.
func TestDryRunMatchesLlamaQuantize(t *testing.T) {
	b, err := os.ReadFile("testdata/dryrun.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc dryRunFile
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Models) != 3 {
		t.Fatalf("%d models in dryrun.json", len(doc.Models))
	}
	for _, dm := range doc.Models {
		m := &metaModel{}
		for _, kv := range dm.KVs {
			var v gguf.Value
			switch kv.Type {
			case "u32":
				v = gguf.Uint32(uint32(kv.Value.(float64)))
			case "f32":
				v = gguf.Float32(float32(kv.Value.(float64)))
			case "str":
				v = gguf.String(kv.Value.(string))
			default:
				t.Fatalf("%s: KV type %q", kv.Key, kv.Type)
			}
			m.kvs = append(m.kvs, gguf.KV{Key: kv.Key, Value: v})
		}
		for _, ti := range dm.Tensors {
			typ := gguf.F16
			if len(ti.Shape) == 1 {
				typ = gguf.F32
			}
			m.tensors = append(m.tensors, InputTensor{TensorInfo: gguf.TensorInfo{Name: ti.Name, Shape: ti.Shape, Type: typ}})
		}
		if len(dm.Choices) != len(mix.Presets) {
			t.Fatalf("%s: %d choices, llama-quantize has %d types", dm.Name, len(dm.Choices), len(mix.Presets))
		}
		for _, p := range mix.Presets {
			want, ok := dm.Choices[p.Name]
			if !ok {
				t.Fatalf("%s: no llama-quantize choice for %s", dm.Name, p.Name)
			}
			t.Run(dm.Name+"/"+p.Name, func(t *testing.T) {
				rep, err := RunModel(context.Background(), m, dm.Name, "", Options{Target: target(t, p.Name), DryRun: true})
				if want.Error != "" {
					if err == nil || !strings.Contains(err.Error(), "no fallback") {
						t.Fatalf("err %v; llama-quantize: %s", err, want.Error)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				types := strings.Fields(want.Types)
				if len(types) != len(dm.Tensors) || len(rep.Tensors) != len(dm.Tensors) {
					t.Fatalf("%d tensors decided, %d in llama-quantize's list, %d in the model", len(rep.Tensors), len(types), len(dm.Tensors))
				}
				got := map[string]gguf.Type{}
				for _, tr := range rep.Tensors {
					got[tr.Name] = tr.NewType
				}
				bad := 0
				for i, ti := range dm.Tensors {
					if g := got[ti.Name]; g.String() != types[i] {
						if bad++; bad <= 10 {
							t.Errorf("%s: %s, llama-quantize %s", ti.Name, g, types[i])
						}
					}
				}
				if bad > 10 {
					t.Errorf("… %d tensors differ", bad)
				}
				if rep.NeedsImatrix != want.Imatrix {
					t.Errorf("needs imatrix %v, llama-quantize %v", rep.NeedsImatrix, want.Imatrix)
				}
			})
		}
	}
}
