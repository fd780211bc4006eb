package forward

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ggufkit/ggufkit/gguf"
)

// TestAttnMoEHparams checks what the issue-15 families' hparams refuse or
// derive, on the metadata of their converted fixtures.
func TestAttnMoEHparams(t *testing.T) {
	tests := []struct {
		fixture, key string
		v            gguf.Value
		drop         bool // the key is absent
		err          error
		msg          string
		check        func(*testing.T, *Config)
	}{
		// The converter writes no gating function for Dots1 configs (they
		// have no scoring_func), and build_moe_ffn aborts without one.
		{fixture: "dots1", err: ErrMetadata, msg: "no dots1.expert_gating_func"},
		{fixture: "dots1", key: "dots1.expert_gating_func", v: gguf.Uint32(4), err: ErrUnsupported, msg: "expert gating function 4"},
		{fixture: "dots1", key: "dots1.expert_gating_func", v: gguf.Uint32(2), check: func(t *testing.T, c *Config) {
			if c.FFShared != 2*c.FFExp || c.DenseLead != 1 || c.ExpertWeightsScale != 2.5 || !c.normW() {
				t.Errorf("shared width %d (experts %d), %d dense, scale %g, norm %v", c.FFShared, c.FFExp, c.DenseLead, c.ExpertWeightsScale, c.normW())
			}
		}},
		{fixture: "minimaxm2", key: "minimax-m2.expert_gating_func", drop: true, err: ErrMetadata, msg: "no minimax-m2.expert_gating_func"},
		{fixture: "minimaxm2", key: "minimax-m2.expert_feed_forward_length", drop: true, err: ErrMetadata, msg: "expert_feed_forward_length"},
		{fixture: "ernie4_5moe", key: "ernie4_5-moe.interleave_moe_layer_step", v: gguf.Uint32(2), err: ErrUnsupported, msg: "interleave_moe_layer_step 2"},
		{fixture: "ernie4_5moe", key: "ernie4_5-moe.interleave_moe_layer_step", drop: true, err: ErrMetadata, msg: "not found"},
		{fixture: "granite", key: "granite.logit_scale", v: gguf.Float32(0), err: ErrMetadata, msg: "logit_scale 0"},
		{fixture: "granite", key: "granite.logit_scale", drop: true, err: ErrMetadata, msg: "not found"},
		{fixture: "granite", key: "granite.rope.scaling.finetuned", v: gguf.Bool(false), check: func(t *testing.T, c *Config) {
			for il, no := range c.NoRope {
				if !no {
					t.Errorf("block %d has RoPE with rope.scaling.finetuned false", il)
				}
			}
		}},
		{fixture: "granitemoe", check: func(t *testing.T, c *Config) {
			if c.LogitScale != 1/float32(6) || c.EmbedScale != 12 || c.ResidualScale != 0.22 || c.AttnScale != 0.015625 || c.NoRope != nil {
				t.Errorf("scales: logit %g, embedding %g, residual %g, attention %g; no rope %v", c.LogitScale, c.EmbedScale, c.ResidualScale, c.AttnScale, c.NoRope)
			}
		}},
		{fixture: "smollm3", check: func(t *testing.T, c *Config) {
			if want := []bool{false, false, false, true}; !slices.Equal(c.NoRope, want) {
				t.Errorf("no RoPE %v, want %v", c.NoRope, want)
			}
		}},
		{fixture: "exaone4", check: func(t *testing.T, c *Config) {
			if c.NoRope != nil || c.SWA[0] {
				t.Errorf("4 blocks: no RoPE %v, SWA %v (only the 64-block model has windows)", c.NoRope, c.SWA)
			}
		}},
		{fixture: "hunyuandense", key: "hunyuan-dense.rope.scaling.alpha", v: gguf.Float32(1000), check: func(t *testing.T, c *Config) {
			// 1e10 · 1000^(4/2).
			if c.RopeBase != 1e16 {
				t.Errorf("rope base %g, want 1e16", c.RopeBase)
			}
		}},
	}
	files := map[string]Metadata{}
	for _, tc := range tests {
		if files[tc.fixture] == nil {
			files[tc.fixture] = convertFixture(t, tc.fixture)
		}
	}
	for _, tc := range tests {
		name := tc.fixture + "/" + tc.key[strings.Index(tc.key, ".")+1:]
		t.Run(name, func(t *testing.T) {
			md := files[tc.fixture]
			switch {
			case tc.drop:
				md = withoutKV{md, tc.key}
			case tc.key != "":
				md = withKV{md, tc.key, tc.v}
			}
			c, err := ParseConfig(md)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("error %v, want %v containing %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// withoutKV hides a key of a file's metadata.
type withoutKV struct {
	Metadata
	key string
}

func (m withoutKV) KV(key string) (gguf.Value, bool) {
	if key == m.key {
		return gguf.Value{}, false
	}
	return m.Metadata.KV(key)
}
