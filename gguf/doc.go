// Package gguf holds the vocabulary of the GGUF file format: the metadata value
// types, the key/value and tensor-info models, the ggml tensor type table, the
// llama.cpp file-type table, the well-known metadata keys, and the one binary
// codec that both the reader (readers/gguf) and the writer (writer) use.
//
// The facts here are taken from ggml/include/gguf.h, ggml/include/ggml.h,
// include/llama.h and gguf-py/gguf/constants.py of llama.cpp commit 0c1e570.
package gguf

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// Version is the newest GGUF version; versions 2 and 3 are read.
const Version = 3

// DefaultAlignment is the data alignment used when general.alignment is absent.
const DefaultAlignment = 32

// MaxStringLength is the longest string accepted (GGUF_MAX_STRING_LENGTH in gguf.cpp).
const MaxStringLength = 1 << 30

// MaxArrayLength is the largest array element count accepted
// (GGUF_MAX_ARRAY_ELEMENTS in gguf.cpp).
const MaxArrayLength = 1 << 30

// MaxDims is the most dimensions a tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// MaxNameLength is the longest tensor name in bytes: GGML_MAX_NAME is 64
// including the terminating NUL, so names of 64 bytes or more are refused.
const MaxNameLength = 63

// QuantizationVersion is GGML_QNT_VERSION, written as general.quantization_version.
const QuantizationVersion = 2
