package load

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// A SentencePiece tokenizer.model is a serialized protobuf message
// sentencepiece.ModelProto (sentencepiece_model.proto, proto2). This file
// decodes the protobuf wire format by hand and keeps only the fields the
// converter reads; every other field is skipped by its wire type.
//
// Fields used (number: name, type):
//
//	ModelProto       1: pieces (repeated SentencePiece)   2: trainer_spec (TrainerSpec)
//	                 3: normalizer_spec (NormalizerSpec)
//	SentencePiece    1: piece (string)   2: score (float)   3: type (enum, default NORMAL=1)
//	TrainerSpec      3: model_type (enum, default UNIGRAM=1)   4: vocab_size (int32)
//	                35: byte_fallback (bool)   40-43: unk_id, bos_id, eos_id, pad_id (int32;
//	                    defaults 0, 1, 2, -1)
//	NormalizerSpec   1: name (string)   2: precompiled_charsmap (bytes)
//	                 3: add_dummy_prefix (bool, default true)   4: remove_extra_whitespaces
//	                    (bool, default true)   5: escape_whitespaces (bool, default true)
//
// As protobuf does, a repeated occurrence of a singular scalar replaces the
// earlier value and a repeated occurrence of a singular message merges into
// it. Groups (wire types 3 and 4) are refused: sentencepiece never writes
// them.

// SentencePiece piece types (ModelProto.SentencePiece.Type). Their numbers
// equal llama.cpp's token types of the same name.
const (
	PieceNormal      = 1
	PieceUnknown     = 2
	PieceControl     = 3
	PieceUserDefined = 4
	PieceUnused      = 5
	PieceByte        = 6
)

// SentencePiece model types (TrainerSpec.ModelType).
const (
	SPMUnigram = 1
	SPMBPE     = 2
	SPMWord    = 3
	SPMChar    = 4
)

// Piece is one entry of a SentencePiece vocabulary.
type Piece struct {
	Piece string
	Score float32
	Type  int32
}

// SPMModel is the part of a SentencePiece ModelProto the converter uses.
type SPMModel struct {
	Pieces []Piece

	// TrainerSpec.
	ModelType    int32
	VocabSize    int32
	ByteFallback bool
	UnkID        int32
	BOSID        int32
	EOSID        int32
	PadID        int32

	// NormalizerSpec.
	NormalizerName         string
	PrecompiledCharsmap    []byte
	AddDummyPrefix         bool
	RemoveExtraWhitespaces bool
	EscapeWhitespaces      bool
}

// protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pbReader walks protobuf wire data, reporting errors with the absolute
// offset in the file.
type pbReader struct {
	file string
	data []byte
	base int64 // offset of data[0] in the file
	pos  int
}

func (r *pbReader) fail(field, format string, args ...any) error {
	return &FileError{File: r.file, Field: field, Offset: r.base + int64(r.pos), Msg: fmt.Sprintf(format, args...), Err: ErrFormat}
}

func (r *pbReader) done() bool { return r.pos >= len(r.data) }

func (r *pbReader) varint(field string) (uint64, error) {
	v, n := binary.Uvarint(r.data[r.pos:])
	if n <= 0 {
		return 0, r.fail(field, "bad varint")
	}
	r.pos += n
	return v, nil
}

// key reads a field key and splits it into field number and wire type.
func (r *pbReader) key(msg string) (num int, wire int, err error) {
	k, err := r.varint(msg)
	if err != nil {
		return 0, 0, err
	}
	if k>>3 == 0 || k>>3 > math.MaxInt32 {
		return 0, 0, r.fail(msg, "bad field number %d", k>>3)
	}
	return int(k >> 3), int(k & 7), nil
}

// bytes reads a length-delimited payload; the length is checked against
// the bytes left before anything is sliced.
func (r *pbReader) bytes(field string) ([]byte, int64, error) {
	n, err := r.varint(field)
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(r.data)-r.pos) {
		return nil, 0, r.fail(field, "length %d exceeds the %d bytes left", n, len(r.data)-r.pos)
	}
	off := r.base + int64(r.pos)
	b := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, off, nil
}

func (r *pbReader) fixed32(field string) (uint32, error) {
	if len(r.data)-r.pos < 4 {
		return 0, r.fail(field, "truncated fixed32")
	}
	v := binary.LittleEndian.Uint32(r.data[r.pos:])
	r.pos += 4
	return v, nil
}

