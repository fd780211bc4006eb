package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/tokenizer/load"
)

// maxTokenizerModel bounds a tokenizer.model read into memory (Meta's are
// 0.5–2.2 MB).
const maxTokenizerModel = 64 << 20

// maxAddedTokens bounds added_tokens.json's entries.
const maxAddedTokens = 1 << 20

// legacyVocab is the vocabulary convert_legacy_llama.py writes with its
// default --vocab-type spm,hfft: gguf-py's SentencePieceVocab (the pieces
// of tokenizer.model beside the weights, else in the folder above them,
// as Meta ships it; then added_tokens.json's new ids), the vocabulary-size
// check against the embedding rows (check_vocab_size, no --pad-vocab), and
// SpecialVocab of the weights' folder. nVocab < 0 skips the size check
// (--vocab-only); n is the vocabulary's size.
func legacyVocab(root string, nVocab int64) (kvs []gguf.KV, n int64, err error) {
	path := filepath.Join(root, "tokenizer.model")
	beside := exists(path)
	if !beside {
		path = filepath.Join(filepath.Dir(filepath.Clean(root)), "tokenizer.model")
		if !exists(path) {
			if exists(filepath.Join(root, "tokenizer.json")) {
				return nil, 0, fmt.Errorf("convert: %s: no tokenizer.model here or in the folder above; convert_legacy_llama.py would then read tokenizer.json through transformers (--vocab-type hfft), which ggufkit does not: add Meta's tokenizer.model, or add config.json to convert the folder as a Hugging Face model", root)
			}
			return nil, 0, fmt.Errorf("convert: %s: no tokenizer.model here or in the folder above (convert_legacy_llama.py: could not find a tokenizer matching any of spm, hfft)", root)
		}
	}
	data, err := readCapped(path, maxTokenizerModel)
	if err != nil {
		return nil, 0, fmt.Errorf("convert: tokenizer: %w", err)
	}
	spm, err := load.ParseSentencePiece(data, path)
	if err != nil {
		if ranks, terr := load.ParseTiktoken(data, path); terr == nil && len(ranks) > 0 {
			return nil, 0, fmt.Errorf("convert: %s is a tiktoken BPE file (Llama 3), not a SentencePiece model: convert_legacy_llama.py cannot read it (sentencepiece fails to parse it); convert the checkpoint to Hugging Face format first (transformers' convert_llama_weights_to_hf.py --llama_version 3 …) and run ggufkit convert on that folder", path)
		}
		return nil, 0, fmt.Errorf("convert: tokenizer: %w", err)
	}
	var added []string
	if beside {
		if added, err = legacyAddedTokens(filepath.Join(root, "added_tokens.json"), len(spm.Pieces)); err != nil {
			return nil, 0, err
		}
	}
	total := int64(len(spm.Pieces) + len(added))
	if nVocab >= 0 && nVocab != total {
		msg := fmt.Sprintf("convert: vocabulary size mismatch: the model has %d token embeddings, %s has %d tokens", nVocab, path, total)
		if total < nVocab && nVocab < total+20 {
			msg += "; most likely added_tokens.json is missing (it should be in " + root + ")"
		}
		return nil, 0, errors.New(msg)
	}
	tokens := make([]string, 0, total)
	scores := make([]float32, 0, total)
	types := make([]int32, 0, total)
	for _, p := range spm.Pieces {
		tokens, scores, types = append(tokens, p.Piece), append(scores, p.Score), append(types, legacyPieceType(p.Type))
	}
	for _, t := range added {
		tokens, scores, types = append(tokens, t), append(scores, -1000), append(types, load.PieceUserDefined)
	}
	kvs = []gguf.KV{
		{Key: gguf.KeyTokenizerModel, Value: gguf.String("llama")},
		{Key: gguf.KeyTokenizerTokens, Value: gguf.Array(tokens)},
		{Key: gguf.KeyTokenizerScores, Value: gguf.Array(scores)},
		{Key: gguf.KeyTokenizerTokenType, Value: gguf.Array(types)},
	}
	special, err := legacySpecialVocab(root, beside, total)
	if err != nil {
		return nil, 0, err
	}
	return append(kvs, special...), total, nil
}

