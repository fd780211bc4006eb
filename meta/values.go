package meta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

// specialTokenKeys are the names gguf_new_metadata.py's --special-token
// takes: every tokenizer.ggml.*_token_id key of gguf-py's Keys.Tokenizer,
// named by what precedes _token_id (gguf-py constants.py, data).
var specialTokenKeys = map[string]string{
	"bos":       gguf.KeyTokenizerBOSID,
	"eos":       gguf.KeyTokenizerEOSID,
	"eot":       gguf.KeyTokenizerEOTID,
	"eom":       gguf.KeyTokenizerEOMID,
	"unknown":   gguf.KeyTokenizerUnknownID,
	"seperator": gguf.KeyTokenizerSeparatorID,
	"padding":   gguf.KeyTokenizerPaddingID,
	"mask":      gguf.KeyTokenizerMaskID,
	"fim_pre":   gguf.KeyTokenizerFIMPreID,
	"fim_suf":   gguf.KeyTokenizerFIMSufID,
	"fim_mid":   gguf.KeyTokenizerFIMMidID,
	"fim_pad":   gguf.KeyTokenizerFIMPadID,
	"fim_rep":   gguf.KeyTokenizerFIMRepID,
	"fim_sep":   gguf.KeyTokenizerFIMSepID,
	"prefix":    "tokenizer.ggml.prefix_token_id",
	"suffix":    "tokenizer.ggml.suffix_token_id",
	"middle":    "tokenizer.ggml.middle_token_id",
}

// SpecialTokenNames lists the names SpecialToken takes.
func SpecialTokenNames() []string {
	names := make([]string, 0, len(specialTokenKeys))
	for n := range specialTokenKeys {
		names = append(names, n)
	}
	return names
}

// SpecialToken returns the pair that makes token id the special token
// called name (bos, eos, padding …): tokenizer.ggml.NAME_token_id as a
// uint32, as gguf_new_metadata.py writes it. The id must be in the
// vocabulary of in.
func SpecialToken(in *ggufread.File, name string, id int64) (gguf.KV, error) {
	key, ok := specialTokenKeys[name]
	if !ok {
		return gguf.KV{}, fmt.Errorf("%w: unknown special token %q", ErrEdit, name)
	}
	n := 0
	if v, ok := in.KV(gguf.KeyTokenizerTokens); ok {
		n = v.Len()
	}
	if id < 0 || id >= int64(n) {
		return gguf.KV{}, fmt.Errorf("%w: token id %d is not within the token list (%d tokens)", ErrEdit, id, n)
	}
	return gguf.KV{Key: key, Value: gguf.Uint32(uint32(id))}, nil
}

// TokenIDs returns the ids of the tokens whose text is text, in order
// (gguf_new_metadata.py takes the first).
func TokenIDs(in *ggufread.File, text string) ([]int64, error) {
	v, _ := in.KV(gguf.KeyTokenizerTokens)
	tokens, _ := v.Strings()
	var ids []int64
	for i, t := range tokens {
		if t == text {
			ids = append(ids, int64(i))
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no token %q in the token list", ErrEdit, text)
	}
	return ids, nil
}

// ParseKV parses KEY=VALUE or KEY:TYPE=VALUE. TYPE is a GGUF value type
// name (uint8 … float64, bool, string) or array[TYPE], whose VALUE is a JSON
// list; without it the key keeps the type it has in in, and a new key is a
// string.
func ParseKV(in *ggufread.File, spec string) (gguf.KV, error) {
	lhs, text, ok := strings.Cut(spec, "=")
	if !ok || lhs == "" {
		return gguf.KV{}, fmt.Errorf("%w: %q is not KEY=VALUE or KEY:TYPE=VALUE", ErrEdit, spec)
	}
	key, typ, typed := strings.Cut(lhs, ":")
	var t, elem gguf.ValueType
	switch old, exists := in.KV(key); {
	case typed:
		name := typ
		if inner, ok := strings.CutPrefix(typ, "array["); ok && strings.HasSuffix(inner, "]") {
			t, name = gguf.TypeArray, strings.TrimSuffix(inner, "]")
		}
		et, err := gguf.ParseValueType(name)
		if err != nil || et == gguf.TypeArray {
			return gguf.KV{}, fmt.Errorf("%w: %s: unknown type %q", ErrEdit, key, typ)
		}
		if t == gguf.TypeArray {
			elem = et
		} else {
			t = et
		}
	case exists:
		t, elem = old.Type(), old.ElemType()
	default:
		t = gguf.TypeString
	}
	v, err := parseValue(t, elem, text)
	if err != nil {
		return gguf.KV{}, fmt.Errorf("%w: %s: %v", ErrEdit, key, err)
	}
	return gguf.KV{Key: key, Value: v}, nil
}

// parseValue parses text as a value of type t (elem for an array).
func parseValue(t, elem gguf.ValueType, text string) (gguf.Value, error) {
	if t == gguf.TypeArray {
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(text), &items); err != nil {
			return gguf.Value{}, fmt.Errorf("an array is a JSON list: %v", err)
		}
		strs := make([]string, len(items))
		for i, raw := range items {
			if elem == gguf.TypeString {
				if err := json.Unmarshal(raw, &strs[i]); err != nil {
					return gguf.Value{}, fmt.Errorf("item %d: %v", i, err)
				}
			} else {
				strs[i] = string(raw)
			}
		}
		return parseArray(elem, strs)
	}
	return parseScalar(t, text)
}

