package requantize

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/internal/mmap"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// Input is a model read from one GGUF or from a gguf-split set, as
// llama.cpp's model loader sees it: the first file's metadata and every
// shard's tensors.
type Input struct {
	Files []*ggufread.File
	// Tensors in the loader's order (mix.Sort), with the shard they are in.
	Tensors []InputTensor
	// maps holds a read-only map of each shard (nil where there is none),
	// whose pages Release gives back.
	maps   [][]byte
	unmaps []func() error
}

// InputTensor is one tensor of the input and where it lives.
type InputTensor struct {
	gguf.TensorInfo
	Shard int
	Size  uint64
}

// KV returns a metadata value of the first file.
func (in *Input) KV(key string) (gguf.Value, bool) { return in.Files[0].KV(key) }

// KVs returns the first file's metadata.
func (in *Input) KVs() []gguf.KV { return in.Files[0].KVs }

// Alignment is the first file's data alignment.
func (in *Input) Alignment() int { return int(in.Files[0].Alignment) }

// Shards is the number of files.
func (in *Input) Shards() int { return len(in.Files) }

// TensorList returns Tensors.
func (in *Input) TensorList() []InputTensor { return in.Tensors }

// Close closes every shard.
func (in *Input) Close() error {
	var first error
	for _, f := range in.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, unmap := range in.unmaps {
		if unmap != nil {
			if err := unmap(); err != nil && first == nil {
				first = err
			}
		}
	}
	in.maps, in.unmaps = nil, nil
	return first
}

// span is where a tensor's bytes lie in its shard's map (ok false when the
// shard is not mapped by Input itself).
func (in *Input) span(t *InputTensor) (m []byte, from, to int64, ok bool) {
	if t.Shard >= len(in.maps) || in.maps[t.Shard] == nil {
		return nil, 0, 0, false
	}
	m = in.maps[t.Shard]
	from = in.Files[t.Shard].DataOffset + int64(t.Offset)
	to = from + int64(t.Size)
	if from < 0 || to < from || to > int64(len(m)) {
		return nil, 0, 0, false
	}
	return m, from, to, true
}

// Data returns the bytes of a tensor: a slice of the shard's map, valid
// until Close (and, after Release, read again from the page cache).
func (in *Input) Data(t *InputTensor) ([]byte, error) {
	if m, from, to, ok := in.span(t); ok {
		return m[from:to:to], nil
	}
	return in.Files[t.Shard].TensorData(t.Name)
}

// Release drops the pages of bytes [from, to) of a tensor, once read, from
// the resident set (they stay in the page cache; see mmap.Release), so that
// memory does not grow with the tensor or the model.
func (in *Input) Release(t *InputTensor, from, to int64) {
	if m, start, end, ok := in.span(t); ok && 0 <= from && from <= to && to <= end-start {
		mmap.Release(m, start+from, start+to)
	}
}

var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// OpenInput opens path; a file with split.count > 1 brings the other shards
// of its set, found by gguf-split's naming (PREFIX-%05d-of-%05d.gguf).
func OpenInput(path string) (*Input, error) {
	first, err := ggufread.Open(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Files: []*ggufread.File{first}}
	paths := []string{path}
	count := 1
	if v, ok := first.KV(gguf.KeySplitCount); ok {
		if n, ok := v.Int(); ok && n > 1 {
			count = int(n)
		}
	}
	if count > 1 {
		m := splitName.FindStringSubmatch(filepath.Base(path))
		if m == nil || m[2] != "00001" {
			in.Close()
			return nil, fmt.Errorf("%s: split.count is %d but the name is not the first shard's (PREFIX-00001-of-%05d.gguf)", path, count, count)
		}
		if n, _ := strconv.Atoi(m[3]); n != count {
			in.Close()
			return nil, fmt.Errorf("%s: split.count is %d but the name says %d shards", path, count, n)
		}
		dir := filepath.Dir(path)
		for i := 2; i <= count; i++ {
			p := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i, count))
			f, err := ggufread.Open(p)
			if err != nil {
				in.Close()
				if os.IsNotExist(err) {
					return nil, fmt.Errorf("%s: shard %d of %d is missing: %w", path, i, count, err)
				}
				return nil, err
			}
			in.Files = append(in.Files, f)
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		m, unmap := mapShard(p)
		in.maps, in.unmaps = append(in.maps, m), append(in.unmaps, unmap)
	}
	seen := map[string]bool{}
	for shard, f := range in.Files {
		for i, ti := range f.Tensors {
			if seen[ti.Name] {
				in.Close()
				return nil, fmt.Errorf("%s: tensor %q appears in more than one shard", f.Name, ti.Name)
			}
			seen[ti.Name] = true
			in.Tensors = append(in.Tensors, InputTensor{TensorInfo: ti, Shard: shard, Size: f.TensorSize(i)})
		}
	}
	return in, nil
}

// guessFileType is the model loader's file type when general.file_type is
// absent: the type of most tensors (the first to lead, in loader order)
// mapped to its "mostly" file type, marked as guessed.
func guessFileType(tensors []InputTensor) gguf.FileType {
	var counts [gguf.TypeCount]int
	best, bestN := gguf.F32, 0
	for _, t := range tensors {
		counts[t.Type]++
		if counts[t.Type] > bestN {
			bestN, best = counts[t.Type], t.Type
		}
	}
	ft, ok := mostlyFileType[best]
	if !ok {
		ft = gguf.FileTypeAllF32
	}
	return ft | gguf.FileTypeGuessed
}

// mostlyFileType maps a tensor type to the file type the loader guesses
// from it (llama-model-loader.cpp).
var mostlyFileType = map[gguf.Type]gguf.FileType{
	gguf.F32: gguf.FileTypeAllF32, gguf.F16: gguf.FileTypeF16, gguf.BF16: gguf.FileTypeBF16,
	gguf.Q4_0: gguf.FileTypeQ4_0, gguf.Q4_1: gguf.FileTypeQ4_1, gguf.Q5_0: gguf.FileTypeQ5_0,
	gguf.Q5_1: gguf.FileTypeQ5_1, gguf.Q8_0: gguf.FileTypeQ8_0, gguf.Q2_K: gguf.FileTypeQ2_K,
	gguf.Q3_K: gguf.FileTypeQ3_K_M, gguf.Q4_K: gguf.FileTypeQ4_K_M, gguf.Q5_K: gguf.FileTypeQ5_K_M,
	gguf.Q6_K: gguf.FileTypeQ6_K, gguf.TQ1_0: gguf.FileTypeTQ1_0, gguf.TQ2_0: gguf.FileTypeTQ2_0,
	gguf.IQ2_XXS: gguf.FileTypeIQ2_XXS, gguf.IQ2_XS: gguf.FileTypeIQ2_XS, gguf.IQ2_S: gguf.FileTypeIQ2_S,
	gguf.IQ3_XXS: gguf.FileTypeIQ3_XXS, gguf.IQ1_S: gguf.FileTypeIQ1_S, gguf.IQ1_M: gguf.FileTypeIQ1_M,
	gguf.IQ4_NL: gguf.FileTypeIQ4_NL, gguf.IQ4_XS: gguf.FileTypeIQ4_XS, gguf.IQ3_S: gguf.FileTypeIQ3_S,
	gguf.NVFP4: gguf.FileTypeNVFP4, gguf.Q1_0: gguf.FileTypeQ1_0, gguf.Q2_0: gguf.FileTypeQ2_0,
}
