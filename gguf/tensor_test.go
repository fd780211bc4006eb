package gguf

import "testing"

func TestSameShape(t *testing.T) {
	for _, tc := range []struct {
		a, b []uint64
		want bool
	}{
		{[]uint64{64}, []uint64{64, 1}, true},
		{[]uint64{64, 1, 1}, []uint64{64}, true},
		{[]uint64{1}, []uint64{1, 1}, true},
		{[]uint64{64, 2}, []uint64{64}, false},
		{[]uint64{1, 64}, []uint64{64}, false},
		{[]uint64{32, 64}, []uint64{64, 32}, false},
		{nil, []uint64{1}, false},
	} {
		if got := SameShape(tc.a, tc.b); got != tc.want {
			t.Errorf("SameShape(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
	if !SameShape([]int64{8, 1}, []int64{8}) {
		t.Error("int64 shapes")
	}
}
