// Package meta edits the metadata of a GGUF file as gguf-py's
// gguf_new_metadata.py and gguf_set_metadata.py do: keys set, added and
// removed, the chat template replaced, tensors renamed or dropped, the
// alignment changed. The result is laid out as gguf_new_metadata.py writes
// it, so the same edits give the same bytes. Tensor data is copied between
// files (copy_file_range where the system has it), never decoded nor held in
// memory, and when only the header's bytes change and its size does not, the
// header is rewritten in place, as gguf_set_metadata.py does.
package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/writer"
)

// Sentinel errors.
var (
	// ErrEdit: an edit names a key, tensor or token the file does not have,
	// or asks for something a GGUF cannot hold.
	ErrEdit = errors.New("meta: invalid edit")
)

// Edits are the changes to make, applied in gguf_new_metadata.py's order:
// every key of the input is copied in its place (general.architecture
// first, as gguf-py's writer puts it) unless removed or replaced, the new
// chat template comes after the copied keys, then the keys of Set the input
// did not have, in their order.
type Edits struct {
	// Set holds keys to set: an existing key keeps its position and takes
	// the new value (and type), a new one is appended.
	Set []gguf.KV
	// Remove holds keys to leave out.
	Remove []string
	// ChatTemplate, when set, replaces every tokenizer.chat_template* key
	// (the named templates and their list too) with tokenizer.chat_template.
	ChatTemplate *string
	// Alignment, when not 0, sets general.alignment and lays the data out
	// with it.
	Alignment uint32
	// Rename maps tensor names to new names.
	Rename map[string]string
	// Drop holds tensors to leave out.
	Drop []string
}

// Result is the planned output: its pairs and tensor infos (offsets in the
// output's data section), each tensor's offset in the input's data section,
// and the encoded header.
type Result struct {
	KVs     []gguf.KV
	Tensors []gguf.TensorInfo
	// SourceOffsets are the tensors' absolute offsets in the input file.
	SourceOffsets []int64
	// Alignment is the output's data alignment.
	Alignment uint64
	// Header is the output's bytes before its data section, padding
	// included.
	Header []byte
	// Size is the output's size in bytes.
	Size int64

	order binary.AppendByteOrder
}

// Plan applies e to the metadata and tensor infos of in.
func Plan(in *ggufread.File, e Edits) (*Result, error) {
	remove := map[string]bool{}
	for _, k := range e.Remove {
		if _, ok := in.KV(k); !ok {
			return nil, fmt.Errorf("%w: %s has no key %q to remove", ErrEdit, in.Name, k)
		}
		remove[k] = true
	}
	sets := e.Set
	if e.Alignment != 0 {
		if e.Alignment&(e.Alignment-1) != 0 {
			return nil, fmt.Errorf("%w: alignment %d is not a power of 2", ErrEdit, e.Alignment)
		}
		sets = append(slices.Clone(sets), gguf.KV{Key: gguf.KeyGeneralAlignment, Value: gguf.Uint32(e.Alignment)})
	}
	set := map[string]gguf.Value{}
	var added []string
	for _, kv := range sets {
		if !kv.Value.Valid() {
			return nil, fmt.Errorf("%w: key %q has no value", ErrEdit, kv.Key)
		}
		if remove[kv.Key] {
			return nil, fmt.Errorf("%w: key %q is both set and removed", ErrEdit, kv.Key)
		}
		if _, seen := set[kv.Key]; !seen {
			if _, exists := in.KV(kv.Key); !exists {
				added = append(added, kv.Key)
			}
		}
		set[kv.Key] = kv.Value
	}

	r := &Result{order: byteOrder(in)}
	// gguf-py's writer opens with general.architecture.
	if v, ok := set[gguf.KeyGeneralArchitecture]; ok {
		r.KVs = append(r.KVs, gguf.KV{Key: gguf.KeyGeneralArchitecture, Value: v})
	} else if v, ok := in.KV(gguf.KeyGeneralArchitecture); ok && !remove[gguf.KeyGeneralArchitecture] {
		r.KVs = append(r.KVs, gguf.KV{Key: gguf.KeyGeneralArchitecture, Value: v})
	}
	for _, kv := range in.KVs {
		switch {
		case kv.Key == gguf.KeyGeneralArchitecture, remove[kv.Key]:
		case e.ChatTemplate != nil && strings.HasPrefix(kv.Key, gguf.KeyTokenizerChatTemplate):
		default:
			if v, ok := set[kv.Key]; ok {
				kv.Value = v
			}
			r.KVs = append(r.KVs, kv)
		}
	}
	if e.ChatTemplate != nil {
		r.KVs = append(r.KVs, gguf.KV{Key: gguf.KeyTokenizerChatTemplate, Value: gguf.String(*e.ChatTemplate)})
	}
	for _, k := range added {
		if k != gguf.KeyGeneralArchitecture && (e.ChatTemplate == nil || k != gguf.KeyTokenizerChatTemplate) {
			r.KVs = append(r.KVs, gguf.KV{Key: k, Value: set[k]})
		}
	}

	r.Alignment = in.Alignment
	if v, ok := set[gguf.KeyGeneralAlignment]; ok {
		a, ok := v.Int()
		if !ok || a <= 0 || a > 1<<30 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%w: general.alignment %v is not a power of 2", ErrEdit, v.Any())
		}
		r.Alignment = uint64(a)
	} else if remove[gguf.KeyGeneralAlignment] {
		r.Alignment = gguf.DefaultAlignment
	}
	if err := r.planTensors(in, e); err != nil {
		return nil, err
	}
	return r, nil
}

