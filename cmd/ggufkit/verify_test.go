package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/convert"
	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

const (
	verifyF32  = "../../testdata/stories260K/gguf/stories260K-F32.gguf"
	verifyQ8_0 = "../../testdata/gguf/stories260K-Q8_0.gguf"
	verifyQ2_K = "../../testdata/stories260K/quantized/stories260K-Q2_K.gguf"
)

// storiesGreedy is llama.cpp's greedy continuation of "Once upon a time"
// on stories260K-F32.gguf (verify/testdata/stories260K-greedy-F32.json).
var storiesGreedy = []int{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394}

func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ggufkit"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// brokenCopy writes stories260K-F32 with blk.0.attn_output.weight transposed.
func brokenCopy(t *testing.T) string {
	t.Helper()
	f, err := ggufread.Open(verifyF32)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), "transposed.gguf")
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KVs {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		data = slices.Clone(data)
		if ti.Name == "blk.0.attn_output.weight" && ti.Type == gguf.F32 {
			n := int(ti.Shape[0]) // a square matrix: the shape stays
			src, _ := f.TensorData(ti.Name)
			for r := 0; r < n; r++ {
				for c := 0; c < n; c++ {
					copy(data[4*(c*n+r):4*(c*n+r)+4], src[4*(r*n+c):4*(r*n+c)+4])
				}
			}
		}
		if err := w.WriteTensor(ti.Name, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// verifyOutput is the --json report.
type verifyOutput struct {
	OK      *bool `json:"ok"`
	Tensors []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		RMSE   *float64 `json:"rmse"`
		MaxAbs *float64 `json:"max_abs"`
		Cosine *float64 `json:"cosine"`
	} `json:"tensors"`
	Forward *struct {
		PromptIDs       []int    `json:"prompt_ids"`
		KLMean          *float64 `json:"kl_mean"`
		KLMax           *float64 `json:"kl_max"`
		Top1            *float64 `json:"top1"`
		GreedyIDs       []int    `json:"greedy_ids"`
		GreedyText      *string  `json:"greedy_text"`
		SourceGreedyIDs []int    `json:"source_greedy_ids"`
	} `json:"forward"`
	Problems []string `json:"problems"`
}

func TestVerifyCommand(t *testing.T) {
	broken := brokenCopy(t)
	split := filepath.Join(t.TempDir(), "split.gguf")
	if _, err := convert.Run(context.Background(), "../../testdata/stories260K/source",
		convert.Options{OutType: "f32", OutFile: split, SplitMaxTensors: 20}); err != nil {
		t.Fatal(err)
	}
	shard := strings.TrimSuffix(split, ".gguf") + "-00001-of-00003.gguf"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings of the output
		stderr string
	}{
		{"alone", []string{"verify", verifyF32}, 0,
			[]string{`", there was a little girl named Lily. She loved to play outside in the park. One day, she saw"`, "PASS (structural checks only: no --source)"}, ""},
		{"Q8_0 against F32", []string{"verify", "--source", verifyF32, verifyQ8_0}, 0,
			[]string{"tensors: 47 compared, 0 over their type's limit; worst 10", "KL divergence over 36 positions", "PASS in"}, ""},
		{"Q2_K against F32", []string{"verify", "--source", verifyF32, "--n-predict", "8", verifyQ2_K}, 0,
			[]string{"KL divergence over 12 positions", "PASS in"}, ""},
		{"transposed matrix", []string{"verify", "--source", verifyF32, broken}, 1,
			[]string{"blk.0.attn_output.weight  F32", "FAIL: ", "forward: mean KL divergence"}, "the file fails verification"},
		{"no file", []string{"verify", "nonexistent.gguf"}, 2, nil, "nonexistent.gguf"},
		{"Q8_0 against its checkpoint", []string{"verify", "--source", "../../testdata/stories260K/source", "--n-predict", "4", verifyQ8_0}, 0,
			[]string{"tensors: 47 compared, 0 over their type's limit", "PASS in"}, ""},
		{"transposed matrix against its checkpoint", []string{"verify", "--source", "../../testdata/stories260K/source", "--n-predict", "4", broken}, 1,
			[]string{"FAIL: "}, "the file fails verification"},
		{"not a checkpoint", []string{"verify", "--source", "../../testdata/stories260K/README.md", verifyF32}, 2, nil, "--source: verify: reference"},
		{"no argument", []string{"verify"}, 2, nil, "expected one OUT.gguf"},
		{"gguf-split set", []string{"verify", "--n-predict", "4", shard}, 0, []string{"PASS (structural checks only"}, ""},
		{"gguf-split set against F32", []string{"verify", "--source", verifyF32, "--n-predict", "4", shard}, 0,
			[]string{"tensors: 47 compared, 0 over", "PASS in"}, ""},
		{"F32 against a gguf-split set", []string{"verify", "--source", shard, "--n-predict", "4", verifyF32}, 0, []string{"PASS in"}, ""},
		{"second shard", []string{"verify", strings.Replace(shard, "00001-of", "00002-of", 1)}, 2, nil, "not the first shard's"},
		{"negative n-predict", []string{"verify", "--n-predict", "-1", verifyF32}, 2, nil, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, stdout)
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
		})
	}
}

// TestVerifyJSON checks the documented --json shape with and without a
// reference.
func TestVerifyJSON(t *testing.T) {
	t.Run("with source", func(t *testing.T) {
		stdout, stderr, code := runCmd(t, "verify", "--json", "--source", verifyF32, verifyQ8_0)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var out verifyOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if out.OK == nil || !*out.OK || len(out.Problems) != 0 {
			t.Errorf("ok %v, problems %v", out.OK, out.Problems)
		}
		if len(out.Tensors) != 47 {
			t.Fatalf("%d tensors", len(out.Tensors))
		}
		for _, ts := range out.Tensors {
			if ts.Name == "" || ts.Type == "" || ts.RMSE == nil || ts.MaxAbs == nil || ts.Cosine == nil {
				t.Errorf("incomplete tensor entry %+v", ts)
			}
		}
		fw := out.Forward
		if fw == nil || fw.KLMean == nil || fw.KLMax == nil || fw.Top1 == nil || fw.GreedyText == nil {
			t.Fatalf("incomplete forward %+v", fw)
		}
		if *fw.Top1 < 0.99 {
			t.Errorf("Q8_0 top-1 %.3f below 0.99", *fw.Top1)
		}
		if !slices.Equal(fw.PromptIDs, []int{1, 403, 407, 261, 378}) || !slices.Equal(fw.SourceGreedyIDs, storiesGreedy) {
			t.Errorf("prompt %v, source greedy %v", fw.PromptIDs, fw.SourceGreedyIDs)
		}
	})
	t.Run("alone", func(t *testing.T) {
		stdout, stderr, code := runCmd(t, "verify", "--json", "--n-predict", "4", verifyF32)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var out verifyOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		fw := out.Forward
		if fw == nil || !slices.Equal(fw.GreedyIDs, storiesGreedy[:4]) || fw.KLMean != nil || len(out.Tensors) != 0 {
			t.Errorf("without a source: %s", stdout)
		}
		if fw != nil && fw.SourceGreedyIDs != nil {
			t.Errorf("source_greedy_ids %v without a source", fw.SourceGreedyIDs)
		}
	})
}
