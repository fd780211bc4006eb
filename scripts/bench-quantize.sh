#!/usr/bin/env bash
# End-to-end requantize benchmark (docs/performance.md, "Requantize"): writes
# a Llama-shaped F16 GGUF with scripts/gengguf (default 22 layers, about
# 2 GB), then times `ggufkit quantize` to Q8_0 and Q4_K_M next to `cp` of the
# same file and, when LLAMA_QUANTIZE names llama.cpp's llama-quantize, next
# to it on the same input with the same thread count — and checks that both
# tools wrote the same bytes. The page cache is warm for every run. Reports
# seconds, MB/s (input bytes / wall time), CPU seconds and peak RSS (GNU
# time).
#
# Usage: [LLAMA_QUANTIZE=path] [GGUFKIT=path] scripts/bench-quantize.sh [LAYERS [THREADS]]
#   THREADS defaults to nproc; GGUFKIT to a fresh build of ./cmd/ggufkit.
#   Needs about 2.5× the model size free in ${TMPDIR:-/tmp}.
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${1:-22}
threads=${2:-$(nproc)}
[ -x /usr/bin/time ] || { echo "bench-quantize: GNU time is missing (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-quantize.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ggufkit=${GGUFKIT:-}
if [ -z "$ggufkit" ]; then
	go build -o "$tmp/ggufkit" ./cmd/ggufkit
	ggufkit=$tmp/ggufkit
fi
in=$tmp/model-F16.gguf
go run ./scripts/gengguf -o "$in" -layers "$layers"
bytes=$(stat -c %s "$in")
cat "$in" > /dev/null # warm the cache
echo "# $(nproc) CPUs, $threads threads, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), input $((bytes / 1048576)) MiB F16, $layers layers"
printf '%-28s %8s %8s %8s %8s %13s\n' command seconds MB/s vs_cp CPU_s peak_RSS_MiB
run() { # NAME CMD...
	local name=$1 out
	shift
	out=$(/usr/bin/time -f '%e %U %S %M' "$@" 2>&1 >/dev/null | tail -1)
	read -r secs user sys rss <<<"$out"
	[ -n "${cp_secs:-}" ] || cp_secs=$secs
	printf '%-28s %8.2f %8.0f %8.2f %8.2f %13.1f\n' "$name" "$secs" "$(awk "BEGIN { print $bytes / 1e6 / $secs }")" \
		"$(awk "BEGIN { print $cp_secs / $secs }")" "$(awk "BEGIN { print $user + $sys }")" "$(awk "BEGIN { print $rss / 1024 }")"
}
run "cp" cp "$in" "$tmp/copy.gguf"
rm -f "$tmp/copy.gguf"
for t in Q8_0 Q4_K_M; do
	run "ggufkit quantize $t" "$ggufkit" quantize "$in" "$tmp/ggufkit-$t.gguf" "$t" "$threads"
	if [ -n "${LLAMA_QUANTIZE:-}" ]; then
		run "llama-quantize $t" "$LLAMA_QUANTIZE" "$in" "$tmp/llama-$t.gguf" "$t" "$threads"
		if cmp -s "$tmp/ggufkit-$t.gguf" "$tmp/llama-$t.gguf"; then
			echo "# $t: ggufkit and llama-quantize wrote identical files ($(stat -c %s "$tmp/llama-$t.gguf") bytes)"
		else
			echo "# $t: OUTPUTS DIFFER" >&2
			exit 1
		fi
		rm -f "$tmp/llama-$t.gguf"
	fi
	rm -f "$tmp/ggufkit-$t.gguf"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
