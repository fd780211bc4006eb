package arch

import (
	"errors"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/readers"
)

const robertaBase = `"model_type":"roberta","num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,` +
	`"intermediate_size":16,"vocab_size":16,"layer_norm_eps":1e-5`

// TestRobertaPositions: the position table loses its first pad_token_id + 1
// rows (RoBERTa and XLM-R), none without a pad_token_id or for CamemBERT;
// a table shorter than the offset is an error, not a panic.
func TestRobertaPositions(t *testing.T) {
	pos := Input{Name: "embeddings.position_embeddings.weight", Source: "roberta.embeddings.position_embeddings.weight",
		Shape: []int64{10, 8}, DType: readers.F32}
	tests := []struct {
		name, cfg string
		rows      int64
	}{
		{"RobertaModel", `"architectures":["RobertaModel"],"pad_token_id":1,"max_position_embeddings":10`, 8},
		{"XLMRobertaModel", `"architectures":["XLMRobertaModel"],"pad_token_id":3,"max_position_embeddings":10`, 6},
		// RobertaConfig's default pad_token_id is 1, as AutoConfig reports it.
		{"default pad_token_id", `"architectures":["RobertaModel"],"max_position_embeddings":10`, 8},
		{"pad_token_id null", `"architectures":["RobertaModel"],"pad_token_id":null,"max_position_embeddings":10`, 10},
		{"CamembertModel", `"architectures":["CamembertModel"],"pad_token_id":1,"max_position_embeddings":10`, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(hp(t, `{`+robertaBase+`,`+tc.cfg+`}`), "")
			if err != nil {
				t.Fatal(err)
			}
			in := pos
			if tc.name == "CamembertModel" {
				// BertModel's filter strips only "bert.".
				in.Source = pos.Name
			}
			name, ok := m.Filter(in.Source)
			if !ok || name != in.Name {
				t.Fatalf("filter %q → %q, %v", in.Source, name, ok)
			}
			out, err := m.Modify(in, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 1 || out[0].Name != "position_embd.weight" || out[0].Shape[0] != tc.rows {
				t.Fatalf("outputs %+v, want position_embd.weight of %d rows", out, tc.rows)
			}
			if out[0].Build != nil {
				src := make([]float32, 80)
				for i := range src {
					src[i] = float32(i)
				}
				got, err := out[0].Build([][]float32{src})
				if err != nil || len(got) != int(tc.rows)*8 || got[0] != float32((10-tc.rows)*8) {
					t.Errorf("built %d values starting %v (%v), want %d from row %d", len(got), got[:1], err, tc.rows*8, 10-tc.rows)
				}
			}
		})
	}
	m, err := New(hp(t, `{`+robertaBase+`,"architectures":["RobertaModel"],"pad_token_id":20}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Modify(pos, -1); err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "pad_token_id + 1 = 21") {
		t.Errorf("short table: error %v", err)
	}
}

// TestXLMRobertaLoRA: jina-embeddings-v3 (XLMRobertaModel with
// lora_adaptations) is refused with the reason.
func TestXLMRobertaLoRA(t *testing.T) {
	_, err := New(hp(t, `{`+robertaBase+`,"architectures":["XLMRobertaModel"],"lora_adaptations":["retrieval.query"]}`), "")
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "jina-bert-v3") {
		t.Errorf("error %v, want an UnsupportedError naming jina-bert-v3", err)
	}
}
