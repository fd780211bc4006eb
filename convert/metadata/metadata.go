// Package metadata gathers a model's authorship metadata (general.* in a
// GGUF) the way llama.cpp's converter does (gguf-py/gguf/metadata.py,
// Metadata.load): heuristics from the model card's YAML front matter, from
// config.json's _name_or_path and from the folder name, then
// generation_config.json's sampling parameters, then a --metadata override
// file, then --model-name. It also holds the naming helpers of
// gguf-py/gguf/utility.py: the size label and the GGUF file-naming
// convention.
//
// A string field that is "" is absent (Python's None): gguf-py's writer
// skips empty strings, so the two cannot be told apart in the output.
package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Metadata is gguf-py's Metadata dataclass.
type Metadata struct {
	// Sampling holds the recommended sampler parameters
	// (general.sampling.*), by key suffix, in gguf-py's order.
	Sampling []gguf.KV

	Name, Author, Version, Organization  string
	Finetune, Basename                   string
	Description, QuantizedBy, SizeLabel  string
	License, LicenseName, LicenseLink    string
	URL, DOI, UUID, RepoURL              string
	SourceURL, SourceDOI, SourceUUID     string
	SourceRepoURL                        string
	BaseModels, Datasets                 []Entry
	Tags, Languages                      []string
	hasBaseModels, hasDatasets, hasLangs bool
	hasTags                              bool
}

// Entry is one base model or dataset: its fields (name, author, version,
// organization, description, url, doi, uuid, repo_url) by name.
type Entry map[string]string

// entryFields are the fields of an Entry in the order gguf-py writes them.
var entryFields = []string{"name", "author", "version", "organization", "description", "url", "doi", "uuid", "repo_url"}

// samplingKeys are generation_config.json's names of the sampling
// parameters, the GGUF key suffix, and whether the value is an integer
// (int32) rather than a float32 — Metadata.load and GGUFWriter.add_sampling_*.
var samplingKeys = []struct {
	config, key string
	integer     bool
}{
	{"sequence", "sequence", false}, // a string
	{"top_k", "top_k", true},
	{"top_p", "top_p", false},
	{"min_p", "min_p", false},
	{"xtc_probability", "xtc_probability", false},
	{"xtc_threshold", "xtc_threshold", false},
	{"temperature", "temp", false},
	{"penalty_last_n", "penalty_last_n", true},
	{"penalty_repeat", "penalty_repeat", false},
	{"mirostat", "mirostat", true},
	{"mirostat_tau", "mirostat_tau", false},
	{"mirostat_eta", "mirostat_eta", false},
}

