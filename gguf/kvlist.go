package gguf

// KVList is an ordered metadata list with gguf-py's GGUFWriter semantics
// (gguf_writer.py add_key_value): setting a key that is already present
// replaces its value and keeps its first position.
type KVList struct {
	kvs   []KV
	index map[string]int
}

// Set adds key=v at the end, or replaces the value of an existing key in
// place.
func (l *KVList) Set(key string, v Value) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	if i, ok := l.index[key]; ok {
		l.kvs[i].Value = v
		return
	}
	l.index[key] = len(l.kvs)
	l.kvs = append(l.kvs, KV{Key: key, Value: v})
}

// Append sets every pair of kvs in order.
func (l *KVList) Append(kvs ...KV) {
	for _, kv := range kvs {
		l.Set(kv.Key, kv.Value)
	}
}

// Get returns the value of key.
func (l *KVList) Get(key string) (Value, bool) {
	if i, ok := l.index[key]; ok {
		return l.kvs[i].Value, true
	}
	return Value{}, false
}

// Remove deletes key, keeping the order of the others.
func (l *KVList) Remove(key string) {
	i, ok := l.index[key]
	if !ok {
		return
	}
	l.kvs = append(l.kvs[:i], l.kvs[i+1:]...)
	delete(l.index, key)
	for j := i; j < len(l.kvs); j++ {
		l.index[l.kvs[j].Key] = j
	}
}

// KVs returns the pairs in order. The slice is the list's own.
func (l *KVList) KVs() []KV { return l.kvs }

// Len is the number of pairs.
func (l *KVList) Len() int { return len(l.kvs) }
