package metadata

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// The patterns of gguf-py's Metadata.get_model_id_components and
// Metadata.id_to_title (gguf-py/gguf/metadata.py). Python's \d and \w match
// any Unicode digit / word character, hence \p{Nd} and [\p{L}\p{N}_];
// re.fullmatch becomes ^(?:…)$.
var (
	versionRe  = regexp.MustCompile(`(?i)^(?:(?:v|iter)?\p{Nd}+(?:[.]\p{Nd}+)*)$`)
	quantRe    = regexp.MustCompile(`(?i)^(?:i?q\p{Nd}(?:_[\p{L}\p{N}_])*|b?fp?(?:16|32))$`)
	sizeRe     = regexp.MustCompile(`(?i)^(?:(?:[A]|\p{Nd}+[x])?\p{Nd}+(?:[._]\p{Nd}+)?[KMBT][\p{Nd}]?|small|mini|medium|large|x?xl)$`)
	finetuneRe = regexp.MustCompile(`(?i)^(?:chat|instruct|vision|lora)$`)
	titleKeep  = regexp.MustCompile(`^(?:v\p{Nd}+(?:\.\p{Nd}+)*|\p{Nd}.*)$`)
	plainFloat = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?$`)
)

// idToTitle is Metadata.id_to_title: dashes become spaces and each all-lowercase
// word that is not a version ("v1.2") or does not start with a digit is
// title-cased.
func idToTitle(s string) string {
	words := pyFields(strings.ReplaceAll(pyStrip(s), "-", " "))
	for i, w := range words {
		if pyIsLower(w) && !titleKeep.MatchString(w) {
			words[i] = pyTitle(w)
		}
	}
	return strings.Join(words, " ")
}

// idParts is what get_model_id_components returns; a nil field is Python's
// None.
type idParts struct {
	fullName, org, basename, finetune, version, sizeLabel *string
}

// The annotations get_model_id_components puts on each dash-separated part.
const (
	partVersion = 1 << iota
	partType
	partSize
	partFinetune
	partBasename
)

func popcount(t int) int {
	n := 0
	for ; t != 0; t &= t - 1 {
		n++
	}
	return n
}

// modelIDComponents is Metadata.get_model_id_components: it splits a Hugging
// Face model id ("org/Name-7B-Instruct-v0.1") into its full name,
// organization, basename, finetune, version and size label. totalParams is
// the converted model's parameter count (negative for a LoRA adapter); a size
// part far from it is taken for a context length or token count.
func modelIDComponents(modelID *string, totalParams int64) idParts {
	if modelID == nil {
		return idParts{}
	}
	id := *modelID
	if strings.Contains(id, " ") {
		// A human sentence rather than an id: the whole is the name.
		return idParts{fullName: &id}
	}
	var org *string
	full := id
	if o, rest, ok := strings.Cut(id, "/"); ok {
		org, full = &o, rest
	}
	if org != nil && strings.HasPrefix(*org, ".") {
		org = nil // "./model" or "../model" is a path, not an organization
	}
	res := idParts{fullName: &full, org: org}

	var parts []string
	for _, p := range strings.Split(full, "-") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	types := make([]int, len(parts))
	for i, part := range parts {
		switch {
		case versionRe.MatchString(part):
			types[i] |= partVersion
		case quantRe.MatchString(part):
			types[i] |= partType
			parts[i] = pyUpper(part)
		case i > 0 && sizeRe.MatchString(part):
			parts[i], types[i] = sizePart(part, totalParams)
		case i > 0 && finetuneRe.MatchString(part):
			if totalParams < 0 && pyLower(part) == "lora" {
				types[i] |= partType // redundant with a LoRA adapter's "-LoRA" suffix
			} else {
				types[i] |= partFinetune
			}
		}
	}

	// Word sizes (mini, large …) yield to a numeric size when there is one.
	numeric := false
	for i, p := range parts {
		if types[i]&partSize != 0 && strings.IndexFunc(p, pyIsDecimal) >= 0 {
			numeric = true
		}
	}
	if numeric {
		for i, p := range parts {
			if types[i]&partSize != 0 && strings.IndexFunc(p, func(r rune) bool { return !pyIsAlpha(r) }) < 0 {
				types[i] &^= partSize
			}
		}
	}

	atStart := true
	for i, p := range parts {
		first := []rune(p)[0]
		if atStart && ((types[i] == 0 && pyIsAlpha(first)) || types[i]&partVersion != 0) {
			types[i] |= partBasename
			continue
		}
		atStart = false
		if types[i] == 0 {
			types[i] |= partFinetune
		}
	}
	// A trailing version is not part of the basename.
	for i := len(parts) - 1; i >= 0; i-- {
		if types[i]&partBasename == 0 || popcount(types[i]) <= 1 {
			break
		}
		types[i] &^= partBasename
	}

	join := func(keep func(t int) bool, dedup bool) *string {
		var sel []string
		seen := map[string]bool{}
		for i, p := range parts {
			if !keep(types[i]) || (dedup && seen[p]) {
				continue
			}
			seen[p] = true
			sel = append(sel, p)
		}
		if len(sel) == 0 {
			return nil
		}
		s := strings.Join(sel, "-")
		return &s
	}
	res.basename = join(func(t int) bool { return t&partBasename != 0 }, false)
	res.sizeLabel = join(func(t int) bool { return t&partSize != 0 }, true)
	res.finetune = join(func(t int) bool { return t&partFinetune != 0 }, false)
	res.version = join(func(t int) bool { return t&partVersion != 0 && t&partBasename == 0 }, false)
	if res.sizeLabel == nil && res.finetune == nil && res.version == nil {
		res.basename = nil // too ambiguous
	}
	return res
}

// sizePart normalizes a part that looks like a size ("1_6b" → "1.6B", bloom's
// "7b1" → "7.1B") and annotates it: a size label, or a finetune when the
// number is far from the model's parameter count (then the suffix is
// lowercased, "4k" for a context length).
func sizePart(part string, totalParams int64) (string, int) {
	p := []rune(strings.ReplaceAll(part, "_", "."))
	if n := len(p); n >= 2 && pyIsDecimal(p[n-1]) {
		p = append(p[:n-2:n-2], '.', p[n-1], p[n-2])
	}
	if n := len(p); n > 1 && pyIsDecimal(p[n-2]) && strings.ContainsRune("kmbt", p[n-1]) {
		p[n-1] -= 'a' - 'A'
	}
	t := 0
	if totalParams != 0 {
		if f, ok := pyFloatDigits(string(p[:len(p)-1])); ok {
			label := f
			switch strings.IndexRune(" KMBT", p[len(p)-1]) {
			case 1:
				label *= 1e3
			case 2:
				label *= 1e6
			case 3:
				label *= 1e9
			case 4:
				label *= 1e12
			default:
				label *= 0.001 // pow(1000, -1)
			}
			total := big.NewInt(totalParams)
			far := false
			if totalParams < 0 {
				lim := new(big.Int).Abs(total)
				lim.Quo(lim, big.NewInt(8))
				far = cmpFloatInt(label, lim) < 0
			} else {
				lim := new(big.Int).Mul(total, big.NewInt(7))
				lim.Quo(lim, big.NewInt(8))
				far = cmpFloatInt(math.Abs(label-float64(totalParams)), lim) > 0
			}
			if far {
				t |= partFinetune
				p[len(p)-1] = []rune(pyLower(string(p[len(p)-1])))[0]
			}
		}
	}
	if t == 0 {
		t |= partSize
	}
	return string(p), t
}

// pyFloatDigits is Python's float() on the strings sizePart can pass it:
// Unicode decimal digits count as their ASCII value; anything but digits with
// at most one decimal point fails, as float() fails on "8x7" or "A2.7".
func pyFloatDigits(s string) (float64, bool) {
	ascii := strings.Map(func(r rune) rune {
		if r > 0x7f && pyIsDecimal(r) {
			return '0' + digitValue(r)
		}
		return r
	}, s)
	if !plainFloat.MatchString(ascii) {
		return 0, false
	}
	f, err := strconv.ParseFloat(ascii, 64)
	if err != nil && f == 0 {
		return 0, false
	}
	return f, true // a range error leaves ±Inf, as float() does
}

// digitValue is the value of a Unicode decimal digit: category Nd digits
// come in contiguous runs of ten starting at a code point whose value is 0.
func digitValue(r rune) rune {
	for z := r; z > r-10; z-- {
		if !pyIsDecimal(z - 1) {
			return (r - z) % 10
		}
	}
	return (r - 0x30) % 10
}

// cmpFloatInt compares a float and an integer exactly, as Python does; NaN
// compares as neither smaller nor larger.
func cmpFloatInt(f float64, n *big.Int) int {
	if math.IsNaN(f) {
		return 0
	}
	return new(big.Float).SetFloat64(f).Cmp(new(big.Float).SetInt(n))
}
