package arch

import "fmt"

// permuteQK is LlamaModel.permute: Hugging Face stores each head's rotary
// pairs as two halves, llama.cpp expects them interleaved. For nHeadKV !=
// nHead (K of a GQA model) the head count is nHeadKV. The shape's first
// dimension is split as (heads, 2, rows/heads/2) and the middle axes are
// swapped: a permutation of rows, returned both as the float32 transform
// and as the row order (see Output.RowOrder).
func permuteQK(shape []int64, nHead, nHeadKV int64) (func([][]float32) ([]float32, error), []int64, error) {
	if nHeadKV > 0 && nHead != nHeadKV {
		nHead = nHeadKV
	}
	if len(shape) == 0 || nHead <= 0 || shape[0]%(2*nHead) != 0 {
		return nil, nil, fmt.Errorf("cannot permute shape %v for %d heads", shape, nHead)
	}
	rows := shape[0]
	half := rows / nHead / 2
	order := make([]int64, rows)
	for h := range nHead {
		for i := range half {
			for j := range int64(2) {
				order[(h*half+i)*2+j] = h*2*half + j*half + i
			}
		}
	}
	return reorderRows(shape, order), order, nil
}

// reorderRows is the float32 transform that puts source row order[i]
// (along the first dimension) at row i.
func reorderRows(shape []int64, order []int64) func([][]float32) ([]float32, error) {
	rowLen := numel(shape[1:])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != int64(len(order))*rowLen {
			return nil, fmt.Errorf("permute: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, len(src))
		for out, in := range order {
			copy(dst[int64(out)*rowLen:int64(out+1)*rowLen], src[in*rowLen:(in+1)*rowLen])
		}
		return dst, nil
	}
}

// permuteRowBlocks reorders a tensor's rows in blocks of blockRows rows:
// output block i is source block order[i]. The tensor's first dimension
// must be len(order)·blockRows.
func permuteRowBlocks(shape []int64, blockRows int64, order []int64) (func([][]float32) ([]float32, error), error) {
	if len(shape) == 0 || blockRows <= 0 || shape[0] != int64(len(order))*blockRows {
		return nil, fmt.Errorf("cannot reorder shape %v as %d blocks of %d rows", shape, len(order), blockRows)
	}
	for _, b := range order {
		if b < 0 || b >= int64(len(order)) {
			return nil, fmt.Errorf("row block %d of %d", b, len(order))
		}
	}
	block := blockRows * numel(shape[1:])
	total := shape[0] * numel(shape[1:])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != total {
			return nil, fmt.Errorf("reorder: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, len(src))
		for i, b := range order {
			copy(dst[int64(i)*block:int64(i+1)*block], src[b*block:(b+1)*block])
		}
		return dst, nil
	}, nil
}

// selectRows is the float32 transform that makes row i of the output
// source row order[i] (along the first dimension of shape), for a subset or
// permutation of the source's shape[0] rows.
func selectRows(shape []int64, order []int64) func([][]float32) ([]float32, error) {
	rowLen := numel(shape[1:])
	return func(srcs [][]float32) ([]float32, error) {
		src := srcs[0]
		if int64(len(src)) != numel(shape) {
			return nil, fmt.Errorf("select rows: %d values for shape %v", len(src), shape)
		}
		dst := make([]float32, int64(len(order))*rowLen)
		for out, in := range order {
			copy(dst[int64(out)*rowLen:int64(out+1)*rowLen], src[in*rowLen:(in+1)*rowLen])
		}
		return dst, nil
	}
}
