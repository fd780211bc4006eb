package load

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// ParseVocabJSON parses a GPT-2 style vocab.json (token → id).
func ParseVocabJSON(data []byte, file string) (map[string]int, error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, &FileError{File: file, Offset: int64(off), Msg: "invalid UTF-8", Err: ErrFormat}
	}
	return parseVocabObject(data, file, "")
}

// ParseMergesTxt parses a merges.txt as gguf-py's SpecialVocab does
// (vocab.py L124-147): a first line starting with "#" (after stripping) is
// a header; every other line is stripped of whitespace, blank lines are
// skipped, and a line must split on whitespace into exactly two parts,
// which are joined by one space. Malformed lines are skipped (the
// converter only warns); their 1-based numbers are returned in bad.
func ParseMergesTxt(data []byte, file string) (merges []string, bad []int, err error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, nil, &FileError{File: file, Offset: int64(off), Msg: "invalid UTF-8", Err: ErrFormat}
	}
	lines := splitUniversal(string(data))
	start := 0
	if len(lines) > 0 && strings.HasPrefix(strings.TrimFunc(lines[0], pyIsSpace), "#") {
		start = 1
	}
	for i := start; i < len(lines); i++ {
		line := strings.TrimFunc(lines[i], pyIsSpace)
		if line == "" {
			continue
		}
		parts := strings.FieldsFunc(line, pyIsSpace)
		if len(parts) != 2 {
			bad = append(bad, i+1)
			continue
		}
		merges = append(merges, parts[0]+" "+parts[1])
	}
	return merges, bad, nil
}

// splitUniversal splits text into lines the way Python's text-mode file
// iteration does (universal newlines: "\n", "\r\n" and "\r" end a line);
// the terminators are dropped and no empty line follows a final newline.
func splitUniversal(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return lines
}

// pyIsSpace is Python's str.isspace for one character: Unicode White_Space
// plus the information separators U+001C-U+001F (bidirectional class B/S).
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// ParseVocabTxt parses a WordPiece vocab.txt as transformers' load_vocab
// does: line i (universal newlines) is the token of id i. A token repeated
// keeps its last id; the ids of its earlier lines are left unassigned.
func ParseVocabTxt(data []byte, file string) (map[string]int, error) {
	if off := invalidUTF8(data); off >= 0 {
		return nil, &FileError{File: file, Offset: int64(off), Msg: "invalid UTF-8", Err: ErrFormat}
	}
	lines := splitUniversal(string(data))
	vocab := make(map[string]int, len(lines))
	for i, l := range lines {
		vocab[l] = i
	}
	return vocab, nil
}

// ParseTiktoken parses a tiktoken BPE ranks file: lines "base64(token
// bytes) rank", blank lines skipped (tiktoken's load_tiktoken_bpe). It
// returns the token byte strings indexed by rank; ranks not used are nil.
// A repeated token keeps its last rank, as the Python dict does.
func ParseTiktoken(data []byte, file string) ([][]byte, error) {
	byToken := map[string]int{}
	var order []string
	maxRank := -1
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		field := fmt.Sprintf("line %d", lineNo)
		if len(fields) != 2 {
			return nil, errorf(ErrFormat, file, field, "want \"base64 rank\", got %d fields", len(fields))
		}
		tok, err := base64.StdEncoding.DecodeString(string(fields[0]))
		if err != nil {
			return nil, errorf(ErrFormat, file, field, "bad base64 %q: %v", fields[0], err)
		}
		rank, err := strconv.Atoi(string(fields[1]))
		if err != nil || rank < 0 || rank > math.MaxInt32 {
			return nil, errorf(ErrFormat, file, field, "bad rank %q", fields[1])
		}
		if rank >= 4*len(byToken)+(1<<20) {
			// Bounds the rank table by the input: a real ranks file is dense.
			return nil, errorf(ErrFormat, file, field, "rank %d leaves most ids unassigned", rank)
		}
		if _, dup := byToken[string(tok)]; !dup {
			order = append(order, string(tok))
		}
		byToken[string(tok)] = rank
		maxRank = max(maxRank, rank)
	}
	out := make([][]byte, maxRank+1)
	for _, t := range order {
		r := byToken[t]
		if out[r] != nil {
			return nil, errorf(ErrFormat, file, "", "rank %d is given to two tokens", r)
		}
		out[r] = []byte(t)
	}
	return out, nil
}

// byteToUnicode is GPT-2's reversible byte → character map (bytes_to_unicode
// in OpenAI's encoder.py, also gguf-py vocab.py and transformers): printable
// Latin-1 bytes map to themselves, the other 68 to U+0100 onwards in byte
// order.
var byteToUnicode, unicodeToByte = func() ([256]rune, map[rune]byte) {
	var fwd [256]rune
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := 0; b < 256; b++ {
		if printable(b) {
			fwd[b] = rune(b)
		} else {
			fwd[b] = rune(256 + n)
			n++
		}
	}
	rev := make(map[rune]byte, 256)
	for b, r := range fwd {
		rev[r] = byte(b)
	}
	return fwd, rev
}()

// bytesToGPT2 maps token bytes to GPT-2's byte-level string.
func bytesToGPT2(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(byteToUnicode[c])
	}
	return sb.String()
}

// TiktokenBPE turns tiktoken ranks into a byte-level BPE vocabulary and
// merges the way transformers' TikTokenConverter does (the converter Meta's
// Llama 3 tokenizer.model goes through on its way to tokenizer.json):
// tokens are the rank's bytes mapped through GPT-2's byte→unicode table;
// for each token of two or more bytes, in rank order, every split into two
// tokens that are both in the ranks is a merge, the splits ordered by the
// ranks of their left and then right part.
func TiktokenBPE(ranks [][]byte) (vocab map[string]int, merges []string) {
	index := make(map[string]int, len(ranks))
	vocab = make(map[string]int, len(ranks))
	for r, t := range ranks {
		if t != nil {
			index[string(t)] = r
			vocab[bytesToGPT2(t)] = r
		}
	}
	type split struct{ l, r int }
	var local []split
	for _, t := range ranks {
		if len(t) < 2 {
			continue
		}
		local = local[:0]
		for i := 1; i < len(t); i++ {
			l, okL := index[string(t[:i])]
			r, okR := index[string(t[i:])]
			if okL && okR {
				local = append(local, split{l, r})
			}
		}
		sort.SliceStable(local, func(a, b int) bool {
			if local[a].l != local[b].l {
				return local[a].l < local[b].l
			}
			return local[a].r < local[b].r
		})
		for _, s := range local {
			merges = append(merges, bytesToGPT2(ranks[s.l])+" "+bytesToGPT2(ranks[s.r]))
		}
	}
	return vocab, merges
}

// parseIDObject reads a JSON object of content → id (added_tokens.json) in
// the order Python iterates it.
func parseIDObject(raw json.RawMessage, file string) ([]idEntry, error) {
	members, err := objectMembers(raw, file, "")
	if err != nil {
		return nil, err
	}
	out := make([]idEntry, 0, len(members))
	for _, m := range members {
		v, err := decodeJSON(m.Value, file)
		if err != nil {
			return nil, err
		}
		id, ok := pyInt(v)
		if !ok || id < 0 || id > math.MaxInt32 {
			return nil, errorf(ErrFormat, file, strconv.Quote(m.Key), "id is %s, want a token id", describe(v))
		}
		out = append(out, idEntry{m.Key, int(id)})
	}
	return out, nil
}

// idEntry is one content → id pair.
type idEntry struct {
	Content string
	ID      int
}
