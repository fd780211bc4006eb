package arch

import (
	"fmt"
	"slices"
	"sort"
)

// expertStacker holds a block's per-expert tensors back until every expert
// of every projection has arrived, then stacks each projection's experts
// into one 3-D tensor (torch.stack(dim=0)), as the MoE model classes do.
type expertStacker struct {
	n      int
	wids   []string
	names  *NameMap
	blocks []map[string]held
}

type held struct {
	in    Input
	build func([][]float32) ([]float32, error)
}

// maxExperts bounds the expert count a config.json may give (the largest
// MoE models have a few hundred experts per block): a block is stacked
// once count × projections tensors have arrived, a product that must not
// overflow.
const maxExperts = 1 << 16

// expertCount is the first of keys present, as an expert count.
func expertCount(h HParams, keys ...string) (int, error) {
	n, err := h.MustInt(keys...)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > maxExperts {
		v, k, _ := h.Find(keys...)
		return 0, &ConfigError{Key: k, Value: v, Msg: fmt.Sprintf("is not an expert count (1 to %d)", maxExperts)}
	}
	return int(n), nil
}

func newExpertStacker(nExperts, nBlocks int, wids []string, names *NameMap) *expertStacker {
	return &expertStacker{n: nExperts, wids: wids, names: names, blocks: make([]map[string]held, nBlocks)}
}

// add holds one expert tensor; when the block is complete it returns the
// stacked outputs, one per projection in wids order. srcName(bid, xid, wid)
// is an expert tensor's name, mergedName(bid, wid) the stacked tensor's
// name before mapping.
func (s *expertStacker) add(in Input, build func([][]float32) ([]float32, error), bid int,
	srcName func(bid, xid int, wid string) string, mergedName func(bid int, wid string) string) ([]Output, error) {
	if bid < 0 || bid >= len(s.blocks) {
		return nil, fmt.Errorf("expert tensor %q: block %d out of range", in.Name, bid)
	}
	if s.blocks[bid] == nil {
		s.blocks[bid] = map[string]held{}
	}
	s.blocks[bid][in.Name] = held{in, build}
	if len(s.blocks[bid]) < s.n*len(s.wids) {
		return nil, nil
	}
	var outs []Output
	for _, wid := range s.wids {
		parts := make([]held, s.n)
		for xid := range s.n {
			name := srcName(bid, xid, wid)
			h, ok := s.blocks[bid][name]
			if !ok {
				return nil, fmt.Errorf("block %d: expert tensor %q missing (%d experts expected, %s)", bid, name, s.n, s.stray(bid, srcName))
			}
			delete(s.blocks[bid], name)
			parts[xid] = h
		}
		for _, p := range parts[1:] {
			if !slices.Equal(p.in.Shape, parts[0].in.Shape) {
				return nil, fmt.Errorf("block %d: expert tensors of %s differ in shape: %v vs %v", bid, wid, p.in.Shape, parts[0].in.Shape)
			}
		}
		merged := mergedName(bid, wid)
		_, gname, ok := s.names.Lookup(merged)
		if !ok {
			return nil, fmt.Errorf("can not map tensor %q", merged)
		}
		srcs := make([]Input, s.n)
		for i, p := range parts {
			srcs[i] = p.in
		}
		shape := append([]int64{int64(s.n)}, parts[0].in.Shape...)
		stacked := !slices.ContainsFunc(parts, func(p held) bool { return p.build != nil })
		outs = append(outs, Output{Name: gname, Shape: shape, Sources: srcs, HFName: merged, Bid: bid, Stacked: stacked,
			Build: func(vals [][]float32) ([]float32, error) {
				per := numel(parts[0].in.Shape)
				out := make([]float32, 0, per*int64(len(vals)))
				for i, v := range vals {
					if parts[i].build != nil {
						var err error
						if v, err = parts[i].build([][]float32{v}); err != nil {
							return nil, err
						}
					}
					out = append(out, v...)
				}
				return out, nil
			}})
	}
	return outs, nil
}

// stray names a held tensor of block bid that is none of its experts
// (an expert number past the count): what a block that filled up without
// one of its experts holds instead.
func (s *expertStacker) stray(bid int, srcName func(bid, xid int, wid string) string) string {
	want := make(map[string]bool, s.n*len(s.wids))
	for _, wid := range s.wids {
		for xid := range s.n {
			want[srcName(bid, xid, wid)] = true
		}
	}
	var extra []string
	for name := range s.blocks[bid] {
		if !want[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return "no other tensor"
	}
	sort.Strings(extra)
	return fmt.Sprintf("%q is not one of them", extra[0])
}

// finish reports expert tensors that never formed a complete block.
func (s *expertStacker) finish() error {
	if s == nil {
		return nil
	}
	var left []string
	for _, b := range s.blocks {
		for name := range b {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		if len(left) > 5 {
			left = append(left[:5], "…")
		}
		return fmt.Errorf("incomplete expert sets: %v", left)
	}
	return nil
}
