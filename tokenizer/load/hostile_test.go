package load_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// spmPiece encodes one ModelProto.pieces entry (piece, score 0, type).
func spmPiece(piece string, typ byte) []byte {
	inner := append([]byte{0x0a, byte(len(piece))}, piece...)
	inner = append(inner, 0x15, 0, 0, 0, 0, 0x18, typ)
	return append([]byte{0x0a, byte(len(inner))}, inner...)
}

// TestHostileSentencePiece feeds malformed tokenizer.model bytes: each is an
// ErrFormat *FileError naming the field and the byte offset where the
// protobuf went wrong.
func TestHostileSentencePiece(t *testing.T) {
	unk := spmPiece("<unk>", 2)
	tests := []struct {
		name  string
		data  []byte
		field string
		off   int64 // -1: none
	}{
		{"empty", nil, "pieces", -1},
		{"truncated key", []byte{0x80}, "ModelProto", 0},
		{"field number 0", []byte{0x00}, "ModelProto", 1},
		{"length past the end", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "pieces", 6},
		{"pieces with a group wire type", []byte{0x0b}, "pieces", 1},
		{"unknown field with a group wire type", []byte{0x33}, "ModelProto field 6", 1},
		{"pieces as a varint", []byte{0x08, 0x01}, "pieces", 1},
		{"invalid UTF-8 piece", append(append([]byte(nil), unk...), 0x0a, 0x04, 0x0a, 0x02, 0xff, 0xfe), "pieces[1].piece", int64(len(unk)) + 6},
		{"unknown piece type", append(append([]byte(nil), unk...), spmPiece("a", 9)...), "pieces[1].type", int64(len(unk)) + 12},
		{"truncated score", []byte{0x0a, 0x03, 0x15, 0x00, 0x00}, "pieces[0].score", 3},
		{"no UNKNOWN piece", spmPiece("a", 1), "pieces", -1},
		{"two UNKNOWN pieces", append(append([]byte(nil), unk...), spmPiece("<unk2>", 2)...), "pieces[1]", -1},
		{"duplicate piece", append(append(append([]byte(nil), unk...), spmPiece("a", 1)...), spmPiece("a", 1)...), "pieces[2]", -1},
		{"empty piece", append(append([]byte(nil), unk...), spmPiece("", 1)...), "pieces[1]", -1},
		{"BYTE without byte_fallback", append(append([]byte(nil), unk...), spmPiece("<0x41>", 6)...), "pieces[1]", -1},
		{"unknown model type", append(append([]byte(nil), unk...), 0x12, 0x02, 0x18, 0x07), "trainer_spec.model_type", int64(len(unk)) + 4},
		{"truncated normalizer_spec", append(append([]byte(nil), unk...), 0x1a, 0x02, 0x0a), "normalizer_spec", int64(len(unk)) + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load.ParseSentencePiece(tt.data, "tokenizer.model")
			var fe *load.FileError
			if !errors.As(err, &fe) || !errors.Is(err, load.ErrFormat) {
				t.Fatalf("err = %v, want an ErrFormat *FileError", err)
			}
			if fe.File != "tokenizer.model" || !strings.HasPrefix(fe.Field, tt.field) || fe.Offset != tt.off {
				t.Errorf("%v: field %q offset %d, want %q at %d", err, fe.Field, fe.Offset, tt.field, tt.off)
			}
		})
	}
}

