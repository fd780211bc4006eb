// Package hf opens a model the way a user points at one: a Hugging Face
// model folder, a single weights file, or an entry of the Hugging Face hub
// cache. It picks the weights (safetensors preferred, else PyTorch
// checkpoints, including Meta's consolidated.*.pth), reads the
// configuration files into a Config and lists the tokenizer files present.
package hf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
	"github.com/ggufkit/ggufkit/readers/pytorch"
	"github.com/ggufkit/ggufkit/readers/safetensors"
)

// ErrNoWeights is returned for a folder holding no weights file of a known
// kind.
var ErrNoWeights = errors.New("hf: no weights file (.safetensors, .bin, .pth, .pt)")

// ErrCache is returned for a Hugging Face cache entry that cannot be
// resolved to a snapshot.
var ErrCache = errors.New("hf: cannot resolve the cache entry to a snapshot")

// TokenizerNames are the tokenizer files Open lists when present.
var TokenizerNames = []string{
	"tokenizer.json", "tokenizer.model", TokenizerConfigName, SpecialTokensMapName, AddedTokensName,
	"vocab.json", "merges.txt", "vocab.txt", "spiece.model", "sentencepiece.bpe.model",
	"tokenizer.tiktoken", "chat_template.jinja", "chat_template.json",
}

// Model is an opened model: its weights, configuration and tokenizer files.
type Model struct {
	// Root is the folder holding the files: the folder given, the folder
	// of the weights file given, or the snapshot a cache entry resolves to.
	Root string
	// Source reads the weights.
	Source readers.Source
	// Config holds the configuration files; never nil (Config.File is ""
	// when the folder has neither config.json nor params.json).
	Config *Config
	// TokenizerFiles maps each tokenizer file present (see TokenizerNames)
	// to its path.
	TokenizerFiles map[string]string
	// cleanup, when set, runs after the weights are closed.
	cleanup func() error
}

// Close releases the weights (and, for a model opened with OpenSource, what
// its cleanup releases).
func (m *Model) Close() error {
	err := m.Source.Close()
	if m.cleanup != nil {
		if cerr := m.cleanup(); err == nil {
			err = cerr
		}
	}
	return err
}

// Open opens the model at path:
//   - a folder: its safetensors weights (model.safetensors.index.json, else
//     model*.safetensors, else *.safetensors — see safetensors.Open), else
//     its PyTorch weights (pytorch_model.bin.index.json, pytorch_model*.bin,
//     consolidated.*.pth, or a single .pth/.pt/.bin — see pytorch.OpenDir);
//   - a weights file (.safetensors, .bin, .pth, .pt) or an index
//     (*.index.json): that file alone (or the shards it names; for one of
//     Meta's consolidated.NN.pth shards, every shard of its folder), with
//     the configuration and tokenizer files of its folder;
//   - a Hugging Face cache entry (models--org--name): the snapshot its
//     refs/main names (or its only snapshot when there is no refs/main).
//
// A weights or tokenizer file that is a Git LFS pointer is refused with an
// error wrapping readers.ErrLFSPointer that says to run `git lfs pull`.
func Open(path string) (*Model, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	root, file := path, ""
	if !st.IsDir() {
		root, file = filepath.Dir(path), path
	} else if snap, ok, err := resolveCache(path); err != nil {
		return nil, err
	} else if ok {
		root = snap
	}
	if err := checkLFS(root, file); err != nil {
		return nil, err
	}
	cfg, err := ReadConfig(root)
	if err != nil {
		return nil, err
	}
	var src readers.Source
	if file != "" {
		src, err = openFile(file)
	} else {
		src, err = openDir(root)
	}
	if err != nil {
		return nil, err
	}
	return newModel(root, cfg, src, nil), nil
}

// OpenSource is Open for weights opened elsewhere (a checkpoint read over
// HTTP, see readers/hub): root holds its configuration and tokenizer files,
// and cleanup, when not nil, runs when the model is closed (after src is
// closed, whether or not OpenSource succeeds).
func OpenSource(root string, src readers.Source, cleanup func() error) (*Model, error) {
	fail := func(err error) (*Model, error) {
		src.Close()
		if cleanup != nil {
			cleanup()
		}
		return nil, err
	}
	if err := checkLFS(root, ""); err != nil {
		return fail(err)
	}
	cfg, err := ReadConfig(root)
	if err != nil {
		return fail(err)
	}
	return newModel(root, cfg, src, cleanup), nil
}

func newModel(root string, cfg *Config, src readers.Source, cleanup func() error) *Model {
	if filepath.Base(cfg.File) == ParamsName {
		fillFromWeights(cfg, src)
	}
	m := &Model{Root: root, Source: src, Config: cfg, TokenizerFiles: map[string]string{}, cleanup: cleanup}
	for _, name := range TokenizerNames {
		p := filepath.Join(root, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			m.TokenizerFiles[name] = p
		}
	}
	return m
}

// consolidatedShard matches the names of Meta's model-parallel shards.
var consolidatedShard = regexp.MustCompile(`^consolidated\.[0-9]+\.pth$`)

