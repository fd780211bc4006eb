package forward

import "fmt"

// nanbeige (llama.cpp's src/models/nanbeige.cpp): llama's block (NORM
// RoPE, optional rope_freqs, SwiGLU) with its own hyperparameters. With
// num_loops above 1 llama.cpp runs the blocks that many times over with
// shared weights (the output norm between loops unless
// skip_loop_final_norm); that is not modelled.
func init() {
	m := *archs["llama"]
	m.hparams = nanbeigeHparams
	archs["nanbeige"] = &m
}

// nanbeigeHparams mirrors llama_model_nanbeige::load_arch_hparams for one
// loop: the RMS epsilon; a loop count above 1 is refused.
func nanbeigeHparams(c *Config, r *kvReader) error {
	if err := rmsEps(c, r); err != nil {
		return err
	}
	loops := 1
	if _, err := r.u32(r.key("num_loops"), &loops, false); err != nil {
		return err
	}
	if loops != 1 {
		return fmt.Errorf("%w: %s.num_loops %d: looped blocks are not supported", ErrUnsupported, c.Arch, loops)
	}
	return nil
}
