package forward

// maincoder (llama.cpp's src/models/maincoder.cpp): qwen3's block with
// NORM RoPE on the unpermuted Q and K and the per-head q/k RMS norms after
// RoPE.
func init() {
	m := *archs["qwen3"]
	m.rope = ropeNorm
	m.qkNormAfterRope = true
	archs["maincoder"] = &m
}
