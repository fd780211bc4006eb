// Package refdata reads the bookkeeping files of the reference data beside
// the project (../shared/reference/<model>/MANIFEST.json and logs/*.cmd),
// for the conformance tests that replay llama.cpp's command lines and
// compare their outputs' sha256.
package refdata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Manifest reads a MANIFEST.json and returns the sha256 of each file it
// lists, by the file's path relative to the model folder.
func Manifest(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m struct {
		Files []struct {
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]string, len(m.Files))
	for _, f := range m.Files {
		out[f.File] = f.SHA256
	}
	return out, nil
}

// CommandLine returns the words of the command a logs/*.cmd file records:
// its last line that is neither blank nor a "#" comment, split at spaces
// (the reference commands quote nothing).
func CommandLine(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" && !strings.HasPrefix(s, "#") {
			last = s
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if last == "" {
		return nil, fmt.Errorf("%s: no command line", path)
	}
	return strings.Fields(last), nil
}

// Models are the reference models of ../shared/reference.
var Models = []string{"stories260K", "tiny-llama"}

// Command is one recorded command of a reference model.
type Command struct {
	// Model names the reference model; Root is its folder.
	Model, Root string
	// Name is the .cmd file's name without the extension.
	Name string
	// Args are the command's words, the program first.
	Args []string
	// SHA256 is the model's MANIFEST: output path (relative to Root) →
	// sha256.
	SHA256 map[string]string
}

// Commands lists the commands of every reference model under shared whose
// logs/*.cmd file name matches pattern (e.g. "convert-*.cmd").
func Commands(shared, pattern string) ([]Command, error) {
	var out []Command
	for _, model := range Models {
		root := filepath.Join(shared, "reference", model)
		man, err := Manifest(filepath.Join(root, "MANIFEST.json"))
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(root, "logs", pattern))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			args, err := CommandLine(f)
			if err != nil {
				return nil, err
			}
			out = append(out, Command{Model: model, Root: root, Name: strings.TrimSuffix(filepath.Base(f), ".cmd"), Args: args, SHA256: man})
		}
	}
	return out, nil
}