// Load is Metadata.load: overridePath is the --metadata JSON file ("" for
// none), modelDir the model's folder (its README.md, config.json,
// generation_config.json and name are read), modelName the --model-name
// value ("" for none) and totalParams the converted model's parameter count
// (it tells a size label from a context length in names).
func Load(overridePath, modelDir, modelName string, totalParams int64) (*Metadata, error) {
	m := &Metadata{}
	card, err := loadModelCard(modelDir)
	if err != nil {
		return nil, err
	}
	var hf map[string]any
	if err := readJSON(filepath.Join(modelDir, "config.json"), &hf, false); err != nil {
		return nil, err
	}
	m.applyHeuristics(card, hf, modelDir, totalParams)

	var gen map[string]any
	// Like gguf-py, an unreadable generation_config.json is ignored: not
	// every model ships a valid one.
	_ = readJSON(filepath.Join(modelDir, "generation_config.json"), &gen, true)
	sampling := map[string]any{}
	for _, s := range samplingKeys {
		if v, ok := gen[s.config]; ok {
			sampling[s.key] = v
		}
	}
	if _, ok := gen["penalty_repeat"]; !ok {
		if v, ok := gen["repetition_penalty"]; ok {
			sampling["penalty_repeat"] = v
		}
	}

	var over map[string]any
	if overridePath != "" {
		if st, err := os.Stat(overridePath); err == nil && st.Mode().IsRegular() {
			if err := readJSON(overridePath, &over, false); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range samplingKeys {
		if v, ok := over["general.sampling."+s.key]; ok {
			sampling[s.key] = v
		}
	}
	for _, s := range samplingKeys {
		v, ok := sampling[s.key]
		if !ok || v == nil {
			continue
		}
		kv, err := samplingKV(s.key, s.integer, v)
		if err != nil {
			return nil, err
		}
		if kv.Value.Valid() {
			m.Sampling = append(m.Sampling, kv)
		}
	}

	for _, f := range m.stringFields() {
		// general.license itself is not among Metadata.load's overrides
		// (license.name and license.link are).
		if v, ok := over[f.key]; ok && f.key != gguf.KeyGeneralLicense {
			*f.dst = text(v)
		}
	}
	if v, ok := over["general.base_models"]; ok {
		m.BaseModels, m.hasBaseModels = entries(v), v != nil
	}
	if v, ok := over["general.datasets"]; ok {
		m.Datasets, m.hasDatasets = entries(v), v != nil
	}
	if v, ok := over[gguf.KeyGeneralTags]; ok {
		m.Tags, m.hasTags = texts(v), v != nil
	}
	if v, ok := over[gguf.KeyGeneralLanguages]; ok {
		m.Languages, m.hasLangs = texts(v), v != nil
	}
	if modelName != "" {
		m.Name = modelName
	}
	return m, nil
}

// field is a string field of Metadata and its GGUF key.
type field struct {
	key string
	dst *string
}

// stringFields lists the string fields in the order gguf-py writes them.
func (m *Metadata) stringFields() []field {
	return []field{
		{gguf.KeyGeneralName, &m.Name}, {gguf.KeyGeneralAuthor, &m.Author}, {gguf.KeyGeneralVersion, &m.Version},
		{gguf.KeyGeneralOrganization, &m.Organization}, {gguf.KeyGeneralFinetune, &m.Finetune},
		{gguf.KeyGeneralBasename, &m.Basename}, {gguf.KeyGeneralDescription, &m.Description},
		{gguf.KeyGeneralQuantizedBy, &m.QuantizedBy}, {gguf.KeyGeneralSizeLabel, &m.SizeLabel},
		{gguf.KeyGeneralLicense, &m.License}, {gguf.KeyGeneralLicenseName, &m.LicenseName},
		{gguf.KeyGeneralLicenseLink, &m.LicenseLink}, {gguf.KeyGeneralURL, &m.URL}, {gguf.KeyGeneralDOI, &m.DOI},
		{gguf.KeyGeneralUUID, &m.UUID}, {gguf.KeyGeneralRepoURL, &m.RepoURL},
		{gguf.KeyGeneralSourceURL, &m.SourceURL}, {gguf.KeyGeneralSourceDOI, &m.SourceDOI},
		{gguf.KeyGeneralSourceUUID, &m.SourceUUID}, {gguf.KeyGeneralSourceRepoURL, &m.SourceRepoURL},
	}
}

// KVs are the general.* pairs in the order Metadata.set_gguf_meta_model
// writes them (sampling parameters first). Name must be set.
func (m *Metadata) KVs() []gguf.KV {
	kvs := append([]gguf.KV(nil), m.Sampling...)
	for _, f := range m.stringFields() {
		if *f.dst != "" {
			kvs = append(kvs, gguf.KV{Key: f.key, Value: gguf.String(*f.dst)})
		}
	}
	list := func(prefix, countKey string, es []Entry, present bool) {
		if !present {
			return
		}
		kvs = append(kvs, gguf.KV{Key: countKey, Value: gguf.Uint32(uint32(len(es)))})
		for i, e := range es {
			for _, name := range entryFields {
				if v, ok := e[name]; ok && v != "" {
					kvs = append(kvs, gguf.KV{Key: fmt.Sprintf("%s.%d.%s", prefix, i, name), Value: gguf.String(v)})
				}
			}
		}
	}
	list("general.base_model", gguf.KeyGeneralBaseModelCount, m.BaseModels, m.hasBaseModels)
	list("general.dataset", gguf.KeyGeneralDatasetCount, m.Datasets, m.hasDatasets)
	if m.hasTags && len(m.Tags) > 0 {
		kvs = append(kvs, gguf.KV{Key: gguf.KeyGeneralTags, Value: gguf.Array(m.Tags)})
	}
	if m.hasLangs && len(m.Languages) > 0 {
		kvs = append(kvs, gguf.KV{Key: gguf.KeyGeneralLanguages, Value: gguf.Array(m.Languages)})
	}
	return kvs
}

// samplingKV is one general.sampling.* pair: int32 for the integer
// parameters, float32 for the others, a string for the sequence.
func samplingKV(key string, integer bool, v any) (gguf.KV, error) {
	k := "general.sampling." + key
	if key == "sequence" {
		return gguf.KV{Key: k, Value: gguf.String(text(v))}, nil
	}
	f, ok := v.(float64)
	if b, isBool := v.(bool); isBool {
		f, ok = 0, true // Python's bool is an int
		if b {
			f = 1
		}
	}
	if !ok {
		return gguf.KV{}, fmt.Errorf("metadata: %s: %v is not a number", k, v)
	}
	if integer {
		if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return gguf.KV{}, fmt.Errorf("metadata: %s: %v is not an int32", k, v)
		}
		return gguf.KV{Key: k, Value: gguf.Int32(int32(f))}, nil
	}
	return gguf.KV{Key: k, Value: gguf.Float32(float32(f))}, nil
}

// applyHeuristics is Metadata.apply_metadata_heuristic: the model card
// first, then config.json's _name_or_path, then the folder's name; each only
// fills what is still unset.
func (m *Metadata) applyHeuristics(card map[string]any, hf map[string]any, modelDir string, totalParams int64) {
	use := func(dst *string, key string) {
		if v, ok := card[key]; ok && *dst == "" {
			*dst = text(v)
		}
	}
	for _, prefix := range []string{"", "model_"} {
		use(&m.Name, prefix+"name")
		use(&m.Author, prefix+"author")
		use(&m.Version, prefix+"version")
		use(&m.Organization, prefix+"organization")
		use(&m.Description, prefix+"description")
		use(&m.Finetune, prefix+"finetune")
		use(&m.Basename, prefix+"basename")
		use(&m.SizeLabel, prefix+"size_label")
		use(&m.SourceURL, prefix+"url")
		use(&m.SourceDOI, prefix+"doi")
		use(&m.SourceUUID, prefix+"uuid")
		use(&m.SourceRepoURL, prefix+"repo_url")
	}
	use(&m.Author, "model_creator")
	use(&m.Basename, "model_type")

	if v, ok := firstOf(card, "base_model", "base_models", "base_model_sources"); ok {
		m.hasBaseModels = true
		for _, id := range listOf(v) {
			m.BaseModels = append(m.BaseModels, idEntry(id, totalParams))
		}
	}
	if v, ok := firstOf(card, "datasets", "dataset", "dataset_sources"); ok {
		m.hasDatasets = true
		for _, id := range listOf(v) {
			m.Datasets = append(m.Datasets, idEntry(id, totalParams))
		}
	}
	if v, ok := card["license"]; ok && m.License == "" {
		if l, isList := v.([]any); isList {
			m.License = strings.Join(texts(l), ",")
		} else {
			m.License = text(v)
		}
	}
	use(&m.LicenseName, "license_name")
	use(&m.LicenseLink, "license_link")
	for _, k := range []string{"tags", "pipeline_tag"} {
		if v, ok := card[k]; ok && v != nil {
			m.Tags, m.hasTags = append(m.Tags, texts(v)...), true
		}
	}
	for _, k := range []string{"languages", "language"} {
		if v, ok := card[k]; ok && v != nil {
			m.Languages, m.hasLangs = append(m.Languages, texts(v)...), true
		}
	}

	fill := func(id string) {
		p := modelIDComponents(&id, totalParams)
		set := func(dst *string, v *string, title bool) {
			if *dst == "" && v != nil {
				*dst = *v
				if title {
					*dst = idToTitle(*v)
				}
			}
		}
		set(&m.Name, p.fullName, true)
		set(&m.Organization, p.org, true)
		set(&m.Basename, p.basename, false)
		set(&m.Finetune, p.finetune, false)
		set(&m.Version, p.version, false)
		set(&m.SizeLabel, p.sizeLabel, false)
	}
	if s, ok := hf["_name_or_path"].(string); ok && strings.Count(s, "/") <= 1 {
		// Only a model id ("meta-llama/Llama-2-7b-hf"), not a local path.
		fill(s)
	}
	if modelDir != "" {
		fill(filepath.Base(filepath.Clean(modelDir)))
	}
}

// hfURL matches a Hugging Face model or dataset URL.
var hfURL = regexp.MustCompile(`^https?://huggingface\.co/([^/]+/[^/]+)$`)

// idEntry turns a base_model / datasets item of the model card into an
// Entry: a URL is kept as repo_url (and parsed when it is a Hugging Face
// one), an id is split into its components, a mapping is taken as it is.
func idEntry(v any, totalParams int64) Entry {
	e := Entry{}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			e[k] = text(val)
		}
	case string:
		fromID := func(id string, withURL bool) {
			p := modelIDComponents(&id, totalParams)
			if p.fullName != nil {
				e["name"] = idToTitle(*p.fullName)
			}
			if p.org != nil {
				e["organization"] = idToTitle(*p.org)
			}
			if p.version != nil {
				e["version"] = *p.version
			}
			if withURL && p.org != nil && p.fullName != nil {
				e["repo_url"] = "https://huggingface.co/" + *p.org + "/" + *p.fullName
			}
		}
		if strings.HasPrefix(x, "http://") || strings.HasPrefix(x, "https://") || strings.HasPrefix(x, "ssh://") {
			e["repo_url"] = x
			if strings.Contains(x, "huggingface.co") {
				if sm := hfURL.FindStringSubmatch(x); sm != nil {
					fromID(sm[1], false)
				}
			}
		} else {
			fromID(x, true)
		}
	}
	return e
}

