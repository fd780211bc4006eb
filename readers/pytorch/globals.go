package pytorch

import (
	"math"
	"math/big"
	"strings"

	"github.com/ggufkit/ggufkit/readers"
)

// globalKind says what an allow-listed global does when a pickle calls it.
type globalKind uint8

const (
	gOrderedDict globalKind = iota
	gCounter
	gSet
	gByteArray
	gComplex
	gCodecsEncode
	gSize
	gDevice
	gTensorClass    // torch.Tensor: only as _rebuild_from_type_v2's new_type
	gParameterClass // torch.nn.parameter.Parameter
	gRebuildTensor
	gRebuildTensorV2
	gRebuildTensorV3
	gRebuildParameter
	gRebuildParameterWithState
	gRebuildFromTypeV2
	gStorageType // a typed storage class (torch.FloatStorage …): dtype set
	gUntypedStorage
)

// pyGlobal is an allow-listed global a pickle pushed with GLOBAL.
type pyGlobal struct {
	name  string
	kind  globalKind
	dtype readers.DType // gStorageType only
}

// pyDType is a torch.dtype global (torch.float8_e4m3fn …).
type pyDType struct {
	name string
	dt   readers.DType
}

// storageDTypes maps the typed storage class names to their element types
// (torch/storage.py _dtype_to_storage_type_map; the same names exist under
// torch.cuda, whose data is read the same way since the bytes are in the file).
var storageDTypes = map[string]readers.DType{
	"DoubleStorage":   readers.F64,
	"FloatStorage":    readers.F32,
	"HalfStorage":     readers.F16,
	"BFloat16Storage": readers.BF16,
	"LongStorage":     readers.I64,
	"IntStorage":      readers.I32,
	"ShortStorage":    readers.I16,
	"CharStorage":     readers.I8,
	"ByteStorage":     readers.U8,
	"BoolStorage":     readers.Bool,
}

// dtypeGlobals maps the torch.dtype globals this reader can hold to element
// types.
var dtypeGlobals = map[string]readers.DType{
	"torch.float64":       readers.F64,
	"torch.float32":       readers.F32,
	"torch.float16":       readers.F16,
	"torch.bfloat16":      readers.BF16,
	"torch.float8_e4m3fn": readers.F8E4M3,
	"torch.float8_e5m2":   readers.F8E5M2,
	"torch.int64":         readers.I64,
	"torch.int32":         readers.I32,
	"torch.int16":         readers.I16,
	"torch.int8":          readers.I8,
	"torch.uint64":        readers.U64,
	"torch.uint32":        readers.U32,
	"torch.uint16":        readers.U16,
	"torch.uint8":         readers.U8,
	"torch.bool":          readers.Bool,
}

// implementedGlobals are the allow-listed globals this reader implements.
var implementedGlobals = map[string]globalKind{
	"collections.OrderedDict":                    gOrderedDict,
	"collections.Counter":                        gCounter,
	"builtins.set":                               gSet,
	"builtins.bytearray":                         gByteArray,
	"builtins.complex":                           gComplex,
	"_codecs.encode":                             gCodecsEncode,
	"torch.Size":                                 gSize,
	"torch.device":                               gDevice,
	"torch.Tensor":                               gTensorClass,
	"torch.nn.parameter.Parameter":               gParameterClass,
	"torch._utils._rebuild_tensor":               gRebuildTensor,
	"torch._utils._rebuild_tensor_v2":            gRebuildTensorV2,
	"torch._utils._rebuild_tensor_v3":            gRebuildTensorV3,
	"torch._utils._rebuild_parameter":            gRebuildParameter,
	"torch._utils._rebuild_parameter_with_state": gRebuildParameterWithState,
	"torch._tensor._rebuild_from_type_v2":        gRebuildFromTypeV2,
	"torch.storage.UntypedStorage":               gUntypedStorage,
}

