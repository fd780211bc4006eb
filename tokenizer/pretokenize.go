package tokenizer

import (
	"fmt"
	"strings"
	"sync"
)

// preType is llama.cpp's llama_vocab_pre_type, spelled as its enum name
// without the LLAMA_VOCAB_PRE_TYPE_ prefix.
type preType string

// preFlags are the tokenizer settings llama.cpp's load attaches to a pre
// name (llama-vocab.cpp L2155-2430) besides the pre type itself.
type preFlags struct {
	typ          preType
	ignoreMerges bool // a word that is a whole token skips the merges
	addBOS       bool // add_bos default true
	addSep       bool // add_sep default true
	escapeSpaces bool // ' ' → U+2581 before BPE (SPM-style BPE)
	noBOS        bool // the default BOS id becomes LLAMA_TOKEN_NULL
	noLowercase  bool // normalizer lowercase default false
}

// preNames maps every tokenizer.ggml.pre value llama.cpp accepts for a BPE
// vocabulary to its pre type and flags; any other value is an error there
// ("unknown pre-tokenizer type"), and here.
var preNames = func() map[string]preFlags {
	m := map[string]preFlags{
		"default":                  {typ: preDefault},
		"minicpm5":                 {typ: preMinicpm5, ignoreMerges: true},
		"deepseek-llm":             {typ: preDeepseekLlm},
		"deepseek-coder":           {typ: preDeepseekCoder},
		"deepseek-v3":              {typ: preDeepseek3Llm},
		"spark2_5":                 {typ: preSpark25},
		"youtu":                    {typ: preYoutu, ignoreMerges: true},
		"falcon":                   {typ: preFalcon},
		"mpt":                      {typ: preMpt},
		"starcoder":                {typ: preStarcoder},
		"jais-2":                   {typ: preJais2},
		"gemma4":                   {typ: preGemma4, escapeSpaces: true},
		"granite-embed-multi-311m": {typ: preGemma4, escapeSpaces: true},
		"sarvam-moe":               {typ: preSarvamMoe, escapeSpaces: true},
		"jina-v1-en":               {typ: preGpt2, addSep: true},
		"jina-v2-code":             {typ: preGpt2, addSep: true},
		"roberta-bpe":              {typ: preGpt2, addSep: true},
		"whitespace":               {typ: preWhitespace, noLowercase: true},
		"refact":                   {typ: preRefact},
		"command-r":                {typ: preCommandR},
		"qwen35":                   {typ: preQwen35},
		"stablelm2":                {typ: preStablelm2},
		"olmo":                     {typ: preOlmo},
		"dbrx":                     {typ: preDbrx},
		"smaug-bpe":                {typ: preSmaug},
		"poro-chat":                {typ: prePoro},
		"chatglm-bpe":              {typ: preChatglm4, noBOS: true},
		"glm4":                     {typ: preChatglm4, noBOS: true, ignoreMerges: true},
		"glm5":                     {typ: preChatglm4, noBOS: true, ignoreMerges: true},
		"viking":                   {typ: preViking},
		"jais":                     {typ: preJais},
		"tekken":                   {typ: preTekken, ignoreMerges: true, addBOS: true},
		"smollm":                   {typ: preSmollm},
		"codeshell":                {typ: preCodeshell},
		"bloom":                    {typ: preBloom},
		"gpt3-finnish":             {typ: preGpt3Finnish},
		"exaone":                   {typ: preExaone},
		"exaone4":                  {typ: preGpt2},
		"exaone-moe":               {typ: preExaoneMoe},
		"chameleon":                {typ: preChameleon, addBOS: true},
		"minerva-7b":               {typ: preMinerva},
		"megrez":                   {typ: preQwen2},
		"granite-embed-multi-97m":  {typ: preGraniteEmbMulti, ignoreMerges: true},
		"superbpe":                 {typ: preSuperbpe},
		"trillion":                 {typ: preTrillion},
		"granite-docling":          {typ: preGraniteDocling},
		"seed-coder":               {typ: preSeedCoder},
		"hunyuan":                  {typ: preHunyuan},
		"hunyuan-dense":            {typ: preHunyuanDense},
		"hy_v4":                    {typ: preHyV4},
		"joyai-llm":                {typ: preJoyaiLlm},
		"kimi-k2":                  {typ: preKimiK2},
		"ufakzeka":                 {typ: preUfakzeka},
		"grok-2":                   {typ: preGrok2},
		"afmoe":                    {typ: preAfmoe},
		"laguna":                   {typ: preLaguna},
		"minimax-m2":               {typ: preMinimaxM2},
		"solar-open":               {typ: preSolarOpen},
		"mellum2":                  {typ: preMellum2},
	}
	for _, n := range []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"} {
		m[n] = preFlags{typ: preLlama3, ignoreMerges: true, addBOS: true}
	}
	for _, n := range []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert"} {
		m[n] = preFlags{typ: preGpt2}
	}
	for _, n := range []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"} {
		m[n] = preFlags{typ: preQwen2}
	}
	for _, n := range []string{"gpt-4o", "llama4", "kanana2", "talkie"} {
		m[n] = preFlags{typ: preGpt4o}
	}
	for _, n := range []string{"tiny_aya", "cohere2moe"} {
		m[n] = preFlags{typ: preTinyAya}
	}
	for _, n := range []string{"bailingmoe", "bailingmoe2", "llada-moe"} {
		m[n] = preFlags{typ: preBailingmoe}
	}
	return m
}()

