#!/usr/bin/env python3
"""Writes texts.inp: the tokenizer test texts of ggufkit (ours, not llama.cpp's),
in test-tokenizer-0's .inp format (every case followed by "\n__ggml_vocab_test__\n").

    python3 gen/make_texts.py > texts.inp

Only the Python standard library; deterministic (fixed seed, random.Random with
choice/randint, stable across Python 3 versions).
"""
import random
import sys

SEP = b"\n__ggml_vocab_test__\n"

def u(s):
    return s.encode("utf-8")

cases = [
    # empty, whitespace runs
    b"",
    u(" " * 1000),
    u("\n" * 1000),
    u("\t" * 64),
    u(" \n" * 200),
    u("\r\n" * 100),
    u("a" + " " * 300 + "b"),
    u(" " * 500 + "1"),
    u("x" + " " * 257 + "\n" * 3 + " " * 7),
    u("\n \n\t \u00a0 \u3000 \u2009 x \u1680y\u202fz"),
    u("    Hello\n    Hello\n\n\tWorld  "),
    u("trailing spaces   "),
    u("  two leading, two trailing  "),
    # unicode edge cases
    u("\u00a0nbsp\u00a0and\u00a0more"),
    u("zero\u200bwidth\u200cjoiner\u200dhere\u2060"),
    u("line\u2028separator\u2029paragraph\u0085next"),
    u("\ufeffBOM at start"),
    u("e\u0301 a\u0308 o\u0302\u0323 combining, \u0301 lone mark"),
    u("\u01c4\u01c5\u01c6 titlecase, \ufb01\ufb02 ligatures, \u2126\u212a\u212b compat"),
    u("\uff21\uff42\uff43 fullwidth \uff10\uff11\uff12"),
    u("\u00b2\u00b3\u00b9 \u00bd \u2153 \u216b \u2460 \u0663\u0664\u0665 \u0f22"),
    u("\u0130stanbul \u00df \u1e9e \u03c3\u03c2 \u03a3 \u0386\u0388\u0389"),
    u("\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442, \u0451\u0401"),
    u("\u05e2\u05d1\u05e8\u05d9\u05ea \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0661\u0662\u0663"),
    u("\u0939\u093f\u0928\u094d\u0926\u0940 \u0928\u092e\u0938\u094d\u0924\u0947 \u0e44\u0e17\u0e22 \u0e20\u0e32\u0e29\u0e32"),
    u("\ud55c\uad6d\uc5b4 \uac00\ub098\ub2e4 \u3131\u3134 \u1100\u1161\u11a8"),
    u("\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u30ab\u30bf\u30ab\u30ca\u3002\uff76\uff80\uff76\uff85"),
    u("\u4e2d\u6587\u5b57\u7b26\u6d4b\u8bd5\uff1a\u4f60\u597d\uff0c\u4e16\u754c\uff01" * 20),
    u("\U00020000\U0002a6a5 CJK extension B, \u2ffc\u31ef\U0002ebf0 new in Unicode 15.1"),
    u("\U0010ffff \U000e0001\U000e0041 tags \U0001d400\U0001d7ce math"),
    # emoji
    u("\U0001f999" * 3 + " llama"),
    u("\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family, \U0001f44d\U0001f3fd\U0001f44d\U0001f3ff"),
    u("\U0001f1fa\U0001f1f8\U0001f1eb\U0001f1f7 flags \u2764\ufe0f\u200d\U0001f525"),
    u("\U0001f600" * 100),
    # digits
    u("0123456789" * 50),
    u("1,234,567.89 3.14159265358979 1e-9 0x1F 0b1010"),
    u("2024-12-31T23:59:59Z 10:30pm $1,000,000 \u20ac5 50%"),
    u("\uff11\uff12\uff13 \u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660 \u0967\u0968"),
    u("7" * 1000),
    # contractions and quotes
    u("I'm you're he'll they've she'd it's don't WON'T I'LL 'S 'x '' rock 'n' roll"),
    u("\u2018curly\u2019 \u201cquotes\u201d \u00abguillemets\u00bb \u300cbrackets\u300d"),
    # long words
    u("a" * 600),
    u("pneumonoultramicroscopicsilicovolcanoconiosis" * 10),
    u("abc" * 300),
    u("Donaudampfschifffahrtsgesellschaftskapit\u00e4nsm\u00fctze"),
    # code and markup
    u("def f(x):\n    return x ** 2  # square\n\nprint(f(3))\n"),
    u("int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n"),
    u('{"key": [1, 2.5, null, true], "nested": {"a": "b\\u00e9"}}'),
    u("<html><body class=\"x\">&amp; &lt;tag&gt; &#x1F999;</body></html>"),
    u("https://example.com/path?query=a+b&x=%20#frag user.name+tag@example.org"),
    u("| a | b |\n|---|---|\n| **bold** | _it_ |\n\n> quote\n- item\n"),
    u("$\\frac{a}{b} = \\sum_{i=0}^{n} x_i^2$ \u2200x\u2208\u211d: x\u00b2\u22650"),
    # special-token texts (plain text unless parse_special)
    u("<s>"),
    u("</s>"),
    u("<unk>"),
    u("<s>Hello</s> <unk> world"),
    u("<|endoftext|>"),
    u("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"),
    u("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"),
    u("[CLS] x [SEP] [MASK] [UNK] [PAD]"),
    u("<pad> <extra_id_0> a <extra_id_99></s>"),
    u("<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"),
    u("<|user|>\nhi<|end|>\n<|assistant|>  ok<|endoftext|>"),
    u("<mask> a <mask>"),
    u("<0x41><0x0A> <0xFF>"),
    u("\u2581\u2581leading metaspace\u2581 and \u2581"),
    u("<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"),
    u("<bos><eos> <|channel|>analysis<|message|>"),
    # control characters and invalid UTF-8
    b"a\x00b\x00",
    b"\x01\x02\x1b[31mred\x1b[0m\x7f",
    b"\xed\xa0\x80 lone surrogate \xed\xbf\xbf",
    b"\xc0\x80 overlong \xe0\x80\x80",
    b"\xff\xfe bad bytes \xfe\xff",
    b"truncated \xe2\x82",
    b"abc\x80def\xbf",
    b"\xf4\x8f\xbf\xbf highest",
    b"\xf0\x9f\xa6 cut emoji \xf0\x9f",
    b"\xc3",
    # a long mixed paragraph
    u("The quick brown fox jumps over the lazy dog. " * 5
      + "Le c\u0153ur a ses raisons que la raison ne conna\u00eet point. "
      + "\u0414\u043e\u0431\u0440\u044b\u0439 \u0434\u0435\u043d\u044c! \u3053\u3093\u306b\u3061\u306f\u4e16\u754c\u3002 "
      + "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645. "
      + "It's 9:41 AM, 72\u00b0F (22\u00b0C) \u2014 \u201cperfect\u201d. \U0001f31e\U0001f308\n\n"
      + "    indented code\n\tand a tab\r\n" * 3),
]

