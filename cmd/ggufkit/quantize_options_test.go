package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/refdata"
	"github.com/ggufkit/ggufkit/writer"
)

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestQuantizeCLIReferences runs llama-quantize's own command lines through
// `ggufkit quantize`, from the folder they were run in (the imatrix path is
// recorded as given), and compares the output with llama-quantize's file:
// the stories260K outputs copied into testdata always, and with
// GGUFKIT_SHARED every llama-quantize command of both reference models
// (every preset, with and without imatrix, --pure, --leave-output-tensor,
// --output-tensor-type, --token-embedding-type, --tensor-type,
// --allow-requantize and a refused requantization).
func TestQuantizeCLIReferences(t *testing.T) {
	type ref struct {
		dir, model string
		args       []string
		sha        string // "" when llama-quantize failed
	}
	var refs []ref
	local, err := filepath.Abs("../../testdata/stories260K/quantized")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ args, file string }{
		{"--imatrix imatrix.gguf ../gguf/stories260K-F32.gguf stories260K-Q4_K_M-imat.gguf Q4_K_M 1", "stories260K-Q4_K_M-imat.gguf"},
		{"--imatrix imatrix.gguf ../gguf/stories260K-F32.gguf stories260K-IQ2_XXS-imat.gguf IQ2_XXS 1", "stories260K-IQ2_XXS-imat.gguf"},
		{"../gguf/stories260K-F32.gguf stories260K-Q2_K.gguf Q2_K 1", "stories260K-Q2_K.gguf"},
	} {
		refs = append(refs, ref{local, "testdata", strings.Fields(c.args), fileSHA(t, filepath.Join(local, c.file))})
	}
	if shared := os.Getenv("GGUFKIT_SHARED"); shared != "" {
		cmds, err := refdata.Commands(shared, "quantize-*.cmd")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			if !strings.HasSuffix(c.Args[0], "llama-quantize") {
				t.Fatalf("%s/%s: not a llama-quantize command line", c.Model, c.Name)
			}
			args := c.Args[1:]
			refs = append(refs, ref{filepath.Join(c.Root, "quantized"), c.Model, args, c.SHA256["quantized/"+args[len(args)-3]]})
		}
		if len(refs) < 50 {
			t.Fatalf("only %d reference commands", len(refs))
		}
	}
	for _, r := range refs {
		outName := r.args[len(r.args)-3]
		t.Run(r.model+"/"+outName, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), outName)
			args := append([]string{"quantize"}, r.args...)
			args[len(args)-3] = out
			t.Chdir(r.dir)
			_, errs, code := runCLI(t, args...)
			if r.sha == "" {
				if code == 0 {
					t.Fatal("llama-quantize refused this command, ggufkit ran it")
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Fatal("a failed run left an output file")
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if got := fileSHA(t, out); got != r.sha {
				t.Fatalf("sha256 %s, llama-quantize %s", got, r.sha)
			}
		})
	}
}

