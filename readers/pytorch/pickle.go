package pytorch

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"unicode/utf8"
)

// This file is a small pickle virtual machine restricted the way
// torch.load(weights_only=True) restricts Python's
// (torch/_weights_only_unpickler.py, Unpickler.load): the same opcode list,
// the same checks on REDUCE / NEWOBJ / BUILD / APPEND / SETITEM targets and
// on persistent ids, and globals resolved only through allowGlobal
// (globals.go). Nothing in a pickle can name Go code: a global is looked up
// in a fixed table and every "call" is a switch over the few constructors
// the table holds.
//
// gopickle's pickle.Unpickler is not used because it cannot be restricted
// enough: it resolves collections.OrderedDict, __builtin__.object and
// copy_reg._reconstructor before its FindClass hook is consulted, accepts
// every opcode of protocols 0-5 (STACK_GLOBAL, INST, OBJ, EXT*, FRAME …),
// allocates declared lengths before checking them against the input
// (BINBYTES8 / FRAME with a huge length), panics on some malformed input
// (LONG1 with length 0, DICT with an odd item count), turns an unknown memo
// key into nil, and has no stack, memo or depth limits.

// Python values as the unpickler builds them. Scalars are Go values: nil
// (None), bool, int64, *big.Int (an int beyond int64), float64, complex128,
// string and pyBytes; tensors are *tensor (storage.go).
type (
	pyTuple []any
	pyBytes []byte
	pyList  struct{ items []any }
	pySet   struct {
		items []any
		index map[string]struct{}
	}
	// pyByteArray is a builtins.bytearray.
	pyByteArray struct{ b []byte }
)

// dictKind tells which Python mapping type a pyDict is.
type dictKind uint8

const (
	plainDict dictKind = iota
	orderedDict
	counterDict
)

// pyDict is an insertion-ordered Python dict, collections.OrderedDict or
// collections.Counter. Keys are compared the way Python compares them
// (hashKey): 1, 1.0 and True are the same key.
type pyDict struct {
	kind  dictKind
	keys  []any
	vals  []any
	index map[string]int
	// attrs is the instance __dict__ set by BUILD (an OrderedDict state
	// dict's "_metadata"), nil when BUILD was not applied.
	attrs *pyDict
}

func newDict(kind dictKind) *pyDict {
	return &pyDict{kind: kind, index: map[string]int{}}
}