// preRegexSet is the regex list llm_tokenizer_bpe applies for some pre types
// (llama-vocab.cpp L280-575), the strings exactly as llama.cpp has them.
type preRegexSet struct {
	types   []preType
	rawUTF8 bool // byte_encode = false: words stay UTF-8, no GPT-2 byte mapping
	exprs   []string
}

const (
	preLlama3          preType = "LLAMA3"
	preJais2           preType = "JAIS2"
	preDbrx            preType = "DBRX"
	preSmaug           preType = "SMAUG"
	preDeepseekLlm     preType = "DEEPSEEK_LLM"
	preDeepseek3Llm    preType = "DEEPSEEK3_LLM"
	preHunyuanDense    preType = "HUNYUAN_DENSE"
	preJoyaiLlm        preType = "JOYAI_LLM"
	preHyV4            preType = "HY_V4"
	preSpark25         preType = "SPARK2_5"
	preYoutu           preType = "YOUTU"
	preDeepseekCoder   preType = "DEEPSEEK_CODER"
	preFalcon          preType = "FALCON"
	preStarcoder       preType = "STARCODER"
	preRefact          preType = "REFACT"
	preCommandR        preType = "COMMAND_R"
	preSmollm          preType = "SMOLLM"
	preCodeshell       preType = "CODESHELL"
	preExaone          preType = "EXAONE"
	preMinerva         preType = "MINERVA"
	preMellum2         preType = "MELLUM2"
	preGpt2            preType = "GPT2"
	preMpt             preType = "MPT"
	preOlmo            preType = "OLMO"
	preJais            preType = "JAIS"
	preTrillion        preType = "TRILLION"
	preGraniteDocling  preType = "GRANITE_DOCLING"
	preStablelm2       preType = "STABLELM2"
	preQwen2           preType = "QWEN2"
	preHunyuan         preType = "HUNYUAN"
	preSolarOpen       preType = "SOLAR_OPEN"
	preQwen35          preType = "QWEN35"
	prePoro            preType = "PORO"
	preBloom           preType = "BLOOM"
	preGpt3Finnish     preType = "GPT3_FINNISH"
	preChatglm4        preType = "CHATGLM4"
	preViking          preType = "VIKING"
	preTekken          preType = "TEKKEN"
	preChameleon       preType = "CHAMELEON"
	preGpt4o           preType = "GPT4O"
	preMinimaxM2       preType = "MINIMAX_M2"
	preGraniteEmbMulti preType = "GRANITE_EMB_MULTI"
	preTinyAya         preType = "TINY_AYA"
	preKimiK2          preType = "KIMI_K2"
	preSuperbpe        preType = "SUPERBPE"
	preBailingmoe      preType = "BAILINGMOE"
	preSeedCoder       preType = "SEED_CODER"
	preUfakzeka        preType = "UFAKZEKA"
	preGrok2           preType = "GROK_2"
	preAfmoe           preType = "AFMOE"
	preLaguna          preType = "LAGUNA"
	preExaoneMoe       preType = "EXAONE_MOE"
	preGemma4          preType = "GEMMA4"
	preSarvamMoe       preType = "SARVAM_MOE"
	preMinicpm5        preType = "MINICPM5"
	preWhitespace      preType = "WHITESPACE"
	preDefault         preType = "DEFAULT"
)

