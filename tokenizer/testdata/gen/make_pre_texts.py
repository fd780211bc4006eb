#!/usr/bin/env python3
"""Writes pre.inp: short texts that stress the pre-tokenizer regex sets (digit
groups, contractions, letter case, marks, scripts the sets single out, CJK
punctuation, whitespace and newline runs, chameleon's sentinels), in
test-tokenizer-0's .inp format. Ours; only the Python standard library.

    python3 gen/make_pre_texts.py > pre.inp
"""
import sys

SEP = "\n__ggml_vocab_test__\n"
cases = [
    "",
    "1 12 123 1234 12345 123456 1234567 12345678901",
    "1,234,567.89 -0.5e10 3/4 \u00bd \u2153 \u00b2\u00b3 \u2167\u216b \u2460\u2461 \u0661\u0662\u0663 \uff11\uff12\uff13",
    "I'm you're he'll they've she'd it's don't WON'T I'LL SHE'S 'x ''",
    "HelloWorld helloWORLD HELLOworld camelCaseWord snake_case_word ALLCAPS",
    "\u01c5\u01c8 titlecase \u02b0\u02b2 modifiers \u3005\u3031 iteration",
    "e\u0301 a\u0308 n\u0303 \u0915\u093f \u0e01\u0e34 combining marks \u0301\u0302",
    "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 \u3131\u3134 \u3105\u3106\u3107 \ud7a3",
    "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22 \u0e9e\u0eb2\u0eaa\u0eb2\u0ea5\u0eb2\u0ea7 \u1797\u17b6\u179f\u17b6 \u1019\u103c\u1014\u103a\u1019\u102c \ua9a0",
    "\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001\u3002\u300c\u300d\ufe30\ufe4f \uff76\uff80\uff76\uff85",
    "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u05e2\u05d1\u05e8\u05d9\u05ea \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "  \t  \n\n \r\n\r\n   x  \n \u00a0\u3000\u2009y\u2028z\u0085",
    " ?!!... ,,, ;; :) (x) [y] {z} <a> \"q\" `b` ~c ^d |e $f +g =h @i #j %k &l *m /n \\o",
    "a\nb\n\nc\n\n\nd    e\t\tf\n    g\n\t\th",
    "<sentinel:12> IMGIMGABCDZ IMGIMGJZ    \t\n  x",
    "def f(x):\n    return x**2 + 1  # comment\n",
    "https://example.com/a/b?c=1&d=2 user@example.org 10.0.0.1:8080",
    "\U0001f999\U0001f999 \U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f44d\U0001f3fd \U0001f1fa\U0001f1f8",
    "x" + " " * 40 + "y" + "\n" * 9 + "z" + " \n" * 5,
    "\u00c0\u00e9\u00ee\u00f5\u00fc \u00df\u1e9e \u0130\u0131 \u03a3\u03c3\u03c2 \u0391\u0392\u0393 \u212a\u2126",
    "a' 'a a'b 'S 'Ll ' s\u2019 it\u2019s",
    "123abc abc123 1a2b3c 12.34.56 1_000_000",
    "\ufb01\ufb02 \u2160\u2161 \u2170\u2171 \u3007\u3021 \U00010140",
    "ab\x00cd\x1f\x7f\u0080\u009f\u00ad\u200b\u200e\u2066",
]
out = sys.stdout.buffer
for c in cases:
    assert SEP not in c
    out.write((c + SEP).encode())
