package arch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrConfig is wrapped by the errors about a config.json value that a
// model class cannot use (see ConfigError).
var ErrConfig = errors.New("arch: unusable config.json value")

// ConfigError is a config.json hyperparameter a model class cannot use:
// its key, the value seen and what is wrong with it.
type ConfigError struct {
	Key   string
	Value any
	Msg   string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config.json: %s: %s %s", e.Key, describe(e.Value), e.Msg)
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// describe renders a decoded JSON value for an error message, as JSON
// would show it, so that the string "8" is told from the number 8.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "an object"
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	}
	return fmt.Sprint(v)
}

// HParams is a model's hyperparameters as llama.cpp's converter sees them
// (its self.hparams): config.json with a multimodal wrapper's text_config
// merged over the top level, numbers kept as json.Number so that an integer
// is told from a float as Python's json module tells them.
type HParams map[string]any

// Find returns the value of the first key present (find_hparam).
func (h HParams) Find(keys ...string) (any, string, bool) {
	for _, k := range keys {
		if v, ok := h[k]; ok {
			return v, k, true
		}
	}
	return nil, "", false
}

// get is dict.get(key, def): a present key gives its value, even null.
func (h HParams) get(key string, def any) any {
	if v, ok := h[key]; ok {
		return v
	}
	return def
}

// Has reports whether key is present, even with a null value.
func (h HParams) Has(key string) bool { _, ok := h[key]; return ok }

// Int returns the first present key as an integer. A present key whose
// value is not an integer is an error, as Python's struct.pack would fail.
func (h HParams) Int(keys ...string) (int64, bool, error) {
	v, k, ok := h.Find(keys...)
	if !ok || v == nil {
		return 0, false, nil
	}
	n, err := asInt(v)
	if err != nil {
		return 0, false, &ConfigError{Key: k, Value: v, Msg: "is not an integer"}
	}
	return n, true, nil
}

// MustInt is Int for a key the converter requires.
func (h HParams) MustInt(keys ...string) (int64, error) {
	n, ok, err := h.Int(keys...)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("config.json: could not find any of %q", keys)
	}
	return n, nil
}

// Float returns the first present key as a float (an integer is accepted).
func (h HParams) Float(keys ...string) (float64, bool, error) {
	v, k, ok := h.Find(keys...)
	if !ok || v == nil {
		return 0, false, nil
	}
	f, err := asFloat(v)
	if err != nil {
		return 0, false, &ConfigError{Key: k, Value: v, Msg: "is not a number"}
	}
	return f, true, nil
}

// String returns the first present key as a string.
func (h HParams) String(keys ...string) (string, bool) {
	v, _, ok := h.Find(keys...)
	s, isStr := v.(string)
	return s, ok && isStr
}

// Bool returns the key as a bool.
func (h HParams) Bool(key string) (value, ok bool) {
	b, ok := h[key].(bool)
	return b, ok
}

// Map returns the key as an object.
func (h HParams) Map(key string) map[string]any {
	m, _ := h[key].(map[string]any)
	return m
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer", describe(v))
		}
		return n, nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), nil
		}
	}
	return 0, fmt.Errorf("%s is not an integer", describe(v))
}

func asFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not a number", describe(v))
		}
		return f, nil
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	}
	return 0, fmt.Errorf("%s is not a number", describe(v))
}

// isInt reports whether v is a JSON integer (Python int).
func isInt(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	_, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil
}

// floorDiv is Python's // on integers.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