// openFile opens one weights file or index.
func openFile(path string) (readers.Source, error) {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".safetensors"):
		return safetensors.OpenFiles(filepath.Dir(path), []string{base})
	case strings.HasSuffix(base, ".safetensors.index.json"):
		return safetensors.OpenIndex(path)
	case strings.HasSuffix(base, ".bin.index.json"):
		return pytorch.OpenIndex(path, nil)
	case consolidatedShard.MatchString(base):
		// One model-parallel shard holds a slice of every tensor: as
		// convert_legacy_llama.py does (find_multifile_paths), the whole
		// consolidated.NN.pth set of its folder is opened.
		return pytorch.OpenConsolidated(filepath.Dir(path), nil)
	case strings.HasSuffix(base, ".bin") || strings.HasSuffix(base, ".pth") || strings.HasSuffix(base, ".pt"):
		return pytorch.Open([]string{path}, nil)
	}
	return nil, fmt.Errorf("hf: %s: %w", path, ErrNoWeights)
}

// openDir opens a folder's weights: safetensors first, as llama.cpp's
// converter prefers them.
func openDir(dir string) (readers.Source, error) {
	st, err := safetensors.Open(dir)
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, safetensors.ErrNoFiles) {
		return nil, err
	}
	pt, err := pytorch.OpenDir(dir, nil)
	if err == nil {
		return pt, nil
	}
	if errors.Is(err, pytorch.ErrNoFiles) {
		return nil, fmt.Errorf("hf: %s: %w", dir, ErrNoWeights)
	}
	return nil, err
}

// resolveCache recognises a Hugging Face hub cache entry — a folder with a
// snapshots/ subfolder, named models--org--name — and returns the snapshot
// folder that refs/main names. ok is false for any other folder.
func resolveCache(dir string) (snap string, ok bool, err error) {
	snaps := filepath.Join(dir, "snapshots")
	if st, err := os.Stat(snaps); err != nil || !st.IsDir() {
		return "", false, nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("hf: %s: %w: %s", dir, ErrCache, fmt.Sprintf(format, args...))
	}
	ref, err := os.ReadFile(filepath.Join(dir, "refs", "main"))
	switch {
	case err == nil:
		commit := strings.TrimSpace(string(ref))
		if commit == "" || !filepath.IsLocal(commit) || strings.ContainsAny(commit, `/\`) {
			return "", false, fail("refs/main holds %q, not a commit hash", commit)
		}
		snap = filepath.Join(snaps, commit)
		if st, err := os.Stat(snap); err != nil || !st.IsDir() {
			return "", false, fail("refs/main names snapshot %s, which is missing (download incomplete?)", commit)
		}
		return snap, true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fail("reading refs/main: %v", err)
	}
	ents, err := os.ReadDir(snaps)
	if err != nil {
		return "", false, fail("%v", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 {
		return "", false, fail("no refs/main and %d snapshots (%s): open the snapshot folder itself", len(names), strings.Join(names, ", "))
	}
	return filepath.Join(snaps, names[0]), true, nil
}

// weightSuffixes are the extensions of files checked for LFS pointers.
var weightSuffixes = []string{".safetensors", ".bin", ".pth", ".pt"}

// checkLFS refuses Git LFS pointers among the weights (only file, when
// given) and tokenizer files of root, naming every pointer found.
func checkLFS(root, file string) error {
	var paths []string
	if file != "" {
		paths = append(paths, file)
	} else {
		ents, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("hf: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() && slices.ContainsFunc(weightSuffixes, func(s string) bool { return strings.HasSuffix(e.Name(), s) }) {
				paths = append(paths, filepath.Join(root, e.Name()))
			}
		}
	}
	for _, name := range TokenizerNames {
		paths = append(paths, filepath.Join(root, name))
	}
	var pointers []string
	for _, p := range paths {
		if readers.CheckLFSPointer(p) != nil {
			pointers = append(pointers, p)
		}
	}
	if len(pointers) > 0 {
		return fmt.Errorf("hf: %s: %w", strings.Join(pointers, ", "), readers.ErrLFSPointer)
	}
	return nil
}

// fillFromWeights sets the params.json view's vocab_size and
// intermediate_size from the weights' shapes, as convert_legacy_llama.py
// takes them (tok_embeddings.weight rows; layers.0.feed_forward.w1.weight
// rows, or expert 0's for a mixture of experts).
func fillFromWeights(cfg *Config, src readers.Source) {
	rows := map[string]int64{}
	for _, t := range src.Tensors() {
		if len(t.Shape) == 2 {
			rows[t.Name] = t.Shape[0]
		}
	}
	if n, ok := rows["tok_embeddings.weight"]; ok {
		cfg.Params["vocab_size"] = jsonInt(n)
	}
	for _, name := range []string{"layers.0.feed_forward.w1.weight", "layers.0.feed_forward.experts.0.w1.weight"} {
		if n, ok := rows[name]; ok {
			cfg.Params["intermediate_size"] = jsonInt(n)
			break
		}
	}
}
