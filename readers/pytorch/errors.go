package pytorch

import (
	"errors"
	"strconv"
)

// Sentinel errors; every error this package returns for bad input wraps one
// of them inside an *Error, so callers can test with errors.Is.
var (
	// ErrFormat: the file is not a valid PyTorch checkpoint (bad zip, bad
	// pickle, a storage or view that does not fit its data …).
	ErrFormat = errors.New("pytorch: invalid checkpoint")
	// ErrForbidden: the pickle asks for something torch.load(weights_only=True)
	// refuses — a global outside the allow-list, an opcode outside its
	// opcode list, a persistent id that is not a storage, a call of
	// something that is not an allowed callable. Nothing is ever resolved
	// or called for such a pickle.
	ErrForbidden = errors.New("pytorch: refused by the weights-only allow-list")
	// ErrUnsupported: a valid feature this reader does not implement
	// (sparse or quantized tensors, complex dtypes, the pre-0.4 tar format …).
	ErrUnsupported = errors.New("pytorch: unsupported checkpoint feature")
	// ErrLimit: a resource limit of Limits was exceeded.
	ErrLimit = errors.New("pytorch: resource limit exceeded")
	// ErrIndex: pytorch_model.bin.index.json and its shards disagree.
	ErrIndex = errors.New("pytorch: index does not match the shards")
	// ErrNoFiles: a folder holds no PyTorch checkpoint file.
	ErrNoFiles = errors.New("pytorch: no checkpoint file")
)

// Error describes a problem in one checkpoint file, with the zip entry, the
// tensor and the byte offset where it was found when they are known.
type Error struct {
	File   string // path of the checkpoint file
	Entry  string // zip entry (e.g. "archive/data.pkl"), "" when not in a zip entry
	Tensor string // tensor name, "" when the problem is not about one tensor
	// Offset is the byte offset of the problem: inside Entry when Entry is
	// set (for a pickle: the offset of the offending opcode), inside File
	// otherwise; -1 when not meaningful.
	Offset int64
	Msg    string
	Err    error // one of the sentinels above, or an I/O error
}

func (e *Error) Error() string {
	s := "pytorch: " + e.File
	if e.Entry != "" {
		s += ": entry " + strconv.Quote(e.Entry)
	}
	if e.Tensor != "" {
		s += ": tensor " + strconv.Quote(e.Tensor)
	}
	if e.Offset >= 0 {
		s += ": offset " + strconv.FormatInt(e.Offset, 10)
	}
	s += ": " + e.Msg
	if e.Err != nil && !isSentinel(e.Err) {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel or I/O error behind e.
func (e *Error) Unwrap() error { return e.Err }

func isSentinel(err error) bool {
	switch err {
	case ErrFormat, ErrForbidden, ErrUnsupported, ErrLimit, ErrIndex, ErrNoFiles:
		return true
	}
	return false
}