// set sets d[k] = v; a new key goes last, an existing key keeps its place.
func (d *pyDict) set(k, v any) error {
	h, err := hashKey(k)
	if err != nil {
		return err
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

// get returns d[k].
func (d *pyDict) get(k any) (any, bool) {
	h, err := hashKey(k)
	if err != nil {
		return nil, false
	}
	i, ok := d.index[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

func (s *pySet) add(v any) error {
	h, err := hashKey(v)
	if err != nil {
		return err
	}
	if _, ok := s.index[h]; !ok {
		s.index[h] = struct{}{}
		s.items = append(s.items, v)
	}
	return nil
}

// errUnhashable is hashKey's error for a value Python cannot hash;
// errKeyTooLarge for a tuple key past maxKeyNodes.
var (
	errUnhashable  = errors.New("unhashable")
	errKeyTooLarge = errors.New("dict key too large")
)

// maxKeyNodes bounds the values in one dict key: keys are strings and ints
// in real checkpoints, and a tuple shared through the memo could otherwise
// make hashing exponential.
const maxKeyNodes = 1024

// hashKey returns a string that is equal for two values exactly when Python
// considers them the same dict key. Identity-hashed objects (tensors,
// storages, globals) are keyed by identity.
func hashKey(v any) (string, error) {
	var b strings.Builder
	budget := maxKeyNodes
	if err := appendKey(&b, v, &budget); err != nil {
		return "", err
	}
	return b.String(), nil
}

func appendKey(b *strings.Builder, v any, budget *int) error {
	if *budget--; *budget < 0 {
		return errKeyTooLarge
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("N")
	case bool:
		if x {
			b.WriteString("i1")
		} else {
			b.WriteString("i0")
		}
	case int64:
		fmt.Fprintf(b, "i%d", x)
	case *big.Int:
		b.WriteString("i" + x.String())
	case float64:
		// Python: hash(2.0) == hash(2) and 2.0 == 2.
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			fmt.Fprintf(b, "i%d", int64(x))
		} else {
			fmt.Fprintf(b, "f%x", math.Float64bits(x))
		}
	case complex128:
		if imag(x) == 0 {
			return appendKey(b, real(x), budget)
		}
		fmt.Fprintf(b, "c%x,%x", math.Float64bits(real(x)), math.Float64bits(imag(x)))
	case string:
		fmt.Fprintf(b, "s%d:%s", len(x), x)
	case pyBytes:
		fmt.Fprintf(b, "b%d:%s", len(x), x)
	case pyTuple:
		fmt.Fprintf(b, "t%d(", len(x))
		for _, e := range x {
			if err := appendKey(b, e, budget); err != nil {
				return err
			}
		}
		b.WriteString(")")
	case *tensor, *storage, *pyGlobal, *pyDType:
		fmt.Fprintf(b, "p%p", x)
	default:
		return fmt.Errorf("%w type %s", errUnhashable, typeName(v))
	}
	return nil
}

// typeName names v's Python type for error messages.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case complex128:
		return "complex"
	case string:
		return "str"
	case pyBytes:
		return "bytes"
	case *pyByteArray:
		return "bytearray"
	case pyTuple:
		return "tuple"
	case *pyList:
		return "list"
	case *pySet:
		return "set"
	case *pyDict:
		switch x.kind {
		case orderedDict:
			return "collections.OrderedDict"
		case counterDict:
			return "collections.Counter"
		}
		return "dict"
	case *tensor:
		if x.param {
			return "torch.nn.parameter.Parameter"
		}
		return "torch.Tensor"
	case *storage:
		return "storage"
	case *pyGlobal:
		return x.name
	case *pyDType:
		return "torch.dtype"
	}
	return fmt.Sprintf("%T", v)
}

// Limits bound what a hostile file can make the reader spend. A zero field
// takes its default.
type Limits struct {
	// MaxPickleBytes caps one pickle stream: data.pkl of a zip checkpoint,
	// each pickle of a legacy one. Default 256 MiB (a state dict of 10 000
	// tensors pickles to about 2 MB).
	MaxPickleBytes int64
	// MaxStack caps the values on the unpickler's stack, counting those
	// under open MARKs. Default 1 << 20.
	MaxStack int
	// MaxMemo caps the memo's entries. Default 1 << 22.
	MaxMemo int
	// MaxDepth caps nesting: open MARKs while unpickling, and containers
	// within containers when the tensors are collected. Default 256.
	MaxDepth int
}

// Default limits; see Limits.
const (
	DefaultMaxPickleBytes = 256 << 20
	DefaultMaxStack       = 1 << 20
	DefaultMaxMemo        = 1 << 22
	DefaultMaxDepth       = 256
)

func (l Limits) withDefaults() Limits {
	if l.MaxPickleBytes <= 0 {
		l.MaxPickleBytes = DefaultMaxPickleBytes
	}
	if l.MaxStack <= 0 {
		l.MaxStack = DefaultMaxStack
	}
	if l.MaxMemo <= 0 {
		l.MaxMemo = DefaultMaxMemo
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// maxLineLen caps the module and name lines of GLOBAL: real ones are a few
// dozen bytes.
const maxLineLen = 1024

// pickleError is an unpickling failure at a byte offset of the stream; the
// container turns it into an *Error naming the file and entry.
type pickleError struct {
	off int64
	msg string
	err error // a sentinel or an I/O error
}

func (e *pickleError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }
func (e *pickleError) Unwrap() error { return e.err }

// The opcodes torch's weights-only unpickler implements (Python's
// Lib/pickle.py names); every other byte is refused.
const (
	opMark           = '('
	opStop           = '.'
	opBinFloat       = 'G'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opNone           = 'N'
	opBinPersID      = 'Q'
	opReduce         = 'R'
	opShortBinString = 'U'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opBuild          = 'b'
	opGlobal         = 'c'
	opAppends        = 'e'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opEmptyList      = ']'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opTuple          = 't'
	opEmptyTuple     = ')'
	opSetItems       = 'u'
	opEmptyDict      = '}'
	opProto          = 0x80
	opNewObj         = 0x81
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opEmptySet       = 0x8f
)

// unpickler runs one pickle stream.
type unpickler struct {
	r      *bufio.Reader
	off    int64 // bytes consumed so far
	limit  int64 // bytes the stream may use
	capped bool  // limit is lim.MaxPickleBytes, not the input's size
	lim    Limits
	opOff  int64 // offset of the opcode being executed
	stack  []any
	meta   [][]any
	nstack int // values in stack and every meta frame
	memo   map[uint32]any
	// persistentLoad resolves a BINPERSID id (a tuple whose first item is
	// "storage"); nil refuses every persistent id.
	persistentLoad func(pid pyTuple) (any, error)
}

// newUnpickler reads one pickle from r, which may hold at most limit bytes
// for it (capped by lim.MaxPickleBytes).
func newUnpickler(r *bufio.Reader, limit int64, lim Limits) *unpickler {
	lim = lim.withDefaults()
	return &unpickler{r: r, limit: min(limit, lim.MaxPickleBytes), capped: limit > lim.MaxPickleBytes, lim: lim, memo: map[uint32]any{}}
}

func (u *unpickler) errf(sentinel error, format string, args ...any) error {
	return &pickleError{off: u.opOff, msg: fmt.Sprintf(format, args...), err: sentinel}
}

func (u *unpickler) readByte() (byte, error) {
	if u.off >= u.limit {
		return 0, u.truncated(1)
	}
	b, err := u.r.ReadByte()
	if err != nil {
		return 0, u.ioErr(err)
	}
	u.off++
	return b, nil
}

// read returns the next n bytes. n is checked against the bytes the stream
// may still use before anything is allocated.
func (u *unpickler) read(n int64) ([]byte, error) {
	if n < 0 || n > u.limit-u.off {
		return nil, u.truncated(n)
	}
	buf := make([]byte, n)
	m, err := io.ReadFull(u.r, buf)
	u.off += int64(m)
	if err != nil {
		return nil, u.ioErr(err)
	}
	return buf, nil
}

func (u *unpickler) truncated(n int64) error {
	left := u.limit - u.off
	if u.capped {
		return u.errf(ErrLimit, "pickle needs %d more bytes, past the %d-byte pickle limit", n, u.lim.MaxPickleBytes)
	}
	return u.errf(ErrFormat, "pickle truncated: needs %d bytes, %d left", n, left)
}

func (u *unpickler) ioErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return u.errf(ErrFormat, "pickle truncated at offset %d", u.off)
	}
	return &pickleError{off: u.opOff, msg: "reading pickle", err: err}
}

func (u *unpickler) readLine() (string, error) {
	var line []byte
	for {
		b, err := u.readByte()
		if err != nil {
			return "", err
		}
		if b == '\n' {
			break
		}
		if len(line) >= maxLineLen {
			return "", u.errf(ErrFormat, "GLOBAL line longer than %d bytes", maxLineLen)
		}
		line = append(line, b)
	}
	if !utf8.Valid(line) {
		return "", u.errf(ErrFormat, "GLOBAL line is not valid UTF-8")
	}
	return string(line), nil
}

func (u *unpickler) push(v any) error {
	if u.nstack >= u.lim.MaxStack {
		return u.errf(ErrLimit, "more than %d values on the pickle stack", u.lim.MaxStack)
	}
	u.stack = append(u.stack, v)
	u.nstack++
	return nil
}

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 {
		return nil, u.errf(ErrFormat, "pickle stack underflow")
	}
	v := u.stack[len(u.stack)-1]
	u.stack[len(u.stack)-1] = nil
	u.stack = u.stack[:len(u.stack)-1]
	u.nstack--
	return v, nil
}

