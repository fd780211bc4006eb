#!/usr/bin/env bash
# FP8 MoE conversion benchmark (docs/performance.md, "FP8 MoE checkpoint"):
# for each block count, writes a DeepSeek-V3-shaped FP8 checkpoint with
# scripts/genfp8moe (F8_E4M3 projections with 128×128 weight_scale_inv
# blocks, 64 routed experts a block, BF16 norms and embeddings, the GPT-2
# tokenizer; about 415 MiB a block, so 4 blocks ≈ 2.1 GB and 8 ≈ 3.7 GB),
# then times, with the page cache warm, `cp` of the weights file, `cp` +
# sync of the copy (ggufkit fsyncs its output before renaming it), and
# `ggufkit convert` to bf16 (every FP8 weight dequantized by its block
# scales: the output is twice the checkpoint) and to Q4_K_M (one pass).
# Reports wall seconds, the ratio to cp, CPU seconds, peak RSS (GNU time -v)
# and the output size. Two sizes show whether peak RSS stays flat in the
# model size, as it must (tensors in flight, not model size).
#
# Usage: scripts/bench-fp8-moe.sh [--small] [LAYERS...]   (default LAYERS: 4 8)
#   --small  tiny dimensions (hidden 64, 4 experts; a few MB) to test the script itself
# Needs ~4× the largest model's size free in ${TMPDIR:-/tmp}, and GNU time at /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
if [ "${1:-}" = "--small" ]; then
	shift
	gen=(-hidden 64 -heads 2 -q-lora 48 -kv-lora 32 -nope 16 -rope 8 -v-head 16 -ffn 160 -moe-ffn 32 -experts 4 -used 2)
fi
[ $# -gt 0 ] || set -- 4 8
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-fp8.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ggufkit" ./cmd/ggufkit
go build -o "$tmp/genfp8moe" ./scripts/genfp8moe
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), $(git rev-parse --short HEAD)"
printf '%-24s %6s %8s %6s %7s %13s %8s\n' command layers seconds vs_cp CPU_s peak_RSS_MiB out_MiB
run() { # NAME LAYERS OUT CMD...: one timed command; OUT is the file it writes
	local name=$1 layers=$2 out=$3
	shift 3
	local log wall secs cpu rss size
	log="$tmp/time.log"
	/usr/bin/time -v -o "$log" "$@" >/dev/null
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
	secs=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
	cpu=$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/ { c += $2 } END { print c }' "$log")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log")
	size=$(stat -c %s "$out")
	[ "$name" != cp ] || cp_secs=$secs
	printf '%-24s %6d %8.2f %6s %7.2f %13.1f %8.0f\n' "$name" "$layers" "$secs" \
		"$(awk "BEGIN { if ($secs > 0 && $cp_secs > 0) printf \"%.2f\", $cp_secs / $secs; else print \"-\" }")" "$cpu" \
		"$(awk "BEGIN { print $rss / 1024 }")" "$(awk "BEGIN { print $size / 1048576 }")"
}
for layers in "$@"; do
	model="$tmp/model-$layers"
	"$tmp/genfp8moe" -o "$model" -layers "$layers" "${gen[@]}"
	src="$model/model.safetensors"
	cat "$src" >/dev/null # warm the cache
	echo "# $layers layers: checkpoint $(($(stat -c %s "$src") / 1048576)) MiB FP8, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	run cp "$layers" "$tmp/copy.safetensors" cp "$src" "$tmp/copy.safetensors"
	rm -f "$tmp/copy.safetensors"
	run "cp + sync FILE" "$layers" "$tmp/copy.safetensors" sh -c "cp '$src' '$tmp/copy.safetensors' && sync '$tmp/copy.safetensors'"
	rm -f "$tmp/copy.safetensors"
	for t in bf16 Q4_K_M; do
		run "convert --outtype $t" "$layers" "$tmp/out-$t.gguf" "$tmp/ggufkit" convert --quiet --outtype "$t" --outfile "$tmp/out-$t.gguf" "$model"
		rm -f "$tmp/out-$t.gguf"
	done
	rm -rf "$model"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
