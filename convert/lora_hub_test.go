package convert

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/readers/hub"
)

// TestLoRAHubBase: without --base the adapter's base_model_name_or_path
// is read from the Hub (the same bytes as with the local base); with
// --base hf:ORG/NAME (the script's --base-model-id) general.name is the
// model id.
func TestLoRAHubBase(t *testing.T) {
	adapter := filepath.Join(loraFixtures, "llama1-lora")
	h := &fakeHub{dir: filepath.Join(fixtures, "llama1"), repo: "huggyllama/llama-7b", rev: "main", api: true}
	srv := httptest.NewServer(h)
	defer srv.Close()
	opts := hub.Options{Endpoint: srv.URL, CacheDir: t.TempDir(), Token: "-"}

	var exp fixtureExpected
	b, err := os.ReadFile(filepath.Join(adapter, "expected-f16.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "a.gguf")
	if _, err := RunLoRA(context.Background(), adapter, LoRAOptions{OutType: "f16", OutFile: out, Hub: opts}); err != nil {
		t.Fatal(err)
	}
	if got := sha(t, out); got != exp.File.SHA256 {
		t.Fatalf("sha256 differs from llama.cpp's: %s", describeDiff(out, &exp))
	}

	out = filepath.Join(t.TempDir(), "b.gguf")
	if _, err := RunLoRA(context.Background(), adapter, LoRAOptions{Base: "hf:huggyllama/llama-7b", OutType: "f16", OutFile: out, Hub: opts}); err != nil {
		t.Fatal(err)
	}
	f, err := ggufread.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, kv := range f.KVs {
		if kv.Key == "general.name" && kv.Value.Any() != "huggyllama/llama-7b" {
			t.Errorf("general.name = %v, want the model id", kv.Value.Any())
		}
	}

	if _, err := RunLoRA(context.Background(), adapter, LoRAOptions{Base: "hf:org/missing", OutFile: filepath.Join(t.TempDir(), "c.gguf"), Hub: opts}); err == nil {
		t.Error("a missing base repository converted")
	}
}
