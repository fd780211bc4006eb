package arch

import "fmt"

// permuteQK is LlamaModel.permute: Hugging Face stores each head's rotary
// pairs as two halves, llama.cpp expects them interleaved. For nHeadKV !=
// nHead (K of a GQA model) the head count is nHeadKV. The shape's first
// dimension is split as (heads, 2, rows/heads/2) and the middle axes are
// swapped: a permutation of rows.
func permuteQK(shape []int64, nHead, nHeadKV int64) (func([][]float32) ([]float32, error), error) {
	if nHeadKV > 0 && nHead != nHeadKV {
		nHead = nHeadKV
	}
	if len(shape) == 0 || nHead <= 0 || shape[0]%(2*nHead) != 0 {
		return nil, fmt.Errorf("cannot permute shape %v for %d heads", shape, nHead)
	}
	rows := shape[0]
	rowLen := numel(shape[1:])
	half := rows / nHead / 2
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != rows*rowLen {
			return nil, fmt.Errorf("permute: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, len(src))
		for h := range nHead {
			for i := range half {
				for j := range int64(2) {
					out := (h*half+i)*2 + j
					in := h*2*half + j*half + i
					copy(dst[out*rowLen:(out+1)*rowLen], src[in*rowLen:(in+1)*rowLen])
				}
			}
		}
		return dst, nil
	}, nil
}
