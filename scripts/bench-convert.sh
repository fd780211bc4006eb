#!/usr/bin/env bash
# End-to-end conversion benchmark (docs/performance.md, "Convert"): writes a
# Llama-shaped BF16 checkpoint with scripts/genllama (default 22 layers,
# about 2 GB), then times `ggufkit convert` to BF16, F16, Q8_0 and Q4_K_M next to
# copies of the same weights file: `cp` (coreutils copies in the kernel
# with copy_file_range, no user-space pass over the bytes) and `dd bs=2M`
# (read(2) + write(2) through a user buffer), each also followed by an
# fsync of the copy — ggufkit fsyncs its output before renaming it into
# place, so "cp + sync" is the like-for-like baseline — with the page cache
# warm. Reports seconds, MB/s (source
# bytes / wall time), CPU seconds and MB per CPU-second (which a shared
# machine distorts less than wall time), and peak RSS (GNU time).
#
# With LLAMA_QUANTIZE naming llama.cpp's llama-quantize, it also times that
# tool's F16 → Q4_K_M on ggufkit's F16 conversion (byte-identical with
# convert_hf_to_gguf.py's) with 2 threads, the two-step route ggufkit's
# one-pass `--outtype Q4_K_M` replaces, and cmps the two Q4_K_M files.
#
# Usage: [LLAMA_QUANTIZE=path] scripts/bench-convert.sh [LAYERS]   (needs ~3× the model size free in ${TMPDIR:-/tmp}, and GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."
layers=${1:-22}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufkit-bench-convert.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ggufkit" ./cmd/ggufkit
go run ./scripts/genllama -o "$tmp/model" -layers "$layers"
src="$tmp/model/model.safetensors"
bytes=$(stat -c %s "$src")
cat "$src" > /dev/null # warm the cache
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(go env GOVERSION), source $((bytes / 1048576)) MiB BF16"
printf '%-24s %8s %8s %8s %8s %10s %13s\n' command seconds MB/s vs_cp CPU_s MB/CPU_s peak_RSS_MiB
run() { # NAME CMD...
	local name=$1
	shift
	local t0 t1 secs out rss cpu
	t0=$(date +%s.%N)
	out=$(/usr/bin/time -f '%M %U %S' "$@" 2>&1 >/dev/null | tail -1)
	t1=$(date +%s.%N)
	secs=$(awk "BEGIN { print $t1 - $t0 }")
	rss=$(echo "$out" | cut -d' ' -f1)
	cpu=$(echo "$out" | awk '{ print $2 + $3 }')
	[ -n "${cp_secs:-}" ] || cp_secs=$secs
	printf '%-24s %8.2f %8.0f %8.2f %8.2f %10.0f %13.1f\n' "$name" "$secs" "$(awk "BEGIN { print $bytes / 1e6 / $secs }")" \
		"$(awk "BEGIN { print $cp_secs / $secs }")" "$cpu" "$(awk "BEGIN { c = $cpu; if (c < 0.01) c = 0.01; print $bytes / 1e6 / c }")" \
		"$(awk "BEGIN { print $rss / 1024 }")"
}
run "cp" cp "$src" "$tmp/copy.safetensors"
rm -f "$tmp/copy.safetensors"
run "cp + sync FILE" sh -c "cp '$src' '$tmp/copy.safetensors' && sync '$tmp/copy.safetensors'"
rm -f "$tmp/copy.safetensors"
run "dd bs=2M" dd if="$src" of="$tmp/copy.safetensors" bs=2M status=none
rm -f "$tmp/copy.safetensors"
run "dd bs=2M conv=fsync" dd if="$src" of="$tmp/copy.safetensors" bs=2M conv=fsync status=none
rm -f "$tmp/copy.safetensors"
for t in bf16 f16 q8_0 Q4_K_M; do
	run "convert --outtype $t" "$tmp/ggufkit" convert --quiet --outtype "$t" --outfile "$tmp/out-$t.gguf" "$tmp/model"
	case $t in f16 | Q4_K_M) [ -n "${LLAMA_QUANTIZE:-}" ] && continue ;; esac
	rm -f "$tmp/out-$t.gguf"
done
if [ -n "${LLAMA_QUANTIZE:-}" ]; then
	run "llama-quantize F16 Q4_K_M" "$LLAMA_QUANTIZE" "$tmp/out-f16.gguf" "$tmp/llama-Q4_K_M.gguf" Q4_K_M 2
	if cmp -s "$tmp/out-Q4_K_M.gguf" "$tmp/llama-Q4_K_M.gguf"; then
		echo "# one-pass Q4_K_M and llama-quantize's Q4_K_M: identical"
	else
		echo "# one-pass Q4_K_M and llama-quantize's Q4_K_M DIFFER" >&2
		exit 1
	fi
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
