package arch

import (
	"fmt"
	"slices"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

// MXFP4 checkpoints (OpenAI's layout, as gpt-oss ships): a weight
// [..., rows, cols] is stored as two U8 tensors, NAME_blocks
// [..., rows, cols/32, 16] (two 4-bit E2M1 codes a byte, the even value in
// the low nibble) and NAME_scales [..., rows, cols/32] (one E8M0 exponent
// per 32 values). ggml's MXFP4 block (block_mxfp4, ggml-common.h) is the
// exponent byte followed by 16 bytes whose byte k holds value k in its low
// nibble and value k+16 in its high nibble; the codes and the exponent are
// the same numbers, so repacking is a byte shuffle, never a requantization.

const (
	mxfp4BlockValues = 32 // QK_MXFP4
	mxfp4BlockBytes  = 16 // the codes of one block in a *_blocks tensor
)

// mxfp4Rows selects the rows (dimension -2 of the weight) a repacked
// tensor takes from its checkpoint pair.
type mxfp4Rows int

const (
	mxfp4AllRows  mxfp4Rows = iota
	mxfp4EvenRows           // [..., ::2, :]: gpt-oss's gate rows of gate_up_proj
	mxfp4OddRows            // [..., 1::2, :]: its up rows
)

// checkMXFP4Pair checks a *_blocks / *_scales pair: U8, blocks
// [lead..., rows, nblocks, 16], scales [lead..., rows, nblocks].
func checkMXFP4Pair(blocks, scales Input) error {
	if blocks.DType != readers.U8 {
		return fmt.Errorf("MXFP4 blocks tensor %q is %s, want U8", blocks.Source, blocks.DType)
	}
	if scales.DType != readers.U8 {
		return fmt.Errorf("MXFP4 scales tensor %q is %s, want U8", scales.Source, scales.DType)
	}
	b, s := blocks.Shape, scales.Shape
	if len(b) < 3 || b[len(b)-1] != mxfp4BlockBytes || slices.Contains(b, 0) {
		return fmt.Errorf("MXFP4 blocks tensor %q has shape %v, want [..., rows, cols/32, 16]", blocks.Source, b)
	}
	if !slices.Equal(s, b[:len(b)-1]) {
		return fmt.Errorf("MXFP4 scales tensor %q has shape %v, want %v to match blocks tensor %q %v",
			scales.Source, s, b[:len(b)-1], blocks.Source, b)
	}
	return nil
}

// repackMXFP4 is the output, named name, of a checkpoint MXFP4 pair
// repacked into ggml's MXFP4 blocks, keeping the rows sel selects: the
// repack_mxfp4 / transform_nibble_layout of the converter's GptOssModel.
// Its shape is the weight's, [lead..., rows', cols].
func repackMXFP4(name string, bid int, blocks, scales Input, sel mxfp4Rows) (Output, error) {
	if err := checkMXFP4Pair(blocks, scales); err != nil {
		return Output{}, err
	}
	b := blocks.Shape
	lead := b[:len(b)-3]
	rows, nb := b[len(b)-3], b[len(b)-2]
	outRows := rows
	if sel != mxfp4AllRows {
		if rows%2 != 0 {
			return Output{}, fmt.Errorf("MXFP4 blocks tensor %q: %d rows cannot be split into gate and up halves", blocks.Source, rows)
		}
		outRows = rows / 2
	}
	if nb > (1<<62)/mxfp4BlockValues {
		return Output{}, fmt.Errorf("MXFP4 blocks tensor %q: shape %v too large", blocks.Source, b)
	}
	shape := append(slices.Clone(lead), outRows, nb*mxfp4BlockValues)
	outer := numel(lead)
	return Output{
		Name: name, Shape: shape, Sources: []Input{blocks, scales}, HFName: scales.Name, Bid: bid,
		PackedType: gguf.MXFP4,
		Packed: func(srcs [][]byte) ([]byte, error) {
			if len(srcs) != 2 {
				return nil, fmt.Errorf("MXFP4 repack: %d sources", len(srcs))
			}
			codes, exps := srcs[0], srcs[1]
			nBlocks := outer * rows * nb
			if int64(len(exps)) != nBlocks || int64(len(codes)) != nBlocks*mxfp4BlockBytes {
				return nil, fmt.Errorf("MXFP4 repack of %q: %d code bytes and %d scales for %d blocks", blocks.Source, len(codes), len(exps), nBlocks)
			}
			out := make([]byte, 0, outer*outRows*nb*(1+mxfp4BlockBytes))
			for o := range outer {
				for r := range rows {
					if sel == mxfp4EvenRows && r%2 != 0 || sel == mxfp4OddRows && r%2 == 0 {
						continue
					}
					for k := range nb {
						blk := (o*rows+r)*nb + k
						out = appendMXFP4Block(out, exps[blk], codes[blk*mxfp4BlockBytes:(blk+1)*mxfp4BlockBytes])
					}
				}
			}
			return out, nil
		},
	}, nil
}

// appendMXFP4Block appends one ggml block_mxfp4 to out: the exponent byte,
// then the 16 checkpoint code bytes (byte i holding value 2i in its low
// nibble and 2i+1 in its high one) regrouped so that byte j holds value j
// low and value j+16 high.
func appendMXFP4Block(out []byte, exp byte, codes []byte) []byte {
	var v [mxfp4BlockValues]byte
	for i, c := range codes[:mxfp4BlockBytes] {
		v[2*i], v[2*i+1] = c&0x0F, c>>4
	}
	out = append(out, exp)
	for j := range mxfp4BlockValues / 2 {
		out = append(out, v[j]|v[j+mxfp4BlockValues/2]<<4)
	}
	return out
}