// TestHostileTokenizerJSON feeds malformed tokenizer.json documents.
func TestHostileTokenizerJSON(t *testing.T) {
	tests := []struct {
		name, data, field string
		want              error
	}{
		{"not JSON", `{"model": `, "", load.ErrFormat},
		// Regression: data after the document was accepted (Python's json refuses it).
		{"extra data", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}} x`, "", load.ErrFormat},
		{"extra object", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}{}`, "", load.ErrFormat},
		// Regression: an id written as a string decoded into a json.Number.
		{"string id", `{"model":{"type":"BPE","vocab":{"a":"0"}}}`, "model.vocab", load.ErrFormat},
		{"an array", `[1]`, "", load.ErrFormat},
		{"no model", `{"added_tokens":[]}`, "model", load.ErrFormat},
		{"unknown model type", `{"model":{"type":"Magic","vocab":{}}}`, "model.type", load.ErrUnsupported},
		{"model type not a string", `{"model":{"type":1,"vocab":{}}}`, "model.type", load.ErrFormat},
		{"no vocab", `{"model":{"type":"BPE","merges":[]}}`, "model.vocab", load.ErrFormat},
		{"float id", `{"model":{"type":"BPE","vocab":{"a":1.5}}}`, "model.vocab", load.ErrFormat},
		{"negative id", `{"model":{"type":"WordPiece","vocab":{"a":-1}}}`, "model.vocab", load.ErrFormat},
		{"id past int32", `{"model":{"type":"WordPiece","vocab":{"a":2147483648}}}`, "model.vocab", load.ErrFormat},
		{"vocab a string", `{"model":{"type":"BPE","vocab":"a"}}`, "model.vocab", load.ErrFormat},
		{"merges mixed", `{"model":{"type":"BPE","vocab":{},"merges":["a b",["a","b"]]}}`, "model.merges[1]", load.ErrFormat},
		{"merge pair of one", `{"model":{"type":"BPE","vocab":{},"merges":[["a"]]}}`, "model.merges[0]", load.ErrFormat},
		{"merges an object", `{"model":{"type":"BPE","vocab":{},"merges":{}}}`, "model.merges", load.ErrFormat},
		{"byte_fallback a string", `{"model":{"type":"BPE","vocab":{},"byte_fallback":"yes"}}`, "model.byte_fallback", load.ErrFormat},
		{"unigram entry of three", `{"model":{"type":"Unigram","vocab":[["a",1,2]]}}`, "model.vocab[0]", load.ErrFormat},
		{"unigram score a string", `{"model":{"vocab":[["a","x"]]}}`, "model.vocab[0]", load.ErrFormat},
		{"unigram unk_id out of range", `{"model":{"vocab":[["a",-1.0]],"unk_id":5}}`, "model.unk_id", load.ErrFormat},
		{"added_tokens an object", `{"added_tokens":{},"model":{"type":"BPE","vocab":{}}}`, "added_tokens", load.ErrFormat},
		{"added token id -1", `{"added_tokens":[{"id":-1,"content":"x"}],"model":{"type":"BPE","vocab":{}}}`, "added_tokens[0].id", load.ErrFormat},
		{"added token content missing", `{"added_tokens":[{"id":1}],"model":{"type":"BPE","vocab":{}}}`, "added_tokens[0].content", load.ErrFormat},
		{"added token flag a number", `{"added_tokens":[{"id":1,"content":"x","special":1}],"model":{"type":"BPE","vocab":{}}}`, "added_tokens[0].special", load.ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load.ParseTokenizerJSON([]byte(tt.data), "tokenizer.json")
			var fe *load.FileError
			if !errors.As(err, &fe) || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want a *FileError wrapping %v", err, tt.want)
			}
			if fe.File != "tokenizer.json" || fe.Field != tt.field {
				t.Errorf("%v: field %q, want %q", err, fe.Field, tt.field)
			}
		})
	}
}

