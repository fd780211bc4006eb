package perplexity

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// The --kl-divergence-base file, as llama-perplexity writes it (all
// little-endian): the magic "_logits_"; int32 n_ctx, n_vocab and n_chunk;
// the n_chunk·n_ctx int32 tokens evaluated (the original tokens, BOS not
// substituted); then, for every chunk, n_ctx − 1 − n_ctx/2 rows (the scored
// positions) of logProbWidth(n_vocab) uint16 values: a float32 scale and a
// float32 minimum log-probability in the first four, then each token's
// log-probability quantized to 16 bits above that minimum.
const baseMagic = "_logits_"

// logProbWidth is nv, the uint16 values of one saved row.
func logProbWidth(nVocab int) int { return 2*((nVocab+1)/2) + 4 }

// nearestInt is ggml's nearest_int trick (round half to even through the
// float32 mantissa), valid for |x| ≤ 4194303.
func nearestInt(x float32) int32 {
	v := x + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// compressLogProbs is perplexity.cpp's log_softmax(n_vocab, logits,
// log_prob, tok): it fills row with the quantized log-probabilities of z
// and returns the negative log-likelihood of tok, computed in float32.
func compressLogProbs(z []float32, row []uint16, tok int) float64 {
	maxL, minL := z[0], z[0]
	for _, v := range z[1:] {
		maxL = max(maxL, v)
		minL = min(minL, v)
	}
	minL = max(minL, maxL-16)
	logSumExp := float32(math.Log(sumExp(z, maxL)))
	minLogProb := minL - maxL - logSumExp
	scale := (maxL - minL) / 65535
	putFloat(row[0:2], scale)
	putFloat(row[2:4], minLogProb)
	q := row[4:]
	clear(q)
	if scale != 0 {
		inv := 1 / scale
		for i, v := range z {
			if v > minL {
				q[i] = uint16(nearestInt(inv * (v - minL)))
			}
		}
	}
	return float64(maxL + logSumExp - z[tok])
}

// putFloat stores a float32 in two uint16 values as memory holds it on a
// little-endian machine.
func putFloat(dst []uint16, f float32) {
	b := math.Float32bits(f)
	dst[0], dst[1] = uint16(b), uint16(b>>16)
}

func getFloat(src []uint16) float32 {
	return math.Float32frombits(uint32(src[0]) | uint32(src[1])<<16)
}

// BaseWriter writes a --kl-divergence-base file while Run scores the base
// model.
type BaseWriter struct {
	w   *bufio.Writer
	buf []byte
}

// NewBaseWriter writes to w (the caller creates and closes the file).
func NewBaseWriter(w io.Writer) *BaseWriter {
	return &BaseWriter{w: bufio.NewWriterSize(w, 1<<20)}
}

func (b *BaseWriter) header(nctx, nVocab, nChunk int, tokens []int) error {
	b.w.WriteString(baseMagic)
	for _, v := range []int{nctx, nVocab, nChunk} {
		b.put32(uint32(int32(v)))
	}
	for _, t := range tokens {
		b.put32(uint32(int32(t)))
	}
	return b.err()
}

func (b *BaseWriter) put32(v uint32) {
	var s [4]byte
	binary.LittleEndian.PutUint32(s[:], v)
	b.w.Write(s[:])
}

func (b *BaseWriter) row(r []uint16) error {
	if cap(b.buf) < 2*len(r) {
		b.buf = make([]byte, 2*len(r))
	}
	buf := b.buf[:2*len(r)]
	for i, v := range r {
		binary.LittleEndian.PutUint16(buf[2*i:], v)
	}
	_, err := b.w.Write(buf)
	return err
}

func (b *BaseWriter) err() error {
	_, err := b.w.Write(nil)
	return err
}

func (b *BaseWriter) flush() error { return b.w.Flush() }

// Base is an open --kl-divergence-base file.
type Base struct {
	// Context, Vocab and Chunks are n_ctx, n_vocab and n_chunk; Tokens the
	// evaluated tokens (Chunks·Context).
	Context, Vocab, Chunks int
	Tokens                 []int

	name string
	r    *bufio.Reader
	off  int64
	buf  []byte
}

// OpenBase reads the header and tokens of a base file; the rows are read
// chunk by chunk by Compare. Sizes are checked against the file's length
// before anything is allocated. The caller closes f.
func OpenBase(f *os.File) (*Base, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	b := &Base{name: f.Name(), r: bufio.NewReaderSize(f, 1<<20)}
	var hdr [20]byte
	if _, err := io.ReadFull(b.r, hdr[:]); err != nil || string(hdr[:8]) != baseMagic {
		return nil, fmt.Errorf("%s: does not look like a file of log-probabilities (no %q header)", b.name, baseMagic)
	}
	nctx := int64(int32(binary.LittleEndian.Uint32(hdr[8:])))
	nVocab := int64(int32(binary.LittleEndian.Uint32(hdr[12:])))
	nChunk := int64(int32(binary.LittleEndian.Uint32(hdr[16:])))
	if nctx < 2 || nVocab < 1 || nChunk < 1 {
		return nil, fmt.Errorf("%s: offset 8: n_ctx %d, n_vocab %d, n_chunk %d: out of range", b.name, nctx, nVocab, nChunk)
	}
	scored := nctx - 1 - nctx/2
	need := 20 + 4*nctx*nChunk + 2*scored*int64(logProbWidth(int(nVocab)))*nChunk
	if need < 0 || need > size || nctx*nChunk > math.MaxInt32 {
		return nil, fmt.Errorf("%s: n_ctx %d, n_vocab %d, n_chunk %d need %d bytes; the file has %d", b.name, nctx, nVocab, nChunk, need, size)
	}
	b.Context, b.Vocab, b.Chunks = int(nctx), int(nVocab), int(nChunk)
	raw := make([]byte, 4*nctx*nChunk)
	if _, err := io.ReadFull(b.r, raw); err != nil {
		return nil, fmt.Errorf("%s: offset 20: tokens: %w", b.name, err)
	}
	b.Tokens = make([]int, nctx*nChunk)
	for i := range b.Tokens {
		b.Tokens[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	b.off = 20 + int64(len(raw))
	return b, nil
}

// chunk reads one chunk's rows into rows (scored × nv values).
func (b *Base) chunk(rows []uint16) error {
	if cap(b.buf) < 2*len(rows) {
		b.buf = make([]byte, 2*len(rows))
	}
	buf := b.buf[:2*len(rows)]
	if _, err := io.ReadFull(b.r, buf); err != nil {
		return fmt.Errorf("%s: offset %d: log-probabilities: %w", b.name, b.off, err)
	}
	for i := range rows {
		rows[i] = binary.LittleEndian.Uint16(buf[2*i:])
	}
	b.off += int64(len(buf))
	return nil
}