// legacyPieceType is SentencePieceVocab's token type: it asks IsUnknown,
// IsControl, IsUnused and IsByte, the last that holds winning, so
// USER_DEFINED pieces stay NORMAL.
func legacyPieceType(t int32) int32 {
	switch t {
	case load.PieceUnknown, load.PieceControl, load.PieceUnused, load.PieceByte:
		return t
	}
	return load.PieceNormal
}

// legacyAddedTokens reads added_tokens.json as SentencePieceVocab does:
// the entries with an id at or past the model's n pieces, which must be
// n, n+1 … in some order, become tokens after the pieces (in id order);
// the others are ignored. A missing file is no added token.
func legacyAddedTokens(path string, n int) ([]string, error) {
	if !exists(path) {
		return nil, nil
	}
	data, err := readCapped(path, maxTokenizerModel)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("convert: %s: not a JSON object of token ids: %v", path, err)
	}
	if len(raw) > maxAddedTokens {
		return nil, fmt.Errorf("convert: %s: %d entries, more than %d", path, len(raw), maxAddedTokens)
	}
	byID := map[int64]string{}
	for piece, v := range raw {
		var id int64
		if err := json.Unmarshal(v, &id); err != nil {
			return nil, fmt.Errorf("convert: %s: %q: id %s is not an integer", path, piece, v)
		}
		if id >= int64(n) {
			// json.load keeps the last of repeated keys; of two pieces
			// with one id the dict comprehension keeps the later one.
			// Go's map order is random, so two pieces for one id are
			// refused rather than resolved by chance.
			if prev, dup := byID[id]; dup {
				return nil, fmt.Errorf("convert: %s: %q and %q both have id %d", path, prev, piece, id)
			}
			byID[id] = piece
		}
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		if id != int64(n+i) {
			return nil, fmt.Errorf("convert: %s: the new token ids %v are not sequential from %d", path, ids, n)
		}
		out[i] = byID[id]
	}
	return out, nil
}

// specialVocabFiles are the files of the weights' folder gguf-py's
// SpecialVocab reads (without merges): config.json never sits beside
// params.json here (it would make the folder a Hugging Face model).
var specialVocabFiles = []string{"tokenizer.json", "tokenizer_config.json"}

// legacySpecialVocab is gguf.SpecialVocab(weights folder, n_vocab) and its
// add_to_gguf. Meta's folders hold none of its files, and then it writes
// nothing. Otherwise its keys are those tokenizer/load writes after the
// token list of a SentencePiece vocabulary of the same size, which calls
// the same SpecialVocab; that needs tokenizer.model in the same folder.
func legacySpecialVocab(root string, beside bool, nVocab int64) ([]gguf.KV, error) {
	var present []string
	for _, f := range specialVocabFiles {
		if exists(filepath.Join(root, f)) {
			present = append(present, f)
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	if !beside {
		return nil, fmt.Errorf("convert: %s: %s beside weights whose tokenizer.model is in the folder above is not supported: copy tokenizer.model beside them", root, strings.Join(present, ", "))
	}
	kvs, err := load.SentencePiece(root, load.Options{VocabSize: int(nVocab)})
	if err != nil {
		return nil, fmt.Errorf("convert: %s: tokenizer: %w", root, err)
	}
	var out []gguf.KV
	for _, kv := range kvs {
		switch kv.Key {
		case gguf.KeyTokenizerModel, gguf.KeyTokenizerPre, gguf.KeyTokenizerTokens, gguf.KeyTokenizerScores, gguf.KeyTokenizerTokenType:
		default:
			out = append(out, kv)
		}
	}
	return out, nil
}

// exists is Python's Path.exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}
