package imatrix

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TensorStats are llama-imatrix --show-statistics' figures for one entry
// (compute_statistics in tools/imatrix/imatrix.cpp): over the mean squared
// activations of every column of every expert with data, their total,
// extremes, mean and standard deviation, the share above 1e-5, the entropy
// of their distribution, the share more than one deviation above the mean
// (ZD), and the cosine similarity with the same tensor one block before.
type TensorStats struct {
	Name                          string
	Total, Min, Max, Mean, StdDev float32
	Active, Entropy, ZD, CosSim   float32
	Elements                      int
	sums                          []float32
}

// Statistics computes TensorStats for every entry with data, sorted as
// llama-imatrix sorts them (by tensor kind, then by total, largest first).
func (s *Stats) Statistics() []TensorStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TensorStats
	for _, name := range s.sortedLocked() {
		if ts, ok := tensorStats(name, s.entries[name]); ok {
			out = append(out, ts)
		}
	}
	byName := make(map[string]*TensorStats, len(out))
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	for i := range out {
		out[i].CosSim = cosSimPrev(&out[i], byName)
	}
	slices.SortStableFunc(out, func(a, b TensorStats) int {
		_, ka := layerAndKind(a.Name)
		_, kb := layerAndKind(b.Name)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		case a.Total > b.Total:
			return -1
		case a.Total < b.Total:
			return 1
		}
		return 0
	})
	return out
}

func tensorStats(name string, e *Entry) (TensorStats, bool) {
	if len(e.Counts) == 0 || len(e.Sums)%len(e.Counts) != 0 {
		return TensorStats{}, false
	}
	per := len(e.Sums) / len(e.Counts)
	var act []float32
	for i, c := range e.Counts {
		if c == 0 {
			continue
		}
		for _, v := range e.Sums[i*per : (i+1)*per] {
			act = append(act, v/float32(c))
		}
	}
	if len(act) == 0 {
		return TensorStats{}, false
	}
	ts := TensorStats{Name: name, Elements: len(act), Min: act[0], Max: act[0], sums: e.Sums}
	var sq float32
	inactive := 0
	for _, a := range act {
		ts.Total += a
		sq += a * a
		ts.Min, ts.Max = min(ts.Min, a), max(ts.Max, a)
		if float32(math.Abs(float64(a))) <= 1e-5 {
			inactive++
		}
	}
	n := float32(len(act))
	ts.Mean = ts.Total / n
	ts.StdDev = float32(math.Sqrt(float64(max(0, sq/n-ts.Mean*ts.Mean))))
	ts.Active = 1 - float32(inactive)/n
	if ts.Total > 0 {
		for _, a := range act {
			if p := a / ts.Total; p > 0 {
				ts.Entropy -= p * float32(math.Log2(float64(p)))
			}
		}
	}
	if ts.StdDev > 0 {
		z := 0
		for _, a := range act {
			if (a-ts.Mean)/ts.StdDev > 1 {
				z++
			}
		}
		ts.ZD = float32(z) / n
	}
	return ts, true
}

var blockNumber = regexp.MustCompile(`blk\.(\d+)\.`)

// cosSimPrev is compute_cossim: the cosine similarity of the entry's sums
// with those of the same tensor in the previous block (0 when there is
// none, or the sizes differ).
func cosSimPrev(ts *TensorStats, byName map[string]*TensorStats) float32 {
	m := blockNumber.FindStringSubmatchIndex(ts.Name)
	if m == nil {
		return 0
	}
	blk, _ := strconv.Atoi(ts.Name[m[2]:m[3]])
	prev, ok := byName[ts.Name[:m[2]]+strconv.Itoa(blk-1)+ts.Name[m[3]:]]
	if !ok || len(prev.sums) != len(ts.sums) {
		return 0
	}
	var dp, a, b float32
	for i, v := range ts.sums {
		dp += v * prev.sums[i]
		a += v * v
		b += prev.sums[i] * prev.sums[i]
	}
	return dp / (float32(math.Sqrt(float64(a))) * float32(math.Sqrt(float64(b))))
}

// layerAndKind is process_tensor_name: the block number after "blk" ("-"
// when none) and the name part before "weight" (the whole name when none).
func layerAndKind(name string) (layer, kind string) {
	parts := strings.Split(name, ".")
	layer = "-"
	for i, p := range parts {
		if p == "blk" && i+1 < len(parts) {
			layer = parts[i+1]
			break
		}
	}
	for i, p := range parts {
		if p == "weight" && i > 0 {
			kind = parts[i-1]
			break
		}
	}
	if kind == "" {
		kind = name
	}
	return layer, kind
}

// WriteStatistics prints the statistics as llama-imatrix --show-statistics
// does: a line per tensor, then weighted averages per block.
func WriteStatistics(w io.Writer, source string, ts []TensorStats) {
	fmt.Fprintf(w, "\nComputing statistics for %s (%d tensors)\n", source, len(ts))
	fmt.Fprintf(w, "\n%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", " Layer", "       Tensor", "          Σ(Act²)",
		"  Min", "            Max", "           μ", "   σ", " % Active", "N", "   Entropy", "E (norm)", "ZD", "  CosSim")
	fmt.Fprintln(w, strings.Repeat("=", 169))
	type weighted struct {
		bias, zd, cos float32
		n             int
	}
	ws := map[int]*weighted{}
	for _, t := range ts {
		layer, kind := layerAndKind(t.Name)
		blk, err := strconv.Atoi(layer)
		if err != nil {
			blk = -1
		}
		norm := float32(0)
		if t.Elements > 0 {
			norm = 100 * (t.Entropy / float32(math.Log2(float64(t.Elements))))
		}
		fmt.Fprintf(w, "%5s\t%-20s\t%10.2f\t%8.4f\t%11.4f\t%6.2f\t%6.2f\t%8.2f%%\t%6d\t%10.4f\t%6.2f%%\t%10.2f%%\t%8.4f\n",
			layer, kind, t.Total, t.Min, t.Max, t.Mean, t.StdDev, t.Active*100, t.Elements, t.Entropy, norm, 100*t.ZD, t.CosSim)
		x := ws[blk]
		if x == nil {
			x = &weighted{}
			ws[blk] = x
		}
		e := float32(t.Elements)
		x.bias += e * t.Total
		x.zd += e * t.ZD
		x.cos += e * t.CosSim
		x.n += t.Elements
	}
	blocks := make([]int, 0, len(ws))
	layers := 0
	for b := range ws {
		blocks = append(blocks, b)
		if b >= 0 {
			layers++
		}
	}
	slices.Sort(blocks)
	fmt.Fprintf(w, "\nComputing weighted average statistics per layer (%d layers)\n", layers)
	fmt.Fprintf(w, "\n%s\t%s\t%s\t%s\n", "  Layer", "     μΣ(Act²)", "      μZD", "μCosSim")
	fmt.Fprintln(w, strings.Repeat("=", 48))
	for _, b := range blocks {
		x := ws[b]
		if b < 0 || x.n == 0 {
			continue
		}
		n := float32(x.n)
		fmt.Fprintf(w, "%5d\t%14.2f\t%10.4f%%\t%6.4f\n", b, x.bias/n, 100*x.zd/n, x.cos/n)
	}
	fmt.Fprintln(w)
}