// skip steps over a field of an unused number.
func (r *pbReader) skip(field string, wire int) error {
	switch wire {
	case wireVarint:
		_, err := r.varint(field)
		return err
	case wireFixed64:
		if len(r.data)-r.pos < 8 {
			return r.fail(field, "truncated fixed64")
		}
		r.pos += 8
		return nil
	case wireBytes:
		_, _, err := r.bytes(field)
		return err
	case wireFixed32:
		_, err := r.fixed32(field)
		return err
	}
	return r.fail(field, "unsupported wire type %d", wire)
}

// expect checks a known field's wire type.
func (r *pbReader) expect(field string, wire, want int) error {
	if wire != want {
		return r.fail(field, "wire type %d, want %d", wire, want)
	}
	return nil
}

func (r *pbReader) sub(b []byte, off int64) *pbReader {
	return &pbReader{file: r.file, data: b, base: off}
}

// ParseSentencePiece decodes a SentencePiece model file (tokenizer.model,
// spiece.model). file names it in errors. It checks what sentencepiece's
// own loader checks before the converter can read the model: every piece
// non-empty, valid UTF-8 and defined once, exactly one UNKNOWN piece, BYTE
// pieces only with byte_fallback.
func ParseSentencePiece(data []byte, file string) (*SPMModel, error) {
	m := &SPMModel{
		ModelType: SPMUnigram, VocabSize: 8000, UnkID: 0, BOSID: 1, EOSID: 2, PadID: -1,
		AddDummyPrefix: true, RemoveExtraWhitespaces: true, EscapeWhitespaces: true,
	}
	r := &pbReader{file: file, data: data}
	for !r.done() {
		num, wire, err := r.key("ModelProto")
		if err != nil {
			return nil, err
		}
		switch num {
		case 1:
			if err := r.expect("pieces", wire, wireBytes); err != nil {
				return nil, err
			}
			b, off, err := r.bytes("pieces")
			if err != nil {
				return nil, err
			}
			p, err := parsePiece(r.sub(b, off), len(m.Pieces))
			if err != nil {
				return nil, err
			}
			m.Pieces = append(m.Pieces, p)
		case 2:
			if err := r.expect("trainer_spec", wire, wireBytes); err != nil {
				return nil, err
			}
			b, off, err := r.bytes("trainer_spec")
			if err != nil {
				return nil, err
			}
			if err := parseTrainerSpec(r.sub(b, off), m); err != nil {
				return nil, err
			}
		case 3:
			if err := r.expect("normalizer_spec", wire, wireBytes); err != nil {
				return nil, err
			}
			b, off, err := r.bytes("normalizer_spec")
			if err != nil {
				return nil, err
			}
			if err := parseNormalizerSpec(r.sub(b, off), m); err != nil {
				return nil, err
			}
		default:
			if err := r.skip(fmt.Sprintf("ModelProto field %d", num), wire); err != nil {
				return nil, err
			}
		}
	}
	if err := m.validate(file); err != nil {
		return nil, err
	}
	return m, nil
}