func (u *unpickler) top() (any, error) {
	if len(u.stack) == 0 {
		return nil, u.errf(ErrFormat, "pickle stack underflow")
	}
	return u.stack[len(u.stack)-1], nil
}

// popMark returns the values pushed since the last MARK and restores the
// stack below it.
func (u *unpickler) popMark() ([]any, error) {
	if len(u.meta) == 0 {
		return nil, u.errf(ErrFormat, "no MARK on the pickle stack")
	}
	items := u.stack
	u.stack = u.meta[len(u.meta)-1]
	u.meta[len(u.meta)-1] = nil
	u.meta = u.meta[:len(u.meta)-1]
	u.nstack -= len(items)
	return items, nil
}

// load runs the pickle to its STOP and returns the value it produced.
func (u *unpickler) load() (any, error) {
	for {
		u.opOff = u.off
		op, err := u.readByte()
		if err != nil {
			return nil, err
		}
		if op == opStop {
			return u.pop()
		}
		if err := u.step(op); err != nil {
			return nil, err
		}
	}
}

// step executes one opcode other than STOP.
func (u *unpickler) step(op byte) error {
	switch op {
	case opProto:
		// torch only warns about protocols other than 2.
		_, err := u.readByte()
		return err
	case opGlobal:
		module, err := u.readLine()
		if err != nil {
			return err
		}
		name, err := u.readLine()
		if err != nil {
			return err
		}
		g, err := allowGlobal(module, name)
		if err != nil {
			return u.at(err)
		}
		return u.push(g)
	case opReduce:
		args, err := u.pop()
		if err != nil {
			return err
		}
		fn, err := u.top()
		if err != nil {
			return err
		}
		g, ok := fn.(*pyGlobal)
		if !ok {
			return u.errf(ErrForbidden, "REDUCE of %s, which is not an allowed callable", typeName(fn))
		}
		tup, ok := args.(pyTuple)
		if !ok {
			return u.errf(ErrFormat, "REDUCE arguments are a %s, not a tuple", typeName(args))
		}
		v, err := g.call(tup)
		if err != nil {
			return u.at(err)
		}
		u.stack[len(u.stack)-1] = v
		return nil
	case opNewObj:
		args, err := u.pop()
		if err != nil {
			return err
		}
		cls, err := u.pop()
		if err != nil {
			return err
		}
		g, ok := cls.(*pyGlobal)
		if !ok {
			return u.errf(ErrForbidden, "NEWOBJ of %s, which is not an allowed class", typeName(cls))
		}
		tup, ok := args.(pyTuple)
		if !ok {
			return u.errf(ErrFormat, "NEWOBJ arguments are a %s, not a tuple", typeName(args))
		}
		v, err := g.newObj(tup)
		if err != nil {
			return u.at(err)
		}
		return u.push(v)
	case opBuild:
		state, err := u.pop()
		if err != nil {
			return err
		}
		inst, err := u.top()
		if err != nil {
			return err
		}
		return u.build(inst, state)
	case opAppend:
		item, err := u.pop()
		if err != nil {
			return err
		}
		l, err := u.listTarget("APPEND")
		if err != nil {
			return err
		}
		l.items = append(l.items, item)
		return nil
	case opAppends:
		items, err := u.popMark()
		if err != nil {
			return err
		}
		l, err := u.listTarget("APPENDS")
		if err != nil {
			return err
		}
		l.items = append(l.items, items...)
		return nil
	case opSetItem:
		v, err := u.pop()
		if err != nil {
			return err
		}
		k, err := u.pop()
		if err != nil {
			return err
		}
		d, err := u.dictTarget("SETITEM")
		if err != nil {
			return err
		}
		return u.setItem(d, k, v)
	case opSetItems:
		items, err := u.popMark()
		if err != nil {
			return err
		}
		d, err := u.dictTarget("SETITEMS")
		if err != nil {
			return err
		}
		if len(items)%2 != 0 {
			return u.errf(ErrFormat, "SETITEMS with an odd number (%d) of keys and values", len(items))
		}
		for i := 0; i < len(items); i += 2 {
			if err := u.setItem(d, items[i], items[i+1]); err != nil {
				return err
			}
		}
		return nil
	case opMark:
		if len(u.meta) >= u.lim.MaxDepth {
			return u.errf(ErrLimit, "more than %d nested MARKs", u.lim.MaxDepth)
		}
		u.meta = append(u.meta, u.stack)
		u.stack = nil
		return nil
	case opTuple:
		items, err := u.popMark()
		if err != nil {
			return err
		}
		return u.push(pyTuple(items))
	case opTuple1, opTuple2, opTuple3:
		n := int(op-opTuple1) + 1
		if len(u.stack) < n {
			return u.errf(ErrFormat, "TUPLE%d with %d values on the stack", n, len(u.stack))
		}
		t := make(pyTuple, n)
		copy(t, u.stack[len(u.stack)-n:])
		for range n {
			if _, err := u.pop(); err != nil {
				return err
			}
		}
		return u.push(t)
	case opNone:
		return u.push(nil)
	case opNewFalse:
		return u.push(false)
	case opNewTrue:
		return u.push(true)
	case opEmptyTuple:
		return u.push(pyTuple{})
	case opEmptyList:
		return u.push(&pyList{})
	case opEmptyDict:
		return u.push(newDict(plainDict))
	case opEmptySet:
		return u.push(&pySet{index: map[string]struct{}{}})
	case opBinInt:
		b, err := u.read(4)
		if err != nil {
			return err
		}
		return u.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case opBinInt1:
		b, err := u.readByte()
		if err != nil {
			return err
		}
		return u.push(int64(b))
	case opBinInt2:
		b, err := u.read(2)
		if err != nil {
			return err
		}
		return u.push(int64(binary.LittleEndian.Uint16(b)))
	case opBinFloat:
		b, err := u.read(8)
		if err != nil {
			return err
		}
		return u.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case opBinUnicode:
		b, err := u.read(4)
		if err != nil {
			return err
		}
		return u.pushString(int64(binary.LittleEndian.Uint32(b)))
	case opShortBinString:
		// torch.load unpickles with encoding="utf-8": Python 2 str → str.
		n, err := u.readByte()
		if err != nil {
			return err
		}
		return u.pushString(int64(n))
	case opLong1:
		n, err := u.readByte()
		if err != nil {
			return err
		}
		b, err := u.read(int64(n))
		if err != nil {
			return err
		}
		return u.push(decodeLong(b))
	case opBinPersID:
		pid, err := u.pop()
		if err != nil {
			return err
		}
		t, ok := pid.(pyTuple)
		if !ok {
			return u.errf(ErrForbidden, "persistent id is a %s, not a tuple", typeName(pid))
		}
		if len(t) == 0 || asciiString(t[0]) != "storage" {
			return u.errf(ErrForbidden, "persistent id %s is not a storage (only storages may be loaded)", shortRepr(pid))
		}
		if u.persistentLoad == nil {
			return u.errf(ErrForbidden, "persistent id in a pickle that may not hold storages")
		}
		v, err := u.persistentLoad(t)
		if err != nil {
			return u.at(err)
		}
		return u.push(v)
	case opBinGet, opLongBinGet:
		i, err := u.memoIndex(op == opBinGet)
		if err != nil {
			return err
		}
		v, ok := u.memo[i]
		if !ok {
			return u.errf(ErrFormat, "memo key %d was never stored", i)
		}
		return u.push(v)
	case opBinPut, opLongBinPut:
		i, err := u.memoIndex(op == opBinPut)
		if err != nil {
			return err
		}
		v, err := u.top()
		if err != nil {
			return err
		}
		if _, ok := u.memo[i]; !ok && len(u.memo) >= u.lim.MaxMemo {
			return u.errf(ErrLimit, "more than %d memo entries", u.lim.MaxMemo)
		}
		u.memo[i] = v
		return nil
	}
	return u.errf(ErrForbidden, "unsupported pickle opcode 0x%02x (not in torch's weights-only opcode list)", op)
}

