package convert

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/arch"
	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/readers"
)

// Tensor is one output tensor of a conversion: what to compute and the
// type it is stored in.
type Tensor struct {
	arch.Output
	// Type is the ggml type written.
	Type gguf.Type
	// Fallback is set when the requested type could not hold the tensor
	// (row length not a multiple of its block) and F16 was used instead.
	Fallback bool
}

// GGUFShape is the tensor's shape in ggml order (ne0 first).
func (t *Tensor) GGUFShape() []uint64 {
	s := make([]uint64, len(t.Shape))
	for i, d := range t.Shape {
		s[len(t.Shape)-1-i] = uint64(d)
	}
	return s
}

// RowLen is the length of the tensor's rows (its last PyTorch dimension,
// ggml's ne0); a 0-dimensional tensor is one row of one value. A zero-length
// dimension gives 1 too, so that row counts (Elements / RowLen) stay 0
// without a division by zero.
func (t *Tensor) RowLen() int64 {
	if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1] == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// Elements is the tensor's element count.
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// skippedSuffixes are tensors the converter never writes.
var skippedSuffixes = []string{".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"}

// planTensors walks the checkpoint in the converter's order (generated
// tensors first, then the source's tensors file by file, by name within a
// safetensors file) through the plugin, and gives each output its type
// (ModelBase.prepare_tensors). root is the folder the source's file names
// are relative to.
func planTensors(m arch.Model, src readers.Source, root string, ft gguf.FileType) ([]Tensor, error) {
	extra, err := m.Extra()
	if err != nil {
		return nil, err
	}
	var outs []arch.Output
	outs = append(outs, extra...)
	seen := map[string]int{}
	var inputs []arch.Input
	for _, t := range src.Tensors() {
		name, ok := m.Filter(t.Name)
		if !ok {
			continue
		}
		in := arch.Input{Name: name, Source: t.Name, Shape: t.Shape, DType: t.DType}
		// The converter keeps tensors in a dict: a name seen again keeps
		// the first position and takes the later tensor.
		if i, dup := seen[name]; dup {
			inputs[i] = in
			continue
		}
		seen[name] = len(inputs)
		inputs = append(inputs, in)
	}
	if ie, ok := m.(arch.InputsExtra); ok {
		more, err := ie.ExtraFrom(inputs)
		if err != nil {
			return nil, err
		}
		outs = append(outs, more...)
	}
	sizes := fileSizes{root: root, files: map[string]string{}, size: map[string]int64{}}
	for _, t := range src.Tensors() {
		sizes.files[t.Name] = t.File
	}
	for _, in := range inputs {
		if hasAnySuffix(in.Name, skippedSuffixes) {
			continue
		}
		if err := sizes.check(in); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", in.Source, err)
		}
		o, err := m.Modify(in, arch.BlockID(in.Name))
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", in.Source, err)
		}
		outs = append(outs, o...)
	}
	if err := m.Finish(); err != nil {
		return nil, err
	}
	tensors := make([]Tensor, 0, len(outs))
	names := map[string]string{} // GGUF name → the source name it came from
	for _, o := range outs {
		if o.DropIfZero {
			if err := requireZero(src, o.Sources[0]); err != nil {
				return nil, err
			}
			continue
		}
		if o.DropIfEqual != nil {
			eq, err := equalTensors(src, o.Sources[0], *o.DropIfEqual)
			if err != nil {
				return nil, err
			}
			if eq {
				continue
			}
		}
		if err := checkOutput(&o); err != nil {
			if len(o.Sources) == 1 {
				return nil, fmt.Errorf("tensor %q (from %q): %w", o.Name, o.Sources[0].Source, err)
			}
			return nil, fmt.Errorf("tensor %q: %w", o.Name, err)
		}
		if first, dup := names[o.Name]; dup {
			return nil, fmt.Errorf("%w: tensors %q and %q both map to %q", ErrTensor, first, o.HFName, o.Name)
		}
		names[o.Name] = o.HFName
		t := Tensor{Output: o}
		t.Type, t.Fallback = tensorType(m, &t.Output, ft)
		tensors = append(tensors, t)
	}
	return tensors, nil
}

// requireZero reads a source tensor a model class leaves out only when it
// holds zeros (torch.any(data != 0) raises), a bounded number of rows at a
// time.
func requireZero(src readers.Source, in arch.Input) error {
	// A row is the last dimension; a 0-D tensor is one row of one value.
	rowLen := int64(1)
	if len(in.Shape) > 0 {
		rowLen = in.Shape[len(in.Shape)-1]
	}
	if rowLen <= 0 {
		return nil
	}
	rows := numelOf(in.Shape) / rowLen
	step := max(int64(1), (1<<16)/rowLen)
	buf := make([]float32, min(rows, step)*rowLen)
	for r := int64(0); r < rows; r += step {
		n := min(step, rows-r)
		dst := buf[:n*rowLen]
		if err := src.ReadFloat32(context.Background(), in.Source, dst, int(r), int(n)); err != nil {
			return fmt.Errorf("tensor %q: %w", in.Source, err)
		}
		for _, v := range dst {
			if v != 0 {
				return fmt.Errorf("%w: tensor %q is not zero (the converter leaves this tensor out only when it is)", ErrTensor, in.Source)
			}
		}
	}
	return nil
}