# a sharp-edged 4-byte lead beyond U+10FFFF: llama.cpp's BPE and WordPiece
# paths throw "invalid codepoint" on it, SentencePiece takes it byte by byte
cases.append(b"\xf5\x80\x80\x80 beyond U+10FFFF")

pieces = [
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u0085", "\u000b", "\u000c", "\u200b",
    "a", "Hello", "world", "THE", "tokenization", "It's", "'s", "'t", "'RE", "'ll", "'D", "'", "0", "12", "123", "1234",
    "3.14", "\u0663", "\u00b2", "\u216b", ".", ",", "!", "?", "...", "\u2014", "-", "_", "(", ")", "[", "]", "{", "}",
    "<", ">", "/", "\\", "|", "~", "`", "$", "+", "=", "^", "@", "#", "%", "&", "*", ";", ":", "\"",
    "\u00e9", "\u00c9", "\u00fc", "\u00df", "e\u0301", "\ufb01", "\uff21", "\u4e2d", "\u6587\u5b57", "\u3072\u3089", "\ud55c",
    "\u0928\u092e", "\u0e44\u0e17\u0e22", "\u0627\u0644", "\u05e2\u05d1", "\u0391\u03b2", "\u0416\u0436",
    "\U0001f999", "\U0001f601", "\U0001f468\u200d\U0001f469", "\U0001f44d\U0001f3fd",
    "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_end|>", "[CLS]", "[SEP]", "<mask>", "<pad>", "\u2581",
]
rng = random.Random(20241201)
for _ in range(24):
    parts = []
    for _ in range(rng.choice([3, 8, 20, 60])):
        p = rng.choice(pieces)
        if rng.random() < 0.08:
            p = p * rng.randint(2, 30)
        parts.append(u(p))
    cases.append(b"".join(parts))

out = sys.stdout.buffer
for c in cases:
    assert SEP not in c + SEP[:-1]
    out.write(c + SEP)