// preRegexSets lists the regex set of every pre type (taken as data from llama.cpp src/llama-vocab.cpp, llm_tokenizer_bpe).
var preRegexSets = []preRegexSet{
	{
		types: []preType{preLlama3},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preJais2},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}`,
		},
	},
	{
		types: []preType{preDbrx, preSmaug},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preDeepseekLlm},
		exprs: []string{
			"[\r\n]",
			`\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+`,
			`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
			`\s+$`,
			`[一-龥ࠀ-一가-퟿]+`,
			`\p{N}+`,
		},
	},
	{
		types: []preType{preDeepseek3Llm, preHunyuanDense, preJoyaiLlm, preHyV4},
		exprs: []string{
			`\p{N}{1,3}`,
			`[一-龥぀-ゟ゠-ヿ]+`,
			"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
		},
	},
	{
		types: []preType{preSpark25},
		exprs: []string{
			`\p{N}{1,3}`,
			`[一-龥぀-ゟ゠-ヿ]+`,
			"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
			`\p{N}`,
		},
	},
	{
		types: []preType{preYoutu},
		exprs: []string{
			`[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+`,
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preDeepseekCoder},
		exprs: []string{
			"[\r\n]",
			`\s?\p{L}+`,
			`\s?\p{P}+`,
			`[一-龥ࠀ-一가-퟿]+`,
			`\p{N}`,
		},
	},
	{
		types: []preType{preFalcon},
		exprs: []string{
			"[\\p{P}\\$\\+<=>\\^~\\|`]+",
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
			`[0-9][0-9][0-9]`,
		},
	},
	{
		types: []preType{preStarcoder, preRefact, preCommandR, preSmollm, preCodeshell, preExaone, preMinerva, preMellum2},
		exprs: []string{
			`\p{N}`,
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
		},
	},
	{
		types: []preType{preGpt2, preMpt, preOlmo, preJais, preTrillion, preGraniteDocling},
		exprs: []string{
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
		},
	},
	{
		types: []preType{preStablelm2, preQwen2, preHunyuan, preSolarOpen},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preQwen35},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{prePoro, preBloom, preGpt3Finnish},
		exprs: []string{
			` ?[^(\s|.,!?…。，、।۔،)]+`,
		},
	},
	{
		types: []preType{preChatglm4},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preViking},
		exprs: []string{
			` ?[^(\s|.,!?…。，、।۔،)]+`,
			`\p{N}`,
		},
	},
	{
		types: []preType{preTekken},
		exprs: []string{
			`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preChameleon},
		exprs: []string{
			`<sentinel:[0-9]+>`,
			`(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z`,
			`([\t\n]|    |  )`,
			`\p{N}`,
			"[\\p{P}!-/:-@\\[-`{-~]",
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
		},
	},
	{
		types: []preType{preGpt4o, preMinimaxM2},
		exprs: []string{
			`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preGraniteEmbMulti},
		exprs: []string{
			`[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preTinyAya},
		exprs: []string{
			`\d{1,3}(?=(?:\d{3})*\b)`,
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preKimiK2},
		exprs: []string{
			`\p{Han}+`,
		},
	},
	{
		types: []preType{preSuperbpe},
		exprs: []string{
			`\p{N}+`,
			`(?=(\d{3})+(?!\d))`,
		},
	},
	{
		types: []preType{preBailingmoe},
		exprs: []string{
			`'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preSeedCoder},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preUfakzeka},
		exprs: []string{
			`[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preGrok2},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preAfmoe},
		exprs: []string{
			`\p{AFMoE_digits}`,
			`[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+`,
			"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
		},
	},
	{
		types: []preType{preLaguna},
		exprs: []string{
			`[^\n]+|[\n]+`,
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types: []preType{preExaoneMoe},
		exprs: []string{
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`,
		},
	},
	{
		types:   []preType{preGemma4},
		rawUTF8: true,
		exprs: []string{
			`[^\n]+|[\n]+`,
		},
	},
	{
		types:   []preType{preSarvamMoe},
		rawUTF8: true,
		exprs: []string{
			`[^\n]+|[\n]+`,
		},
	},
	{
		types: []preType{preMinicpm5},
		exprs: []string{
			`\p{N}{1,3}`,
			`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		},
	},
	{
		types:   []preType{preWhitespace},
		rawUTF8: true,
		exprs: []string{
			`\S+`,
		},
	},
	{
		types: []preType{preDefault},
		exprs: []string{
			`[\p{P}\$\+<=>\^~\|]+`,
			`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
			`\p{N}+`,
			`[0-9][0-9][0-9]`,
		},
	},
}

// The regex strings llama.cpp's unicode_regex_split_custom recognises
// (unicode.cpp L1050-1082) and splits with hand-written code.
const (
	reGPT2      = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	reLlama3    = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reLlama3I   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2     = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen35    = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reKimiK2    = `\p{Han}+`
	reAfmoe     = `\p{AFMoE_digits}`
	reNewlines  = `[^\n]+|[\n]+`
	reDigits3   = `\d{1,3}(?=(?:\d{3})*\b)`
	replacement = 0xFFFD
)

// customSplit is a hand-written splitter: it refines spans of codepoints.
type customSplit func(t *flagTable, cpts []uint32, offsets []int) []int

var customSplits = map[string]customSplit{
	reGPT2:     splitGPT2,
	reLlama3:   splitLlama3,
	reLlama3I:  splitLlama3,
	reQwen2:    splitQwen2,
	reQwen35:   splitQwen35,
	reKimiK2:   splitKimiK2,
	reAfmoe:    splitAfmoe,
	reNewlines: splitNewlines,
	reDigits3:  splitAfmoe, // llama.cpp reuses the AFMoE digit grouping
}

// The Unicode categories llama.cpp's fallback replaces by one byte each
// (unicode_regex_split k_ucat_enum / k_ucat_cpt / k_ucat_map, L1216-1240).
var (
	ucatNames = []struct {
		name string
		flag uint16
	}{
		{`\p{L}`, flagLetter}, {`\p{Ll}`, flagLetter}, {`\p{Lm}`, flagLetter}, {`\p{Lo}`, flagLetter},
		{`\p{Lt}`, flagLetter}, {`\p{Lu}`, flagLetter}, {`\p{M}`, flagAccentMark}, {`\p{N}`, flagNumber},
		{`\p{P}`, flagPunctuation}, {`\p{S}`, flagSymbol},
	}
	ucatByte = map[uint16]byte{
		flagNumber: 0xD1, flagLetter: 0xD2, flagPunctuation: 0xD3, flagAccentMark: 0xD4, flagSymbol: 0xD5,
	}
	ucatASCII = map[uint16]string{
		flagNumber:      `0-9`,
		flagLetter:      `A-Za-z`,
		flagPunctuation: `!-#%-*,-/:-;?-@\[-\]_\{\}`,
		flagAccentMark:  ``,
		flagSymbol:      `\$\+<->^` + "`" + `\|\~`,
	}
)

// ucatIn reports whether a regex names one of the collapsible categories.
func ucatIn(expr string) bool {
	for _, u := range ucatNames {
		if strings.Contains(expr, u.name) {
			return true
		}
	}
	return false
}

// collapseRegex rewrites a regex for the collapsed text the way
// unicode_regex_split does (L1305-1350): each \p{X} becomes the category's
// byte plus its ASCII members, bracketed unless already inside [].
func collapseRegex(expr string) (string, error) {
	for _, c := range decodeLenient(expr) {
		if c >= 128 {
			return "", fmt.Errorf("%w: regex includes both unicode categories and non-ASCII characters", errRegex)
		}
	}
	out := make([]byte, 0, len(expr)*2)
	inside := false
	for i := 0; i < len(expr); i++ {
		if expr[i] == '[' && (i == 0 || expr[i-1] != '\\') {
			out = append(out, '[')
			inside = true
			continue
		}
		if inside && expr[i] == ']' && expr[i-1] != '\\' {
			out = append(out, ']')
			inside = false
			continue
		}
		if expr[i] == '\\' && i+3 < len(expr) && expr[i+1] == 'p' && expr[i+2] == '{' {
			if j := strings.IndexByte(expr[i+3:], '}') + i + 3; j >= i+3 && j <= i+10 {
				pat := expr[i : j+1]
				for _, u := range ucatNames {
					if u.name != pat {
						continue
					}
					if !inside {
						out = append(out, '[')
					}
					out = append(out, ucatByte[u.flag])
					out = append(out, ucatASCII[u.flag]...)
					if !inside {
						out = append(out, ']')
					}
					i = j
					break
				}
				if i == j {
					continue
				}
			}
		}
		out = append(out, expr[i])
	}
	return string(out), nil
}

// splitter is one regex of a set: a fast path or a compiled fallback
// regex over the collapsed bytes or over the codepoints.
type splitter struct {
	custom    customSplit
	re        *ecmaRegex
	collapsed bool
}

// preTokenizer is a compiled regex set (unicode_regex_split).
type preTokenizer struct {
	splitters    []splitter
	needCollapse bool
	byteEncode   bool
}

var preCache sync.Map // preType → *preTokenizer or error

// preTokenizerFor compiles (once) the regex set of a pre type.
func preTokenizerFor(pt preType) (*preTokenizer, error) {
	if v, ok := preCache.Load(pt); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*preTokenizer), nil
	}
	p, err := compilePreTokenizer(pt)
	if err != nil {
		preCache.Store(pt, err)
		return nil, err
	}
	v, _ := preCache.LoadOrStore(pt, p)
	return v.(*preTokenizer), nil
}

func compilePreTokenizer(pt preType) (*preTokenizer, error) {
	var set *preRegexSet
	for i := range preRegexSets {
		for _, t := range preRegexSets[i].types {
			if t == pt {
				set = &preRegexSets[i]
			}
		}
	}
	if set == nil {
		return nil, fmt.Errorf("%w: no regex set for pre type %s", ErrVocab, pt)
	}
	p := &preTokenizer{byteEncode: !set.rawUTF8}
	for _, expr := range set.exprs {
		if ucatIn(expr) {
			p.needCollapse = true
		}
		if c, ok := customSplits[expr]; ok {
			p.splitters = append(p.splitters, splitter{custom: c})
			continue
		}
		s := splitter{collapsed: ucatIn(expr)}
		var pattern []uint32
		if s.collapsed {
			ce, err := collapseRegex(expr)
			if err != nil {
				return nil, fmt.Errorf("pre type %s: %w", pt, err)
			}
			pattern = make([]uint32, len(ce))
			for i := 0; i < len(ce); i++ {
				pattern[i] = uint32(ce[i])
			}
		} else {
			pattern = decodeLenient(expr)
		}
		re, err := compileECMA(pattern)
		if err != nil {
			return nil, fmt.Errorf("pre type %s: regex %q: %w", pt, expr, err)
		}
		s.re = re
		p.splitters = append(p.splitters, s)
	}
	return p, nil
}

// split is unicode_regex_split: it cuts text into words with each regex of
// the set in turn, then (byteEncode) maps every byte of every word through
// GPT-2's byte-to-unicode table.
func (p *preTokenizer) split(text string) ([]string, error) {
	t := flags()
	cpts := decodeLenient(text)
	var collapsed, wide []uint32
	if p.needCollapse {
		// Codepoints below 128 stay, whitespace becomes \v, the five
		// categories their byte, anything else 0xD0 (L1262-1290).
		collapsed = make([]uint32, len(cpts))
		for i, c := range cpts {
			if c < 128 {
				collapsed[i] = c
				continue
			}
			f := cptFlags(t, c)
			if f&flagWhitespace != 0 {
				collapsed[i] = 0x0B
			} else if b, ok := ucatByte[f&maskCategories]; ok {
				collapsed[i] = uint32(b)
			} else {
				collapsed[i] = 0xD0
			}
		}
	}
	offsets := []int{len(cpts)}
	budget := regexBaseSteps + regexStepsPerCpt*len(cpts)
	for _, s := range p.splitters {
		switch {
		case s.custom != nil:
			// A fast path finds nothing only when every span is empty, and
			// then so does llama.cpp's regex fallback; keep the spans.
			if tmp := s.custom(t, cpts, offsets); len(tmp) > 0 {
				offsets = tmp
			}
		case s.collapsed:
			var err error
			if offsets, err = s.re.split(collapsed, offsets, budget); err != nil {
				return nil, err
			}
		default:
			if wide == nil {
				// std::wregex's \s knows only ASCII whitespace (L1376-1382).
				wide = make([]uint32, len(cpts))
				for i, c := range cpts {
					if c > 0x7F && cptFlags(t, c)&flagWhitespace != 0 {
						c = 0x0B
					}
					wide[i] = c
				}
			}
			var err error
			if offsets, err = s.re.split(wide, offsets, budget); err != nil {
				return nil, err
			}
		}
	}
	words := make([]string, 0, len(offsets))
	var buf []byte
	start := 0
	for _, n := range offsets {
		buf = buf[:0]
		for _, c := range cpts[start : start+n] {
			var err error
			if buf, err = appendCpt(buf, c); err != nil {
				return nil, err
			}
		}
		start += n
		if !p.byteEncode {
			words = append(words, string(buf))
			continue
		}
		// unicode_byte_encoding_process re-decodes and re-encodes the word
		// first, which is the identity on what appendCpt produced.
		enc := make([]byte, 0, 2*len(buf))
		for _, b := range buf {
			enc = append(enc, byteRunes[b]...)
		}
		words = append(words, string(enc))
	}
	return words, nil
}

// spans walks the spans of offsets; fn gets [lo, hi) of each.
func spans(offsets []int, fn func(lo, hi int)) {
	start := 0
	for _, n := range offsets {
		fn(start, start+n)
		start += n
	}
}

// emitter is the fast paths' _add_token: it appends the length of the
// token ending at end (if not empty) and moves the previous end.
type emitter struct {
	out  []int
	prev int
}

func (e *emitter) add(end int) int {
	n := end - e.prev
	if n > 0 {
		e.out = append(e.out, n)
	}
	e.prev = end
	return n
}

func isContractionTail(c1, c2 uint32, pos, hi int) int {
	if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
		return 2
	}
	if pos+2 < hi && (c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l') {
		return 3
	}
	return 0
}