// equalTensors is torch.equal of two source tensors: the same shape and
// the same values, compared a bounded number of rows at a time.
func equalTensors(src readers.Source, a, b arch.Input) (bool, error) {
	if !slices.Equal(a.Shape, b.Shape) {
		return false, nil
	}
	rowLen := int64(1)
	if len(a.Shape) > 0 {
		rowLen = a.Shape[len(a.Shape)-1]
	}
	if rowLen <= 0 {
		return true, nil
	}
	rows := numelOf(a.Shape) / rowLen
	step := max(int64(1), (1<<16)/rowLen)
	bufA := make([]float32, min(rows, step)*rowLen)
	bufB := make([]float32, len(bufA))
	for r := int64(0); r < rows; r += step {
		n := min(step, rows-r)
		da, db := bufA[:n*rowLen], bufB[:n*rowLen]
		if err := src.ReadFloat32(context.Background(), a.Source, da, int(r), int(n)); err != nil {
			return false, fmt.Errorf("tensor %q: %w", a.Source, err)
		}
		if err := src.ReadFloat32(context.Background(), b.Source, db, int(r), int(n)); err != nil {
			return false, fmt.Errorf("tensor %q: %w", b.Source, err)
		}
		for i := range da {
			if da[i] != db[i] {
				return false, nil
			}
		}
	}
	return true, nil
}

func numelOf(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// ErrTensor is wrapped by the errors about a checkpoint tensor that
// cannot become the output tensor its name maps to.
var ErrTensor = errors.New("convert: unusable tensor")

// fileSizes looks up the size of the file holding each source tensor.
type fileSizes struct {
	root  string
	files map[string]string // tensor → file, as TensorInfo.File
	size  map[string]int64  // file → bytes (-1: not found)
}

// check refuses a source tensor whose values take more bytes than the file
// holding it has. A safetensors reader has checked its data span already,
// but a PyTorch view may repeat its storage (a stride of 0, as
// torch.expand makes one), so that its shape alone — a terabyte for a few
// stored values — would size the float32 buffers of the conversion.
func (fs *fileSizes) check(in arch.Input) error {
	file, ok := fs.files[in.Source]
	if !ok || file == "" {
		return nil
	}
	size, seen := fs.size[file]
	if !seen {
		path := file
		if !filepath.IsAbs(path) {
			path = filepath.Join(fs.root, path)
		}
		size = -1
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		fs.size[file] = size
	}
	if size < 0 {
		return nil
	}
	n, err := readers.NumElements(in.Shape)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTensor, err)
	}
	if hi, bytes := bits.Mul64(uint64(n), uint64(in.DType.Size())); hi != 0 || bytes > uint64(size) {
		return fmt.Errorf("%w: shape %v (%d values of %s) takes more bytes than its file %s holds (%d): a view repeating its storage is not converted",
			ErrTensor, in.Shape, n, in.DType, file, size)
	}
	return nil
}

// checkOutput refuses an output tensor the writer and the encoders cannot
// take: no dimension (a scalar), an empty dimension (no row to encode, or
// rows of no values), or more values than its sources hold or its
// generated data has (a transform only reorders, splits or stacks its
// sources, or pads them with at most as many zeros as they hold) — so that
// no buffer is ever sized by a shape alone.
func checkOutput(o *arch.Output) error {
	if len(o.Shape) == 0 {
		return fmt.Errorf("%w: a 0-dimensional tensor (shape [])", ErrTensor)
	}
	if slices.Contains(o.Shape, 0) {
		return fmt.Errorf("%w: shape %v has no values", ErrTensor, o.Shape)
	}
	n, err := readers.NumElements(o.Shape)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTensor, err)
	}
	if len(o.Sources) == 0 {
		if int64(len(o.Data)) != n {
			return fmt.Errorf("%w: generated tensor of shape %v has %d values", ErrTensor, o.Shape, len(o.Data))
		}
		return nil
	}
	if o.Packed != nil {
		return checkPacked(o)
	}
	var have int64
	for _, s := range o.Sources {
		m, err := readers.NumElements(s.Shape)
		if err != nil {
			return fmt.Errorf("%w: source %q: %w", ErrTensor, s.Source, err)
		}
		if have += m; have < 0 {
			return fmt.Errorf("%w: its sources' element count overflows", ErrTensor)
		}
	}
	if o.PadValues < 0 || o.PadValues > have {
		// Padding may at most double what the sources hold.
		return fmt.Errorf("%w: %d padding values for sources of %d", ErrTensor, o.PadValues, have)
	}
	if n > have+o.PadValues {
		return fmt.Errorf("%w: shape %v needs %d values, its sources hold %d", ErrTensor, o.Shape, n, have+o.PadValues)
	}
	return nil
}

