package arch

import (
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

const gptOssBase = `"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss","num_hidden_layers":2,` +
	`"hidden_size":32,"intermediate_size":32,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,` +
	`"num_local_experts":4,"num_experts_per_tok":2,"vocab_size":64`

// TestGptOssFileType: an MXFP4 checkpoint is labelled MXFP4_MOE for the
// float outtypes (ModelBase.prepare_metadata), and keeps q8_0.
func TestGptOssFileType(t *testing.T) {
	for _, tc := range []struct {
		quant string
		ft    gguf.FileType
		want  uint32
	}{
		{`,"quantization_config":{"quant_method":"mxfp4"}`, gguf.FileTypeF16, uint32(gguf.FileTypeMXFP4_MOE)},
		{`,"quantization_config":{"quant_method":"mxfp4"}`, gguf.FileTypeAllF32, uint32(gguf.FileTypeMXFP4_MOE)},
		{`,"quantization_config":{"quant_method":"mxfp4"}`, gguf.FileTypeQ8_0, uint32(gguf.FileTypeQ8_0)},
		{``, gguf.FileTypeBF16, uint32(gguf.FileTypeBF16)},
	} {
		m, err := New(hp(t, `{`+gptOssBase+tc.quant+`}`), "")
		if err != nil {
			t.Fatal(err)
		}
		kvs, err := m.Params(tc.ft)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			if kv.Key == gguf.KeyGeneralFileType && kv.Value.Any() != tc.want {
				t.Errorf("%s %v: file type %v, want %d", tc.quant, tc.ft, kv.Value.Any(), tc.want)
			}
		}
	}
}

func TestGptOssHostileConfig(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`"sliding_window":null`, "sliding_window"},
		{`"sliding_window":-1`, "sliding_window"},
		{`"intermediate_size":"x"`, "feed_forward_length"},
	} {
		m, err := New(hp(t, `{`+gptOssBase+`,`+tc.cfg+`}`), "")
		if err == nil {
			_, err = m.Params(gguf.FileTypeF16)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// TestRepackMXFP4 checks the nibble shuffle on one block: checkpoint byte
// i holds values 2i (low) and 2i+1 (high); ggml's byte k holds values k
// (low) and k+16 (high), after the exponent byte.
func TestRepackMXFP4(t *testing.T) {
	blocks := Input{Name: "b", Source: "b", Shape: []int64{1, 2, 1, 16}, DType: "U8"}
	scales := Input{Name: "s", Source: "s", Shape: []int64{1, 2, 1}, DType: "U8"}
	codes := make([]byte, 32)
	for r := range 2 {
		for i := range 16 {
			lo, hi := byte(2*i)%16, byte(2*i+1)%16
			codes[r*16+i] = lo | hi<<4
		}
	}
	o, err := repackMXFP4("x", 0, blocks, scales, mxfp4OddRows)
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Packed([][]byte{codes, {120, 130}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 17 || got[0] != 130 {
		t.Fatalf("got %v", got)
	}
	for k := range 16 {
		if want := byte(k)%16 | byte(k+16)%16<<4; got[1+k] != want {
			t.Errorf("byte %d = %#x, want %#x", k, got[1+k], want)
		}
	}
}
