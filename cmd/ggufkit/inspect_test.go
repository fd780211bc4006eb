package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ggufkit"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

type inspectJSON struct {
	Version    int    `json:"version"`
	ByteOrder  string `json:"byte_order"`
	Alignment  int    `json:"alignment"`
	DataOffset int64  `json:"data_offset"`
	Metadata   []struct {
		Key         string          `json:"key"`
		Type        string          `json:"type"`
		ElementType string          `json:"element_type"`
		Value       json.RawMessage `json:"value"`
	} `json:"metadata"`
	Tensors []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Shape  []uint64 `json:"shape"`
		Offset uint64   `json:"offset"`
		Size   uint64   `json:"size"`
	} `json:"tensors"`
}

func TestInspectJSON(t *testing.T) {
	out, errs, code := runCLI(t, "inspect", "--json", "../../testdata/gguf/stories260K-Q8_0.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got inspectJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if got.Version != 3 || got.ByteOrder != "little" || got.Alignment != 32 || got.DataOffset != 14496 {
		t.Errorf("header %+v", got)
	}
	if len(got.Metadata) != 29 || got.Metadata[0].Key != "general.architecture" || string(got.Metadata[0].Value) != `"llama"` {
		t.Errorf("metadata starts %+v", got.Metadata[0])
	}
	var tokens []string
	for _, kv := range got.Metadata {
		if kv.Key == "tokenizer.ggml.tokens" {
			if kv.Type != "array" || kv.ElementType != "string" {
				t.Errorf("tokens typed %s/%s", kv.Type, kv.ElementType)
			}
			json.Unmarshal(kv.Value, &tokens)
		}
	}
	if len(tokens) != 512 || tokens[1] != "<s>" {
		t.Errorf("tokens: %d, [1] = %q", len(tokens), tokens[1])
	}
	if len(got.Tensors) != 47 {
		t.Fatalf("%d tensors", len(got.Tensors))
	}
	t0 := got.Tensors[0]
	if t0.Name != "token_embd.weight" || t0.Type != "Q8_0" || t0.Shape[0] != 64 || t0.Shape[1] != 512 || t0.Offset != 0 || t0.Size != 34816 {
		t.Errorf("tensor 0: %+v", t0)
	}
}

func TestInspectText(t *testing.T) {
	out, _, code := runCLI(t, "inspect", "../../testdata/gguf/ggml-vocab-llama-spm.gguf")
	if code != 0 || !strings.Contains(out, "[string × 32000]") || !strings.Contains(out, "… 31992 more") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

func TestInspectMalformed(t *testing.T) {
	for _, f := range []string{"ollama-test.gguf", "fuzz-corpus/huge-counts.bin", "test-be-v3.gguf"} {
		t.Run(f, func(t *testing.T) {
			out, errs, code := runCLI(t, "inspect", "--json", "../../testdata/gguf/"+f)
			if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, f) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
}