func (u *unpickler) memoIndex(short bool) (uint32, error) {
	if short {
		b, err := u.readByte()
		return uint32(b), err
	}
	b, err := u.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (u *unpickler) pushString(n int64) error {
	b, err := u.read(n)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return u.errf(ErrFormat, "string is not valid UTF-8")
	}
	return u.push(string(b))
}

func (u *unpickler) listTarget(op string) (*pyList, error) {
	v, err := u.top()
	if err != nil {
		return nil, err
	}
	l, ok := v.(*pyList)
	if !ok {
		return nil, u.errf(ErrForbidden, "%s to a %s (only lists)", op, typeName(v))
	}
	return l, nil
}

func (u *unpickler) dictTarget(op string) (*pyDict, error) {
	v, err := u.top()
	if err != nil {
		return nil, err
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, u.errf(ErrForbidden, "%s on a %s (only dict, OrderedDict and Counter)", op, typeName(v))
	}
	return d, nil
}

func (u *unpickler) setItem(d *pyDict, k, v any) error {
	if err := d.set(k, v); err != nil {
		if errors.Is(err, errKeyTooLarge) {
			return u.errf(ErrLimit, "dict key of more than %d values", maxKeyNodes)
		}
		return u.errf(ErrFormat, "dict key: %v", err)
	}
	return nil
}