// splitGPT2 is unicode_regex_split_custom_gpt2 (unicode.cpp L215-330):
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
func splitGPT2(t *flagTable, cpts []uint32, offsets []int) []int {
	e := &emitter{out: make([]int, 0, len(offsets))}
	const wsLN = flagWhitespace | flagLetter | flagNumber
	spans(offsets, func(lo, hi int) {
		e.prev = lo
		for pos := lo; pos < hi; {
			cpt := cptAt(cpts, lo, hi, pos)
			f := flagsAt(t, cpts, lo, hi, pos)
			if cpt == '\'' && pos+1 < hi {
				c1, c2 := cptAt(cpts, lo, hi, pos+1), cptAt(cpts, lo, hi, pos+2)
				if n := isContractionTail(c1, c2, pos, hi); n > 0 {
					pos += e.add(pos + n)
					continue
				}
			}
			f2 := f
			if cpt == ' ' {
				f2 = flagsAt(t, cpts, lo, hi, pos+1)
			}
			space := 0
			if cpt == ' ' {
				space = 1
			}
			switch {
			case f2&flagLetter != 0:
				pos += space
				for f2&flagLetter != 0 {
					pos++
					f2 = flagsAt(t, cpts, lo, hi, pos)
				}
				e.add(pos)
				continue
			case f2&flagNumber != 0:
				pos += space
				for f2&flagNumber != 0 {
					pos++
					f2 = flagsAt(t, cpts, lo, hi, pos)
				}
				e.add(pos)
				continue
			case f2&wsLN == 0 && f2 != 0:
				pos += space
				for f2&wsLN == 0 && f2 != 0 {
					pos++
					f2 = flagsAt(t, cpts, lo, hi, pos)
				}
				e.add(pos)
				continue
			}
			nws := 0
			for flagsAt(t, cpts, lo, hi, pos+nws)&flagWhitespace != 0 {
				nws++
			}
			if nws > 1 && cptAt(cpts, lo, hi, pos+nws) != outOfRange {
				pos += nws - 1
				e.add(pos)
				continue
			}
			if nws > 0 {
				pos += nws
				e.add(pos)
				continue
			}
			pos++
			e.add(pos)
		}
	})
	return e.out
}