func firstOf(m map[string]any, keys ...string) (any, bool) {
	present := false
	for _, k := range keys {
		if _, ok := m[k]; ok {
			present = true
		}
	}
	if !present {
		return nil, false
	}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return nil, true
}

// entries is an override file's list of base models or datasets (JSON
// objects), each as an Entry.
func entries(v any) []Entry {
	var out []Entry
	for _, x := range listOf(v) {
		if o, ok := x.(map[string]any); ok {
			e := Entry{}
			for k, val := range o {
				e[k] = text(val)
			}
			out = append(out, e)
		}
	}
	return out
}

// listOf is a scalar as a one-item list, a list as it is, nil as none.
func listOf(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

// texts is a list of values (or one value) as strings.
func texts(v any) []string {
	var out []string
	for _, x := range listOf(v) {
		out = append(out, text(x))
	}
	return out
}

// text renders a scalar as the string gguf-py would store. A number from a
// JSON file is printed as Python's str() would print it (an integral float
// keeps ".0").
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e16 {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}

// readJSON decodes path into dst; a missing file leaves dst alone. With
// lenient, a malformed file is reported but callers may ignore it.
func readJSON(path string, dst any, lenient bool) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("metadata: %s: %w", path, err)
	}
	return nil
}

// loadModelCard is Metadata.load_model_card: the YAML front matter of the
// folder's README.md (between a first line "---" and the next "---"), nil
// when there is none.
func loadModelCard(modelDir string) (map[string]any, error) {
	if modelDir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(modelDir, "README.md"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		return nil, nil
	}
	if err != nil {
		if st, serr := os.Stat(filepath.Join(modelDir, "README.md")); serr == nil && st.IsDir() {
			return nil, nil
		}
		return nil, fmt.Errorf("metadata: %w", err)
	}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	if len(lines) == 0 || lines[0] != "---" {
		return nil, nil
	}
	var yaml []string
	for _, l := range lines[1:] {
		if l == "---" {
			break
		}
		// gguf-py replaces tabs by two spaces before parsing.
		yaml = append(yaml, strings.ReplaceAll(l, "\t", "  "))
	}
	card, err := parseFrontMatter(yaml)
	if err != nil {
		return nil, fmt.Errorf("metadata: %s: model card front matter: %w", filepath.Join(modelDir, "README.md"), err)
	}
	return card, nil
}

