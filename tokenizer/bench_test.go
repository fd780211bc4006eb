package tokenizer

import (
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// benchText is 1 MiB of English prose: Newton's Opticks, the public-domain
// text Go's own compression benchmarks use ($GOROOT/src/testdata), repeated
// to 1 MiB and cut at a character boundary.
func benchText(b *testing.B) string {
	b.Helper()
	raw := readOpticks(b)
	s := strings.Repeat(string(raw), (1<<20)/len(raw)+1)[:1<<20]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// BenchmarkEncode tokenizes 1 MiB of English with each encoder kind and the
// main families of BPE pre-tokenizer (hand-written splitters, the regex
// engine), as llama.cpp's test-tokenizer-0 calls it (no special tokens).
// RWKV and PLaMo-2 have only small synthetic vocabularies here.
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	for _, name := range []string{"llama-spm", "gpt-2", "llama-bpe", "qwen2", "falcon", "deepseek-llm", "gemma-4", "bert-bge", "t5",
		"synthetic-rwkv", "synthetic-plamo2"} {
		b.Run(name, func(b *testing.B) {
			var v testVocab
			for _, x := range testVocabs {
				if x.name == name {
					v = x
				}
			}
			tok := loadTestVocab(b, v)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				if _, err := tok.Encode(text, false, false); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, len(text))
		})
	}
}

// BenchmarkBaseline walks the same text without tokenizing it: a byte scan
// (counting spaces) and a UTF-8 decode (counting letters), the floor every
// encoder's figure should be read against.
func BenchmarkBaseline(b *testing.B) {
	text := benchText(b)
	b.Run("byte-scan", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		cpu0 := cpuTime()
		for range b.N {
			if strings.Count(text, " ") == 0 {
				b.Fatal("no space")
			}
		}
		reportCPU(b, cpu0, len(text))
	})
	b.Run("utf8-decode", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		cpu0 := cpuTime()
		for range b.N {
			n := 0
			for _, r := range text {
				if unicode.IsLetter(r) {
					n++
				}
			}
			if n == 0 {
				b.Fatal("no letter")
			}
		}
		reportCPU(b, cpu0, len(text))
	})
}

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the MB per CPU-second since cpu0 to a benchmark's
// figures: on a machine shared with other jobs, wall-clock MB/s depends on
// the load, CPU time much less.
func reportCPU(b *testing.B, cpu0 time.Duration, n int) {
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/d.Seconds()/1e6, "MB/cpu-s")
	}
}

// BenchmarkLoad builds the tokenizer of a vocabulary already read from its
// GGUF (what ggufkit tokenize does before encoding).
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"llama-spm", "gpt-2", "llama-bpe", "gemma-4", "t5"} {
		b.Run(name, func(b *testing.B) {
			var v testVocab
			for _, x := range testVocabs {
				if x.name == name {
					v = x
				}
			}
			f := openGGUF(b, v.file)
			b.ResetTimer()
			for range b.N {
				if _, err := Load(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
