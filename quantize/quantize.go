// Package quantize encodes float32 rows into every ggml tensor type and
// decodes them back, bit-exact with ggml (ggml/src/ggml-quants.c and
// ggml/src/ggml.c of llama.cpp commit 0c1e570).
//
// Each type family lives in its own file (floats.go, legacy.go, kquants.go,
// iquants.go, ternary.go, fp4.go …) and registers its row codecs in the
// codecs table. Rows are independent, so encoding a matrix is encoding each
// row; Quantizer spreads rows over workers and gives the same bytes for any
// worker count.
//
// Bit-exactness: ggml is built without FMA and with strict IEEE rounding.
// Every float32 product that C rounds separately is written here with an
// explicit float32(...) conversion, which the Go spec says forces rounding
// and so forbids fusing it into an FMA (GOAMD64=v3, arm64).
package quantize

import (
	"errors"
	"fmt"
	"math"

	"github.com/ggufkit/ggufkit/gguf"
)

// Sentinel errors, for errors.Is.
var (
	// ErrUnsupported: the type has no encoder or decoder.
	ErrUnsupported = errors.New("quantize: unsupported type")
	// ErrNeedImatrix: the type cannot be encoded without importance weights
	// (ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S).
	ErrNeedImatrix = errors.New("quantize: type requires an importance matrix")
	// ErrShape: a row length or buffer size does not fit the type.
	ErrShape = errors.New("quantize: bad shape")
	// ErrNonFinite: an input value is NaN or infinite.
	ErrNonFinite = errors.New("quantize: non-finite input")
	// ErrInvalidData: encoded data fails ggml_validate_row_data.
	ErrInvalidData = errors.New("quantize: invalid encoded data")
)

// codec holds the row functions of one type. encodeRow gets one row whose
// length is a multiple of the block size, and imatrix (nil, or one weight per
// column); decodeRow decodes one row. Either may be nil when ggml has none.
type codec struct {
	encodeRow func(dst []byte, src []float32, imatrix []float32)
	// encodeFinite, when set, is encodeRow fused with the finiteness check
	// that precedes every encode: it reports whether every value of src is
	// finite and, when they are, has written encodeRow's bytes (otherwise
	// dst holds unspecified bytes). The simple per-value types set it so
	// that Quantizer reads each input value once instead of twice, which is
	// as much as their whole encode costs.
	encodeFinite func(dst []byte, src []float32, imatrix []float32) bool
	decodeRow    func(dst []float32, src []byte)
	// needsImatrix mirrors ggml_quantize_requires_imatrix.
	needsImatrix bool
	// usesImatrix is false for types whose encoding ignores the weights.
	usesImatrix bool
}

// codecs is filled by each family file's init.
var codecs [gguf.TypeCount]*codec

func register(t gguf.Type, c *codec) {
	if codecs[t] != nil {
		panic("quantize: codec registered twice for " + t.String())
	}
	codecs[t] = c
}

func lookup(t gguf.Type) (*codec, error) {
	if t >= gguf.TypeCount || codecs[t] == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, t)
	}
	return codecs[t], nil
}

// CanEncode reports whether t has an encoder.
func CanEncode(t gguf.Type) bool { c, err := lookup(t); return err == nil && c.encodeRow != nil }

// CanDecode reports whether t has a decoder.
func CanDecode(t gguf.Type) bool { c, err := lookup(t); return err == nil && c.decodeRow != nil }

// RequiresImatrix mirrors ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS and
// IQ1_S cannot be encoded without importance weights.
func RequiresImatrix(t gguf.Type) bool { c, err := lookup(t); return err == nil && c.needsImatrix }

// UsesImatrix reports whether importance weights change t's encoding.
func UsesImatrix(t gguf.Type) bool { c, err := lookup(t); return err == nil && c.usesImatrix }

// RowSize is the encoded size of one row of ncols values of type t.
func RowSize(t gguf.Type, ncols int) (int, error) {
	bs := t.BlockSize()
	if bs == 0 {
		return 0, fmt.Errorf("%w: %s", ErrUnsupported, t)
	}
	if ncols <= 0 || ncols%bs != 0 {
		return 0, fmt.Errorf("%w: row length %d is not a multiple of %s's block size %d", ErrShape, ncols, t, bs)
	}
	return ncols / bs * t.TypeSize(), nil
}