// planTensors lays the kept tensors out as gguf-py does: in input order,
// each at the running sum of the aligned sizes before it, with the input's
// dimensions.
func (r *Result) planTensors(in *ggufread.File, e Edits) error {
	drop := map[string]bool{}
	for _, n := range e.Drop {
		if _, ok := in.Tensor(n); !ok {
			return fmt.Errorf("%w: %s has no tensor %q to drop", ErrEdit, in.Name, n)
		}
		drop[n] = true
	}
	for old := range e.Rename {
		if _, ok := in.Tensor(old); !ok {
			return fmt.Errorf("%w: %s has no tensor %q to rename", ErrEdit, in.Name, old)
		}
	}
	names := map[string]bool{}
	var off uint64
	for i, t := range in.Tensors {
		if drop[t.Name] {
			continue
		}
		if n, ok := e.Rename[t.Name]; ok {
			if n == "" || len(n) > gguf.MaxNameLength {
				return fmt.Errorf("%w: tensor name %q must have 1 to %d bytes", ErrEdit, n, gguf.MaxNameLength)
			}
			t.Name = n
		}
		if names[t.Name] {
			return fmt.Errorf("%w: two tensors would be named %q", ErrEdit, t.Name)
		}
		names[t.Name] = true
		t.Shape = slices.Clone(t.Shape)
		t.Offset = off
		r.Tensors = append(r.Tensors, t)
		r.SourceOffsets = append(r.SourceOffsets, in.DataOffset+int64(in.Tensors[i].Offset))
		size := in.TensorSize(i)
		next, ok := gguf.AlignUp(size, r.Alignment)
		if !ok || off+next < off {
			return fmt.Errorf("%w: the tensor data overflows", ErrEdit)
		}
		off += next
	}
	enc := gguf.NewEncoder(r.order)
	enc.Header(gguf.Version, uint64(len(r.Tensors)), uint64(len(r.KVs)))
	for _, kv := range r.KVs {
		enc.KV(kv)
	}
	for _, t := range r.Tensors {
		enc.TensorInfo(t)
	}
	head := uint64(enc.Len())
	// gguf-py pads the header when it writes the first tensor: a file
	// without tensors ends right after its last tensor info.
	if len(r.Tensors) > 0 {
		padded, ok := gguf.AlignUp(head, r.Alignment)
		if !ok {
			return fmt.Errorf("%w: the header overflows", ErrEdit)
		}
		enc.Raw(make([]byte, padded-head))
	}
	r.Header = enc.Bytes()
	r.Size = int64(len(r.Header)) + int64(off)
	return nil
}

// byteOrder is the input's byte order, which gguf-py's writer keeps.
func byteOrder(in *ggufread.File) binary.AppendByteOrder {
	if in.ByteOrder == binary.ByteOrder(binary.BigEndian) {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// InPlace reports whether writing r over in changes only header bytes: the
// header keeps its size, every tensor keeps its offset, and the file its
// size (which holds for any file gguf-py or gguf.cpp wrote).
func (r *Result) InPlace(in *ggufread.File) bool {
	if int64(len(r.Header)) != in.DataOffset || r.Size != in.Size || len(r.Tensors) != len(in.Tensors) {
		return false
	}
	for i, t := range r.Tensors {
		if r.SourceOffsets[i] != in.DataOffset+int64(t.Offset) {
			return false
		}
	}
	return true
}

// Write writes r to out: the header, then each tensor's bytes copied from
// in, through the writer's temporary file, published when complete.
func Write(ctx context.Context, in *ggufread.File, r *Result, out string, overwrite bool) error {
	src, err := os.Open(in.Name)
	if err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	defer src.Close()
	w, err := writer.Create(ctx, out, writer.Options{
		Overwrite:    overwrite,
		ByteOrder:    r.order,
		Alignment:    uint32(r.Alignment),
		OmitFinalPad: len(r.Tensors) == 0,
	})
	if err != nil {
		return err
	}
	for _, kv := range r.KVs {
		w.SetKV(kv.Key, kv.Value)
	}
	for _, t := range r.Tensors {
		if err := w.AddTensor(t.Name, t.Type, t.Shape); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Start(); err != nil {
		w.Abort()
		return err
	}
	if w.DataOffset() != int64(len(r.Header)) || w.Size() != r.Size {
		w.Abort()
		return fmt.Errorf("meta: %s: the writer lays the file out at %d+%d bytes, the plan at %d+%d", out, w.DataOffset(), w.Size(), len(r.Header), r.Size)
	}
	for i, t := range r.Tensors {
		tw, err := w.TensorWriterAt(t.Name)
		if err == nil {
			err = tw.CopyFrom(src, r.SourceOffsets[i], 0, tw.Size())
		}
		if err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// Apply edits the file in in place: when InPlace holds, only the header
// bytes are written over; otherwise the file is rewritten into a temporary
// file beside it that replaces it when complete. It reports whether the edit
// was made in place. in is closed.
func Apply(ctx context.Context, in *ggufread.File, r *Result) (inPlace bool, err error) {
	if !r.InPlace(in) {
		err := Write(ctx, in, r, in.Name, true)
		if cerr := in.Close(); err == nil {
			err = cerr
		}
		return false, err
	}
	path := in.Name
	if err := in.Close(); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return true, fmt.Errorf("meta: %w", err)
	}
	if _, err := f.WriteAt(r.Header, 0); err != nil {
		f.Close()
		return true, fmt.Errorf("meta: %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return true, fmt.Errorf("meta: %s: %w", path, err)
	}
	return true, f.Close()
}
