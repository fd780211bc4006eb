// Command gendryrun makes the expectations of requantize's decision tests
// (requantize/testdata/dryrun.json) from llama.cpp's own llama-quantize:
//
//	go run ./scripts/gendryrun -llama-quantize /path/to/build/bin/llama-quantize
//
// It writes three llama-shaped F16 GGUFs — a 32-layer GQA model (Llama-3-8B
// shapes), an 8-expert MoE (Mixtral-8x7B shapes) and a 26-layer model whose
// rows of 3200 and 8640 are not multiples of 256 (OpenLLaMA-3B shapes) —
// runs `llama-quantize --dry-run` on each for every llama-quantize type, and
// records each model's metadata, tensors and, per type, the type
// llama-quantize chose for every tensor, or its error.
//
// The tensors keep their real row length (ne0) and expert count (ne2), the
// only dimensions llama-quantize's rules read; ne1 is cut to 4 rows so the
// files are a few MiB. Their data is zeros: a dry run reads none of it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/quantize/mix"
	"github.com/ggufkit/ggufkit/writer"
)

// spec is one model shape.
type spec struct {
	name                                string
	layers, hidden, heads, kvHeads, ffn int
	experts, vocab                      int
}

var specs = []spec{
	{name: "gqa-32-layers", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, vocab: 128256},
	{name: "moe-8-experts", layers: 32, hidden: 4096, heads: 32, kvHeads: 8, ffn: 14336, experts: 8, vocab: 32000},
	{name: "rows-not-256", layers: 26, hidden: 3200, heads: 32, kvHeads: 32, ffn: 8640, vocab: 32000},
}

// rowsCut is the ne1 every tensor gets (see the package comment).
const rowsCut = 4

// KV is one metadata pair as the JSON stores it.
type KV struct {
	Key   string `json:"key"`
	Type  string `json:"type"` // "u32", "f32" or "str"
	Value any    `json:"value"`
}

// Tensor is one tensor as the JSON stores it.
type Tensor struct {
	Name  string   `json:"name"`
	Shape []uint64 `json:"shape"`
}

// Choice is llama-quantize's verdict for one type argument.
type Choice struct {
	// Types are the types llama-quantize chose, in the order of
	// Model.Tensors, separated by spaces.
	Types   string `json:"types,omitempty"`
	Imatrix bool   `json:"requires_imatrix,omitempty"`
	// Error is llama-quantize's message when it refused the type.
	Error string `json:"error,omitempty"`
}

// Model is one model's entry.
type Model struct {
	Name    string            `json:"name"`
	KVs     []KV              `json:"kvs"`
	Type    string            `json:"tensor_type"`
	Tensors []Tensor          `json:"tensors"`
	Choices map[string]Choice `json:"choices"`
}

// File is the whole JSON document.
type File struct {
	About  string  `json:"about"`
	Models []Model `json:"models"`
}

func main() {
	lq := flag.String("llama-quantize", "", "path of llama.cpp's llama-quantize (required)")
	out := flag.String("o", "requantize/testdata/dryrun.json", "output `FILE`")
	flag.Parse()
	if err := run(*lq, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendryrun:", err)
		os.Exit(1)
	}
}

