package verify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer"
	"github.com/ggufkit/ggufkit/verify/forward"
)

// checkStructure parses the hyperparameters as llama.cpp's loader would,
// checks the tensor set and shapes against the architecture's table and
// loads the tokenizer. An architecture verify/forward does not implement is
// an error: the verification cannot say whether the file is right.
func (v *verifier) checkStructure() error {
	arch := v.f.Architecture()
	if arch == "clip" {
		v.checkMMProj()
		return nil
	}
	if forward.IsEncoder(arch) {
		// The encoder's loader names a missing or misshapen tensor when the
		// forward pass loads it.
		v.parseEncoder()
		return v.loadTokenizer()
	}
	cfg, err := forward.ParseConfig(v.f)
	switch {
	case errors.Is(err, forward.ErrUnsupported):
		return err
	case err != nil:
		v.fail(CheckMetadata, "", err.Error())
		v.broken = true
	default:
		v.cfg = cfg
		v.checkTensorSet()
	}
	return v.loadTokenizer()
}

// loadTokenizer loads the file's vocabulary and tokenizer.
func (v *verifier) loadTokenizer() error {
	vocab, err := tokenizer.FromKVs(v.f)
	if err == nil {
		v.tok, err = tokenizer.Load(v.f)
	}
	if err != nil {
		v.fail(CheckTokenizer, "", err.Error())
		v.broken = true
		return nil
	}
	v.vocab = vocab
	return nil
}

// checkTensorSet compares the file's tensors with ExpectedTensors: every
// required one present, every shape right, nothing llama.cpp would not use
// (its loader refuses such a file: "wrong number of tensors").
func (v *verifier) checkTensorSet() {
	specs := v.cfg.ExpectedTensors(func(name string) bool { _, ok := v.f.Tensor(name); return ok })
	known := make(map[string]bool, len(specs))
	for _, s := range specs {
		known[s.Name] = true
		info, ok := v.f.Tensor(s.Name)
		if !ok {
			if !s.Optional {
				v.fail(CheckTensors, s.Name, fmt.Sprintf("missing (%s needs it, shape %v)", v.cfg.Arch, s.Shape))
				v.broken = true
			}
			continue
		}
		shape := make([]uint64, len(s.Shape))
		for i, d := range s.Shape {
			shape[i] = uint64(d)
		}
		if !gguf.SameShape(info.Shape, shape) {
			v.fail(CheckTensors, s.Name, fmt.Sprintf("shape %v, %s expects %v", info.Shape, v.cfg.Arch, shape))
			v.broken = true
		}
	}
	for _, t := range v.f.Tensors {
		if !known[t.Name] {
			v.fail(CheckTensors, t.Name, fmt.Sprintf("not a tensor of %s (llama.cpp refuses files with unused tensors)", v.cfg.Arch))
			v.broken = true
		}
	}
}

// ignoredKey reports keys a correct conversion may set differently from its
// reference: the file type and quantization version follow the output type,
// quantize.* records a requantization, split.* a sharding.
func ignoredKey(k string) bool {
	return k == gguf.KeyGeneralFileType || k == gguf.KeyGeneralQuantizationVersion || k == gguf.KeyGeneralAlignment ||
		strings.HasPrefix(k, "quantize.") || strings.HasPrefix(k, "split.")
}

// descriptiveKey reports general.* keys that describe the model without
// changing how it runs: a difference is a warning.
func descriptiveKey(k string) bool {
	return strings.HasPrefix(k, "general.") && k != gguf.KeyGeneralArchitecture
}

// checkMetadata compares the metadata with the reference's, key by key.
func (v *verifier) checkMetadata() {
	refKVs := v.ref.KVs()
	inRef := make(map[string]bool, len(refKVs))
	for _, kv := range refKVs {
		inRef[kv.Key] = true
		if ignoredKey(kv.Key) {
			continue
		}
		got, ok := v.f.KV(kv.Key)
		var msg string
		switch {
		case !ok:
			msg = fmt.Sprintf("missing (reference: %s)", short(kv.Value))
		case !got.Equal(kv.Value):
			msg = fmt.Sprintf("%s, reference %s", short(got), short(kv.Value))
		default:
			continue
		}
		if descriptiveKey(kv.Key) {
			v.rep.Warnings = append(v.rep.Warnings, kv.Key+": "+msg)
			continue
		}
		v.fail(metadataCheck(kv.Key), kv.Key, msg)
	}
	for _, kv := range v.f.KVs {
		if inRef[kv.Key] || ignoredKey(kv.Key) {
			continue
		}
		msg := fmt.Sprintf("%s is not in the reference", short(kv.Value))
		if descriptiveKey(kv.Key) {
			v.rep.Warnings = append(v.rep.Warnings, kv.Key+": "+msg)
			continue
		}
		v.fail(metadataCheck(kv.Key), kv.Key, msg)
	}
}

func metadataCheck(key string) Check {
	if strings.HasPrefix(key, "tokenizer.") {
		return CheckTokenizer
	}
	return CheckReference
}

// short formats a value for a message, eliding long arrays and strings.
func short(v gguf.Value) string {
	s := v.GoString()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
