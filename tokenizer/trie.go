package tokenizer

import (
	"cmp"
	"slices"
)

// trie is llama.cpp's naive_trie: a byte trie whose nodes may carry a
// token id. It is built with insert, then frozen: the children of node n
// are labels[first[n]:first[n+1]] (sorted) with their nodes in targets,
// which is several times faster to walk than a map.
type trie struct {
	hasValue []bool
	value    []int32
	building map[int64]int32 // parent·256 + byte → child, until freeze
	first    []int32
	labels   []byte
	targets  []int32
}

func newTrie() *trie {
	return &trie{hasValue: []bool{false}, value: []int32{0}, building: map[int64]int32{}}
}

// insert adds key; a key inserted again takes the new value. It must not
// be called after freeze.
func (tr *trie) insert(key []byte, value int32) {
	n := int32(0)
	for _, b := range key {
		c, ok := tr.building[int64(n)<<8|int64(b)]
		if !ok {
			c = int32(len(tr.hasValue))
			tr.hasValue = append(tr.hasValue, false)
			tr.value = append(tr.value, 0)
			tr.building[int64(n)<<8|int64(b)] = c
		}
		n = c
	}
	tr.hasValue[n] = true
	tr.value[n] = value
}

// freeze lays the children out for child and drops the build map.
func (tr *trie) freeze() *trie {
	keys := make([]int64, 0, len(tr.building))
	for k := range tr.building {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	tr.first = make([]int32, len(tr.hasValue)+1)
	tr.labels = make([]byte, len(keys))
	tr.targets = make([]int32, len(keys))
	for i, k := range keys {
		tr.first[k>>8+1]++
		tr.labels[i] = byte(k)
		tr.targets[i] = tr.building[k]
	}
	for n := 1; n < len(tr.first); n++ {
		tr.first[n] += tr.first[n-1]
	}
	tr.building = nil
	return tr
}

// child is naive_trie::traverse; -1 when there is none.
func (tr *trie) child(n int32, b byte) int32 {
	lo, hi := tr.first[n], tr.first[n+1]
	if hi-lo > 8 {
		// binary search for the first label ≥ b
		for lo < hi {
			m := int32(uint32(lo+hi) >> 1)
			if tr.labels[m] < b {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < tr.first[n+1] && tr.labels[lo] == b {
			return tr.targets[lo]
		}
		return -1
	}
	for i := lo; i < hi; i++ {
		if tr.labels[i] == b {
			return tr.targets[i]
		}
	}
	return -1
}

// longestPrefix returns the value and length of the longest key that is a
// prefix of s; n = 0 when there is none.
func (tr *trie) longestPrefix(s string) (value int32, n int) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		if node = tr.child(node, s[i]); node < 0 {
			break
		}
		if tr.hasValue[node] {
			value, n = tr.value[node], i+1
		}
	}
	return value, n
}

// longestPath is naive_trie::get_longest_prefix: how many bytes of s the trie
// can follow from the root, whether or not a key ends there.
func (tr *trie) longestPath(s string) int {
	n := int32(0)
	for i := 0; i < len(s); i++ {
		if n = tr.child(n, s[i]); n < 0 {
			return i
		}
	}
	return len(s)
}
