package load

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
)

// DefaultMaxFileSize bounds every tokenizer file read when
// Options.MaxFileSize is zero. The largest real tokenizer.json files
// (Gemma 3, 262k tokens and half a million merges) are about 35 MB.
const DefaultMaxFileSize = 512 << 20

// folder reads the tokenizer files of one model folder, each at most max
// bytes, caching what it has parsed so that the several readers of a file
// (the vocabulary style, SpecialVocab, the pre-tokenizer check) share one
// copy, as they share one file in the converter.
type folder struct {
	dir  string
	max  int64
	json map[string]any // decoded JSON by file name; nil value = absent
	tok  *HFTokenizer   // tokenizer.json, parsed
}

func newFolder(dir string, max int64) *folder {
	if max <= 0 {
		max = DefaultMaxFileSize
	}
	return &folder{dir: dir, max: max, json: map[string]any{}}
}

func (f *folder) path(name string) string { return filepath.Join(f.dir, name) }

// isFile is Python's Path.is_file(): a regular file, following symlinks.
func (f *folder) isFile(name string) bool {
	st, err := os.Stat(f.path(name))
	return err == nil && st.Mode().IsRegular()
}

// bytes reads a whole file, refusing files over the size limit before
// reading them. A missing file is ErrNotFound.
func (f *folder) bytes(name string) ([]byte, error) {
	p := f.path(name)
	fh, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, p)
		}
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotFound, p)
	}
	if st.Size() > f.max {
		return nil, &FileError{File: p, Offset: -1, Msg: fmt.Sprintf("%d bytes, over the %d-byte limit", st.Size(), f.max), Err: ErrTooLarge}
	}
	b, err := io.ReadAll(io.LimitReader(fh, f.max+1))
	if err != nil {
		return nil, fmt.Errorf("load: reading %s: %w", p, err)
	}
	if int64(len(b)) > f.max {
		return nil, &FileError{File: p, Offset: -1, Msg: fmt.Sprintf("grew over the %d-byte limit while read", f.max), Err: ErrTooLarge}
	}
	if readers.IsLFSPointer(b) {
		return nil, &FileError{File: p, Offset: 0, Msg: "a Git LFS pointer, not the file: run `git lfs pull` in the model's repository", Err: readers.ErrLFSPointer}
	}
	return b, nil
}

// text reads a UTF-8 text file as Python's open(encoding="utf-8") does:
// invalid UTF-8 is an error (UnicodeDecodeError). A UTF-8 BOM is kept, as
// Python's "utf-8" codec keeps it.
func (f *folder) text(name string) (string, error) {
	b, err := f.bytes(name)
	if err != nil {
		return "", err
	}
	if off := invalidUTF8(b); off >= 0 {
		return "", &FileError{File: f.path(name), Offset: int64(off), Msg: "invalid UTF-8", Err: ErrFormat}
	}
	return string(b), nil
}

// jsonFile returns the decoded JSON of a file, or nil, nil when the file
// is absent (not a regular file), as the converter checks is_file() first.
func (f *folder) jsonFile(name string) (any, error) {
	if v, ok := f.json[name]; ok {
		return v, nil
	}
	if !f.isFile(name) {
		f.json[name] = nil
		return nil, nil
	}
	b, err := f.bytes(name)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(b, f.path(name))
	if err != nil {
		return nil, err
	}
	f.json[name] = v
	return v, nil
}

// jsonObject is jsonFile for a file that must hold an object.
func (f *folder) jsonObject(name string) (map[string]any, error) {
	v, err := f.jsonFile(name)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(ErrFormat, f.path(name), "", "is %s, want a JSON object", describe(v))
	}
	return m, nil
}

// tokenizerJSON returns tokenizer.json parsed, or nil when absent.
func (f *folder) tokenizerJSON() (*HFTokenizer, error) {
	if f.tok != nil {
		return f.tok, nil
	}
	if !f.isFile("tokenizer.json") {
		return nil, nil
	}
	b, err := f.bytes("tokenizer.json")
	if err != nil {
		return nil, err
	}
	t, err := ParseTokenizerJSON(b, f.path("tokenizer.json"))
	if err != nil {
		return nil, err
	}
	f.tok = t
	return t, nil
}

// glob lists the regular files matching pattern (relative to the folder),
// sorted by name. Python's Path.glob order is the directory's order, which
// no two file systems agree on; sorting makes the output reproducible.
func (f *folder) glob(pattern string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(f.dir, pattern))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []string
	for _, m := range matches {
		rel, err := filepath.Rel(f.dir, m)
		if err == nil && f.isFile(rel) {
			out = append(out, rel)
		}
	}
	return out, nil
}

// invalidUTF8 returns the offset of the first invalid UTF-8 byte, or -1.
func invalidUTF8(b []byte) int {
	s := string(b)
	for i, r := range s {
		if r == '\uFFFD' && !strings.HasPrefix(s[i:], "\uFFFD") {
			return i
		}
	}
	return -1
}
