package gguf

import (
	"fmt"
	"strings"
)

// FileType is llama.cpp's llama_ftype, stored as general.file_type. Its
// numbering differs from both ggml_type and ggml_ftype.
type FileType uint32

// The llama_ftype values of include/llama.h. Ids 4–6 and 33–35 were removed.
const (
	FileTypeAllF32    FileType = 0
	FileTypeF16       FileType = 1
	FileTypeQ4_0      FileType = 2
	FileTypeQ4_1      FileType = 3
	FileTypeQ8_0      FileType = 7
	FileTypeQ5_0      FileType = 8
	FileTypeQ5_1      FileType = 9
	FileTypeQ2_K      FileType = 10
	FileTypeQ3_K_S    FileType = 11
	FileTypeQ3_K_M    FileType = 12
	FileTypeQ3_K_L    FileType = 13
	FileTypeQ4_K_S    FileType = 14
	FileTypeQ4_K_M    FileType = 15
	FileTypeQ5_K_S    FileType = 16
	FileTypeQ5_K_M    FileType = 17
	FileTypeQ6_K      FileType = 18
	FileTypeIQ2_XXS   FileType = 19
	FileTypeIQ2_XS    FileType = 20
	FileTypeQ2_K_S    FileType = 21
	FileTypeIQ3_XS    FileType = 22
	FileTypeIQ3_XXS   FileType = 23
	FileTypeIQ1_S     FileType = 24
	FileTypeIQ4_NL    FileType = 25
	FileTypeIQ3_S     FileType = 26
	FileTypeIQ3_M     FileType = 27
	FileTypeIQ2_S     FileType = 28
	FileTypeIQ2_M     FileType = 29
	FileTypeIQ4_XS    FileType = 30
	FileTypeIQ1_M     FileType = 31
	FileTypeBF16      FileType = 32
	FileTypeTQ1_0     FileType = 36
	FileTypeTQ2_0     FileType = 37
	FileTypeMXFP4_MOE FileType = 38
	FileTypeNVFP4     FileType = 39
	FileTypeQ1_0      FileType = 40
	FileTypeQ2_0      FileType = 41

	// FileTypeGuessed is LLAMA_FTYPE_GUESSED: not specified in the file.
	FileTypeGuessed FileType = 1024
)

// fileTypeInfo names a file type twice: Name as llama-quantize's preset
// ("Q4_K_M"), Description as llama_model_ftype_name prints it ("Q4_K - Medium").
type fileTypeInfo struct {
	Name        string
	Description string
}

var fileTypeTable = map[FileType]fileTypeInfo{
	FileTypeAllF32:    {"F32", "all F32"},
	FileTypeF16:       {"F16", "F16"},
	FileTypeQ4_0:      {"Q4_0", "Q4_0"},
	FileTypeQ4_1:      {"Q4_1", "Q4_1"},
	FileTypeQ8_0:      {"Q8_0", "Q8_0"},
	FileTypeQ5_0:      {"Q5_0", "Q5_0"},
	FileTypeQ5_1:      {"Q5_1", "Q5_1"},
	FileTypeQ2_K:      {"Q2_K", "Q2_K - Medium"},
	FileTypeQ3_K_S:    {"Q3_K_S", "Q3_K - Small"},
	FileTypeQ3_K_M:    {"Q3_K_M", "Q3_K - Medium"},
	FileTypeQ3_K_L:    {"Q3_K_L", "Q3_K - Large"},
	FileTypeQ4_K_S:    {"Q4_K_S", "Q4_K - Small"},
	FileTypeQ4_K_M:    {"Q4_K_M", "Q4_K - Medium"},
	FileTypeQ5_K_S:    {"Q5_K_S", "Q5_K - Small"},
	FileTypeQ5_K_M:    {"Q5_K_M", "Q5_K - Medium"},
	FileTypeQ6_K:      {"Q6_K", "Q6_K"},
	FileTypeIQ2_XXS:   {"IQ2_XXS", "IQ2_XXS - 2.0625 bpw"},
	FileTypeIQ2_XS:    {"IQ2_XS", "IQ2_XS - 2.3125 bpw"},
	FileTypeQ2_K_S:    {"Q2_K_S", "Q2_K - Small"},
	FileTypeIQ3_XS:    {"IQ3_XS", "IQ3_XS - 3.3 bpw"},
	FileTypeIQ3_XXS:   {"IQ3_XXS", "IQ3_XXS - 3.0625 bpw"},
	FileTypeIQ1_S:     {"IQ1_S", "IQ1_S - 1.5625 bpw"},
	FileTypeIQ4_NL:    {"IQ4_NL", "IQ4_NL - 4.5 bpw"},
	FileTypeIQ3_S:     {"IQ3_S", "IQ3_S - 3.4375 bpw"},
	FileTypeIQ3_M:     {"IQ3_M", "IQ3_S mix - 3.66 bpw"},
	FileTypeIQ2_S:     {"IQ2_S", "IQ2_S - 2.5 bpw"},
	FileTypeIQ2_M:     {"IQ2_M", "IQ2_M - 2.7 bpw"},
	FileTypeIQ4_XS:    {"IQ4_XS", "IQ4_XS - 4.25 bpw"},
	FileTypeIQ1_M:     {"IQ1_M", "IQ1_M - 1.75 bpw"},
	FileTypeBF16:      {"BF16", "BF16"},
	FileTypeTQ1_0:     {"TQ1_0", "TQ1_0 - 1.69 bpw ternary"},
	FileTypeTQ2_0:     {"TQ2_0", "TQ2_0 - 2.06 bpw ternary"},
	FileTypeMXFP4_MOE: {"MXFP4_MOE", "MXFP4 MoE"},
	FileTypeNVFP4:     {"NVFP4", "NVFP4"},
	FileTypeQ1_0:      {"Q1_0", "Q1_0"},
	FileTypeQ2_0:      {"Q2_0", "Q2_0"},
}

// Known reports whether ft is a file type llama.cpp defines today.
func (ft FileType) Known() bool { _, ok := fileTypeTable[ft]; return ok }

// String returns llama-quantize's name of ft ("Q4_K_M").
func (ft FileType) String() string {
	if info, ok := fileTypeTable[ft]; ok {
		return info.Name
	}
	if ft == FileTypeGuessed {
		return "GUESSED"
	}
	return fmt.Sprintf("ftype(%d)", uint32(ft))
}

// Description returns the name llama.cpp prints for ft ("Q4_K - Medium").
func (ft FileType) Description() string {
	if info, ok := fileTypeTable[ft]; ok {
		return info.Description
	}
	return "unknown, may not work"
}

// ParseFileType resolves a llama-quantize file-type name, case-insensitively.
// Only canonical names are accepted here; the preset aliases (Q4_K → Q4_K_M,
// COPY) are llama-quantize's and live with the presets.
func ParseFileType(name string) (FileType, error) {
	for ft, info := range fileTypeTable {
		if strings.EqualFold(info.Name, name) {
			return ft, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown file type %q", ErrUnsupported, name)
}
