#!/usr/bin/env bash
# Forward-pass benchmark of ggufkit verify (docs/performance.md, "Verify").
#
# Times verify/forward (scripts/benchverify: a 32-token prompt in one batch,
# then 16 tokens one at a time) on stories260K (testdata), on tiny-llama if a
# path is given, and on a generated 1.1B llama (scripts/genllama, 22 layers of
# hidden 2048, converted to Q8_0 by ggufkit convert); then the whole
# `ggufkit verify --source` of the 1.1B Q8_0 file against its checkpoint.
# With LLAMA_BENCH set to a llama.cpp llama-bench binary, it is run on the
# same files with the same thread count as the baseline (pp32, tg16).
#
# Usage: scripts/bench-verify.sh [TINY_LLAMA.gguf]
#        (needs ~8 GB free in ${TMPDIR:-/tmp}: the BF16 checkpoint, its Q8_0
#        file and verify's temporary F32 reference)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${THREADS:-$(nproc)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-verify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ggufkit" ./cmd/ggufkit
go build -o "$tmp/benchverify" ./scripts/benchverify
go run ./scripts/genllama -o "$tmp/llama1b" -layers 22 >/dev/null
"$tmp/ggufkit" convert --quiet --outtype q8_0 --outfile "$tmp/llama1b-Q8_0.gguf" "$tmp/llama1b" >/dev/null
models=(testdata/stories260K/gguf/stories260K-F32.gguf testdata/gguf/stories260K-Q8_0.gguf)
[ $# -ge 1 ] && models+=("$1")
models+=("$tmp/llama1b-Q8_0.gguf")
echo "# $(nproc) CPUs, $threads threads, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION)"
for m in "${models[@]}"; do
	runs=5
	[[ $m == *llama1b* ]] && runs=1
	"$tmp/benchverify" -threads "$threads" -runs "$runs" "$m"
	if [ -n "${LLAMA_BENCH:-}" ]; then
		"$LLAMA_BENCH" -m "$m" -t "$threads" -p 32 -n 16 -r "$runs" -o md 2>/dev/null | grep -E '^\| (model|[^-])' || true
	fi
done
echo "# ggufkit verify --source CHECKPOINT --n-predict 8 on the 1.1B Q8_0 file (load $(cut -d' ' -f1-3 /proc/loadavg))"
/usr/bin/time -f 'wall %e s, CPU %U+%S s, peak RSS %M KiB' "$tmp/ggufkit" verify --threads "$threads" --n-predict 8 \
	--source "$tmp/llama1b" "$tmp/llama1b-Q8_0.gguf" | grep -E 'KL divergence|top-1|PASS|FAIL' || true