// build applies BUILD's state to inst. torch's loader builds tensors and
// parameters (legacy set_/__setstate__ paths torch.save no longer writes:
// unsupported here), OrderedDicts (state goes to the instance __dict__:
// nn.Module.state_dict's _metadata) and allow-listed types with a __dict__
// (of ours only Counter has one).
func (u *unpickler) build(inst, state any) error {
	switch x := inst.(type) {
	case *pyDict:
		if x.kind == plainDict {
			break
		}
		s, ok := state.(*pyDict)
		if !ok {
			return u.errf(ErrFormat, "BUILD state of a %s is a %s, not a dict", typeName(inst), typeName(state))
		}
		if x.attrs == nil {
			x.attrs = newDict(plainDict)
		}
		for i, k := range s.keys {
			if err := u.setItem(x.attrs, k, s.vals[i]); err != nil {
				return err
			}
		}
		return nil
	case *tensor:
		return u.errf(ErrUnsupported, "BUILD on a %s (legacy tensor state)", typeName(inst))
	}
	return u.errf(ErrForbidden, "BUILD on a %s (only Tensor, Parameter, OrderedDict and allowed types)", typeName(inst))
}

// at places an error of a global lookup, a call or a persistent load at the
// current opcode.
func (u *unpickler) at(err error) error {
	var pe *pickleError
	if errors.As(err, &pe) {
		if pe.off < 0 {
			pe.off = u.opOff
		}
		return pe
	}
	var e *Error
	if errors.As(err, &e) {
		return &pickleError{off: u.opOff, msg: fmt.Sprintf("entry %q: %s", e.Entry, e.Msg), err: e.Err}
	}
	return &pickleError{off: u.opOff, msg: err.Error(), err: ErrFormat}
}

