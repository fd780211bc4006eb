package load

import "testing"

// TestPyLiteral checks ast.literal_eval's reading of str and bytes
// literals and repr(bytes)[2:-1] on the corners the RWKV world vocabulary
// relies on (the values are Python 3.11's).
func TestPyLiteral(t *testing.T) {
	tests := []struct {
		lit, bytes, repr string
	}{
		{`'\x41\u00e9\U0001F600\101\n'`, "A\u00e9\U0001F600A\n", `A\xc3\xa9\xf0\x9f\x98\x80A\n`},
		{`b'\xff\x00'`, "\xff\x00", `\xff\x00`},
		{`"'"`, "'", `'`},
		{`'\'"'`, `'"`, `\'"`},
		{`'\\'`, `\`, `\\`},
		{`'a' "b"`, "ab", "ab"},
		{`'\q\t\r\x7f'`, "\\q\t\r\x7f", `\\q\t\r\x7f`},
		{`b'\u00e9'`, `\u00e9`, `\\u00e9`},
		{`r'\n'`, `\n`, `\\n`},
	}
	for _, tc := range tests {
		t.Run(tc.lit, func(t *testing.T) {
			b, err := pyLiteral(tc.lit)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.bytes {
				t.Errorf("literal_eval %q, want %q", b, tc.bytes)
			}
			if r := pyBytesReprBody(b); r != tc.repr {
				t.Errorf("repr %s, want %s", r, tc.repr)
			}
		})
	}
	for _, bad := range []string{`'a`, `'a' b'b'`, `"""a"""`, `'\N{DASH}'`, `'\x4'`, `'\U00110000'`, `1`, ``} {
		if b, err := pyLiteral(bad); err == nil {
			t.Errorf("%s: %q, want an error", bad, b)
		}
	}
}