// llama3Like is the shared body of the llama3, qwen2 and qwen35 fast paths
// (unicode.cpp L333-736): digits are grouped by up to maxDigits, and marks
// join letters when withMarks is set.
func llama3Like(t *flagTable, cpts []uint32, offsets []int, maxDigits int, withMarks bool) []int {
	e := &emitter{out: make([]int, 0, len(offsets))}
	letter := flagLetter
	if withMarks {
		letter |= flagAccentMark
	}
	wsLN := flagWhitespace | letter | flagNumber
	spans(offsets, func(lo, hi int) {
		e.prev = lo
		for pos := lo; pos < hi; {
			cpt := cptAt(cpts, lo, hi, pos)
			f := flagsAt(t, cpts, lo, hi, pos)
			// (?i:'s|'t|'re|'ve|'m|'ll|'d)
			if cpt == '\'' && pos+1 < hi {
				c1 := toLower(cptAt(cpts, lo, hi, pos+1))
				c2 := uint32(outOfRange)
				if pos+2 < hi {
					c2 = toLower(cptAt(cpts, lo, hi, pos+2))
				}
				if n := isContractionTail(c1, c2, pos, hi); n > 0 {
					pos += e.add(pos + n)
					continue
				}
			}
			// [^\r\n\p{L}\p{N}]?\p{L}+ (qwen35: [\p{L}\p{M}]+)
			if !(cpt == '\r' || cpt == '\n' || f&flagNumber != 0) {
				if f&letter != 0 || flagsAt(t, cpts, lo, hi, pos+1)&letter != 0 {
					pos++
					for flagsAt(t, cpts, lo, hi, pos)&letter != 0 {
						pos++
					}
					e.add(pos)
					continue
				}
			}
			// \p{N}{1,3} (qwen: \p{N})
			if f&flagNumber != 0 {
				ini := pos
				for flagsAt(t, cpts, lo, hi, pos)&flagNumber != 0 {
					pos++
					if pos-ini >= maxDigits {
						e.add(pos)
						ini = pos
					}
				}
				e.add(pos)
				continue
			}
			// <space>?[^\s\p{L}\p{N}]+[\r\n]*
			f2 := f
			if cpt == ' ' {
				f2 = flagsAt(t, cpts, lo, hi, pos+1)
			}
			if f2&wsLN == 0 && f != 0 {
				if cpt == ' ' {
					pos++
				}
				for f2&wsLN == 0 && f2 != 0 {
					pos++
					f2 = flagsAt(t, cpts, lo, hi, pos)
				}
				for c := cptAt(cpts, lo, hi, pos); c == '\r' || c == '\n'; c = cptAt(cpts, lo, hi, pos) {
					pos++
				}
				e.add(pos)
				continue
			}
			nws, lastRN := 0, 0
			for flagsAt(t, cpts, lo, hi, pos+nws)&flagWhitespace != 0 {
				if c := cptAt(cpts, lo, hi, pos+nws); c == '\r' || c == '\n' {
					lastRN = pos + nws + 1
				}
				nws++
			}
			// \s*[\r\n]+
			if lastRN > 0 {
				pos = lastRN
				e.add(pos)
				continue
			}
			// \s+(?!\S)
			if nws > 1 && cptAt(cpts, lo, hi, pos+nws) != outOfRange {
				pos += nws - 1
				e.add(pos)
				continue
			}
			// \s+
			if nws > 0 {
				pos += nws
				e.add(pos)
				continue
			}
			pos++
			e.add(pos)
		}
	})
	return e.out
}