// ParamTensor is an output tensor as the parameter count sees it: its GGUF
// name and its shape (PyTorch order, row length last).
type ParamTensor struct {
	Name  string
	Shape []int64
}

// ParameterCount is GGUFWriter.get_total_parameter_count: the total, the
// parameters outside the experts, those of one expert, and the number of
// experts (the mean over expert tensors; 0 without experts). A LoRA
// adapter's pairs count as their product's shape and make the total
// negative (not exact).
func ParameterCount(tensors []ParamTensor) (total, shared, expert, count int64) {
	var expertSum, nExpertTensors int64
	var lastA *ParamTensor
	for i := range tensors {
		t := &tensors[i]
		shape := t.Shape
		switch {
		case strings.HasSuffix(t.Name, ".lora_a"):
			lastA = t
			continue
		case strings.HasSuffix(t.Name, ".lora_b"):
			if lastA == nil || lastA.Name != t.Name[:len(t.Name)-1]+"a" || len(lastA.Shape) == 0 || len(shape) == 0 {
				return 0, 0, 0, 0 // the pair cannot be found simply
			}
			shape = append(append([]int64(nil), shape[:len(shape)-1]...), lastA.Shape[len(lastA.Shape)-1])
		}
		size := int64(1)
		for _, d := range shape {
			size *= d
		}
		if strings.Contains(t.Name, "_exps.") && len(shape) >= 3 {
			axis := len(shape) - 3
			if strings.Contains(t.Name, ".bias") {
				axis = len(shape) - 2
			}
			if n := shape[axis]; n > 0 {
				expert += size / n
				expertSum += n
				nExpertTensors++
			}
		} else {
			shared += size
		}
		total += size
	}
	if nExpertTensors > 0 {
		count = expertSum / nExpertTensors
	}
	if lastA != nil {
		total = -total
	}
	return total, shared, expert, count
}

