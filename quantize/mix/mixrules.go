package mix

import (
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// The ftype groups the rules test together.
func (p *planner) ftIn(fts ...gguf.FileType) bool {
	for _, ft := range fts {
		if p.opts.FileType == ft {
			return true
		}
	}
	return false
}

const (
	ftQ2K    = gguf.FileTypeQ2_K
	ftQ2KS   = gguf.FileTypeQ2_K_S
	ftQ3KS   = gguf.FileTypeQ3_K_S
	ftQ3KM   = gguf.FileTypeQ3_K_M
	ftQ3KL   = gguf.FileTypeQ3_K_L
	ftQ4KS   = gguf.FileTypeQ4_K_S
	ftQ4KM   = gguf.FileTypeQ4_K_M
	ftQ5KM   = gguf.FileTypeQ5_K_M
	ftQ4_0   = gguf.FileTypeQ4_0
	ftQ5_0   = gguf.FileTypeQ5_0
	ftIQ1S   = gguf.FileTypeIQ1_S
	ftIQ1M   = gguf.FileTypeIQ1_M
	ftIQ2XXS = gguf.FileTypeIQ2_XXS
	ftIQ2XS  = gguf.FileTypeIQ2_XS
	ftIQ2S   = gguf.FileTypeIQ2_S
	ftIQ2M   = gguf.FileTypeIQ2_M
	ftIQ3XXS = gguf.FileTypeIQ3_XXS
	ftIQ3XS  = gguf.FileTypeIQ3_XS
	ftIQ3S   = gguf.FileTypeIQ3_S
	ftIQ3M   = gguf.FileTypeIQ3_M
	ftIQ4NL  = gguf.FileTypeIQ4_NL
	ftIQ4XS  = gguf.FileTypeIQ4_XS
	ftMXFP4  = gguf.FileTypeMXFP4_MOE
	ftTQ1    = gguf.FileTypeTQ1_0
	ftTQ2    = gguf.FileTypeTQ2_0
	ftQ2_0   = gguf.FileTypeQ2_0
)

// rules is llama_tensor_get_type_impl: the preset's mix. It reads and
// advances the planner's per-category counters exactly where llama.cpp does.
func (p *planner) rules(t gguf.Type, ten Tensor, cat Category) (gguf.Type, error) {
	m := &p.model
	name := ten.Name
	falcon := m.Arch == "falcon"
	// glm5-next: a few projections stay at Q8_0 or better.
	if m.Arch == "glm5-next" && (strings.Contains(name, "attn_q_a") || strings.Contains(name, "attn_q_b") || strings.Contains(name, "nextn.eh_proj")) {
		switch t {
		case gguf.F32, gguf.BF16, gguf.F16:
		default:
			return gguf.Q8_0, nil
		}
	}

	switch {
	case cat == Output || (p.tied && cat == TokenEmbd):
		// Tied embeddings are quantized like the output tensor.
		switch {
		case p.opts.OutputType != nil:
			t = *p.opts.OutputType
		case p.ftIn(ftMXFP4):
			t = gguf.Q8_0
		case falcon || ten.Shape[0]%uint64(t.BlockSize()) != 0:
			t = gguf.Q8_0
		case p.ftIn(ftIQ2XXS, ftIQ2XS, ftIQ3XXS, ftIQ1S, ftIQ2S, ftIQ2M, ftIQ1M):
			t = gguf.Q5_K
		case t != gguf.Q8_0:
			t = gguf.Q6_K
		}

	case p.ftIn(ftMXFP4):
		// Expert tensors (3-D) become MXFP4, everything else Q8_0.
		bailingExpert := m.Arch == "bailingmoe3" && (cat == FFNUp || cat == FFNGate || cat == FFNDown)
		if len(ten.Shape) > 2 && ten.Shape[2] > 1 && (m.Arch != "bailingmoe3" || bailingExpert) {
			t = gguf.MXFP4
		} else {
			t = gguf.Q8_0
		}

	case cat == TokenEmbd:
		switch {
		case p.opts.TokenEmbdType != nil:
			t = *p.opts.TokenEmbdType
		case p.ftIn(ftIQ2XXS, ftIQ2XS, ftIQ1S, ftIQ1M):
			t = gguf.Q2_K
		case p.ftIn(ftIQ2S, ftIQ2M, ftIQ3XXS):
			t = gguf.IQ3_S
		case p.ftIn(ftTQ1, ftTQ2, ftQ2_0):
			t = gguf.Q4_K
		}

	case p.ftIn(ftIQ2XXS, ftIQ2XS, ftIQ1S, ftIQ2S, ftIQ2M, ftIQ1M):
		iq2sm := p.ftIn(ftIQ2S, ftIQ2M)
		switch {
		case cat.isAttnVLike():
			switch {
			case m.GQA() >= 4 || m.Experts >= 4:
				t = gguf.Q4_K
			case iq2sm:
				t = gguf.IQ3_S
			default:
				t = gguf.Q2_K
			}
			p.iAttnV++
		case m.Experts == 8 && cat == AttnK:
			t = gguf.Q4_K
		case cat == FFNDown:
			if p.iFFNDown < p.nFFN/8 {
				if iq2sm {
					t = gguf.IQ3_S
				} else {
					t = gguf.Q2_K
				}
			}
			p.iFFNDown++
		case cat == AttnOutput:
			switch {
			case m.Experts == 8:
				t = gguf.Q5_K
			case p.ftIn(ftIQ1S, ftIQ1M):
				t = gguf.IQ2_XXS
			case iq2sm:
				t = gguf.IQ3_S
			}
		}

	case cat.isAttnVLike():
		// attn_qkv and attn_kv_b land here too: llama.cpp's later
		// ATTENTION_QKV branch is unreachable behind this one.
		gqa := m.GQA()
		switch {
		case p.ftIn(ftQ2K):
			t = pick(gqa >= 4, gguf.Q4_K, gguf.Q3_K)
		case p.ftIn(ftQ2KS) && gqa >= 4:
			t = gguf.Q4_K
		case p.ftIn(ftIQ3XXS):
			switch {
			case gqa >= 4:
				t = gguf.Q4_K
			case !p.opts.HasImatrix:
				t = gguf.IQ3_S
			default:
				t = gguf.IQ3_XXS
			}
		case p.ftIn(ftIQ3XS, ftIQ3S) && gqa >= 4:
			t = gguf.Q4_K
		case p.ftIn(ftIQ3M):
			t = gguf.Q4_K
		case p.ftIn(ftQ3KM):
			t = pick(p.iAttnV < 2, gguf.Q5_K, gguf.Q4_K)
		case p.ftIn(ftQ3KL):
			t = gguf.Q5_K
		case p.ftIn(ftIQ4NL, ftIQ4XS) && gqa >= 4:
			t = gguf.Q5_K
		case p.ftIn(ftQ4KM, ftQ5KM) && useMoreBits(p.iAttnV, p.nAttnV):
			t = gguf.Q6_K
		case p.ftIn(ftQ4KS) && p.iAttnV < 4:
			t = gguf.Q5_K
		}
		// 70B models share one attn_v among 8 heads: it is 8× smaller than
		// attn_q, so more bits cost little.
		if m.Is70B && (t == gguf.Q3_K || t == gguf.Q4_K) {
			t = gguf.Q5_K
		}
		if m.Experts == 8 {
			t = gguf.Q8_0
		}
		p.iAttnV++

	case cat == AttnK:
		switch {
		case m.Experts == 8:
			t = gguf.Q8_0
		case p.ftIn(ftIQ3XS):
			t = gguf.IQ3_XXS
		case p.ftIn(ftIQ3XXS):
			t = gguf.IQ2_S
		}

	case cat == AttnQ:
		switch {
		case p.ftIn(ftIQ3XS):
			t = gguf.IQ3_XXS
		case p.ftIn(ftIQ3XXS):
			t = gguf.IQ2_S
		}

	case cat == FFNDown:
		i, err := p.layer(p.iFFNDown, name)
		if err != nil {
			return t, err
		}
		n := p.nFFN
		switch {
		case p.ftIn(ftQ2K):
			t = gguf.Q3_K
		case p.ftIn(ftQ2KS):
			if i < n/8 {
				t = gguf.Q4_K
			}
		case p.ftIn(ftIQ3XXS) && !p.opts.HasImatrix:
			t = pick(i < n/8, gguf.Q4_K, gguf.Q3_K)
		case p.ftIn(ftQ3KM):
			switch {
			case i < n/16:
				t = gguf.Q5_K
			case !falcon || useMoreBits(i, n):
				t = gguf.Q4_K
			default:
				t = gguf.Q3_K
			}
		case p.ftIn(ftIQ3M) && (i < n/8 || (m.Experts == 8 && useMoreBits(i, n))):
			t = gguf.Q4_K
		case p.ftIn(ftQ3KL):
			t = pick(falcon, gguf.Q4_K, gguf.Q5_K)
		case p.ftIn(ftQ4KM):
			if falcon {
				switch {
				case i < n/16:
					t = gguf.Q6_K
				case useMoreBits(i, n):
					t = gguf.Q5_K
				default:
					t = gguf.Q4_K
				}
			} else if useMoreBits(i, n) {
				t = gguf.Q6_K
			}
		case i < n/8 && p.ftIn(ftIQ4NL, ftIQ4XS) && !p.opts.HasImatrix:
			t = gguf.Q5_K
		case p.ftIn(ftQ5KM) && useMoreBits(i, n):
			t = gguf.Q6_K
		case p.ftIn(ftQ4KS) && !falcon && i < n/8:
			t = gguf.Q5_K
		case p.ftIn(ftQ4_0, ftQ5_0) && p.opts.HasImatrix && i < n/8:
			// Guards the first ffn_down layers of Q4_0/Q5_0, only with an
			// imatrix so that plain runs keep their historical output.
			t = pick(p.ftIn(ftQ4_0), gguf.Q4_1, gguf.Q5_1)
		}
		p.iFFNDown++

	case cat == AttnOutput:
		if !falcon {
			if m.Experts == 8 {
				if p.ftIn(ftQ2K, ftIQ3XS, ftIQ3XXS, ftQ3KS, ftQ3KM, ftIQ4NL, ftQ4KS, ftQ4KM, ftIQ3S, ftIQ3M, ftIQ4XS) {
					t = gguf.Q5_K
				}
			} else {
				switch {
				case p.ftIn(ftQ2K):
					t = gguf.Q3_K
				case p.ftIn(ftIQ3XXS):
					t = gguf.IQ3_S
				case p.ftIn(ftQ3KM):
					t = gguf.Q4_K
				case p.ftIn(ftQ3KL):
					t = gguf.Q5_K
				case p.ftIn(ftIQ3M):
					t = gguf.Q4_K
				}
			}
		} else if p.ftIn(ftQ3KL) {
			t = gguf.Q4_K
		}

	case cat == FFNGate, cat == FFNUp:
		counter := &p.iFFNGate
		if cat == FFNUp {
			counter = &p.iFFNUp
		}
		i, err := p.layer(*counter, name)
		if err != nil {
			return t, err
		}
		if p.ftIn(ftIQ3XS) && i >= p.nFFN/8 && i < 7*p.nFFN/8 {
			t = gguf.IQ3_XXS
		}
		*counter++
	}
	return t, nil
}

func pick(cond bool, a, b gguf.Type) gguf.Type {
	if cond {
		return a
	}
	return b
}
