package load_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"

	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// allocatedBytes is the cumulative heap allocation of the process
// (runtime/metrics does not stop the world, unlike runtime.ReadMemStats).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocBound is what a parser may allocate for an input of n bytes: a
// generous multiple of the input (decoded JSON maps and strings) plus
// 32 MiB of slack for the fuzzing engine's own allocations, which the
// process-wide measure includes. A hostile count or id would allocate
// gigabytes.
func allocBound(n int) uint64 { return uint64(64*n) + 32<<20 }

// writeFolder writes one file into a fresh model folder.
func writeFolder(t *testing.T, name string, data []byte) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FuzzTokenizerJSON parses arbitrary bytes as a tokenizer.json and runs the
// routines that read one (Llama falls through LlamaHF to GPT2, GPT2 with
// the pre-tokenizer identified, Bert, Gemma3VocabRows) on a folder holding
// it: no panic, allocation bounded by
// the input, and a parsed file is consistent (known model type, ids in
// range).
func FuzzTokenizerJSON(f *testing.F) {
	for _, s := range []string{
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"],"byte_fallback":true},"decoder":{"type":"Sequence","decoders":[]},"added_tokens":[{"id":3,"content":"<s>","special":true}]}`,
		`{"model":{"type":"BPE","vocab":{"Ġ":0,"a":1,"Ġa":2},"merges":[["Ġ","a"]]},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"a"}},{"Sequence":{"id":"A"}}],"pair":[]}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"[CLS]":1,"a":2,"##b":3},"unk_token":"[UNK]"},"normalizer":{"type":"BertNormalizer","lowercase":true},"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
		`{"model":{"vocab":[["<unk>",0.0],["a",-1.5]],"unk_id":0},"normalizer":{"type":"Precompiled","precompiled_charsmap":"AAAA"}}`,
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("../../testdata/stories260K/source/tokenizer.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		before := allocatedBytes()
		tok, err := load.ParseTokenizerJSON(data, "tokenizer.json")
		if alloc := allocatedBytes() - before; alloc > allocBound(len(data)) {
			t.Fatalf("parsing allocated %d bytes for a %d-byte input", alloc, len(data))
		}
		if err != nil {
			return
		}
		switch tok.Model.Type {
		case load.ModelBPE, load.ModelWordPiece, load.ModelWordLevel, load.ModelUnigram:
		default:
			t.Fatalf("model type %q accepted", tok.Model.Type)
		}
		for s, id := range tok.Model.Vocab {
			if id < 0 {
				t.Fatalf("token %q has id %d", s, id)
			}
		}
		dir := writeFolder(t, "tokenizer.json", data)
		before = allocatedBytes()
		for _, run := range []func() error{
			func() error { _, err := load.Llama(dir, load.Options{Pre: "gpt-2"}); return err },
			func() error { _, err := load.GPT2(dir, load.Options{}); return err }, // identification, hash included
			func() error { _, err := load.Bert(dir, load.Options{Pre: "default"}); return err },
			func() error { _, err := load.Gemma3VocabRows(dir, load.Options{}); return err },
		} {
			_ = run() // errors are fine; panics and runaway allocation are not
		}
		if alloc := allocatedBytes() - before; alloc > 3*allocBound(len(data)) {
			t.Fatalf("the routines allocated %d bytes for a %d-byte tokenizer.json", alloc, len(data))
		}
	})
}

// FuzzSentencePiece parses arbitrary bytes as a tokenizer.model and runs
// the SentencePiece and T5 routines on a folder holding it: no panic,
// allocation bounded by the input, and a parsed model passes
// sentencepiece's own checks (one UNKNOWN piece, no empty piece).
func FuzzSentencePiece(f *testing.F) {
	f.Add(append(spmPiece("<unk>", 2), spmPiece("a", 1)...))
	f.Add(append(append(spmPiece("<unk>", 2), 0x12, 0x04, 0x18, 0x02, 0xa8, 0x02), 0x1a, 0x04, 0x12, 0x02, 0x00, 0x00))
	if b, err := os.ReadFile("../../testdata/stories260K/source/tokenizer.model"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		before := allocatedBytes()
		m, err := load.ParseSentencePiece(data, "tokenizer.model")
		if alloc := allocatedBytes() - before; alloc > allocBound(len(data)) {
			t.Fatalf("parsing allocated %d bytes for a %d-byte input", alloc, len(data))
		}
		if err != nil {
			return
		}
		unknown := 0
		for i, p := range m.Pieces {
			if p.Piece == "" {
				t.Fatalf("piece %d empty", i)
			}
			if p.Type == load.PieceUnknown {
				unknown++
			}
		}
		if unknown != 1 {
			t.Fatalf("%d UNKNOWN pieces accepted", unknown)
		}
		dir := writeFolder(t, "tokenizer.model", data)
		before = allocatedBytes()
		for _, routine := range []func(string, load.Options) error{
			func(d string, o load.Options) error { _, err := load.SentencePiece(d, o); return err },
			func(d string, o load.Options) error { _, err := load.T5(d, o); return err },
		} {
			// WORD and CHAR models are ErrUnsupported for T5; nothing else
			// fails on a model that parses.
			if err := routine(dir, load.Options{}); err != nil && !errors.Is(err, load.ErrUnsupported) {
				t.Fatalf("a model that parses fails to convert: %v", err)
			}
		}
		if alloc := allocatedBytes() - before; alloc > 3*allocBound(len(data)) {
			t.Fatalf("the routines allocated %d bytes for a %d-byte tokenizer.model", alloc, len(data))
		}
	})
}