// roundedCount is utility.model_weight_count_rounded_notation: the count
// scaled to K, M, B or T (strictly above 1e6, 1e9, 1e12) with enough
// decimals for minDigits significant digits.
func roundedCount(n int64, minDigits int) string {
	x := float64(n)
	var scaled float64
	var suffix string
	switch {
	case x > 1e12:
		scaled, suffix = x*1e-12, "T"
	case x > 1e9:
		scaled, suffix = x*1e-9, "B"
	case x > 1e6:
		scaled, suffix = x*1e-6, "M"
	default:
		scaled, suffix = x*1e-3, "K"
	}
	// len(str(round(scaled)).lstrip('0')): Python rounds half to even.
	digits := len(strings.TrimLeft(strconv.FormatFloat(math.RoundToEven(scaled), 'f', 0, 64), "0"))
	fix := max(minDigits-digits, 0)
	return strconv.FormatFloat(scaled, 'f', fix, 64) + suffix
}

// SizeLabel is utility.size_label: "8x7.2B" for a mixture of experts, else
// the rounded total ("260K", "1.1B").
func SizeLabel(total, shared, expert, count int64) string {
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	if count > 0 {
		return fmt.Sprintf("%dx%s", count, roundedCount(abs(shared)+abs(expert), 2))
	}
	return roundedCount(abs(total), 2)
}

// NamingConvention is utility.naming_convention, the GGUF file name without
// its extension: Basename-SizeLabel-FineTune-Version-Encoding-Type, each
// part present when its value is not "". modelType is "vocab", "LoRA" or "".
func NamingConvention(modelName, baseName, finetune, version, sizeLabel, outputType, modelType string) string {
	clean := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), " ", "-") }
	name := "ggml-model"
	switch {
	case baseName != "":
		name = strings.ReplaceAll(clean(baseName), "/", "-")
	case modelName != "":
		name = strings.ReplaceAll(clean(modelName), "/", "-")
	}
	part := func(s string) string {
		if s == "" {
			return ""
		}
		return "-" + clean(s)
	}
	enc := ""
	if outputType != "" {
		enc = "-" + strings.ToUpper(clean(outputType))
	}
	size := ""
	if sizeLabel != "" {
		size = "-" + sizeLabel
	}
	return name + size + part(finetune) + part(version) + enc + part(modelType)
}

// templateField matches the replacement fields of a Python format string
// that fill_templated_filename understands.
var templateField = regexp.MustCompile(`\{(|outtype|ftype|OUTTYPE|FTYPE)\}`)

// FillTemplatedFilename is utility.fill_templated_filename: "{ftype}" and
// "{outtype}" (and "{}") become the output type in lower case, "{FTYPE}" and
// "{OUTTYPE}" in upper case. Doubled braces stand for one brace, as in
// Python's str.format.
func FillTemplatedFilename(name, outputType string) string {
	lower, upper := strings.ToLower(outputType), strings.ToUpper(outputType)
	var b strings.Builder
	for i := 0; i < len(name); {
		switch {
		case strings.HasPrefix(name[i:], "{{"):
			b.WriteByte('{')
			i += 2
		case strings.HasPrefix(name[i:], "}}"):
			b.WriteByte('}')
			i += 2
		default:
			if loc := templateField.FindStringSubmatchIndex(name[i:]); loc != nil && loc[0] == 0 {
				switch name[i+loc[2] : i+loc[3]] {
				case "OUTTYPE", "FTYPE":
					b.WriteString(upper)
				default:
					b.WriteString(lower)
				}
				i += loc[1]
				continue
			}
			b.WriteByte(name[i])
			i++
		}
	}
	return b.String()
}
