package arch

import (
	"errors"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

func TestHunYuanDenseRopeAndEOS(t *testing.T) {
	base := `"architectures":["HunYuanDenseV1ForCausalLM"],"model_type":"hunyuan_v1_dense","num_hidden_layers":1,` +
		`"hidden_size":8,"num_attention_heads":2,"head_dim":4,"vocab_size":16,"eod_token_id":7,` +
		`"rope_scaling":{"type":"dynamic","alpha":1000.0,"factor":1.0},"rope_theta":10000.0`
	m, err := New(hp(t, `{`+base+`,"max_position_embeddings":32768}`), "")
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := m.Params(gguf.FileTypeF16)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value.Any()
	}
	// 10000 · 1000^(4/2).
	if got["hunyuan-dense.rope.freq_base"] != float32(1e10) || got["hunyuan-dense.context_length"] != uint32(262144) {
		t.Errorf("freq_base %v, context_length %v", got["hunyuan-dense.rope.freq_base"], got["hunyuan-dense.context_length"])
	}
	adj, err := m.(VocabAdjuster).AdjustVocab([]gguf.KV{{Key: gguf.KeyTokenizerEOSID, Value: gguf.Uint32(2)}})
	if err != nil || len(adj) != 1 || adj[0].Value.Any() != uint32(7) {
		t.Errorf("AdjustVocab: %v %v, want eos 7", adj, err)
	}
	// The converter's assertion: a 4096-token context with dynamic rope.
	m, err = New(hp(t, `{`+base+`,"max_position_embeddings":4096}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Params(gguf.FileTypeF16); !errors.Is(err, ErrConfig) {
		t.Errorf("context 4096: error %v, want ErrConfig", err)
	}
}
