package gguf

import (
	"strings"
	"testing"
)

func TestKVList(t *testing.T) {
	var l KVList
	l.Set("a", Uint32(1))
	l.Set("b", String("x"))
	l.Set("c", Bool(true))
	l.Set("a", Uint32(2)) // keeps its position, takes the value
	l.Append(KV{Key: "d", Value: Float32(0.5)}, KV{Key: "b", Value: String("y")})
	keys := func() string {
		var ks []string
		for _, kv := range l.KVs() {
			ks = append(ks, kv.Key)
		}
		return strings.Join(ks, ",")
	}
	if keys() != "a,b,c,d" || l.Len() != 4 {
		t.Fatalf("order %s", keys())
	}
	if v, _ := l.Get("a"); v.Any() != uint32(2) {
		t.Fatalf("a = %#v", v)
	}
	if v, _ := l.Get("b"); v.Any() != "y" {
		t.Fatalf("b = %#v", v)
	}
	l.Remove("b")
	l.Remove("nope")
	if keys() != "a,c,d" {
		t.Fatalf("after remove %s", keys())
	}
	l.Set("b", String("z"))
	if keys() != "a,c,d,b" {
		t.Fatalf("re-added %s", keys())
	}
	if v, ok := l.Get("d"); !ok || v.Any() != float32(0.5) {
		t.Fatalf("index broken after remove: %#v %v", v, ok)
	}
}
