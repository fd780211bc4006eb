package tokenizer

import "math/bits"

// stdSort sorts like libstdc++'s std::sort (introsort: median-of-three
// quicksort down to runs of 16, heapsort past 2·log2(n) levels, then one
// insertion sort). std::sort is not stable, and llama.cpp sorts its special
// tokens with it by length only (llama-vocab.cpp L3036-3047), so the order of
// equally long tokens — which decides which of two overlapping special
// tokens is matched — is whatever this algorithm leaves. Reproducing it
// gives the same order from the same input order.
func stdSort[T any](a []T, less func(x, y T) bool) {
	if len(a) < 2 {
		return
	}
	introsortLoop(a, 0, len(a), 2*(bits.Len(uint(len(a)))-1), less)
	finalInsertionSort(a, 0, len(a), less)
}

const stdSortThreshold = 16

func introsortLoop[T any](a []T, first, last, depth int, less func(x, y T) bool) {
	for last-first > stdSortThreshold {
		if depth == 0 {
			heapSort(a[first:last], less)
			return
		}
		depth--
		cut := partitionPivot(a, first, last, less)
		introsortLoop(a, cut, last, depth, less)
		last = cut
	}
}

// partitionPivot moves the median of a[first+1], a[mid], a[last-1] to
// a[first] and partitions the rest around it (__unguarded_partition_pivot).
func partitionPivot[T any](a []T, first, last int, less func(x, y T) bool) int {
	mid := first + (last-first)/2
	x, y, z := first+1, mid, last-1
	switch {
	case less(a[x], a[y]):
		switch {
		case less(a[y], a[z]):
			a[first], a[y] = a[y], a[first]
		case less(a[x], a[z]):
			a[first], a[z] = a[z], a[first]
		default:
			a[first], a[x] = a[x], a[first]
		}
	case less(a[x], a[z]):
		a[first], a[x] = a[x], a[first]
	case less(a[y], a[z]):
		a[first], a[z] = a[z], a[first]
	default:
		a[first], a[y] = a[y], a[first]
	}
	lo, hi := first+1, last
	for {
		for less(a[lo], a[first]) {
			lo++
		}
		hi--
		for less(a[first], a[hi]) {
			hi--
		}
		if lo >= hi {
			return lo
		}
		a[lo], a[hi] = a[hi], a[lo]
		lo++
	}
}

// heapSort is std::__partial_sort(first, last, last): make_heap, then
// pop_heap down to one element.
func heapSort[T any](a []T, less func(x, y T) bool) {
	n := len(a)
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		adjustHeap(a, parent, n, a[parent], less)
		if parent == 0 {
			break
		}
	}
	for last := n - 1; last > 0; last-- {
		v := a[last]
		a[last] = a[0]
		adjustHeap(a, 0, last, v, less)
	}
}

// adjustHeap is std::__adjust_heap followed by std::__push_heap.
func adjustHeap[T any](a []T, hole, n int, v T, less func(x, y T) bool) {
	top := hole
	child := hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if less(a[child], a[child-1]) {
			child--
		}
		a[hole] = a[child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		a[hole] = a[child-1]
		hole = child - 1
	}
	parent := (hole - 1) / 2
	for hole > top && less(a[parent], v) {
		a[hole] = a[parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	a[hole] = v
}

func finalInsertionSort[T any](a []T, first, last int, less func(x, y T) bool) {
	if last-first > stdSortThreshold {
		insertionSort(a, first, first+stdSortThreshold, less)
		for i := first + stdSortThreshold; i < last; i++ {
			linearInsert(a, i, less)
		}
		return
	}
	insertionSort(a, first, last, less)
}

func insertionSort[T any](a []T, first, last int, less func(x, y T) bool) {
	for i := first + 1; i < last; i++ {
		if less(a[i], a[first]) {
			v := a[i]
			copy(a[first+1:i+1], a[first:i])
			a[first] = v
		} else {
			linearInsert(a, i, less)
		}
	}
}

// linearInsert is std::__unguarded_linear_insert.
func linearInsert[T any](a []T, i int, less func(x, y T) bool) {
	v := a[i]
	for less(v, a[i-1]) {
		a[i] = a[i-1]
		i--
	}
	a[i] = v
}