// torchAllowedGlobals is the complete allow-list of torch 2.15's
// weights-only unpickler (torch/_weights_only_unpickler.py
// _get_allowed_globals; the 144 names it returns, printed from that
// release). A global outside this list is refused; one on it that this
// reader does not implement is ErrUnsupported.
var torchAllowedGlobals = setOf(`
_codecs.encode builtins.bytearray builtins.complex builtins.set collections.Counter collections.OrderedDict
torch.BFloat16Storage torch.BFloat16Tensor torch.BoolStorage torch.BoolTensor torch.ByteStorage torch.ByteTensor
torch.CharStorage torch.CharTensor torch.ComplexDoubleStorage torch.ComplexFloatStorage torch.DoubleStorage
torch.DoubleTensor torch.FloatStorage torch.FloatTensor torch.HalfStorage torch.HalfTensor torch.IntStorage
torch.IntTensor torch.LongStorage torch.LongTensor torch.QInt32Storage torch.QInt8Storage torch.QUInt2x4Storage
torch.QUInt4x2Storage torch.QUInt8Storage torch.ShortStorage torch.ShortTensor torch.Size torch.Tensor
torch._tensor._rebuild_from_type_v2 torch._utils._rebuild_device_tensor_from_cpu_tensor
torch._utils._rebuild_device_tensor_from_numpy torch._utils._rebuild_meta_tensor_no_storage
torch._utils._rebuild_parameter torch._utils._rebuild_parameter_with_state torch._utils._rebuild_qtensor
torch._utils._rebuild_sparse_tensor torch._utils._rebuild_tensor torch._utils._rebuild_tensor_v2
torch._utils._rebuild_tensor_v3 torch._utils._rebuild_wrapper_subclass torch.bcomplex32 torch.bfloat16 torch.bits16
torch.bits1x8 torch.bits2x4 torch.bits4x2 torch.bits8 torch.bool torch.complex128 torch.complex32 torch.complex64
torch.cuda.BFloat16Storage torch.cuda.BFloat16Tensor torch.cuda.BoolStorage torch.cuda.BoolTensor
torch.cuda.ByteStorage torch.cuda.ByteTensor torch.cuda.CharStorage torch.cuda.CharTensor
torch.cuda.ComplexDoubleStorage torch.cuda.ComplexFloatStorage torch.cuda.DoubleStorage torch.cuda.DoubleTensor
torch.cuda.FloatStorage torch.cuda.FloatTensor torch.cuda.HalfStorage torch.cuda.HalfTensor torch.cuda.IntStorage
torch.cuda.IntTensor torch.cuda.LongStorage torch.cuda.LongTensor torch.cuda.ShortStorage torch.cuda.ShortTensor
torch.cuda.sparse.BFloat16Tensor torch.cuda.sparse.ByteTensor torch.cuda.sparse.CharTensor
torch.cuda.sparse.DoubleTensor torch.cuda.sparse.FloatTensor torch.cuda.sparse.HalfTensor
torch.cuda.sparse.IntTensor torch.cuda.sparse.LongTensor torch.cuda.sparse.ShortTensor torch.device torch.float16
torch.float32 torch.float4_e2m1fn_x2 torch.float64 torch.float8_e4m3fn torch.float8_e4m3fnuz torch.float8_e5m2
torch.float8_e5m2fnuz torch.float8_e8m0fnu torch.int1 torch.int16 torch.int2 torch.int3 torch.int32 torch.int4
torch.int5 torch.int6 torch.int64 torch.int7 torch.int8 torch.nn.parameter.Parameter torch.per_channel_affine
torch.per_channel_affine_float_qparams torch.per_channel_symmetric torch.per_tensor_affine
torch.per_tensor_symmetric torch.qint32 torch.qint8 torch.quint2x4 torch.quint4x2 torch.quint8
torch.serialization._get_layout torch.sparse.BFloat16Tensor torch.sparse.ByteTensor torch.sparse.CharTensor
torch.sparse.DoubleTensor torch.sparse.FloatTensor torch.sparse.HalfTensor torch.sparse.IntTensor
torch.sparse.LongTensor torch.sparse.ShortTensor torch.storage.TypedStorage torch.storage.UntypedStorage
torch.uint1 torch.uint16 torch.uint2 torch.uint3 torch.uint32 torch.uint4 torch.uint5 torch.uint6 torch.uint64
torch.uint7 torch.uint8`)

// blockedModules are refused by module before any lookup
// (_weights_only_unpickler.py _blocklisted_modules).
var blockedModules = setOf("sys os posix nt")

// importMapping and nameMapping rename Python 2 globals the way torch does
// before checking them (torch/_utils.py IMPORT_MAPPING, NAME_MAPPING, from
// Python's _compat_pickle).
var importMapping = map[string]string{
	"__builtin__": "builtins", "copy_reg": "copyreg", "Queue": "queue", "repr": "reprlib",
	"_abcoll": "collections.abc", "UserDict": "collections", "UserList": "collections",
	"UserString": "collections", "whichdb": "dbm", "StringIO": "io", "cStringIO": "io",
}

