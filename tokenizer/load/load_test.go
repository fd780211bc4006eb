package load_test

import (
	"bufio"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// routines are the vocabulary routines by the name testdata/cases.json
// gives them.
var routines = map[string]func(string, load.Options) ([]gguf.KV, error){
	"Llama": load.Llama, "SentencePiece": load.SentencePiece, "LlamaHF": load.LlamaHF, "GPT2": load.GPT2,
	"Gemma": load.Gemma, "Gemma2": load.Gemma2, "Gemma3": load.Gemma3, "Phi3": load.Phi3, "Bert": load.Bert,
	"T5": load.T5, "Qwen2": load.Qwen2,
}

// sourceCase is one entry of testdata/cases.json: a model folder made of
// the files listed (".bz2" ones decompressed) and the routine and
// hyperparameters its architecture gives the converter.
type sourceCase struct {
	Routine       string            `json:"routine"`
	VocabSize     int               `json:"vocab_size"`
	TypeVocabSize int               `json:"type_vocab_size"`
	Files         map[string]string `json:"files"`
}

func readCases(t testing.TB) map[string]sourceCase {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string]sourceCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	return cases
}

// readMaybeBz2 reads a testdata file, decompressing it when its name ends
// in ".bz2".
func readMaybeBz2(t testing.TB, path string) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(path, ".bz2") {
		r = bzip2.NewReader(bufio.NewReader(fh))
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// materialize builds the folder of a case in a temporary directory.
func materialize(t testing.TB, c sourceCase) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range c.Files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), readMaybeBz2(t, filepath.Join("testdata", src)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// convertCase runs a case's routine on its folder.
func convertCase(t testing.TB, c sourceCase) []gguf.KV {
	t.Helper()
	routine, ok := routines[c.Routine]
	if !ok {
		t.Fatalf("unknown routine %q", c.Routine)
	}
	kvs, err := routine(materialize(t, c), load.Options{VocabSize: c.VocabSize, TypeVocabSize: c.TypeVocabSize})
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

// tokenizerKVs reads the tokenizer.* KVs of a GGUF (".bz2" decompressed in
// memory), in file order.
func tokenizerKVs(t testing.TB, path string) []gguf.KV {
	t.Helper()
	ggufCacheMu.Lock()
	defer ggufCacheMu.Unlock()
	if kvs, ok := ggufCache[path]; ok {
		return kvs
	}
	var f *ggufread.File
	var err error
	if strings.HasSuffix(path, ".bz2") {
		b := readMaybeBz2(t, path)
		f, err = ggufread.NewFile(strings.NewReader(string(b)), int64(len(b)), path)
	} else {
		f, err = ggufread.Open(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []gguf.KV
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			out = append(out, kv)
		}
	}
	ggufCache[path] = out
	return out
}

// ggufCache keeps the tokenizer KVs of the GGUFs read (tests only read
// them), so that each compressed file is decompressed once.
var (
	ggufCacheMu sync.Mutex
	ggufCache   = map[string][]gguf.KV{}
)

// converterKV is one KV of testdata/converter.json, what llama.cpp's
// converter wrote for a case (see gen/convert_vocab.py).
type converterKV struct {
	Key    string `json:"key"`
	Type   string `json:"type"`
	Elem   string `json:"elem"`
	Len    int    `json:"len"`
	SHA256 string `json:"sha256"`
}

// ggufTypeNames maps our value types to gguf-py's GGUFValueType names.
var ggufTypeNames = map[gguf.ValueType]string{
	gguf.TypeUint8: "UINT8", gguf.TypeInt8: "INT8", gguf.TypeUint16: "UINT16", gguf.TypeInt16: "INT16",
	gguf.TypeUint32: "UINT32", gguf.TypeInt32: "INT32", gguf.TypeFloat32: "FLOAT32", gguf.TypeBool: "BOOL",
	gguf.TypeString: "STRING", gguf.TypeArray: "ARRAY", gguf.TypeUint64: "UINT64", gguf.TypeInt64: "INT64",
	gguf.TypeFloat64: "FLOAT64",
}

func kvDigest(kv gguf.KV) string {
	e := gguf.NewEncoder(binary.LittleEndian)
	e.KV(kv)
	sum := sha256.Sum256(e.Bytes())
	return hex.EncodeToString(sum[:])
}

// TestConverterOutput runs every case of testdata/cases.json and checks
// the KVs against what llama.cpp's converter wrote for the same folder
// (testdata/converter.json): the same keys in the same order, the same
// value types and, through the sha256 of each KV's bytes, the same values;
// or, where the converter refused the folder, an error of the same kind.
func TestConverterOutput(t *testing.T) {
	cases := readCases(t)
	b, err := os.ReadFile("testdata/converter.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("testdata/converter.json: %v", err)
	}
	if len(want) != len(cases) {
		t.Fatalf("converter.json has %d cases, cases.json %d: regenerate it", len(want), len(cases))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			raw, ok := want[name]
			if !ok {
				t.Fatalf("no converter output for %s", name)
			}
			var refused struct{ Error string }
			if json.Unmarshal(raw, &refused) == nil && refused.Error != "" {
				// The converter refused the folder; so must we, with the
				// matching error.
				_, err := routines[c.Routine](materialize(t, c), load.Options{VocabSize: c.VocabSize, TypeVocabSize: c.TypeVocabSize})
				if err == nil {
					t.Fatalf("converted a folder llama.cpp's converter refuses (%s)", refused.Error)
				}
				if strings.Contains(refused.Error, "pre-tokenizer was not recognized") && !errors.Is(err, load.ErrUnknownPre) {
					t.Fatalf("err = %v, want ErrUnknownPre (the converter: %s)", err, refused.Error)
				}
				return
			}
			var w []converterKV
			if err := json.Unmarshal(raw, &w); err != nil {
				t.Fatalf("converter.json %s: %v", name, err)
			}
			got := convertCase(t, c)
			var gotKeys, wantKeys []string
			for _, kv := range got {
				gotKeys = append(gotKeys, kv.Key)
			}
			for _, kv := range w {
				wantKeys = append(wantKeys, kv.Key)
			}
			if strings.Join(gotKeys, " ") != strings.Join(wantKeys, " ") {
				t.Fatalf("keys:\n got %v\nwant %v", gotKeys, wantKeys)
			}
			for i, kv := range got {
				typ := ggufTypeNames[kv.Value.Type()]
				if typ != w[i].Type {
					t.Errorf("%s: type %s, llama.cpp %s", kv.Key, typ, w[i].Type)
					continue
				}
				if kv.Value.IsArray() {
					if et := ggufTypeNames[kv.Value.ElemType()]; et != w[i].Elem || kv.Value.Len() != w[i].Len {
						t.Errorf("%s: array[%s](%d), llama.cpp array[%s](%d)", kv.Key, et, kv.Value.Len(), w[i].Elem, w[i].Len)
						continue
					}
				}
				if d := kvDigest(kv); d != w[i].SHA256 {
					t.Errorf("%s: value differs from llama.cpp's (sha256 %s, want %s)", kv.Key, d[:12], w[i].SHA256[:12])
				}
			}
		})
	}
}