func parsePiece(r *pbReader, index int) (Piece, error) {
	p := Piece{Type: PieceNormal}
	field := func(name string) string { return fmt.Sprintf("pieces[%d].%s", index, name) }
	for !r.done() {
		num, wire, err := r.key(field("?"))
		if err != nil {
			return p, err
		}
		switch num {
		case 1:
			if err := r.expect(field("piece"), wire, wireBytes); err != nil {
				return p, err
			}
			b, _, err := r.bytes(field("piece"))
			if err != nil {
				return p, err
			}
			if !utf8.Valid(b) {
				return p, r.fail(field("piece"), "invalid UTF-8")
			}
			p.Piece = string(b)
		case 2:
			if err := r.expect(field("score"), wire, wireFixed32); err != nil {
				return p, err
			}
			bits, err := r.fixed32(field("score"))
			if err != nil {
				return p, err
			}
			p.Score = math.Float32frombits(bits)
		case 3:
			if err := r.expect(field("type"), wire, wireVarint); err != nil {
				return p, err
			}
			v, err := r.varint(field("type"))
			if err != nil {
				return p, err
			}
			if v < PieceNormal || v > PieceByte {
				return p, r.fail(field("type"), "unknown piece type %d", v)
			}
			p.Type = int32(v)
		default:
			if err := r.skip(field(fmt.Sprint(num)), wire); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// int32Field reads a varint-encoded int32 (negative values are ten-byte
// varints that truncate to 32 bits, as protobuf does).
func (r *pbReader) int32Field(field string, wire int) (int32, error) {
	if err := r.expect(field, wire, wireVarint); err != nil {
		return 0, err
	}
	v, err := r.varint(field)
	return int32(v), err
}

func (r *pbReader) boolField(field string, wire int) (bool, error) {
	if err := r.expect(field, wire, wireVarint); err != nil {
		return false, err
	}
	v, err := r.varint(field)
	return v != 0, err
}

func parseTrainerSpec(r *pbReader, m *SPMModel) error {
	for !r.done() {
		num, wire, err := r.key("trainer_spec")
		if err != nil {
			return err
		}
		switch num {
		case 3:
			v, err := r.int32Field("trainer_spec.model_type", wire)
			if err != nil {
				return err
			}
			if v < SPMUnigram || v > SPMChar {
				return r.fail("trainer_spec.model_type", "unknown model type %d", v)
			}
			m.ModelType = v
		case 4:
			if m.VocabSize, err = r.int32Field("trainer_spec.vocab_size", wire); err != nil {
				return err
			}
		case 35:
			if m.ByteFallback, err = r.boolField("trainer_spec.byte_fallback", wire); err != nil {
				return err
			}
		case 40:
			if m.UnkID, err = r.int32Field("trainer_spec.unk_id", wire); err != nil {
				return err
			}
		case 41:
			if m.BOSID, err = r.int32Field("trainer_spec.bos_id", wire); err != nil {
				return err
			}
		case 42:
			if m.EOSID, err = r.int32Field("trainer_spec.eos_id", wire); err != nil {
				return err
			}
		case 43:
			if m.PadID, err = r.int32Field("trainer_spec.pad_id", wire); err != nil {
				return err
			}
		default:
			if err := r.skip(fmt.Sprintf("trainer_spec field %d", num), wire); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseNormalizerSpec(r *pbReader, m *SPMModel) error {
	for !r.done() {
		num, wire, err := r.key("normalizer_spec")
		if err != nil {
			return err
		}
		switch num {
		case 1:
			if err := r.expect("normalizer_spec.name", wire, wireBytes); err != nil {
				return err
			}
			b, _, err := r.bytes("normalizer_spec.name")
			if err != nil {
				return err
			}
			m.NormalizerName = string(b)
		case 2:
			if err := r.expect("normalizer_spec.precompiled_charsmap", wire, wireBytes); err != nil {
				return err
			}
			b, _, err := r.bytes("normalizer_spec.precompiled_charsmap")
			if err != nil {
				return err
			}
			m.PrecompiledCharsmap = b
		case 3:
			if m.AddDummyPrefix, err = r.boolField("normalizer_spec.add_dummy_prefix", wire); err != nil {
				return err
			}
		case 4:
			if m.RemoveExtraWhitespaces, err = r.boolField("normalizer_spec.remove_extra_whitespaces", wire); err != nil {
				return err
			}
		case 5:
			if m.EscapeWhitespaces, err = r.boolField("normalizer_spec.escape_whitespaces", wire); err != nil {
				return err
			}
		default:
			if err := r.skip(fmt.Sprintf("normalizer_spec field %d", num), wire); err != nil {
				return err
			}
		}
	}
	return nil
}

// validate applies sentencepiece's model checks (model_interface.cc,
// InitializePieces): pieces are non-empty and unique among the "normal"
// kinds (NORMAL, USER_DEFINED, UNUSED) and among the reserved kinds
// (UNKNOWN, CONTROL, BYTE); exactly one UNKNOWN; BYTE only with
// byte_fallback.
func (m *SPMModel) validate(file string) error {
	normal := make(map[string]int, len(m.Pieces))
	reserved := map[string]int{}
	unk := -1
	for i, p := range m.Pieces {
		field := fmt.Sprintf("pieces[%d]", i)
		if p.Piece == "" {
			return errorf(ErrFormat, file, field, "empty piece")
		}
		set := reserved
		if p.Type == PieceNormal || p.Type == PieceUserDefined || p.Type == PieceUnused {
			set = normal
		}
		if j, dup := set[p.Piece]; dup {
			return errorf(ErrFormat, file, field, "piece %q is already defined at %d", p.Piece, j)
		}
		set[p.Piece] = i
		switch p.Type {
		case PieceUnknown:
			if unk >= 0 {
				return errorf(ErrFormat, file, field, "second UNKNOWN piece (the first is %d)", unk)
			}
			unk = i
		case PieceByte:
			if !m.ByteFallback {
				return errorf(ErrFormat, file, field, "BYTE piece %q without byte_fallback", p.Piece)
			}
		}
	}
	if unk < 0 {
		return errorf(ErrFormat, file, "pieces", "no UNKNOWN piece")
	}
	return nil
}