var nameMapping = map[[2]string][2]string{
	{"__builtin__", "xrange"}:        {"builtins", "range"},
	{"__builtin__", "reduce"}:        {"functools", "reduce"},
	{"__builtin__", "intern"}:        {"sys", "intern"},
	{"__builtin__", "unichr"}:        {"builtins", "chr"},
	{"__builtin__", "unicode"}:       {"builtins", "str"},
	{"__builtin__", "long"}:          {"builtins", "int"},
	{"itertools", "izip"}:            {"builtins", "zip"},
	{"itertools", "imap"}:            {"builtins", "map"},
	{"itertools", "ifilter"}:         {"builtins", "filter"},
	{"itertools", "ifilterfalse"}:    {"itertools", "filterfalse"},
	{"itertools", "izip_longest"}:    {"itertools", "zip_longest"},
	{"UserDict", "IterableUserDict"}: {"collections", "UserDict"},
	{"UserList", "UserList"}:         {"collections", "UserList"},
	{"UserString", "UserString"}:     {"collections", "UserString"},
	{"__builtin__", "basestring"}:    {"builtins", "str"},
	{"exceptions", "StandardError"}:  {"builtins", "Exception"},
	{"UserDict", "UserDict"}:         {"collections", "UserDict"},
}

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// allowGlobal resolves GLOBAL module name through the allow-list. It never
// imports or runs anything: the result is a table entry.
func allowGlobal(module, name string) (any, error) {
	if m, ok := nameMapping[[2]string{module, name}]; ok {
		module, name = m[0], m[1]
	} else if m, ok := importMapping[module]; ok {
		module = m
	}
	full := module + "." + name
	if blockedModules[module] {
		return nil, failf(ErrForbidden, "refusing pickle global %q (module %q is blocked)", full, module)
	}
	if !torchAllowedGlobals[full] {
		return nil, failf(ErrForbidden, "refusing pickle global %q", full)
	}
	if dt, ok := dtypeGlobals[full]; ok {
		return &pyDType{name: full, dt: dt}, nil
	}
	if k, ok := implementedGlobals[full]; ok {
		return &pyGlobal{name: full, kind: k}, nil
	}
	storageName := strings.TrimPrefix(strings.TrimPrefix(full, "torch."), "cuda.")
	if dt, ok := storageDTypes[storageName]; ok {
		return &pyGlobal{name: full, kind: gStorageType, dtype: dt}, nil
	}
	return nil, failf(ErrUnsupported, "pickle global %q (allowed by torch's weights-only loader) is not supported", full)
}

// call runs the global on REDUCE's arguments.
func (g *pyGlobal) call(args pyTuple) (any, error) {
	switch g.kind {
	case gOrderedDict, gCounter:
		return newMapping(g, args)
	case gSet:
		return newSet(g, args)
	case gByteArray:
		return newByteArray(g, args)
	case gComplex:
		return newComplex(g, args)
	case gCodecsEncode:
		return codecsEncode(g, args)
	case gSize:
		return newSize(g, args)
	case gDevice:
		return newDevice(g, args)
	case gParameterClass:
		return newParameter(g, args)
	case gRebuildTensor, gRebuildTensorV2, gRebuildTensorV3:
		return rebuildTensor(g, args)
	case gRebuildParameter, gRebuildParameterWithState:
		return rebuildParameter(g, args)
	case gRebuildFromTypeV2:
		return rebuildFromType(g, args)
	}
	return nil, failf(ErrUnsupported, "calling %s is not supported", g.name)
}

// newObj runs cls.__new__(cls, *args) for NEWOBJ, as torch's loader does for
// allow-listed classes (a Parameter is constructed in full).
func (g *pyGlobal) newObj(args pyTuple) (any, error) {
	switch g.kind {
	case gParameterClass:
		return newParameter(g, args)
	case gOrderedDict:
		return newDict(orderedDict), nil
	case gCounter:
		return newDict(counterDict), nil
	case gSet:
		return &pySet{index: map[string]struct{}{}}, nil
	case gByteArray:
		return &pyByteArray{}, nil
	case gComplex:
		return newComplex(g, args)
	case gSize:
		return newSize(g, args)
	}
	return nil, failf(ErrUnsupported, "NEWOBJ of %s is not supported", g.name)
}

func argCount(g *pyGlobal, args pyTuple, lo, hi int) error {
	if len(args) < lo || len(args) > hi {
		if lo == hi {
			return failf(ErrFormat, "%s takes %d arguments, got %d", g.name, lo, len(args))
		}
		return failf(ErrFormat, "%s takes %d to %d arguments, got %d", g.name, lo, hi, len(args))
	}
	return nil
}

// newMapping builds OrderedDict() / OrderedDict(pairs or mapping) and
// Counter() / Counter(mapping).
func newMapping(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 0, 1); err != nil {
		return nil, err
	}
	kind := orderedDict
	if g.kind == gCounter {
		kind = counterDict
	}
	d := newDict(kind)
	if len(args) == 0 {
		return d, nil
	}
	switch src := args[0].(type) {
	case *pyDict:
		for i, k := range src.keys {
			if err := d.set(k, src.vals[i]); err != nil {
				return nil, failf(ErrFormat, "%s key: %v", g.name, err)
			}
		}
		return d, nil
	case *pyList, pyTuple:
		if kind == counterDict {
			break
		}
		for _, p := range sequence(src) {
			kv := sequence(p)
			if len(kv) != 2 {
				return nil, failf(ErrFormat, "%s item %s is not a key-value pair", g.name, shortRepr(p))
			}
			if err := d.set(kv[0], kv[1]); err != nil {
				return nil, failf(ErrFormat, "%s key: %v", g.name, err)
			}
		}
		return d, nil
	}
	return nil, failf(ErrUnsupported, "%s(%s) is not supported", g.name, typeName(args[0]))
}