// checkPacked refuses a prequantized tensor whose bytes would be more
// than its sources' stored bytes.
func checkPacked(o *arch.Output) error {
	cols := o.Shape[len(o.Shape)-1]
	rs, ok := o.PackedType.RowSize(uint64(cols))
	if !ok {
		return fmt.Errorf("%w: rows of %d values cannot be %s", ErrTensor, cols, o.PackedType)
	}
	n, _ := readers.NumElements(o.Shape)
	hi, need := bits.Mul64(rs, uint64(n/cols))
	var have uint64
	for _, s := range o.Sources {
		m, err := readers.NumElements(s.Shape)
		if err != nil {
			return fmt.Errorf("%w: source %q: %w", ErrTensor, s.Source, err)
		}
		h, b := bits.Mul64(uint64(m), uint64(s.DType.Size()))
		if h != 0 || have+b < have {
			return fmt.Errorf("%w: its sources' size overflows", ErrTensor)
		}
		have += b
	}
	if hi != 0 || need > have {
		return fmt.Errorf("%w: shape %v as %s needs %d bytes, its sources hold %d", ErrTensor, o.Shape, o.PackedType, need, have)
	}
	return nil
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// f32Kinds are the tensors ModelBase.prepare_tensors always keeps in F32.
var f32Kinds = []arch.Kind{"FFN_GATE_INP", "FFN_GATE_INP_SHEXP", "POS_EMBD", "TOKEN_TYPES", "SSM_CONV1D",
	"SHORTCONV_CONV", "TIME_MIX_FIRST", "TIME_MIX_W1", "TIME_MIX_W2", "TIME_MIX_DECAY_W1", "TIME_MIX_DECAY_W2",
	"TIME_MIX_LERP_FUSED", "POSNET_NORM1", "POSNET_NORM2", "V_ENC_EMBD_POS", "A_ENC_EMBD_POS",
	"ALTUP_CORRECT_COEF", "ALTUP_PREDICT_COEF", "SSM_CONV1D_Q", "SSM_CONV1D_K", "SSM_CONV1D_V", "INDEXER_PROJ"}

// ternaryF16Kinds are stored as F16 rather than TQ1_0/TQ2_0.
var ternaryF16Kinds = []arch.Kind{"TOKEN_EMBD", "PER_LAYER_TOKEN_EMBD", "OUTPUT", "ALTUP_ROUTER", "LAUREL_L", "LAUREL_R"}

// fileTypeTensorType is the tensor type of each convert_hf_to_gguf.py
// --outtype.
var fileTypeTensorType = map[gguf.FileType]gguf.Type{
	gguf.FileTypeAllF32: gguf.F32,
	gguf.FileTypeF16:    gguf.F16,
	gguf.FileTypeBF16:   gguf.BF16,
	gguf.FileTypeQ8_0:   gguf.Q8_0,
	gguf.FileTypeTQ1_0:  gguf.TQ1_0,
	gguf.FileTypeTQ2_0:  gguf.TQ2_0,
}

// tensorType is the type rule of ModelBase.prepare_tensors.
func tensorType(m arch.Model, o *arch.Output, ft gguf.FileType) (gguf.Type, bool) {
	if o.Packed != nil {
		// add_tensor(raw_dtype=...): stored as it comes, whatever the outtype.
		return o.PackedType, false
	}
	nDims := len(o.Shape)
	typ, forced := m.ForceType(o, nDims)
	decided := forced
	if forced && typ == arch.OutType {
		typ = fileTypeTensorType[ft]
	}
	if nDims <= 1 || strings.HasSuffix(o.Name, "_norm.weight") {
		typ, decided = gguf.F32, true
	}
	names := m.Names()
	if !decided {
		tail := o.Name[max(0, len(o.Name)-7):]
		if tail != ".weight" && tail != ".lora_a" && tail != ".lora_b" || matchesAny(names, o, f32Kinds) {
			typ, decided = gguf.F32, true
		}
	}
	if !decided && (ft == gguf.FileTypeTQ1_0 || ft == gguf.FileTypeTQ2_0) && matchesAny(names, o, ternaryF16Kinds) {
		typ, decided = gguf.F16, true
	}
	if !decided {
		typ = fileTypeTensorType[ft]
	}
	// gguf-py's quantizers refuse rows that are not whole blocks; the
	// converter then writes F16.
	if bs := typ.BlockSize(); bs > 1 && len(o.Shape) > 0 && o.Shape[len(o.Shape)-1]%int64(bs) != 0 {
		return gguf.F16, true
	}
	return typ, false
}

func matchesAny(names *arch.NameMap, o *arch.Output, kinds []arch.Kind) bool {
	return slices.ContainsFunc(kinds, func(k arch.Kind) bool { return names.Matches(o.Name, k, o.Bid) })
}