func run(lq, out string) error {
	if lq == "" {
		return errors.New("-llama-quantize is required")
	}
	dir, err := os.MkdirTemp("", "gendryrun")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	doc := File{About: "llama-quantize --dry-run choices (llama.cpp 0c1e570) on metadata-shaped F16 models; made by scripts/gendryrun"}
	for _, s := range specs {
		m := s.model()
		path := filepath.Join(dir, s.name+".gguf")
		if err := writeModel(path, m); err != nil {
			return err
		}
		m.Choices = map[string]Choice{}
		for _, p := range mix.Presets {
			c, err := dryRun(lq, path, p.Name, m.Tensors)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.name, p.Name, err)
			}
			m.Choices[p.Name] = c
		}
		doc.Models = append(doc.Models, m)
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func (s spec) model() Model {
	u := func(k string, v int) KV { return KV{k, "u32", v} }
	m := Model{Name: s.name, Type: "F16", KVs: []KV{
		{"general.architecture", "str", "llama"}, {"general.name", "str", s.name},
		u("llama.block_count", s.layers), u("llama.context_length", 4096), u("llama.embedding_length", s.hidden),
		u("llama.feed_forward_length", s.ffn), u("llama.attention.head_count", s.heads),
		u("llama.attention.head_count_kv", s.kvHeads), u("llama.rope.dimension_count", s.hidden/s.heads),
		{"llama.attention.layer_norm_rms_epsilon", "f32", 1e-5}, u("general.file_type", 1),
	}}
	if s.experts > 0 {
		m.KVs = append(m.KVs, u("llama.expert_count", s.experts), u("llama.expert_used_count", 2))
	}
	h, f := uint64(s.hidden), uint64(s.ffn)
	q, kv := h, uint64(s.kvHeads*(s.hidden/s.heads))
	add := func(name string, shape ...uint64) { m.Tensors = append(m.Tensors, Tensor{name, shape}) }
	add("token_embd.weight", h, rowsCut)
	add("output_norm.weight", h)
	add("output.weight", h, rowsCut)
	for l := range s.layers {
		b := fmt.Sprintf("blk.%d.", l)
		add(b+"attn_norm.weight", h)
		add(b+"attn_q.weight", h, min(q, rowsCut))
		add(b+"attn_k.weight", h, min(kv, rowsCut))
		add(b+"attn_v.weight", h, min(kv, rowsCut))
		add(b+"attn_output.weight", q, rowsCut)
		add(b+"ffn_norm.weight", h)
		if s.experts > 0 {
			e := uint64(s.experts)
			add(b+"ffn_gate_inp.weight", h, e)
			add(b+"ffn_gate_exps.weight", h, rowsCut, e)
			add(b+"ffn_up_exps.weight", h, rowsCut, e)
			add(b+"ffn_down_exps.weight", f, rowsCut, e)
		} else {
			add(b+"ffn_gate.weight", h, rowsCut)
			add(b+"ffn_up.weight", h, rowsCut)
			add(b+"ffn_down.weight", f, rowsCut)
		}
	}
	return m
}

func writeModel(path string, m Model) error {
	w, err := writer.Create(context.Background(), path, writer.Options{})
	if err != nil {
		return err
	}
	for _, kv := range m.KVs {
		switch v := kv.Value.(type) {
		case int:
			w.SetKV(kv.Key, gguf.Uint32(uint32(v)))
		case float64:
			w.SetKV(kv.Key, gguf.Float32(float32(v)))
		case string:
			w.SetKV(kv.Key, gguf.String(v))
		}
	}
	for _, t := range m.Tensors {
		typ := gguf.F16
		if len(t.Shape) == 1 {
			typ = gguf.F32
		}
		if err := w.AddTensor(t.Name, typ, t.Shape); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Start(); err != nil {
		w.Abort()
		return err
	}
	for _, ti := range w.Tensors() {
		n, ok1 := ti.Type.RowSize(ti.Shape[0])
		all, ok2 := ti.NumElements()
		if !ok1 || !ok2 {
			w.Abort()
			return fmt.Errorf("%s: bad shape %v", ti.Name, ti.Shape)
		}
		if err := w.WriteTensor(ti.Name, make([]byte, n*(all/ti.Shape[0]))); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// lineRe matches llama-quantize's per-tensor dry-run line:
// "[  12/ 291] blk.0.attn_q.weight - [ 4096,  4, 1, 1], type =    f16, size =  0.031 MiB ->  0.009 MiB (q4_K)".
var lineRe = regexp.MustCompile(`^\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[[^\]]*\], type =\s*(\S+),.*?size = .*?(?:\((\S+)\))?$`)

var failRe = regexp.MustCompile(`failed to quantize: (.*)`)

func dryRun(lq, path, typ string, tensors []Tensor) (Choice, error) {
	cmd := exec.Command(lq, "--dry-run", path, typ, "1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		if m := failRe.FindStringSubmatch(buf.String()); m != nil {
			return Choice{Error: m[1]}, nil
		}
		return Choice{}, fmt.Errorf("%v: %s", err, buf.String())
	}
	types := map[string]string{}
	sc := bufio.NewScanner(&buf)
	var c Choice
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "will require an imatrix") {
			c.Imatrix = true
		}
		m := lineRe.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		t := m[2]
		if m[3] != "" {
			t = m[3]
		}
		t = strings.ToUpper(t)
		types[m[1]] = t
	}
	if len(types) != len(tensors) {
		return Choice{}, fmt.Errorf("parsed %d tensor lines, the model has %d", len(types), len(tensors))
	}
	list := make([]string, len(tensors))
	for i, t := range tensors {
		list[i] = types[t.Name]
	}
	c.Types = strings.Join(list, " ")
	return c, nil
}