// sequence returns the items of a tuple or list, nil for anything else.
func sequence(v any) []any {
	switch x := v.(type) {
	case pyTuple:
		return x
	case *pyList:
		return x.items
	}
	return nil
}

func newSet(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 0, 1); err != nil {
		return nil, err
	}
	s := &pySet{index: map[string]struct{}{}}
	if len(args) == 0 {
		return s, nil
	}
	var items []any
	switch x := args[0].(type) {
	case pyTuple, *pyList:
		items = sequence(x)
	case *pySet:
		items = x.items
	default:
		return nil, failf(ErrUnsupported, "set(%s) is not supported", typeName(args[0]))
	}
	for _, v := range items {
		if err := s.add(v); err != nil {
			return nil, failf(ErrFormat, "set item: %v", err)
		}
	}
	return s, nil
}

func newByteArray(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 0, 2); err != nil {
		return nil, err
	}
	switch len(args) {
	case 0:
		return &pyByteArray{}, nil
	case 1:
		if b, ok := args[0].(pyBytes); ok {
			return &pyByteArray{b: append([]byte(nil), b...)}, nil
		}
	case 2:
		b, err := encodeString(g, args[0], args[1])
		if err != nil {
			return nil, err
		}
		return &pyByteArray{b: b}, nil
	}
	return nil, failf(ErrUnsupported, "bytearray(%s) is not supported", typeName(args[0]))
}

// codecsEncode is _codecs.encode(str, encoding[, errors]): Python 3 writes
// bytes objects at protocol 2 as _codecs.encode(latin1_text, "latin1").
func codecsEncode(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 2, 3); err != nil {
		return nil, err
	}
	b, err := encodeString(g, args[0], args[1])
	if err != nil {
		return nil, err
	}
	return pyBytes(b), nil
}

func encodeString(g *pyGlobal, text, encoding any) ([]byte, error) {
	s, ok1 := text.(string)
	enc, ok2 := encoding.(string)
	if !ok1 || !ok2 {
		return nil, failf(ErrFormat, "%s takes a str and an encoding name", g.name)
	}
	switch strings.ToLower(strings.ReplaceAll(enc, "_", "-")) {
	case "latin1", "latin-1", "iso-8859-1", "iso8859-1":
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff {
				return nil, failf(ErrFormat, "%s: character U+%04X is not latin-1", g.name, r)
			}
			b = append(b, byte(r))
		}
		return b, nil
	case "utf-8", "utf8":
		return []byte(s), nil
	}
	return nil, failf(ErrUnsupported, "%s: encoding %q is not supported", g.name, enc)
}

func newComplex(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 0, 2); err != nil {
		return nil, err
	}
	var parts [2]float64
	for i, a := range args {
		f, ok := toFloat(a)
		if !ok {
			return nil, failf(ErrUnsupported, "complex(%s) is not supported", typeName(a))
		}
		parts[i] = f
	}
	return complex(parts[0], parts[1]), nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, !math.IsInf(f, 0)
	}
	return 0, false
}

// newSize is torch.Size(iterable of ints): a tuple.
func newSize(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 0, 1); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return pyTuple{}, nil
	}
	items := sequence(args[0])
	if items == nil {
		return nil, failf(ErrFormat, "torch.Size of a %s", typeName(args[0]))
	}
	out := make(pyTuple, len(items))
	for i, v := range items {
		n, ok := v.(int64)
		if !ok {
			return nil, failf(ErrFormat, "torch.Size item %d is a %s, not an int", i, typeName(v))
		}
		out[i] = n
	}
	return out, nil
}

// newDevice is torch.device("cpu") / torch.device("cuda", 0): its name.
func newDevice(g *pyGlobal, args pyTuple) (any, error) {
	if err := argCount(g, args, 1, 2); err != nil {
		return nil, err
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, failf(ErrFormat, "torch.device of a %s", typeName(args[0]))
	}
	if len(args) == 2 {
		n, ok := args[1].(int64)
		if !ok {
			return nil, failf(ErrFormat, "torch.device index is a %s", typeName(args[1]))
		}
		s += ":" + big.NewInt(n).String()
	}
	return s, nil
}