// TestQuantizeOptions checks the options that the reference files do not
// exercise, each against what it must change and must leave alone.
func TestQuantizeOptions(t *testing.T) {
	run := func(t *testing.T, args ...string) (string, string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.gguf")
		i := len(args) - 1
		for i > 0 && !strings.HasSuffix(args[i-1], ".gguf") {
			i--
		}
		full := append(append(append([]string{"quantize"}, args[:i]...), out), args[i:]...)
		return mustRun(t, full...), out
	}
	_, plainIM := run(t, "--imatrix", storiesImatrix, storiesF32, "Q4_0")
	_, plain := run(t, storiesF32, "Q4_0")

	t.Run("imatrix-dat", func(t *testing.T) {
		// The legacy form holds the same statistics: same tensors, and the
		// imatrix record names the .dat file.
		_, out := run(t, "--imatrix", storiesDat, storiesF32, "Q4_0")
		sameTensors(t, out, plainIM, nil)
		f := openGGUF(t, out)
		if got := kvString(t, f, "quantize.imatrix.file"); got != storiesDat {
			t.Errorf("quantize.imatrix.file %q", got)
		}
	})
	t.Run("exclude-weights", func(t *testing.T) {
		_, out := run(t, "--imatrix", storiesImatrix, "--exclude-weights", "attn", storiesF32, "Q4_0")
		withIM := map[string]bool{}
		for name := range tensorTypes(t, out) {
			withIM[name] = !strings.Contains(name, "attn")
		}
		sameTensorsSplit(t, out, plainIM, plain, withIM)
		if got := kvString(t, openGGUF(t, out), "quantize.imatrix.entries_count"); got != "15" {
			t.Errorf("entries_count %s, want the 15 non-attn entries", got)
		}
	})
	t.Run("include-weights", func(t *testing.T) {
		_, out := run(t, "--imatrix", storiesImatrix, "--include-weights", "ffn_up", "--include-weights", "ffn_gate", storiesF32, "Q4_0")
		withIM := map[string]bool{}
		for name := range tensorTypes(t, out) {
			withIM[name] = strings.Contains(name, "ffn_up") || strings.Contains(name, "ffn_gate")
		}
		sameTensorsSplit(t, out, plainIM, plain, withIM)
	})
	t.Run("include-and-exclude", func(t *testing.T) {
		_, errs, code := runCLI(t, "quantize", "--imatrix", storiesImatrix, "--include-weights", "a", "--exclude-weights", "b",
			storiesF32, filepath.Join(t.TempDir(), "x.gguf"), "Q4_0")
		if code == 0 || !strings.Contains(errs, "cannot be combined") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("tensor-type", func(t *testing.T) {
		// First match wins; the pattern is lower-cased like llama-quantize's.
		_, out := run(t, "--tensor-type", "BLK\\.[01]\\.attn_q=q8_0", "--tensor-type", "attn_q=q5_1", storiesF32, "Q4_0")
		types := tensorTypes(t, out)
		for name, typ := range types {
			want := gguf.Type(0)
			switch {
			case strings.HasPrefix(name, "blk.0.attn_q") || strings.HasPrefix(name, "blk.1.attn_q"):
				want = gguf.Q8_0
			case strings.Contains(name, "attn_q"):
				want = gguf.Q5_1
			default:
				continue
			}
			if typ != want {
				t.Errorf("%s is %s, want %s", name, typ, want)
			}
		}
	})
	t.Run("token-embedding-type", func(t *testing.T) {
		_, out := run(t, "--token-embedding-type", "q8_0", storiesF32, "Q4_0")
		if got := tensorTypes(t, out)["token_embd.weight"]; got != gguf.Q8_0 {
			t.Fatalf("token_embd is %s", got)
		}
	})
	t.Run("override-kv", func(t *testing.T) {
		_, out := run(t, "--override-kv", "general.name=str:renamed", "--override-kv", "llama.context_length=int:-64",
			"--override-kv", "x.flag=bool:true", "--override-kv", "x.scale=float:0.25", storiesF32, "Q4_0")
		f := openGGUF(t, out)
		for k, want := range map[string]string{"general.name": "renamed", "llama.context_length": "64", "x.flag": "true", "x.scale": "0.25"} {
			if got := kvString(t, f, k); got != want {
				t.Errorf("%s = %s, want %s", k, got, want)
			}
		}
		if v, _ := f.KV("llama.context_length"); v.Type() != gguf.TypeUint32 {
			t.Errorf("an int override is stored as %s, llama-quantize writes u32", v.Type())
		}
	})
	t.Run("prune-layers", func(t *testing.T) {
		_, out := run(t, "--prune-layers", "4,1", storiesF32, "Q4_0")
		f := openGGUF(t, out)
		if got := kvString(t, f, "llama.block_count"); got != "3" {
			t.Errorf("block_count %s after pruning 2 of 5", got)
		}
		for _, ti := range f.Tensors {
			if strings.HasPrefix(ti.Name, "blk.3.") || strings.HasPrefix(ti.Name, "blk.4.") {
				t.Errorf("%s survived", ti.Name)
			}
		}
		// blk.2 of the input is blk.1 of the output.
		p := openGGUF(t, plain)
		a, b := tensorData(t, f, "blk.1.attn_q.weight"), tensorData(t, p, "blk.2.attn_q.weight")
		if !bytes.Equal(a, b) {
			t.Error("blk.1 of the pruned model is not blk.2 of the input")
		}
	})
	t.Run("nthreads", func(t *testing.T) {
		_, one := run(t, "--imatrix", storiesImatrix, storiesF32, "Q4_K_M", "1")
		_, many := run(t, "--imatrix", storiesImatrix, storiesF32, "Q4_K_M", "7")
		if fileSHA(t, one) != fileSHA(t, many) {
			t.Fatal("output depends on NTHREADS")
		}
	})
	t.Run("dry-run", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "never.gguf")
		stdout := mustRun(t, "quantize", "--dry-run", storiesF32, out, "Q4_K_M")
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatal("--dry-run wrote a file")
		}
		if n := tensorLines(stdout); n != 47 || !strings.Contains(stdout, "token_embd.weight") || !strings.Contains(stdout, "(dry run, nothing written)") {
			t.Fatalf("dry run: %d tensor lines, want 47 and a summary:\n%s", n, stdout)
		}
		// (requantize's TestNeedsImatrix covers the imatrix note of a dry run.)
	})
	t.Run("verbose-and-summary", func(t *testing.T) {
		quiet, _ := run(t, storiesF32, "Q8_0")
		if n := tensorLines(quiet); n != 0 || !strings.Contains(quiet, "bpw") {
			t.Errorf("without --verbose, want only the summary:\n%s", quiet)
		}
		loud, _ := run(t, "--verbose", storiesF32, "Q8_0")
		if n := tensorLines(loud); n != 47 || !strings.Contains(loud, "F32 → Q8_0") || !strings.Contains(loud, "bpw") {
			t.Errorf("with --verbose, want 47 tensor lines and the summary:\n%s", loud)
		}
	})
	t.Run("allow-requantize", func(t *testing.T) {
		q8 := "../../testdata/gguf/stories260K-Q8_0.gguf"
		_, errs, code := runCLI(t, "quantize", q8, filepath.Join(t.TempDir(), "x.gguf"), "Q4_0")
		if code == 0 || !strings.Contains(errs, "allow-requantize") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		_, out := run(t, "--allow-requantize", q8, "F32")
		for name, typ := range tensorTypes(t, out) {
			if typ != gguf.F32 {
				t.Errorf("%s is %s after dequantizing", name, typ)
			}
		}
	})
}

