package arch

import (
	"slices"
	"testing"
)

func TestApertusXIELU(t *testing.T) {
	m, err := New(hp(t, `{"architectures":["ApertusForCausalLM"],"model_type":"apertus","num_hidden_layers":2,`+
		`"hidden_size":4,"num_attention_heads":2,"vocab_size":16}`), "")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]float32{}
	for bid := 1; bid >= 0; bid-- {
		for i, p := range []string{"beta", "alpha_n"} {
			name := "model.layers." + string(rune('0'+bid)) + ".mlp.act_fn." + p
			vals[name] = float32(10*bid + i)
			outs, err := m.Modify(Input{Name: name, Source: name, Shape: []int64{1}}, bid)
			if err != nil || len(outs) != 0 {
				t.Fatalf("%s: %v %v", name, outs, err)
			}
		}
	}
	kvs, err := m.(*apertus).ValueKVs(func(in Input) ([]float32, error) { return []float32{vals[in.Source]}, nil })
	if err != nil {
		t.Fatal(err)
	}
	// beta's set completed first; values by block number.
	if len(kvs) != 2 || kvs[0].Key != "xielu.beta" || kvs[1].Key != "xielu.alpha_n" ||
		!slices.Equal(kvs[0].Value.Any().([]float32), []float32{0, 10}) {
		t.Errorf("kvs %v", kvs)
	}
	if _, err := m.Modify(Input{Name: "model.layers.0.mlp.act_fn.eps", Shape: []int64{2}}, 0); err == nil {
		t.Error("a two-value xIELU parameter accepted")
	}
}