func parseScalar(t gguf.ValueType, s string) (gguf.Value, error) {
	switch t {
	case gguf.TypeString:
		return gguf.String(s), nil
	case gguf.TypeBool:
		b, err := strconv.ParseBool(s)
		return gguf.Bool(b), err
	case gguf.TypeFloat32:
		f, err := strconv.ParseFloat(s, 32)
		return gguf.Float32(float32(f)), err
	case gguf.TypeFloat64:
		f, err := strconv.ParseFloat(s, 64)
		return gguf.Float64(f), err
	case gguf.TypeUint8, gguf.TypeUint16, gguf.TypeUint32, gguf.TypeUint64:
		n, err := strconv.ParseUint(s, 10, t.Size()*8)
		if err != nil {
			return gguf.Value{}, err
		}
		switch t {
		case gguf.TypeUint8:
			return gguf.Uint8(uint8(n)), nil
		case gguf.TypeUint16:
			return gguf.Uint16(uint16(n)), nil
		case gguf.TypeUint32:
			return gguf.Uint32(uint32(n)), nil
		}
		return gguf.Uint64(n), nil
	case gguf.TypeInt8, gguf.TypeInt16, gguf.TypeInt32, gguf.TypeInt64:
		n, err := strconv.ParseInt(s, 10, t.Size()*8)
		if err != nil {
			return gguf.Value{}, err
		}
		switch t {
		case gguf.TypeInt8:
			return gguf.Int8(int8(n)), nil
		case gguf.TypeInt16:
			return gguf.Int16(int16(n)), nil
		case gguf.TypeInt32:
			return gguf.Int32(int32(n)), nil
		}
		return gguf.Int64(n), nil
	}
	return gguf.Value{}, fmt.Errorf("cannot parse a %s", t)
}

// parseArray parses each item as a scalar of type elem.
func parseArray(elem gguf.ValueType, items []string) (gguf.Value, error) {
	vals := make([]gguf.Value, len(items))
	for i, s := range items {
		v, err := parseScalar(elem, s)
		if err != nil {
			return gguf.Value{}, fmt.Errorf("item %d: %v", i, err)
		}
		vals[i] = v
	}
	switch elem {
	case gguf.TypeUint8:
		return collect[uint8](vals), nil
	case gguf.TypeInt8:
		return collect[int8](vals), nil
	case gguf.TypeUint16:
		return collect[uint16](vals), nil
	case gguf.TypeInt16:
		return collect[int16](vals), nil
	case gguf.TypeUint32:
		return collect[uint32](vals), nil
	case gguf.TypeInt32:
		return collect[int32](vals), nil
	case gguf.TypeUint64:
		return collect[uint64](vals), nil
	case gguf.TypeInt64:
		return collect[int64](vals), nil
	case gguf.TypeFloat32:
		return collect[float32](vals), nil
	case gguf.TypeFloat64:
		return collect[float64](vals), nil
	case gguf.TypeBool:
		return collect[bool](vals), nil
	}
	return collect[string](vals), nil
}

// collect gathers scalars of Go type T into an array value.
func collect[T gguf.Scalar](vals []gguf.Value) gguf.Value {
	xs := make([]T, len(vals))
	for i, v := range vals {
		xs[i] = v.Any().(T)
	}
	return gguf.Array(xs)
}