// splitLlama3 is unicode_regex_split_custom_llama3.
func splitLlama3(t *flagTable, cpts []uint32, offsets []int) []int {
	return llama3Like(t, cpts, offsets, 3, false)
}

// splitQwen2 is unicode_regex_split_custom_qwen2.
func splitQwen2(t *flagTable, cpts []uint32, offsets []int) []int {
	return llama3Like(t, cpts, offsets, 1, false)
}

// splitQwen35 is unicode_regex_split_custom_qwen35.
func splitQwen35(t *flagTable, cpts []uint32, offsets []int) []int {
	return llama3Like(t, cpts, offsets, 1, true)
}

// isHan is unicode_cpt_is_han.
func isHan(c uint32) bool {
	return c >= 0x4E00 && c <= 0x9FFF || c >= 0x3400 && c <= 0x4DBF ||
		c >= 0x20000 && c <= 0x2A6DF || c >= 0x2A700 && c <= 0x2B73F ||
		c >= 0x2B740 && c <= 0x2B81F || c >= 0x2B820 && c <= 0x2CEAF ||
		c >= 0x2CEB0 && c <= 0x2EBEF || c >= 0xF900 && c <= 0xFAFF ||
		c >= 0x2F800 && c <= 0x2FA1F
}

// splitKimiK2 is unicode_regex_split_custom_kimi_k2 (unicode.cpp L776-935).
func splitKimiK2(t *flagTable, cpts []uint32, offsets []int) []int {
	e := &emitter{out: make([]int, 0, len(offsets))}
	const wsLN = flagWhitespace | flagLetter | flagNumber
	spans(offsets, func(lo, hi int) {
		e.prev = lo
		letterAt := func(p int) bool {
			return flagsAt(t, cpts, lo, hi, p)&flagLetter != 0 && !isHan(cptAt(cpts, lo, hi, p))
		}
		for pos := lo; pos < hi; {
			cpt := cptAt(cpts, lo, hi, pos)
			f := flagsAt(t, cpts, lo, hi, pos)
			// [\p{Han}]+
			if isHan(cpt) {
				for isHan(cptAt(cpts, lo, hi, pos)) {
					pos++
				}
				e.add(pos)
				continue
			}
			// letter words without Han, optional leading character and
			// contraction
			leadable := !(cpt == '\r' || cpt == '\n' || f&flagLetter != 0 || f&flagNumber != 0)
			if f&flagLetter != 0 && !isHan(cpt) || leadable && letterAt(pos+1) {
				lead := false
				if leadable {
					lead = true
					pos++
				}
				has := false
				for letterAt(pos) {
					has = true
					pos++
				}
				if has || !lead && letterAt(pos) {
					if !has {
						pos++
					}
					for letterAt(pos) {
						pos++
					}
					if cptAt(cpts, lo, hi, pos) == '\'' && pos+1 < hi {
						c1 := toLower(cptAt(cpts, lo, hi, pos+1))
						if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
							pos += 2
						} else if pos+2 < hi {
							c2 := toLower(cptAt(cpts, lo, hi, pos+2))
							if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
								pos += 3
							}
						}
					}
					e.add(pos)
					continue
				} else if lead {
					pos--
				}
			}
			// \p{N}{1,3}
			if f&flagNumber != 0 {
				ini := pos
				for flagsAt(t, cpts, lo, hi, pos)&flagNumber != 0 {
					pos++
					if pos-ini >= 3 {
						e.add(pos)
						ini = pos
					}
				}
				e.add(pos)
				continue
			}
			// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
			f2 := f
			if cpt == ' ' {
				f2 = flagsAt(t, cpts, lo, hi, pos+1)
			}
			if f2&wsLN == 0 && f2 != 0 {
				if cpt == ' ' {
					pos++
				}
				for f2&wsLN == 0 && f2 != 0 {
					pos++
					f2 = flagsAt(t, cpts, lo, hi, pos)
				}
				for c := cptAt(cpts, lo, hi, pos); c == '\r' || c == '\n'; c = cptAt(cpts, lo, hi, pos) {
					pos++
				}
				e.add(pos)
				continue
			}
			nws, lastRN := 0, 0
			for flagsAt(t, cpts, lo, hi, pos+nws)&flagWhitespace != 0 {
				if c := cptAt(cpts, lo, hi, pos+nws); c == '\r' || c == '\n' {
					lastRN = pos + nws + 1
				}
				nws++
			}
			if lastRN > 0 {
				pos = lastRN
				e.add(pos)
				continue
			}
			if nws > 1 && cptAt(cpts, lo, hi, pos+nws) != outOfRange {
				pos += nws - 1
				e.add(pos)
				continue
			}
			if nws > 0 {
				pos += nws
				e.add(pos)
				continue
			}
			pos++
			e.add(pos)
		}
	})
	return e.out
}

