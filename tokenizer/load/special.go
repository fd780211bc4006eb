package load

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// specialVocab is gguf-py's SpecialVocab (gguf-py/gguf/vocab.py L50-379):
// the merges, the special-token ids, the add_bos/add_eos/add_sep flags, the
// chat template and the normalizer flags, gathered from tokenizer.json,
// tokenizer_config.json, chat_template.jinja/.json and config.json with
// exactly its precedence, and written to the KV list in its order.
type specialVocab struct {
	f          *folder
	loadMerges bool
	types      []string
	nVocab     int // -1: no range check (n_vocab=None)

	merges []string
	ids    orderedInts
	add    orderedBools
	// chatTemplate is nil, a string or a []any of {"name", "template"}
	// objects (None and absent are the same: nothing is written).
	chatTemplate any
	lowercase    any // nil: None (not written)
	stripAccents any
}

// defaultSpecialTypes is SpecialVocab's default special_token_types.
var defaultSpecialTypes = []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}

// orderedInts and orderedBools are the insertion-ordered dicts
// special_token_ids and add_special_token.
type orderedInts struct {
	keys []string
	vals map[string]int64
}

func (o *orderedInts) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *orderedInts) set(k string, v int64) {
	if o.vals == nil {
		o.vals = map[string]int64{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

type orderedBools struct {
	keys []string
	vals map[string]bool
}

func (o *orderedBools) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *orderedBools) set(k string, v bool) {
	if o.vals == nil {
		o.vals = map[string]bool{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// setDefault is dict.setdefault.
func (o *orderedBools) setDefault(k string, v bool) {
	if !o.has(k) {
		o.set(k, v)
	}
}

// newSpecialVocab builds a SpecialVocab. types nil means the default
// types; nVocab < 0 means no n_vocab.
func newSpecialVocab(f *folder, loadMerges bool, types []string, nVocab int) (*specialVocab, error) {
	if types == nil {
		types = defaultSpecialTypes
	}
	sv := &specialVocab{f: f, loadMerges: loadMerges, types: append([]string(nil), types...), nVocab: nVocab}
	if err := sv.fromTokenizerJSON(); err != nil {
		return nil, err
	}
	if err := sv.fromConfigJSON(); err != nil {
		return nil, err
	}
	if sv.loadMerges && len(sv.merges) == 0 && f.isFile("merges.txt") {
		b, err := f.bytes("merges.txt")
		if err != nil {
			return nil, err
		}
		if sv.merges, _, err = ParseMergesTxt(b, f.path("merges.txt")); err != nil {
			return nil, err
		}
	}
	return sv, nil
}

// setSpecial is _set_special_token: ints only (bool counts, as in
// Python), negative ids are an error, ids at or over n_vocab are skipped,
// and the first id set for a type wins.
func (sv *specialVocab) setSpecial(typ string, v any) error {
	id, ok := pyIntOrBool(v)
	if !ok {
		return nil
	}
	return sv.setSpecialID(typ, id)
}

// setSpecialID is setSpecial for a known int.
func (sv *specialVocab) setSpecialID(typ string, id int64) error {
	if id < 0 {
		return fmt.Errorf("%w: invalid value for special token type %s: %d", ErrFormat, typ, id)
	}
	if sv.nVocab < 0 || id < int64(sv.nVocab) {
		if !sv.ids.has(typ) {
			sv.ids.set(typ, id)
		}
	}
	return nil
}

func (sv *specialVocab) hasType(t string) bool {
	for _, x := range sv.types {
		if x == t {
			return true
		}
	}
	return false
}

// parseNormalizer is _parse_normalizer.
func (sv *specialVocab) parseNormalizer(n any) {
	switch getKey(n, "type") {
	case "Lowercase":
		sv.lowercase = true
	case "StripAccents":
		sv.stripAccents = true
	case "BertNormalizer":
		if hasKey(n, "lowercase") {
			sv.lowercase = getKey(n, "lowercase")
		}
		if hasKey(n, "strip_accents") {
			sv.stripAccents = getKey(n, "strip_accents")
		}
	case "Sequence":
		if list, ok := getKey(n, "normalizers").([]any); ok {
			for _, x := range list {
				sv.parseNormalizer(x)
			}
		}
	}
}

// fromTokenizerJSON is _try_load_from_tokenizer_json.
func (sv *specialVocab) fromTokenizerJSON() error {
	f := sv.f
	tok, err := f.tokenizerJSON()
	if err != nil {
		return err
	}
	var added []AddedToken
	if tok != nil {
		if sv.loadMerges && len(tok.Model.Merges) > 0 {
			sv.merges = tok.Model.Merges
		}
		if truthy(tok.Normalizer) {
			sv.parseNormalizer(tok.Normalizer)
		}
		added = tok.AddedTokens
	}
	tcFile, err := f.jsonFile("tokenizer_config.json")
	if err != nil {
		return err
	}
	// tc is a private copy: the converter mutates its dict, and a second
	// SpecialVocab (Gemma, CodeLlama) reads the file afresh.
	var tc map[string]any
	if tcFile != nil {
		m, ok := tcFile.(map[string]any)
		if !ok {
			return errorf(ErrFormat, f.path("tokenizer_config.json"), "", "is %s, want a JSON object", describe(tcFile))
		}
		tc = make(map[string]any, len(m))
		for k, v := range m {
			tc[k] = v
		}
	}
	if tok != nil {
		if err := sv.fromPostProcessor(tok, tc); err != nil {
			return err
		}
	}
	if len(tc) == 0 {
		return nil
	}
	if err := sv.loadChatTemplate(tc); err != nil {
		return err
	}
	for i := 0; i < len(sv.types); i++ {
		typ := sv.types[i]
		if b, ok := tc["add_"+typ+"_token"].(bool); ok && !sv.add.has(typ) {
			sv.add.set(typ, b)
		}
		var content string
		switch e := tc[typ+"_token"].(type) {
		case string:
			content = e
		case map[string]any:
			c, ok := e["content"].(string)
			if !ok {
				continue
			}
			content = c
		default:
			continue
		}
		// The first added token with that content (tokenizer.json only).
		for _, a := range added {
			if a.Content == content {
				if err := sv.setSpecialID(typ, int64(a.ID)); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// fromPostProcessor reads add_bos/add_eos/add_sep from tokenizer.json's
// post_processor (vocab.py L235-318), filling in bos/cls/eos/sep/eot/eom
// token names in tc as the converter does.
func (sv *specialVocab) fromPostProcessor(tok *HFTokenizer, tc map[string]any) error {
	file := tok.File
	get := func(k string) any {
		if tc == nil {
			return nil
		}
		return tc[k]
	}
	bos, cls, eos, sep := get("bos_token"), get("cls_token"), get("eos_token"), get("sep_token")
	if !truthy(bos) && truthy(cls) && len(tc) > 0 {
		bos = cls
		tc["bos_token"] = bos
	}
	if !truthy(eos) && truthy(sep) && len(tc) > 0 {
		eos = sep
		tc["eos_token"] = eos
	}
	pp := tok.PostProcessor
	if !truthy(pp) {
		return nil
	}
	ppMap, ok := pp.(map[string]any)
	if !ok {
		return errorf(ErrFormat, file, "post_processor", "is %s, want an object", describe(pp))
	}
	processors := []any{ppMap}
	if p, ok := ppMap["processors"]; ok {
		if processors, ok = p.([]any); !ok {
			return errorf(ErrFormat, file, "post_processor.processors", "is %s, want an array", describe(p))
		}
	}
	in := func(x any, set ...any) bool {
		for _, s := range set {
			if pyEqual(x, s) {
				return true
			}
		}
		return false
	}
	for i, p := range processors {
		field := fmt.Sprintf("post_processor.processors[%d]", i)
		proc, ok := p.(map[string]any)
		if !ok {
			return errorf(ErrFormat, file, field, "is %s, want an object", describe(p))
		}
		switch proc["type"] {
		case "ByteLevel":
			sv.add.setDefault("bos", false)
			sv.add.setDefault("eos", false)
		case "RobertaProcessing":
			sv.add.set("bos", true)
			sv.add.set("eos", true)
			sv.add.set("sep", true)
			if !truthy(cls) && len(tc) > 0 {
				cls = firstOr(proc, "cls", bos)
				tc["cls_token"] = cls
			}
			if !truthy(sep) && len(tc) > 0 {
				sep = firstOr(proc, "sep", eos)
				tc["sep_token"] = sep
			}
		case "TemplateProcessing":
			single, err := templateItems(proc, "single", file, field)
			if err != nil {
				return err
			}
			pair, err := templateItems(proc, "pair", file, field)
			if err != nil {
				return err
			}
			var first, last any
			if len(single) > 1 {
				if first = itemID(single[0], "SpecialToken"); truthy(first) {
					if len(tc) == 0 {
						bos = first
					} else if !in(first, bos, cls) {
						if !truthy(bos) {
							bos = first
							tc["bos_token"] = bos
						}
						if !truthy(cls) {
							cls = first
							tc["cls_token"] = cls
						}
					}
					sv.add.set("bos", in(first, bos, cls))
				}
				if last = itemID(single[len(single)-1], "SpecialToken"); truthy(last) {
					if len(tc) == 0 {
						eos = last
					} else if !pyEqual(last, eos) {
						if !sv.hasType("eot") {
							sv.types = append(sv.types, "eot")
							tc["eot_token"] = eos
						} else if !sv.hasType("eom") {
							sv.types = append(sv.types, "eom")
							tc["eom_token"] = eos
						}
						eos = last
						tc["eos_token"] = eos
					}
					sv.add.set("eos", pyEqual(last, eos))
				}
			}
			if len(pair) > 0 {
				start, stop := 0, len(pair)
				if truthy(first) && pyEqual(itemID(pair[0], "SpecialToken"), first) {
					start = 1
				}
				if truthy(last) && pyEqual(itemID(pair[len(pair)-1], "SpecialToken"), last) {
					stop = len(pair) - 1
				}
				if start < stop {
					pair = pair[start:stop]
					a, b := itemID(pair[0], "Sequence"), itemID(pair[len(pair)-1], "Sequence")
					if pyEqual(a, "A") && pyEqual(b, "B") && len(pair) > 2 {
						mid := pair[1 : len(pair)-1]
						addSep := false
						if e := itemID(mid[0], "SpecialToken"); truthy(e) && in(e, sep, eos) && !truthy(last) {
							addSep = true
						}
						if len(mid) == 2 {
							if e := itemID(mid[1], "SpecialToken"); truthy(e) && in(e, sep, eos) {
								addSep = true
							}
						}
						sv.add.set("sep", addSep)
						if addSep && !truthy(sep) && len(tc) > 0 {
							tc["sep_token"] = eos
						}
					}
				}
			}
		}
	}
	return nil
}

// firstOr is processor.get(key, [fallback])[0].
func firstOr(proc map[string]any, key string, fallback any) any {
	v, ok := proc[key]
	if !ok {
		return fallback
	}
	if list, ok := v.([]any); ok && len(list) > 0 {
		return list[0]
	}
	return nil
}

// templateItems returns a TemplateProcessing "single" or "pair" list.
func templateItems(proc map[string]any, key, file, field string) ([]map[string]any, error) {
	v, ok := proc[key]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errorf(ErrFormat, file, field+"."+key, "is %s, want an array", describe(v))
	}
	out := make([]map[string]any, len(list))
	for i, x := range list {
		if out[i], ok = x.(map[string]any); !ok {
			return nil, errorf(ErrFormat, file, fmt.Sprintf("%s.%s[%d]", field, key, i), "is %s, want an object", describe(x))
		}
	}
	return out, nil
}

// itemID is item.get(kind, {}).get("id").
func itemID(item map[string]any, kind string) any { return getKey(item[kind], "id") }

// loadChatTemplate sets the chat template: tokenizer_config.json's
// chat_template key wins (even when null), else chat_template.jinja (with
// additional_chat_templates/*.jinja it becomes a named list), else
// chat_template.json's chat_template.
func (sv *specialVocab) loadChatTemplate(tc map[string]any) error {
	f := sv.f
	var alt any
	if f.isFile("chat_template.jinja") {
		s, err := f.text("chat_template.jinja")
		if err != nil {
			return err
		}
		alt = s
		extra, err := f.glob(filepath.Join("additional_chat_templates", "*.jinja"))
		if err != nil {
			return err
		}
		if len(extra) > 0 {
			list := []any{map[string]any{"name": "default", "template": s}}
			for _, p := range extra {
				t, err := f.text(p)
				if err != nil {
					return err
				}
				list = append(list, map[string]any{"name": strings.TrimSuffix(filepath.Base(p), ".jinja"), "template": t})
			}
			alt = list
		}
	} else if f.isFile("chat_template.json") {
		v, err := f.jsonFile("chat_template.json")
		if err != nil {
			return err
		}
		alt = getKey(v, "chat_template")
	}
	ct, ok := tc["chat_template"]
	if !ok {
		ct = alt
	}
	switch ct.(type) {
	case nil, string, []any:
		sv.chatTemplate = ct
	}
	return nil
}

// fromConfigJSON is _try_load_from_config_json: config.json's
// <type>_token_id, or text_config's.
func (sv *specialVocab) fromConfigJSON() error {
	cfg, err := sv.f.jsonFile("config.json")
	if err != nil || cfg == nil {
		return err
	}
	for _, typ := range sv.types {
		v := getKey(cfg, typ+"_token_id")
		if v == nil && hasKey(cfg, "text_config") {
			v = getKey(getKey(cfg, "text_config"), typ+"_token_id")
		}
		if err := sv.setSpecial(typ, v); err != nil {
			return err
		}
	}
	return nil
}

// specialIDKeys maps a SpecialVocab type to the GGUF key its GGUFWriter
// handler writes. Types without a handler (cls, prefix, suffix, middle,
// fsep) are skipped by add_to_gguf.
var specialIDKeys = map[string]string{
	"bos":  gguf.KeyTokenizerBOSID,
	"eos":  gguf.KeyTokenizerEOSID,
	"unk":  gguf.KeyTokenizerUnknownID,
	"sep":  gguf.KeyTokenizerSeparatorID,
	"pad":  gguf.KeyTokenizerPaddingID,
	"mask": gguf.KeyTokenizerMaskID,
	"eot":  gguf.KeyTokenizerEOTID,
	"eom":  gguf.KeyTokenizerEOMID,
}

// addFlagKeys maps add_<type>_token to its key; other types are skipped.
var addFlagKeys = map[string]string{
	"bos": gguf.KeyTokenizerAddBOS,
	"eos": gguf.KeyTokenizerAddEOS,
	"sep": gguf.KeyTokenizerAddSEP,
}

// Keys of the normalizer flags (gguf-py Keys.Tokenizer).
const (
	keyNormalizerLowercase    = "tokenizer.ggml.normalizer.lowercase"
	keyNormalizerStripAccents = "tokenizer.ggml.normalizer.strip_accents"
)

// addTo is add_to_gguf: merges, special ids, add flags, chat template(s),
// normalizer flags, in that order.
func (sv *specialVocab) addTo(l *kvList) error {
	array(l, gguf.KeyTokenizerMerges, sv.merges)
	for _, typ := range sv.ids.keys {
		if key, ok := specialIDKeys[typ]; ok {
			if err := l.u32(key, sv.ids.vals[typ]); err != nil {
				return err
			}
		}
	}
	for _, typ := range sv.add.keys {
		if key, ok := addFlagKeys[typ]; ok {
			l.boolean(key, sv.add.vals[typ])
		}
	}
	if sv.chatTemplate != nil {
		if err := addChatTemplate(l, sv.chatTemplate); err != nil {
			return err
		}
	}
	if sv.lowercase != nil {
		l.boolean(keyNormalizerLowercase, truthy(sv.lowercase))
	}
	if sv.stripAccents != nil {
		l.boolean(keyNormalizerStripAccents, truthy(sv.stripAccents))
	}
	return nil
}

// addChatTemplate is GGUFWriter.add_chat_template (gguf_writer.py
// L1289-1320). A list names templates; "default" becomes
// tokenizer.chat_template and each other name, with characters outside
// [A-Za-z0-9] made "_", becomes tokenizer.chat_template.<name>, and the
// names are listed in tokenizer.chat_templates. gguf-py builds that list
// from a Python set, whose order varies from run to run; it is written
// here in first-appearance order.
func addChatTemplate(l *kvList, v any) error {
	s, ok := v.(string)
	if !ok {
		list, _ := v.([]any)
		var names []string
		seen := map[string]bool{}
		var def *string
		for i, c := range list {
			choice, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("%w: chat_template[%d] is %s, want an object", ErrFormat, i, describe(c))
			}
			rawName, _ := choice["name"].(string)
			if n, present := choice["name"]; present && n != nil {
				if _, isStr := n.(string); !isStr {
					return fmt.Errorf("%w: chat_template[%d].name is %s, want a string", ErrFormat, i, describe(n))
				}
			}
			tmpl, present := choice["template"]
			if !present || tmpl == nil || rawName == "" {
				continue
			}
			ts, ok := tmpl.(string)
			if !ok {
				return fmt.Errorf("%w: chat_template[%d].template is %s, want a string", ErrFormat, i, describe(tmpl))
			}
			name := sanitizeTemplateName(rawName)
			if name == "default" {
				def = &ts
				continue
			}
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
			l.str(gguf.KeyTokenizerChatTemplate+"."+name, ts)
		}
		array(l, gguf.KeyTokenizerChatTemplates, names)
		if def == nil {
			return nil
		}
		s = *def
	}
	l.str(gguf.KeyTokenizerChatTemplate, s)
	return nil
}

func sanitizeTemplateName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
