package session

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzHeadTail: whatever a command prints, in whatever chunks, exec's
// result keeps its head and tail as they were written, and a repair of
// any span changes bytes into the mask only, never into invalid UTF-8.
func FuzzHeadTail(f *testing.F) {
	f.Add("key: abcd é after\r\n", uint8(16), uint8(3), int64(5), int64(12))
	f.Add("日本語 and more text than fits", uint8(10), uint8(1), int64(0), int64(99))
	f.Add("ab ٱ cd ef gh ij", uint8(8), uint8(2), int64(4), int64(14))
	f.Fuzz(func(t *testing.T, out string, max, chunk uint8, start, end int64) {
		out = strings.ToValidUTF8(out, "?")
		h := &headTail{max: int(max)}
		n := int(chunk) + 1
		for i := 0; i < len(out); i += n {
			h.Write([]byte(out[i:min(i+n, len(out))]))
		}
		before, cut := h.String()
		h.repair(start, end)
		after, cut2 := h.String()
		if cut != cut2 || len(after) != len(before) {
			t.Fatalf("repair reshaped the result:\n%q\n%q", before, after)
		}
		if !cut && before != out {
			t.Fatalf("kept %q of %q", before, out)
		}
		for i := range after {
			if after[i] != before[i] && after[i] != '*' {
				t.Fatalf("byte %d changed into %q:\n%q\n%q", i, after[i], before, after)
			}
		}
		if !cut && !utf8.ValidString(after) {
			t.Fatalf("repair left invalid UTF-8: %q", after)
		}
	})
}