// failf returns an error for the opcode being executed; the unpickler fills
// in its offset.
func failf(sentinel error, format string, args ...any) error {
	return &pickleError{off: -1, msg: fmt.Sprintf(format, args...), err: sentinel}
}

// decodeLong decodes LONG1's little-endian two's-complement bytes.
func decodeLong(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 {
		var x uint64
		for i := len(b) - 1; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
		}
		shift := 64 - 8*uint(len(b))
		return int64(x<<shift) >> shift // sign-extend
	}
	be := make([]byte, len(b))
	for i, c := range b {
		be[len(b)-1-i] = c
	}
	n := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 8*uint(len(b))))
	}
	if n.IsInt64() {
		return n.Int64()
	}
	return n
}

// asciiString returns v as a string when it is a str or ASCII bytes (torch's
// _maybe_decode_ascii), "" otherwise.
func asciiString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case pyBytes:
		for _, c := range x {
			if c >= 0x80 {
				return ""
			}
		}
		return string(x)
	}
	return ""
}

// reprMax is the length shortRepr cuts its output to.
const reprMax = 120

// shortRepr renders a value for an error message, cut to a readable size.
func shortRepr(v any) string {
	var b strings.Builder
	repr(&b, v)
	s := b.String()
	if len(s) > reprMax {
		s = s[:reprMax-3] + "..."
	}
	return s
}

// repr writes a Python-like rendering of v, stopping once b is longer than
// reprMax so that a huge or deeply shared value costs nothing.
func repr(b *strings.Builder, v any) {
	if b.Len() > reprMax {
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		fmt.Fprintf(b, "%q", x[:min(len(x), reprMax)])
	case int64, float64:
		fmt.Fprint(b, x)
	case *big.Int:
		b.WriteString(x.String())
	case pyTuple:
		b.WriteString("(")
		for i, e := range x {
			if b.Len() > reprMax {
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			repr(b, e)
		}
		b.WriteString(")")
	default:
		b.WriteString(typeName(v))
	}
}
