package load

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ggufkit/ggufkit/gguf"
)

// rwkvWorldTemplate is the chat template _set_vocab_rwkv_world adds when
// the folder has none: llama.cpp's models/templates/llama-cpp-rwkv-world.jinja
// (0c1e570), taken as data.
//
//go:embed templates/llama-cpp-rwkv-world.jinja
var rwkvWorldTemplate string

// rwkvVocabFile is the RWKV world vocabulary's file name.
const rwkvVocabFile = "rwkv_vocab_v20230424.txt"

// RWKVWorld is _set_vocab_rwkv_world (conversion/base.py), the vocabulary
// of Rwkv6Model and Rwkv7Model: "<s>" (control), then one token per line
// of rwkv_vocab_v20230424.txt ("<id> <Python str or bytes literal>
// <byte length>", the id ignored) written as the body of its bytes' repr,
// then [PAD<i>] tokens up to vocab_size (default 65536); tokenizer model
// "rwkv", no scores; bos and eos 0, eot 261 ("\n\n" in the real file) and
// the rwkv-world chat template unless the folder has one.
func RWKVWorld(dir string, opts Options) ([]gguf.KV, error) {
	return run(dir, opts, rwkvWorld)
}

func rwkvWorld(f *folder, l *kvList, opts Options) error {
	text, err := f.text(rwkvVocabFile)
	if err != nil {
		return err
	}
	n := opts.VocabSize
	if n == 0 {
		n = 65536
	}
	if n, err = vocabLen(n, "vocab_size"); err != nil {
		return err
	}
	tokens := []string{"<s>"}
	types := []int32{typeControl}
	// Python's text mode reads \r\n and \r as \n.
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	for i, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		tok, err := rwkvLine(line)
		if err != nil {
			return errorf(ErrFormat, f.path(rwkvVocabFile), fmt.Sprintf("line %d", i+1), "%v", err)
		}
		tokens = append(tokens, pyBytesReprBody(tok))
		types = append(types, typeNormal)
	}
	if len(tokens) > n {
		return errorf(ErrFormat, f.path(rwkvVocabFile), "", "%d tokens (with <s>), more than vocab_size %d", len(tokens), n)
	}
	for i := len(tokens); i < n; i++ {
		tokens = append(tokens, "[PAD"+strconv.Itoa(i)+"]")
		types = append(types, typeUnused)
	}
	l.str(gguf.KeyTokenizerModel, "rwkv")
	array(l, gguf.KeyTokenizerTokens, tokens)
	array(l, gguf.KeyTokenizerTokenType, types)
	sv, err := newSpecialVocab(f, false, nil, -1)
	if err != nil {
		return err
	}
	if sv.chatTemplate == nil {
		sv.chatTemplate = rwkvWorldTemplate
	}
	if err := sv.setSpecialID("eot", 261); err != nil {
		return err
	}
	sv.ids.set("bos", 0)
	sv.ids.set("eos", 0)
	return sv.addTo(l)
}

// rwkvLine parses one vocabulary line: split on single spaces, the
// literal is everything between the first and the last field, and its
// bytes (a str literal encoded as UTF-8) must be as many as the last field
// says.
func rwkvLine(line string) ([]byte, error) {
	parts := strings.Split(line, " ")
	if len(parts) < 3 {
		return nil, fmt.Errorf("%q has fewer than 3 space-separated fields", strings.TrimSuffix(line, "\n"))
	}
	tok, err := pyLiteral(strings.Join(parts[1:len(parts)-1], " "))
	if err != nil {
		return nil, err
	}
	want, err := strconv.Atoi(strings.TrimSpace(parts[len(parts)-1]))
	if err != nil {
		return nil, fmt.Errorf("byte length %q is not an integer", strings.TrimSpace(parts[len(parts)-1]))
	}
	if len(tok) != want {
		return nil, fmt.Errorf("token of %d bytes, the line says %d", len(tok), want)
	}
	return tok, nil
}

// pyLiteral is ast.literal_eval of a str or bytes literal (or adjacent
// literals of one kind, concatenated), as bytes: a str one encoded as
// UTF-8. Escapes are Python's; triple quotes and \N{...} are refused.
func pyLiteral(s string) ([]byte, error) {
	s = strings.TrimLeft(s, " \t")
	var out []byte
	kind := -1 // 0 str, 1 bytes
	for {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			break
		}
		isBytes, raw := false, false
		for len(s) > 0 && strings.IndexByte("bBrRuU", s[0]) >= 0 {
			switch s[0] {
			case 'b', 'B':
				isBytes = true
			case 'r', 'R':
				raw = true
			}
			s = s[1:]
		}
		k := 0
		if isBytes {
			k = 1
		}
		if kind >= 0 && k != kind {
			return nil, fmt.Errorf("cannot mix bytes and nonbytes literals")
		}
		kind = k
		if s == "" || (s[0] != '\'' && s[0] != '"') {
			return nil, fmt.Errorf("not a str or bytes literal")
		}
		q := s[0]
		if strings.HasPrefix(s, strings.Repeat(string(q), 3)) {
			return nil, fmt.Errorf("triple-quoted literals are not supported")
		}
		body, rest, err := pyLiteralBody(s[1:], q, isBytes, raw)
		if err != nil {
			return nil, err
		}
		out, s = append(out, body...), rest
	}
	if kind < 0 {
		return nil, fmt.Errorf("no literal")
	}
	return out, nil
}

// pyLiteralBody decodes a literal's body up to its closing quote q and
// returns the bytes and what follows the quote.
func pyLiteralBody(s string, q byte, isBytes, raw bool) ([]byte, string, error) {
	var out []byte
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return out, s[i+1:], nil
		case c == '\n':
			return nil, "", fmt.Errorf("unterminated literal")
		case isBytes && c >= 0x80:
			return nil, "", fmt.Errorf("bytes can only contain ASCII literal characters")
		case c != '\\' || raw:
			if raw && c == '\\' && i+1 < len(s) {
				out = append(out, c, s[i+1])
				i += 2
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '\n':
		case '\\', '\'', '"':
			out = append(out, e)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, 11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, j := int(e-'0'), 0
			for ; j < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; j++ {
				v = v*8 + int(s[i]-'0')
				i++
			}
			if isBytes {
				out = append(out, byte(v))
			} else {
				out = utf8.AppendRune(out, rune(v))
			}
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if isBytes && e != 'x' {
				out = append(out, '\\', e)
				continue
			}
			if i+digits > len(s) {
				return nil, "", fmt.Errorf("truncated \\%c escape", e)
			}
			v, err := strconv.ParseUint(s[i:i+digits], 16, 32)
			if err != nil {
				return nil, "", fmt.Errorf("bad \\%c escape %q", e, s[i:i+digits])
			}
			i += digits
			switch {
			case isBytes:
				out = append(out, byte(v))
			case v > utf8.MaxRune:
				return nil, "", fmt.Errorf("illegal Unicode character \\U%s", s[i-digits:i])
			default:
				out = utf8.AppendRune(out, rune(v))
			}
		case 'N':
			return nil, "", fmt.Errorf("\\N{...} escapes are not supported")
		default:
			out = append(out, '\\', e)
		}
	}
	return nil, "", fmt.Errorf("unterminated literal")
}

// pyBytesReprBody is repr(b)[2:-1]: Python's bytes repr without its b and
// quotes, quoted with ' unless b holds ' and no ".
func pyBytesReprBody(b []byte) string {
	q := byte('\'')
	if strings.IndexByte(string(b), '\'') >= 0 && strings.IndexByte(string(b), '"') < 0 {
		q = '"'
	}
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == q || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}