// splitAfmoe is unicode_regex_split_custom_afmoe (unicode.cpp L938-1000):
// a digit run is cut into a leading group of len%3 digits, then groups of
// three; the text before a run goes with the run's first group.
func splitAfmoe(t *flagTable, cpts []uint32, offsets []int) []int {
	e := &emitter{out: make([]int, 0, len(offsets))}
	spans(offsets, func(lo, hi int) {
		e.prev = lo
		for pos := lo; pos < hi; {
			if flagsAt(t, cpts, lo, hi, pos)&flagNumber == 0 {
				pos++
				continue
			}
			first, count := pos, 0
			for flagsAt(t, cpts, lo, hi, pos)&flagNumber != 0 && pos < hi {
				count++
				pos++
			}
			cur := first
			if r := count % 3; r > 0 {
				e.add(cur + r)
				cur += r
			}
			for cur < first+count {
				e.add(cur + 3)
				cur += 3
			}
		}
		if e.prev < hi {
			e.add(hi)
		}
	})
	return e.out
}

// splitNewlines is unicode_regex_split_custom_newlines: [^\n]+|[\n]+.
func splitNewlines(_ *flagTable, cpts []uint32, offsets []int) []int {
	out := make([]int, 0, len(offsets))
	spans(offsets, func(lo, hi int) {
		for pos := lo; pos < hi; {
			nl := cpts[pos] == '\n'
			run := pos
			for pos < hi && (cpts[pos] == '\n') == nl {
				pos++
			}
			out = append(out, pos-run)
		}
	})
	return out
}