// TestHostileFolder runs the vocabulary routines on model folders with a
// bad file: each error wraps the sentinel named and mentions the file.
func TestHostileFolder(t *testing.T) {
	bpe := `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}}`
	tests := []struct {
		name    string
		files   map[string]string
		routine func(string, load.Options) ([]gguf.KV, error)
		opts    load.Options
		want    error
		mention string
	}{
		{"empty folder", nil, load.Llama, load.Options{}, load.ErrNotFound, "tokenizer.json"},
		{"tekken.json only", map[string]string{"tekken.json": "{}"}, load.Llama, load.Options{}, load.ErrUnsupported, "tekken"},
		{"LFS pointer", map[string]string{"tokenizer.json": "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n"}, load.GPT2, load.Options{}, readers.ErrLFSPointer, "tokenizer.json"},
		{"file over the limit", map[string]string{"tokenizer.json": bpe}, load.GPT2, load.Options{MaxFileSize: 16}, load.ErrTooLarge, "tokenizer.json"},
		{"tokenizer_config.json an array", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": "[]"}, load.GPT2, load.Options{}, load.ErrFormat, "tokenizer_config.json"},
		{"tokenizer_config.json not JSON", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": "{"}, load.GPT2, load.Options{}, load.ErrFormat, "tokenizer_config.json"},
		{"added_tokens_decoder key", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": `{"added_tokens_decoder":{"x":{"content":"c"}}}`}, load.GPT2, load.Options{}, load.ErrFormat, "added_tokens_decoder.x"},
		{"negative special id", map[string]string{"tokenizer.json": bpe, "config.json": `{"bos_token_id":-1}`}, load.GPT2, load.Options{Pre: "gpt-2"}, load.ErrFormat, "bos"},
		{"token id past vocab_size", map[string]string{"tokenizer.json": bpe}, load.GPT2, load.Options{VocabSize: 1}, load.ErrFormat, "vocab_size 1"},
		{"GLM without [gMASK]", map[string]string{"tokenizer.json": bpe}, load.GLM, load.Options{Pre: "gpt-2"}, load.ErrFormat, "[gMASK]"},
		{"ChatGLM3 SentencePiece", map[string]string{"tokenizer.json": bpe, "config.json": `{"_name_or_path":"THUDM/chatglm3-6b"}`}, load.ChatGLM, load.Options{Pre: "gpt-2"}, load.ErrUnsupported, "chatglm3"},
		{"hostile vocab_size", map[string]string{"tokenizer.json": bpe}, load.GPT2, load.Options{VocabSize: 1 << 40}, load.ErrTooLarge, "vocab_size"},
		{"invalid UTF-8 chat template", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": `{"model_max_length":1}`, "chat_template.jinja": "\xff"}, load.GPT2, load.Options{Pre: "gpt-2"}, load.ErrFormat, "chat_template.jinja"},
		{"chat_template list of strings", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": `{"chat_template":["x"]}`}, load.GPT2, load.Options{Pre: "gpt-2"}, load.ErrFormat, "chat_template[0]"},
		{"chat_template name a number", map[string]string{"tokenizer.json": bpe, "tokenizer_config.json": `{"chat_template":[{"name":1,"template":"x"}]}`}, load.GPT2, load.Options{Pre: "gpt-2"}, load.ErrFormat, "chat_template[0].name"},
		{"added_tokens.json id a string", map[string]string{"tokenizer.model": string(spmPiece("<unk>", 2)), "added_tokens.json": `{"<x>":"1"}`}, load.SentencePiece, load.Options{}, load.ErrFormat, "added_tokens.json"},
		// Regression: ids written as strings were accepted.
		{"vocab.json ids not ints", map[string]string{"vocab.json": `{"a":"0"}`, "merges.txt": "", "tokenizer_config.json": `{"tokenizer_class":"GPT2Tokenizer"}`}, load.GPT2, load.Options{Pre: "gpt-2"}, load.ErrFormat, "vocab.json"},
		{"vocab.txt, not a BERT class", map[string]string{"vocab.txt": "a\n", "tokenizer_config.json": `{"tokenizer_class":"XLMTokenizer"}`}, load.Bert, load.Options{}, load.ErrUnsupported, "vocab.txt"},
		{"Phi-3 without tokenizer.model", map[string]string{"tokenizer_config.json": `{"tokenizer_class":"LlamaTokenizer"}`}, load.Phi3, load.Options{}, load.ErrNotFound, "tokenizer.model"},
		{"Phi-3 added token past vocab_size", map[string]string{"tokenizer.model": string(spmPiece("<unk>", 2)), "tokenizer_config.json": `{"tokenizer_class":"LlamaTokenizer","added_tokens_decoder":{"70000":{"content":"x"}}}`}, load.Phi3, load.Options{}, load.ErrFormat, "id 70000"},
		{"SentencePiece garbage", map[string]string{"tokenizer.model": "\x0a\xff"}, load.SentencePiece, load.Options{}, load.ErrFormat, "tokenizer.model"},
		{"T5 without a model", map[string]string{"tokenizer.json": bpe}, load.T5, load.Options{}, load.ErrNotFound, "spiece.model"},
		{"RWKV without a vocabulary", map[string]string{"tokenizer.json": bpe}, load.RWKVWorld, load.Options{}, load.ErrNotFound, "rwkv_vocab_v20230424.txt"},
		{"RWKV line of 2 fields", map[string]string{"rwkv_vocab_v20230424.txt": "1 'a' 1\n2 'b'\n"}, load.RWKVWorld, load.Options{}, load.ErrFormat, "line 2"},
		{"RWKV wrong byte length", map[string]string{"rwkv_vocab_v20230424.txt": "1 '\\xe9' 1\n"}, load.RWKVWorld, load.Options{}, load.ErrFormat, "2 bytes"},
		{"RWKV bytes literal not ASCII", map[string]string{"rwkv_vocab_v20230424.txt": "1 b'\xc3\xa9' 2\n"}, load.RWKVWorld, load.Options{}, load.ErrFormat, "ASCII"},
		{"RWKV not a literal", map[string]string{"rwkv_vocab_v20230424.txt": "1 257 3\n"}, load.RWKVWorld, load.Options{}, load.ErrFormat, "literal"},
		{"RWKV invalid UTF-8", map[string]string{"rwkv_vocab_v20230424.txt": "1 '\xff' 1\n"}, load.RWKVWorld, load.Options{}, load.ErrFormat, "UTF-8"},
		{"RWKV more tokens than vocab_size", map[string]string{"rwkv_vocab_v20230424.txt": "1 'a' 1\n2 'b' 1\n"}, load.RWKVWorld, load.Options{VocabSize: 2}, load.ErrFormat, "vocab_size 2"},
		{"RWKV hostile vocab_size", map[string]string{"rwkv_vocab_v20230424.txt": "1 'a' 1\n"}, load.RWKVWorld, load.Options{VocabSize: 1 << 40}, load.ErrTooLarge, "vocab_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := tt.routine(dir, tt.opts)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
}

// TestReplaceDecoderGrowth chains Replace decoders that each multiply a
// token by 64 (the round trip of a non-normalized added token runs them):
// the conversion refuses with ErrTooLarge instead of building gigabytes.
func TestReplaceDecoderGrowth(t *testing.T) {
	step := `{"type":"Replace","pattern":{"String":"a"},"content":"` + strings.Repeat("a", 64) + `"}`
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d Replace decoders", n), func(t *testing.T) {
			js := `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]},` +
				`"decoder":{"type":"Sequence","decoders":[` + strings.TrimSuffix(strings.Repeat(step+",", n), ",") + `]},` +
				`"added_tokens":[{"id":0,"content":"a","special":false,"normalized":false}]}`
			dir := writeFolder(t, "tokenizer.json", []byte(js))
			_, err := load.GPT2(dir, load.Options{Pre: "gpt-2"})
			if n == 1 && err != nil {
				t.Fatalf("one 64x Replace: %v", err)
			}
			if n == 4 && !errors.Is(err, load.ErrTooLarge) {
				t.Fatalf("four 64x Replaces (16 MiB token): err = %v, want ErrTooLarge", err)
			}
		})
	}
}
