package imatrix

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBothFormatsAgree(t *testing.T) {
	g, err := Load("testdata/imatrix.gguf")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load("testdata/imatrix.dat")
	if err != nil {
		t.Fatal(err)
	}
	if g.Legacy || !d.Legacy || !g.HasMetadata {
		t.Fatalf("legacy flags %v/%v, metadata %v", g.Legacy, d.Legacy, g.HasMetadata)
	}
	if len(g.Weights) != 35 || len(d.Weights) != len(g.Weights) {
		t.Fatalf("%d and %d entries, want 35", len(g.Weights), len(d.Weights))
	}
	if g.ChunkCount == 0 || g.ChunkCount != d.ChunkCount || len(g.Datasets) != 1 || g.Datasets[0] != d.Datasets[0] {
		t.Fatalf("chunks %d/%d, datasets %q/%q", g.ChunkCount, d.ChunkCount, g.Datasets, d.Datasets)
	}
	for name, w := range g.Weights {
		v := d.Weights[name]
		if len(v) != len(w) {
			t.Fatalf("%s: %d vs %d values", name, len(w), len(v))
		}
		for i := range w {
			if math.Abs(float64(w[i]-v[i])) > 1e-6*math.Abs(float64(w[i]))+1e-30 {
				t.Fatalf("%s[%d]: %v (gguf) vs %v (dat)", name, i, w[i], v[i])
			}
		}
	}
	if w := g.Weights["blk.0.ffn_down.weight"]; len(w) != 172 {
		t.Fatalf("ffn_down weights: %d, want 172 (its row length)", len(w))
	}
	if err := g.CheckFinite(); err != nil {
		t.Fatal(err)
	}
}

func TestFilter(t *testing.T) {
	m, _ := Load("testdata/imatrix.gguf")
	m.Filter(nil, []string{"ffn_"})
	for n := range m.Weights {
		if strings.Contains(n, "ffn_") {
			t.Fatalf("%s survived --exclude-weights ffn_", n)
		}
	}
	m.Filter([]string{"attn_q"}, nil)
	if len(m.Weights) != 5 {
		t.Fatalf("%d entries after --include-weights attn_q, want 5", len(m.Weights))
	}
}

func TestLegacyMalformed(t *testing.T) {
	le := binary.LittleEndian
	cases := map[string][]byte{
		"empty":            {},
		"zero entries":     le.AppendUint32(nil, 0),
		"huge count":       le.AppendUint32(nil, 1<<30),
		"negative name":    le.AppendUint32(le.AppendUint32(nil, 1), 0xFFFFFFFF),
		"name past end":    le.AppendUint32(le.AppendUint32(nil, 1), 100),
		"values past end":  append(le.AppendUint32(le.AppendUint32(nil, 1), 1), 'a', 1, 0, 0, 0, 0xFF, 0xFF, 0, 0),
		"zero value count": append(le.AppendUint32(le.AppendUint32(nil, 1), 1), 'a', 1, 0, 0, 0, 0, 0, 0, 0),
	}
	dir := t.TempDir()
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "x.dat")
			os.WriteFile(p, data, 0o644)
			if _, err := Load(p); !errors.Is(err, ErrFormat) {
				t.Fatalf("err %v, want ErrFormat", err)
			}
		})
	}
}
