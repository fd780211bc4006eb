package mix

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

type refModel struct {
	Metadata map[string]any `json:"metadata"`
	Tensors  []struct {
		Name  string   `json:"name"`
		Type  string   `json:"type"`
		Shape []uint64 `json:"shape"`
	} `json:"tensors"`
	Quantized []struct {
		File     string            `json:"file"`
		Type     string            `json:"type"`
		Options  []string          `json:"options"`
		FileType int               `json:"file_type"`
		Tensors  map[string]string `json:"tensors"`
	} `json:"quantized"`
}

func mustType(t *testing.T, s string) gguf.Type {
	t.Helper()
	ty, err := gguf.ParseType(s)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

// optionsFromArgs applies llama-quantize flags as its main() does.
func optionsFromArgs(t *testing.T, args []string, opts *Options) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--imatrix":
			opts.HasImatrix = true
			i++
		case "--pure":
			opts.Pure = true
		case "--leave-output-tensor":
			opts.LeaveOutput = true
		case "--allow-requantize":
		case "--output-tensor-type":
			ty := mustType(t, args[i+1])
			opts.OutputType = &ty
			i++
		case "--token-embedding-type":
			ty := mustType(t, args[i+1])
			opts.TokenEmbdType = &ty
			i++
		case "--tensor-type":
			o, err := ParseTypeOverride(args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			opts.Overrides = append(opts.Overrides, o)
			i++
		default:
			t.Fatalf("unhandled option %q", args[i])
		}
	}
}

// TestReferenceQuantizations replays every llama-quantize run of the
// reference models and compares each tensor's type with llama-quantize's.
func TestReferenceQuantizations(t *testing.T) {
	b, err := os.ReadFile("testdata/llama-quantize-types.json")
	if err != nil {
		t.Fatal(err)
	}
	var refs map[string]refModel
	if err := json.Unmarshal(b, &refs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, ref := range refs {
		m, err := ModelFromKVs(func(key string) (gguf.Value, bool) {
			v, ok := ref.Metadata[key]
			if !ok {
				return gguf.Value{}, false
			}
			switch x := v.(type) {
			case string:
				return gguf.String(x), true
			case float64:
				return gguf.Uint32(uint32(x)), true
			}
			return gguf.Value{}, false
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range ref.Quantized {
			n++
			t.Run(name+"/"+strings.TrimSuffix(q.File[strings.LastIndex(q.File, "/")+1:], ".gguf"), func(t *testing.T) {
				target, err := ParseTarget(q.Type)
				if err != nil {
					t.Fatal(err)
				}
				opts := &Options{FileType: target.Preset.FileType, Copy: target.Copy}
				if int(opts.FileType) != q.FileType && !target.Copy {
					t.Errorf("file type %d, llama-quantize wrote %d", opts.FileType, q.FileType)
				}
				optionsFromArgs(t, q.Options, opts)
				def, ok := DefaultType(opts.FileType)
				if !ok {
					t.Fatalf("no default type for %s", q.Type)
				}
				var tensors []Tensor
				for _, ti := range ref.Tensors {
					tensors = append(tensors, Tensor{Name: ti.Name, Type: mustType(t, ti.Type), Shape: ti.Shape})
				}
				Sort(tensors)
				ds, err := Plan(m, tensors, def, opts)
				if err != nil {
					t.Fatal(err)
				}
				for i, d := range ds {
					want := q.Tensors[tensors[i].Name]
					if d.Type.String() != want {
						t.Errorf("%s: %s, llama-quantize %s", tensors[i].Name, d.Type, want)
					}
				}
			})
		}
	}
	if n < 50 {
		t.Fatalf("only %d reference quantizations", n)
	}
}
