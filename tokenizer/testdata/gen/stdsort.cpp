// stdsort prints how libstdc++'s std::sort orders equal keys, for
// TestStdSortMatchesLibstdcxx: for each n it sorts the indices 0..n-1 by a
// key of few distinct values (a 64-bit LCG, key = (x >> 33) % 8, compared
// by key only, as llama.cpp sorts its special tokens by length) and prints
// "n: i0 i1 …"; then the same with std::partial_sort(first, last, last),
// the heapsort introsort falls back to, as "h n: i0 i1 …".
//
//   g++ -O1 -std=c++17 gen/stdsort.cpp -o /tmp/stdsort && /tmp/stdsort > stdsort.golden
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
    const int sizes[] = {0, 1, 2, 5, 16, 17, 18, 33, 100, 257, 1000, 3000};
    for (int n : sizes) {
        std::vector<int> key(n), idx(n);
        uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t) n;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            key[i] = (int) ((x >> 33) % 8);
            idx[i] = i;
        }
        auto cmp = [&](int a, int b) { return key[a] > key[b]; };
        std::vector<int> heap = idx;
        std::sort(idx.begin(), idx.end(), cmp);
        std::printf("%d:", n);
        for (int i : idx) {
            std::printf(" %d", i);
        }
        std::printf("\n");
        std::partial_sort(heap.begin(), heap.end(), heap.end(), cmp);
        std::printf("h %d:", n);
        for (int i : heap) {
            std::printf(" %d", i);
        }
        std::printf("\n");
    }
    return 0;
}