// tensorLines counts the per-tensor report lines ("[  i/  n] name …").
func tensorLines(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "/  47]") {
			n++
		}
	}
	return n
}

// sameTensors checks that two GGUFs hold the same tensors with the same
// bytes (names in skip excepted).
func sameTensors(t *testing.T, a, b string, skip map[string]bool) {
	t.Helper()
	fa, fb := openGGUF(t, a), openGGUF(t, b)
	if len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%d vs %d tensors", len(fa.Tensors), len(fb.Tensors))
	}
	for _, ti := range fa.Tensors {
		if skip[ti.Name] {
			continue
		}
		if !bytes.Equal(tensorData(t, fa, ti.Name), tensorData(t, fb, ti.Name)) {
			t.Errorf("%s differs", ti.Name)
		}
	}
}

// sameTensorsSplit checks that each tensor of out equals withIM's when
// useIM[name], else without's.
func sameTensorsSplit(t *testing.T, out, withIM, without string, useIM map[string]bool) {
	t.Helper()
	fo, fw, fn := openGGUF(t, out), openGGUF(t, withIM), openGGUF(t, without)
	differ := 0
	for _, ti := range fo.Tensors {
		want := fn
		if useIM[ti.Name] {
			want = fw
		}
		got := tensorData(t, fo, ti.Name)
		if !bytes.Equal(got, tensorData(t, want, ti.Name)) {
			t.Errorf("%s: not the bytes of the run %s the imatrix", ti.Name, map[bool]string{true: "with", false: "without"}[useIM[ti.Name]])
		}
		if !bytes.Equal(tensorData(t, fw, ti.Name), tensorData(t, fn, ti.Name)) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the imatrix changes nothing: the test proves nothing")
	}
}