// checkShape validates the buffers of an encode or decode of len(vals)
// values in rows of ncols into len(data) bytes; it returns the row count and
// the encoded row size.
func checkShape(t gguf.Type, nvals, ndata, ncols int) (nrows, rowSize int, err error) {
	rowSize, err = RowSize(t, ncols)
	if err != nil {
		return 0, 0, err
	}
	if nvals%ncols != 0 {
		return 0, 0, fmt.Errorf("%w: %d values are not whole rows of %d", ErrShape, nvals, ncols)
	}
	nrows = nvals / ncols
	if ndata != nrows*rowSize {
		return 0, 0, fmt.Errorf("%w: %d rows of %d %s values take %d bytes, buffer has %d", ErrShape, nrows, ncols, t, nrows*rowSize, ndata)
	}
	return nrows, rowSize, nil
}

// CheckFinite returns an ErrNonFinite error naming the first NaN or
// infinite value of src (rows of ncols), as ggml_validate_row_data would
// reject the tensor. rowOffset is added to the reported row number.
func CheckFinite(src []float32, ncols, rowOffset int) error {
	if i := firstNonFinite(src); i >= 0 {
		return fmt.Errorf("%w: %v at row %d, column %d", ErrNonFinite, src[i], rowOffset+i/ncols, i%ncols)
	}
	return nil
}

// firstNonFinite returns the index of the first NaN or infinity of src, or
// -1.
func firstNonFinite(src []float32) int {
	if floatsFinite(src) {
		return -1
	}
	return firstNonFiniteGeneric(src)
}

// firstNonFiniteGeneric is firstNonFinite in plain Go. A value is non-finite when its exponent bits are all ones; adding
// 1 to the exponent field then carries into bit 31, so OR-ing that sum over
// a group of values tells without a branch per value whether the group
// holds one, and only such a group is scanned value by value.
func firstNonFiniteGeneric(src []float32) int {
	const group = 16
	i := 0
	for ; i+group <= len(src); i += group {
		var acc uint32
		for _, x := range src[i : i+group] {
			acc |= math.Float32bits(x)&0x7F800000 + 0x00800000
		}
		if acc&0x80000000 != 0 {
			break
		}
	}
	for ; i < len(src); i++ {
		if math.Float32bits(src[i])&0x7F800000 == 0x7F800000 {
			return i
		}
	}
	return -1
}

// finiteThen is encodeFinite for an encoder with no fused form (the
// weighted scale searches, whose cost dwarfs a separate check): the check
// first, then enc.
func finiteThen(enc func(dst []byte, src, imatrix []float32), dst []byte, src, imatrix []float32) bool {
	if firstNonFinite(src) >= 0 {
		return false
	}
	enc(dst, src, imatrix)
	return true
}

// Encode quantizes src, rows of ncols values, into dst as type t, with
// optional importance weights (one per column, or nil). dst must hold
// exactly the encoded rows. Non-finite input is refused. It runs on the
// calling goroutine; Quantizer spreads the rows over workers.
func Encode(t gguf.Type, dst []byte, src []float32, ncols int, imatrix []float32) error {
	return encodeRows(t, dst, src, ncols, imatrix, 0, false)
}

// encodeRows is Encode with rowOffset added to reported row numbers; finite
// says the caller has already checked src for non-finite values.
func encodeRows(t gguf.Type, dst []byte, src []float32, ncols int, imatrix []float32, rowOffset int, finite bool) error {
	c, err := lookup(t)
	if err != nil || c.encodeRow == nil {
		return fmt.Errorf("%w: %s has no encoder", ErrUnsupported, t)
	}
	nrows, rowSize, err := checkShape(t, len(src), len(dst), ncols)
	if err != nil {
		return err
	}
	if imatrix != nil && len(imatrix) != ncols {
		return fmt.Errorf("%w: importance matrix has %d weights for rows of %d", ErrShape, len(imatrix), ncols)
	}
	if c.needsImatrix && imatrix == nil {
		return fmt.Errorf("%w: %s", ErrNeedImatrix, t)
	}
	if !finite {
		if err := CheckFinite(src, ncols, rowOffset); err != nil {
			return err
		}
	}
	for r := 0; r < nrows; r++ {
		c.encodeRow(dst[r*rowSize:(r+1)*rowSize], src[r*ncols:(r+1)*ncols], imatrix)
	}
	return nil
}

// Decode converts src, whole rows of type t, into dst (rows of len(dst)/rows
// values). ncols is the row length.
func Decode(t gguf.Type, dst []float32, src []byte, ncols int) error {
	c, err := lookup(t)
	if err != nil || c.decodeRow == nil {
		return fmt.Errorf("%w: %s has no decoder", ErrUnsupported, t)
	}
	nrows, rowSize, err := checkShape(t, len(dst), len(src), ncols)
	if err != nil {
		return err
	}
	for r := 0; r < nrows; r++ {
		c.decodeRow(dst[r*ncols:(r+1)*ncols], src[r*rowSize:(r+1)*rowSize])
	}
	return nil
}
