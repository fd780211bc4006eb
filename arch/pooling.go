package arch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
)

// Pooling types (gguf-py's PoolingType).
const (
	poolingMean uint32 = 1
	poolingCLS  uint32 = 2
	poolingLast uint32 = 3
)

// setPooling is TextModel._try_set_pooling_type: a sentence-transformers
// folder (modules.json naming a Pooling module) records its pooling mode,
// and classifier_pooling in config.json the pooling before a
// classification head.
func (t *text) setPooling(k *kv, dir string) error {
	if dir != "" {
		b, err := readSmall(filepath.Join(dir, "modules.json"))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return err
		default:
			var mods []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			}
			if err := json.Unmarshal(b, &mods); err != nil {
				return fmt.Errorf("modules.json: %w", err)
			}
			for _, m := range mods {
				if !strings.HasSuffix(m.Type, "Pooling") {
					continue
				}
				if !filepath.IsLocal(m.Path) && m.Path != "" {
					return fmt.Errorf("%w: modules.json: module path %q leaves the model folder", ErrConfig, m.Path)
				}
				p, err := readPooling(filepath.Join(dir, m.Path, "config.json"))
				if err != nil {
					return err
				}
				k.l.Set(k.key("pooling_type"), gguf.Uint32(p))
				break
			}
		}
	}
	if cp, ok := t.h["classifier_pooling"]; ok && cp != nil {
		modes := map[string]uint32{"cls": poolingCLS, "mean": poolingMean}
		s, _ := cp.(string)
		p, ok := modes[s]
		if !ok {
			return fmt.Errorf("config.json: unsupported classifier_pooling %v", cp)
		}
		k.l.Set(k.key("classifier.pooling_type"), gguf.Uint32(p))
	}
	return nil
}

// maxSmallFile bounds the sentence-transformers files read whole
// (modules.json, a Pooling module's config.json: a few hundred bytes).
const maxSmallFile = 1 << 20

// readSmall reads a file of at most maxSmallFile bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSmallFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSmallFile {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrConfig, path, maxSmallFile)
	}
	return b, nil
}

func readPooling(path string) (uint32, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	isTrue := func(k string) bool { v, _ := p[k].(bool); return v }
	switch {
	case isTrue("pooling_mode_mean_tokens"):
		return poolingMean, nil
	case isTrue("pooling_mode_cls_token"):
		return poolingCLS, nil
	case isTrue("pooling_mode_lasttoken"):
		return poolingLast, nil
	}
	modes := map[string]uint32{"mean": poolingMean, "cls": poolingCLS, "lasttoken": poolingLast}
	if s, ok := p["pooling_mode"].(string); ok {
		if m, ok := modes[s]; ok {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%s: only MEAN, CLS and LAST pooling are supported", path)
}
