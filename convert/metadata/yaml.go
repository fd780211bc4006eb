package metadata

import (
	"fmt"
	"strings"
)

// maxFrontMatterLines bounds the model card front matter we parse; real
// cards have tens of lines.
const maxFrontMatterLines = 1 << 16

// parseFrontMatter reads the subset of YAML that model card front matter
// uses (the Hugging Face model card schema): a mapping of keys to plain or
// quoted scalars, flow lists ([a, b]), block lists ("- a") whose items are
// scalars or small mappings, nested block mappings, and literal/folded
// block scalars (| and >). Scalars are kept as strings except null (nil)
// and the YAML 1.1 booleans PyYAML's safe_load knows (true/false/yes/no/
// on/off), with gguf-py's "- no" fix (a list item "no" is the string
// "no"). Anything outside the subset is an error naming the line.
func parseFrontMatter(lines []string) (map[string]any, error) {
	if len(lines) > maxFrontMatterLines {
		return nil, fmt.Errorf("more than %d lines", maxFrontMatterLines)
	}
	p := &yamlParser{lines: lines}
	v, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.next() >= 0 {
		return nil, fmt.Errorf("line %d: unexpected indentation", p.i+2)
	}
	m, _ := v.(map[string]any)
	return m, nil
}

type yamlParser struct {
	lines []string
	i     int
}

// next skips blank and comment lines and returns the indentation of the
// next content line, or -1 at the end.
func (p *yamlParser) next() int {
	for ; p.i < len(p.lines); p.i++ {
		t := strings.TrimSpace(p.lines[p.i])
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		return len(p.lines[p.i]) - len(strings.TrimLeft(p.lines[p.i], " "))
	}
	return -1
}

// block parses the mapping or list that starts at the next line, which must
// be indented by at least minIndent.
func (p *yamlParser) block(minIndent int) (any, error) {
	ind := p.next()
	if ind < minIndent {
		return nil, nil
	}
	if t := strings.TrimSpace(p.lines[p.i]); t == "-" || strings.HasPrefix(t, "- ") {
		return p.list(ind)
	}
	return p.mapping(ind, "")
}

// mapping parses "key: value" lines at indentation ind; first, if not "",
// is the text of its first line already taken from a list item.
func (p *yamlParser) mapping(ind int, first string) (map[string]any, error) {
	m := map[string]any{}
	for {
		var line string
		lineNo := p.i // the list item's line, already consumed
		if first != "" {
			line, first = first, ""
		} else {
			if p.next() != ind {
				return m, nil
			}
			line = strings.TrimSpace(p.lines[p.i])
			p.i++
			lineNo = p.i
		}
		key, rest, ok := splitKey(line)
		if !ok {
			return nil, fmt.Errorf("line %d: expected \"key: value\", got %q", lineNo, line)
		}
		rest = stripComment(rest)
		switch {
		case rest == "":
			// A nested block, or a list at the same indentation.
			if n := p.next(); n > ind {
				v, err := p.block(ind + 1)
				if err != nil {
					return nil, err
				}
				m[key] = v
			} else if n == ind && isListItem(p.lines[p.i]) {
				v, err := p.list(ind)
				if err != nil {
					return nil, err
				}
				m[key] = v
			} else {
				m[key] = nil
			}
		case rest == "|" || rest == ">" || rest == "|-" || rest == ">-" || rest == "|+" || rest == ">+":
			m[key] = p.blockScalar(ind, rest)
		default:
			v, err := scalar(rest, false)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			m[key] = v
		}
	}
}

func isListItem(line string) bool {
	t := strings.TrimSpace(line)
	return t == "-" || strings.HasPrefix(t, "- ")
}

// list parses "- item" lines at indentation ind.
func (p *yamlParser) list(ind int) ([]any, error) {
	var out []any
	for p.next() == ind && isListItem(p.lines[p.i]) {
		lineNo := p.i + 1
		item := stripComment(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p.lines[p.i]), "-")))
		p.i++
		if item == "" {
			v, err := p.block(ind + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		if _, _, ok := splitKey(item); ok && !strings.HasPrefix(item, "\"") && !strings.HasPrefix(item, "'") {
			// "- key: value" starts a mapping whose other keys are indented
			// to the first key's column.
			afterDash := p.lines[lineNo-1][ind+1:]
			col := ind + 1 + len(afterDash) - len(strings.TrimLeft(afterDash, " "))
			m, err := p.mapping(col, item)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		v, err := scalar(item, true)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// blockScalar reads the lines of a | or > scalar indented deeper than ind.
func (p *yamlParser) blockScalar(ind int, style string) string {
	var parts []string
	body := -1
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		t := strings.TrimSpace(l)
		n := len(l) - len(strings.TrimLeft(l, " "))
		if t != "" && n <= ind {
			break
		}
		if t != "" && body < 0 {
			body = n
		}
		if body >= 0 && len(l) >= body {
			l = l[body:]
		} else {
			l = t
		}
		parts = append(parts, l)
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" && !strings.HasSuffix(style, "+") {
		parts = parts[:len(parts)-1]
	}
	sep := "\n"
	if style[0] == '>' {
		sep = " "
	}
	s := strings.Join(parts, sep)
	if !strings.HasSuffix(style, "-") && len(parts) > 0 {
		s += "\n"
	}
	return s
}

// splitKey splits "key: value" (the key plain or quoted).
func splitKey(line string) (key, rest string, ok bool) {
	if q := line[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(line[1:], q)
		if end < 0 || !strings.HasPrefix(line[end+2:], ":") {
			return "", "", false
		}
		return line[1 : end+1], strings.TrimSpace(line[end+3:]), true
	}
	i := strings.Index(line, ": ")
	if strings.HasSuffix(line, ":") && (i < 0 || i == len(line)-1) {
		i = len(line) - 1
	}
	if i <= 0 || strings.ContainsAny(line[:i], "[]{}") {
		return "", "", false
	}
	return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:]), true
}

// stripComment removes a " #" comment outside quotes.
func stripComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if i == 0 || s[i-1] == ' ' || s[i-1] == '[' || s[i-1] == ',' {
				quote = c
			}
		case c == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// scalar is a one-line value: a flow list, a quoted string, or a plain
// scalar (null and booleans typed, everything else a string).
func scalar(s string, listItem bool) (any, error) {
	switch {
	case strings.HasPrefix(s, "["):
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("unterminated flow list %q", s)
		}
		var out []any
		for _, item := range splitFlow(s[1 : len(s)-1]) {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			v, err := scalar(item, true)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case strings.HasPrefix(s, "{"):
		return nil, fmt.Errorf("flow mappings are not supported: %q", s)
	case strings.HasPrefix(s, "\""):
		if len(s) < 2 || !strings.HasSuffix(s, "\"") {
			return nil, fmt.Errorf("unterminated string %s", s)
		}
		return unescapeDouble(s[1 : len(s)-1]), nil
	case strings.HasPrefix(s, "'"):
		if len(s) < 2 || !strings.HasSuffix(s, "'") {
			return nil, fmt.Errorf("unterminated string %s", s)
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	}
	switch s {
	case "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON":
		return true, nil
	case "no":
		if listItem {
			return "no", nil // gguf-py's fix of the "Norway problem"
		}
		return false, nil
	case "false", "False", "FALSE", "No", "NO", "off", "Off", "OFF":
		return false, nil
	}
	return s, nil
}

// splitFlow splits the inside of a flow list at commas outside quotes.
func splitFlow(s string) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescapeDouble resolves the common escapes of a double-quoted scalar.
func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	r := strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n", `\t`, "\t", `\/`, "/")
	return r.Replace(s)
}
