#!/usr/bin/env python3
"""Time the reference libraries on the text BenchmarkEncode tokenizes, for docs/performance.md.

    python3 gen/bench_libraries.py SHARED_DIR [RUNS]      (pip: sentencepiece tokenizers)

The text is $GOROOT/src/testdata/Isaac.Newton-Opticks.txt repeated to 1 MiB and cut back to a
character boundary, as bench_test.go's benchText makes it. Each tokenizer encodes it RUNS times
(default 3) in one call per run, without special tokens; the best wall-clock run and the CPU time
of that run are printed as MB/s and MB per CPU-second (MB = 10^6 bytes, as go test's MB/s).
"""
import os, subprocess, sys, time

shared = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

goroot = subprocess.run(["go", "env", "GOROOT"], check=True, capture_output=True, text=True).stdout.strip()
raw = open(os.path.join(goroot, "src", "testdata", "Isaac.Newton-Opticks.txt"), "rb").read()
data = (raw * ((1 << 20) // len(raw) + 1))[: 1 << 20]
while True:
    try:
        text = data.decode("utf-8")
        break
    except UnicodeDecodeError:
        data = data[:-1]

import sentencepiece
import tokenizers

def spm(path):
    p = sentencepiece.SentencePieceProcessor(model_file=path)
    return lambda: p.encode(text)

def hf(path):
    t = tokenizers.Tokenizer.from_file(path)
    return lambda: t.encode(text, add_special_tokens=False)

def wordpiece(path):
    t = tokenizers.BertWordPieceTokenizer(path, lowercase=True)
    return lambda: t.encode(text, add_special_tokens=False)

cases = [
    ("sentencepiece, Llama 2 tokenizer.model (BPE)", spm, "data/tokenizers/llama2/tokenizer.model"),
    ("sentencepiece, T5 spiece.model (Unigram)", spm, "data/tokenizers/t5/spiece.model"),
    ("tokenizers, Llama 2 tokenizer.json", hf, "data/tokenizers/llama2/tokenizer.json"),
    ("tokenizers, GPT-2 tokenizer.json", hf, "data/hf-gpt2/fake_gpt2/tokenizer.json"),
    ("tokenizers, T5 tokenizer.json (Unigram)", hf, "data/tokenizers/t5/tokenizer.json"),
    ("tokenizers, BERT vocab.txt (WordPiece)", wordpiece, "data/tokenizers/bert/vocab.txt"),
]
print(f"{len(data)} bytes, sentencepiece {sentencepiece.__version__}, tokenizers {tokenizers.__version__}")
for name, make, rel in cases:
    enc = make(os.path.join(shared, rel))
    best = None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        enc()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or w < best[0]:
            best = (w, c)
    w, c = best
    print(f"{name}\t{len(data) / w / 1e6:.2f} MB/s\t{len(data) / c / 1e6:.2f} MB/cpu-s")