// writeSplit writes the tensors of a GGUF as a gguf-split set of n shards
// (llama-gguf-split's layout: the first shard holds every KV, the others
// only split.*; split.no, split.count, split.tensors.count appended) and
// returns the first shard's path.
func writeSplit(t *testing.T, src string, n int) string {
	t.Helper()
	f := openGGUF(t, src)
	dir := t.TempDir()
	per := (len(f.Tensors) + n - 1) / n
	var first string
	for s := range n {
		path := filepath.Join(dir, fmt.Sprintf("split-%05d-of-%05d.gguf", s+1, n))
		if s == 0 {
			first = path
		}
		w, err := writer.Create(context.Background(), path, writer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			for _, kv := range f.KVs {
				w.SetKV(kv.Key, kv.Value)
			}
		}
		w.SetKV(gguf.KeySplitNo, gguf.Uint16(uint16(s)))
		w.SetKV(gguf.KeySplitCount, gguf.Uint16(uint16(n)))
		w.SetKV(gguf.KeySplitTensorsCount, gguf.Int32(int32(len(f.Tensors))))
		part := f.Tensors[s*per : min(len(f.Tensors), (s+1)*per)]
		for _, ti := range part {
			if err := w.AddTensor(ti.Name, ti.Type, ti.Shape); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		for _, ti := range part {
			if err := w.WriteTensor(ti.Name, tensorData(t, f, ti.Name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return first
}

// TestQuantizeSplit: a split input is read as one model (the output is the
// unsplit input's, byte for byte); with --keep-split the output is split
// alike, shard by shard, named PREFIX-%05d-of-%05d.gguf.
func TestQuantizeSplit(t *testing.T) {
	split := writeSplit(t, storiesF32, 3)
	whole := filepath.Join(t.TempDir(), "whole.gguf")
	mustRun(t, "quantize", "--imatrix", storiesImatrix, storiesF32, whole, "Q4_K_M")
	fromSplit := filepath.Join(t.TempDir(), "fromsplit.gguf")
	mustRun(t, "quantize", "--imatrix", storiesImatrix, split, fromSplit, "Q4_K_M")
	if fileSHA(t, whole) != fileSHA(t, fromSplit) {
		t.Fatal("a split input does not give the unsplit input's output")
	}

	dir := t.TempDir()
	mustRun(t, "quantize", "--keep-split", "--imatrix", storiesImatrix, split, filepath.Join(dir, "ks.gguf"), "Q4_K_M")
	ref := openGGUF(t, whole)
	total := 0
	for s := range 3 {
		shard := openGGUF(t, filepath.Join(dir, fmt.Sprintf("ks-%05d-of-00003.gguf", s+1)))
		inShard := openGGUF(t, filepath.Join(filepath.Dir(split), fmt.Sprintf("split-%05d-of-00003.gguf", s+1)))
		if kvString(t, shard, gguf.KeySplitNo) != fmt.Sprint(s) || kvString(t, shard, gguf.KeySplitCount) != "3" ||
			kvString(t, shard, gguf.KeySplitTensorsCount) != fmt.Sprint(len(ref.Tensors)) {
			t.Errorf("shard %d split keys: %s %s %s", s, kvString(t, shard, gguf.KeySplitNo),
				kvString(t, shard, gguf.KeySplitCount), kvString(t, shard, gguf.KeySplitTensorsCount))
		}
		if s == 0 && len(shard.KVs) != len(ref.KVs)+3 {
			t.Errorf("first shard has %d KVs, want the unsplit output's %d + 3 split keys", len(shard.KVs), len(ref.KVs))
		}
		if s > 0 && len(shard.KVs) != 3 {
			t.Errorf("shard %d has %d KVs, want only the split keys", s, len(shard.KVs))
		}
		if len(shard.Tensors) != len(inShard.Tensors) {
			t.Fatalf("shard %d: %d tensors, input shard %d", s, len(shard.Tensors), len(inShard.Tensors))
		}
		for i, ti := range shard.Tensors {
			if ti.Name != inShard.Tensors[i].Name {
				t.Errorf("shard %d tensor %d is %s, input has %s", s, i, ti.Name, inShard.Tensors[i].Name)
			}
			if !bytes.Equal(tensorData(t, shard, ti.Name), tensorData(t, ref, ti.Name)) {
				t.Errorf("%s differs from the unsplit output", ti.Name)
			}
		}
		total += len(shard.Tensors)
	}
	if total != len(ref.Tensors) {
		t.Errorf("%d tensors over the shards, want %d", total, len(ref.Tensors))
	}
}

// TestQuantizeLlamaQuantizeOptions replays the command lines of
// testdata/llama-quantize/options.json — options the reference folders do
// not exercise (a legacy .dat imatrix, --include-weights, --exclude-weights,
// --override-kv of every type, --prune-layers, --tensor-type, a numeric
// type, COPY, requantizing, --keep-split of a real gguf-split set; a dense
// and an MoE model other than the reference ones, with their own imatrix,
// for nine types) — and
// compares every output with llama-quantize's sha256, or expects the
// failure llama-quantize had (leaving no file, where llama-quantize leaves
// a partial one). The split cases read ../shared (GGUFKIT_SHARED).
func TestQuantizeLlamaQuantizeOptions(t *testing.T) {
	b, err := os.ReadFile("../../testdata/llama-quantize/options.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name    string            `json:"name"`
			Cwd     string            `json:"cwd"`
			Args    []string          `json:"args"`
			ExitOK  bool              `json:"exit_ok"`
			Outputs map[string]string `json:"outputs"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	shared := os.Getenv("GGUFKIT_SHARED")
	ran := 0
	for _, c := range doc.Cases {
		cwd, ok := strings.CutPrefix(c.Cwd, "$GGUFKIT_SHARED/")
		switch {
		case ok && shared == "":
			continue
		case ok:
			cwd = filepath.Join(shared, cwd)
		default:
			cwd, err = filepath.Abs(filepath.Join("../..", c.Cwd))
			if err != nil {
				t.Fatal(err)
			}
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"quantize"}
			for _, a := range c.Args {
				if a == "OUT" {
					a = filepath.Join(dir, "out.gguf")
				}
				args = append(args, a)
			}
			t.Chdir(cwd)
			_, errs, code := runCLI(t, args...)
			if !c.ExitOK {
				if code == 0 {
					t.Fatal("llama-quantize refused this command, ggufkit ran it")
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("a failed run left %d files", len(left))
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for name, want := range c.Outputs {
				path := filepath.Join(dir, strings.Replace(name, "OUT", "out", 1))
				if name == "OUT" {
					path = filepath.Join(dir, "out.gguf")
				}
				if got := fileSHA(t, path); got != want {
					t.Errorf("%s: sha256 %s, llama-quantize %s", filepath.Base(path), got, want)
				}
			}
		})
	}
	if ran < 31 {
		t.Fatalf("only %d cases ran", ran)
	}
}
