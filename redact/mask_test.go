package redact

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestMaskSpan(t *testing.T) {
	for _, c := range []struct {
		in   string
		a, b int
		want string
	}{
		{"key: abcd rest", 5, 9, "key: **** rest"},
		{"a \x1b[31mred\x1b[0m b", 2, 15, "a \x1b[31m***\x1b[0m b"},
		{"x\x1b]0;title\x07yz", 0, 13, "*\x1b]0;title\x07**"},
		// A span cut inside a character masks all of it.
		{"ab ٱ cd", 4, 6, "ab ** cd"},
		{"ab ٱ cd", 3, 4, "ab ** cd"},
		{"日本", 1, 2, "***本"},
		{"日本", 2, 4, "******"},
		// A character just after an escape is text.
		{"\x1bé", 0, 3, "\x1b**"},
		// A character inside a string is kept.
		{"\x1b]0;é\x07", 0, 7, "\x1b]0;é\x07"},
	} {
		p := []byte(c.in)
		var m TextMasker
		m.MaskSpan(p, c.a, c.b)
		if string(p) != c.want {
			t.Errorf("MaskSpan(%q, %d, %d) = %q, want %q", c.in, c.a, c.b, p, c.want)
		}
	}
}

// FuzzMaskSpan: a masked span keeps the output's length and its UTF-8
// valid, changes no byte outside the span widened to whole characters,
// and changes a byte only to the mask.
func FuzzMaskSpan(f *testing.F) {
	f.Add("key: \x1b[1mabcd\"<é after\r\n", 5, 20)
	f.Add("?00000000000000&0?000000000000000?0ٱ0", 14, 36)
	f.Add("\x1b]0;t\x07x\x1b[31mred\x1b[0m\r\n日本", 0, 99)
	f.Fuzz(func(t *testing.T, in string, a, b int) {
		p := []byte(in)
		var m TextMasker
		wa, wb := m.MaskSpan(p, a, b)
		if len(p) != len(in) {
			t.Fatalf("length %d, %d given", len(p), len(in))
		}
		if utf8.ValidString(in) && !utf8.Valid(p) {
			t.Fatalf("masked %q into invalid UTF-8 %q", in, p)
		}
		lo, hi := max(a, 0), min(b, len(in))
		if lo < hi && (wa > lo || wb < hi) {
			t.Fatalf("span [%d,%d) widened to [%d,%d)", a, b, wa, wb)
		}
		if wa < hi && (wa < lo-(utf8.UTFMax-1) || wb > hi+(utf8.UTFMax-1)) {
			t.Fatalf("span [%d,%d) widened past a character to [%d,%d)", a, b, wa, wb)
		}
		for i := range p {
			if p[i] != in[i] && (p[i] != MaskByte || i < wa || i >= wb) {
				t.Fatalf("byte %d changed outside [%d,%d):\n%q\n%q", i, wa, wb, in, p)
			}
		}
		if !bytes.Equal(p[:max(wa, 0)], []byte(in[:max(wa, 0)])) {
			t.Fatal("bytes before the span changed")
		}
	})
}