// TestVocabGGUF compares the conversions of real tokenizer sources with
// the tokenizer.* KVs of the GGUFs llama.cpp made from them (its
// models/ggml-vocab-*.gguf, and the stories260K reference conversion).
// Most of those vocab files were written years ago, from other revisions
// of the same tokenizers and by older converters, so each case lists
// every difference expected, with the reason; any other difference (or a
// listed one missing) fails.
func TestVocabGGUF(t *testing.T) {
	cases := readCases(t)
	for _, tt := range vocabGGUFTests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := cases[tt.name]
			if !ok {
				t.Fatalf("no case %s in cases.json", tt.name)
			}
			got := diffKVs(convertCase(t, c), tokenizerKVs(t, tt.gguf))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("differences from %s:\n got:\n\t%s\nwant:\n\t%s", tt.gguf, strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// diffKVs lists how ours differs from want: keys only one side has, keys
// in another order, other value types, and for arrays the differing
// elements, runs of neighbours with the same pair of values as one range.
func diffKVs(ours, want []gguf.KV) []string {
	var out []string
	index := func(kvs []gguf.KV) map[string]gguf.Value {
		m := map[string]gguf.Value{}
		for _, kv := range kvs {
			m[kv.Key] = kv.Value
		}
		return m
	}
	om, wm := index(ours), index(want)
	var common []string
	for _, kv := range ours {
		w, ok := wm[kv.Key]
		if !ok {
			out = append(out, fmt.Sprintf("%s: only ours (%s)", kv.Key, short(kv.Value)))
			continue
		}
		common = append(common, kv.Key)
		out = append(out, diffValue(kv.Key, kv.Value, w)...)
	}
	var wantCommon []string
	for _, kv := range want {
		if _, ok := om[kv.Key]; !ok {
			out = append(out, fmt.Sprintf("%s: only llama.cpp (%s)", kv.Key, short(kv.Value)))
			continue
		}
		wantCommon = append(wantCommon, kv.Key)
	}
	if strings.Join(common, " ") != strings.Join(wantCommon, " ") {
		out = append(out, fmt.Sprintf("order: ours %v, llama.cpp %v", common, wantCommon))
	}
	return out
}

func short(v gguf.Value) string {
	if v.IsArray() {
		return fmt.Sprintf("array[%s](%d)", v.ElemType(), v.Len())
	}
	if s, ok := v.Str(); ok && len(s) > 40 {
		return fmt.Sprintf("string(%d bytes)", len(s))
	}
	return fmt.Sprintf("%#v", v)
}

// elems formats the elements of an array value.
func elems(v gguf.Value) []string {
	var out []string
	if s, ok := v.Strings(); ok {
		for _, x := range s {
			out = append(out, fmt.Sprintf("%+q", x))
		}
	} else if f, ok := v.Float32s(); ok {
		for _, x := range f {
			out = append(out, fmt.Sprint(x))
		}
	} else if n, ok := v.Ints(); ok {
		for _, x := range n {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

func diffValue(key string, a, b gguf.Value) []string {
	if a.Type() != b.Type() || a.ElemType() != b.ElemType() {
		return []string{fmt.Sprintf("%s: type ours %s, llama.cpp %s", key, short(a), short(b))}
	}
	if a.Equal(b) {
		return nil
	}
	if !a.IsArray() {
		if s, ok := a.Str(); ok && len(s) > 40 {
			return []string{key + ": differs"}
		}
		return []string{fmt.Sprintf("%s: ours %s, llama.cpp %s", key, short(a), short(b))}
	}
	ea, eb := elems(a), elems(b)
	if len(ea) != len(eb) {
		return []string{fmt.Sprintf("%s: length ours %d, llama.cpp %d", key, len(ea), len(eb))}
	}
	// Runs of differing neighbours with the same pair of values.
	type run struct {
		lo, hi int
		x, y   string
	}
	var runs []run
	differ := 0
	for i := range ea {
		if ea[i] == eb[i] {
			continue
		}
		differ++
		if n := len(runs); n > 0 && runs[n-1].hi == i-1 && runs[n-1].x == ea[i] && runs[n-1].y == eb[i] {
			runs[n-1].hi = i
			continue
		}
		runs = append(runs, run{i, i, ea[i], eb[i]})
	}
	if len(runs) > 8 {
		// Too many to list: say how many differ and what ours holds if it
		// is the same everywhere.
		ours := ea[runs[0].lo]
		for _, r := range runs {
			if r.x != ours {
				ours = "various"
				break
			}
		}
		return []string{fmt.Sprintf("%s[%d..%d]: %d differ (ours %s)", key, runs[0].lo, runs[len(runs)-1].hi, differ, ours)}
	}
	var out []string
	for _, r := range runs {
		idx := fmt.Sprint(r.lo)
		if r.hi > r.lo {
			idx = fmt.Sprintf("%d..%d", r.lo, r.hi)
		}
		out = append(out, fmt.Sprintf("%s[%s]: ours %s, llama.cpp %s", key, idx, r.x, r.y))
	}
	return out
}

// vocabDir holds llama.cpp's vocab GGUFs, compressed (../testdata/README.md).
const vocabDir = "../testdata/vocab/"

// vocabGGUFTests are the cases of TestVocabGGUF: a case of
// testdata/cases.json, the GGUF llama.cpp made from that tokenizer, and
// every difference expected, with its reason.
var vocabGGUFTests = []struct {
	name, gguf string
	want       []string
}{
	{"llama2-spm", "../../testdata/gguf/ggml-vocab-llama-spm.gguf", []string{
		// The folder has no tokenizer_config.json / tokenizer.json to
		// name the unknown token or the add flags.
		"tokenizer.ggml.unknown_token_id: only llama.cpp (uint32(0))",
		"tokenizer.ggml.add_bos_token: only llama.cpp (bool(true))",
		"tokenizer.ggml.add_eos_token: only llama.cpp (bool(false))",
	}},
	{"llama2", "../../testdata/gguf/ggml-vocab-llama-spm.gguf", []string{
		// The llama-spm file predates the converter's re-scoring and
		// re-typing of tokenizer_config.json's added_tokens_decoder
		// entries (what checks.json records for Phi-3), which the
		// tiny-random-llama tokenizer_config.json here has.
		"tokenizer.ggml.scores[0..2]: ours -1000, llama.cpp 0",
		"tokenizer.ggml.token_type[0]: ours 3, llama.cpp 2",
		// pad_token "<unk>" in this tokenizer_config.json.
		"tokenizer.ggml.padding_token_id: only ours (uint32(0))",
		// TemplateProcessing's pair template read by today's SpecialVocab.
		"tokenizer.ggml.add_sep_token: only ours (bool(false))",
	}},
	{"llama2-hf", "../../testdata/gguf/ggml-vocab-llama-spm.gguf", []string{
		// LlamaHfVocab scores every token -1000 and types the named
		// special tokens CONTROL.
		"tokenizer.ggml.tokens[31353]: ours \"\", llama.cpp \"\\u2028\"", // checks.json: the damaged tokenizer.json entry
		"tokenizer.ggml.scores[0..31999]: 31999 differ (ours -1000)",     // one piece already scores -1000
		"tokenizer.ggml.token_type[0]: ours 3, llama.cpp 2",
		"tokenizer.ggml.padding_token_id: only ours (uint32(0))",
		"tokenizer.ggml.add_sep_token: only ours (bool(false))",
	}},
	{"phi-3", vocabDir + "ggml-vocab-phi-3.gguf.bz2", []string{
		// The older converter typed its [PAD{i}] fillers UNKNOWN (2);
		// today's types them UNUSED (5).
		"tokenizer.ggml.token_type[32011..32063]: ours 5, llama.cpp 2",
		// shared/data/tokenizers/README.md: the GGUF was made from an
		// older revision of Phi-3's tokenizer_config.json (add_bos_token
		// true, another chat template).
		"tokenizer.ggml.add_bos_token: ours bool(false), llama.cpp bool(true)",
		"tokenizer.chat_template: differs",
	}},
	{"gpt2", vocabDir + "ggml-vocab-gpt-2.gguf.bz2", []string{
		// Today's SpecialVocab sets both from the ByteLevel post-processor.
		"tokenizer.ggml.add_bos_token: only ours (bool(false))",
		"tokenizer.ggml.add_eos_token: only ours (bool(false))",
	}},
	{"gpt2-slow", vocabDir + "ggml-vocab-gpt-2.gguf.bz2", nil},
	{"bert", vocabDir + "ggml-vocab-bert-bge.gguf.bz2", []string{
		// When two entries of the converter's pre-tokenizer hash table
		// match, the later one wins today; the older converter kept
		// bert-bge.
		"tokenizer.ggml.pre: ours string(jina-v2-en), llama.cpp string(bert-bge)",
		// The older converter's phantom-space rule kept every "[...]"
		// token as it is; today's keeps CONTROL tokens only, and the 994
		// "[unusedN]" tokens of bert-base-uncased are NORMAL.
		"tokenizer.ggml.tokens[1..998]: 994 differ (ours various)",
		// bge-small-en-v1.5's tokenizer files name these tokens;
		// bert-base-uncased's vocab.txt (checks.json: the same vocabulary)
		// comes with no file that does.
		"tokenizer.ggml.unknown_token_id: only llama.cpp (uint32(100))",
		"tokenizer.ggml.seperator_token_id: only llama.cpp (uint32(102))",
		"tokenizer.ggml.cls_token_id: only llama.cpp (uint32(101))",
		"tokenizer.ggml.mask_token_id: only llama.cpp (uint32(103))",
	}},
	{"stories260K", "../../testdata/stories260K/gguf/stories260K-F32.gguf", nil},
	{"torchtune-m", vocabDir + "ggml-vocab-torchtune-m.gguf", nil}, // made by the converter (../testdata/README.md)
}

// vocabGGUFWant is vocabGGUFTests by case name.
var vocabGGUFWant = func() map[string][]string {
	m := map[string][]string{}
	for _, tt := range vocabGGUFTests {
		m[tt.name] = tt.want
	}
	return m
}()
