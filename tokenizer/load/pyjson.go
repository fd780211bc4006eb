package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// The converter reads every JSON file with Python's json module, and its
// logic leans on Python semantics: ints and floats are different types
// (isinstance(x, int)), bool is an int, "not x" is false for None, "", 0,
// {} and [], and a dict keeps the order of its keys. The helpers here give
// decoded JSON those semantics. Values are decoded with UseNumber, so a JSON
// number stays a json.Number and "1" (a Python int) is told from "1.0" (a
// Python float).

// decodeJSON parses one JSON document into Go values (map[string]any,
// []any, string, json.Number, bool, nil). Like Python's json.loads it
// rejects trailing data.
func decodeJSON(data []byte, file string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(file, err)
	}
	if err := expectEOF(dec, file); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonError turns an encoding/json error into a *FileError with the byte
// offset when the decoder knows it.
func jsonError(file string, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return &FileError{File: file, Offset: syn.Offset, Msg: syn.Error(), Err: ErrFormat}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &FileError{File: file, Offset: -1, Msg: "unexpected end of JSON input", Err: ErrFormat}
	}
	return &FileError{File: file, Offset: -1, Msg: err.Error(), Err: ErrFormat}
}

// member is one key/value pair of a JSON object, in document order.
type member struct {
	Key   string
	Value json.RawMessage
}

// objectMembers returns the members of a JSON object in the order a Python
// dict built by json.loads iterates them: first-occurrence order, with the
// last value of a repeated key.
func objectMembers(raw json.RawMessage, file, field string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(file, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errorf(ErrFormat, file, field, "is %s, want an object", jsonKind(raw))
	}
	var out []member
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(file, err)
		}
		key, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonError(file, err)
		}
		if i, ok := index[key]; ok {
			out[i].Value = v
			continue
		}
		index[key] = len(out)
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonError(file, err)
	}
	if err := expectEOF(dec, file); err != nil {
		return nil, err
	}
	return out, nil
}

// expectEOF refuses data after the JSON value, as Python's json.loads does
// ("Extra data").
func expectEOF(dec *json.Decoder, file string) error {
	if _, err := dec.Token(); err != io.EOF {
		return &FileError{File: file, Offset: dec.InputOffset(), Msg: "extra data after the JSON value", Err: ErrFormat}
	}
	return nil
}

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw json.RawMessage) string {
	s := bytes.TrimLeft(raw, " \t\r\n")
	if len(s) == 0 {
		return "empty"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a bool"
	case 'n':
		return "null"
	}
	return "a number"
}

// pyInt reports whether v is a Python int after json.loads (a JSON number
// written without fraction or exponent) and returns it. Numbers beyond
// int64 are reported as not ints; callers treat them as out of range.
func pyInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// pyIntOrBool is pyInt that also accepts a bool, which Python's
// isinstance(x, int) accepts (True is 1).
func pyIntOrBool(v any) (int64, bool) {
	if b, ok := v.(bool); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return pyInt(v)
}

// truthy is Python's bool(v) for a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return err != nil || f != 0
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}

// pyEqual is Python's == for decoded JSON values: numbers compare by value
// (1 == 1.0), containers element-wise, a string never equals a dict.
func pyEqual(a, b any) bool {
	na, aNum := pyNumber(a)
	nb, bNum := pyNumber(b)
	if aNum || bNum {
		return aNum && bNum && na == nb
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// pyNumber returns a JSON number or bool as a float64 (Python compares
// True == 1).
func pyNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return math.NaN(), true
		}
		return f, true
	}
	return 0, false
}

// getKey is Python's d.get(key) on a decoded value: nil when v is not an
// object or lacks the key.
func getKey(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	return m[key]
}

// hasKey is Python's "key in d" for a decoded object.
func hasKey(v any, key string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// describe formats a decoded JSON value for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprint(v)
}
