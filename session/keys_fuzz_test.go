package session

import (
	"bytes"
	"testing"
)

// FuzzParseKey: any key name an agent sends parses or is refused, never
// panics; a parsed key sends bytes in every terminal mode, a bounded
// number of them, and its repeat count multiplies one press exactly.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"enter", "ctrl+c", "down*5", "alt+x", "shift+tab", "f12", "ctrl+alt+delete",
		"esc*500", "up*0", "up*501", "*", "ctrl+", "+", "ctrl+shift+up*3", " Tab ", "ctrl+\x00", "alt+é", "f13", "down**2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if k != (Key{}) {
				t.Fatalf("ParseKey(%q) failed with a key: %+v", s, k)
			}
			return
		}
		if k.Repeat < 1 || k.Repeat > MaxKeyRepeat {
			t.Fatalf("ParseKey(%q).Repeat = %d", s, k.Repeat)
		}
		one := k
		one.Repeat = 1
		for _, m := range []KeyModes{{}, {AppCursor: true}, {AppKeypad: true}, {AppCursor: true, AppKeypad: true}} {
			b := one.Bytes(m)
			if len(b) == 0 || len(b) > 16 {
				t.Fatalf("ParseKey(%q) in %+v sends %q", s, m, b)
			}
			if all := k.Bytes(m); !bytes.Equal(all, bytes.Repeat(b, k.Repeat)) {
				t.Fatalf("ParseKey(%q)*%d sends %q, not %d presses of %q", s, k.Repeat, all, k.Repeat, b)
			}
		}
	})
}
