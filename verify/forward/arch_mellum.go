package forward

// mellum (llama.cpp's src/models/mellum.cpp): qwen3moe's block (q/k norms
// before NeoX RoPE, soft-max routing renormalised over the chosen experts)
// with interleaved sliding-window attention. Its sliding-window layers
// rotate with the model's rope base unscaled: the graph passes the global
// freq_base, not rope.freq_base_swa.
func init() {
	m := *archs["qwen3moe"]
	m.swaPlainRope = true
	m.hparams = mellumHparams
	archs["mellum"] = &m
}

// mellumHparams mirrors llama_model_mellum::load_arch_hparams: the RMS
// epsilon and, with a sliding window, its per-layer pattern (every 4th
// layer full by default); the sliding-window layers' rope base is the
// model's (see above).
func mellumHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	if _, err := r.u32(r.key("attention.sliding_window"), &c.SlidingWindow, false); err != nil {
		return err
	}
	if c.SlidingWindow <= 0 {
		c.SlidingWindow = 0
		return nil
	}
	if err := c.readSWAPattern(r, 4); err != nil {
		return err
	}
	c.RopeBaseSWA, c.RopeFreqScaleSWA = c.RopeBase, 1
	return nil
}
