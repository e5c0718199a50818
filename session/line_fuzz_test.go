package session

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzLine: whatever is typed, the tracked line stays bounded, is empty
// whenever it is unknown, and a line at Enter that neither the screen nor
// the typing can give is never waved through.
func FuzzLine(f *testing.F) {
	f.Add([]byte("rm -rf *"), "$ rm -rf *", true)
	f.Add([]byte("ls\x1b[A\x7f\x03echo hi\x15"), "", false)
	f.Add([]byte("caf\xc3\xa9\x7f\x7f\x08"), "café", true)
	f.Fuzz(func(t *testing.T, typed []byte, shown string, shownOK bool) {
		var l lineState
		for _, chunk := range bytes.SplitAfter(typed, []byte{0x03}) {
			l.typed(chunk)
			if len(l.text) > maxTracked || l.unknown && l.text != "" {
				t.Fatalf("line %q unknown %v after %q", l.text, l.unknown, chunk)
			}
		}
		if i := bytes.LastIndexByte(typed, 0x03); i >= 0 && !bytes.ContainsFunc(typed[i+1:], func(r rune) bool { return r < 0x20 && r != 0x7f && r != 0x08 }) {
			if l.unknown {
				t.Fatalf("plain text after ctrl+c left the line unknown: %q", typed)
			}
		}
		var judged []string
		err := judgeAtEnter(func(s string) error { judged = append(judged, s); return nil }, shown, shownOK, l)
		if !shownOK && l.unknown && !errors.Is(err, errUnreadable) {
			t.Fatalf("an unreadable line was let through: %v", err)
		}
		for _, j := range judged {
			if strings.TrimSpace(j) == "" {
				t.Fatalf("a blank line was judged: %q", judged)
			}
		}
		l.accepted()
		if l.text != "" || l.unknown {
			t.Fatalf("after Enter: %+v", l)
		}
	})
}

// FuzzMarks: a program's output cannot make a mark without the session's
// key, and the logical line around the cursor always holds the cursor.
func FuzzMarks(f *testing.F) {
	const key = "Kq7x"
	f.Add([]byte("\x1b]133;A;tg=Kq7x\a$ \x1b]133;B;tg=Kq7x\arm -rf *"), uint8(10))
	f.Add([]byte("\x1b]133;B\a\x1b]133;B;tg=wrong\a\x1b]133;D;7;tg=Kq7x\x1b\\"), uint8(5))
	f.Add([]byte("$ rm      -rf *\r\n\x1b[1A\x1b[3G"), uint8(10))
	f.Fuzz(func(t *testing.T, out []byte, cols uint8) {
		s := NewScreen(6, int(cols%60)+4, 20, func([]byte) {})
		s.SetMarkKey(key)
		s.Write(out)
		if n := len(s.Marks(0)); n > 0 && !bytes.Contains(out, []byte("tg="+key)) {
			t.Fatalf("%d marks without the key from %q", n, out)
		}
		cur := s.CursorPos()
		from, to := s.LogicalLine(cur)
		if from.Line > cur.Line || to.Line < cur.Line {
			t.Fatalf("logical line %v..%v does not hold the cursor %v", from, to, cur)
		}
		_, _ = s.Text(from, to)
		if s.recovered != 0 {
			t.Fatalf("a handler panicked on %q", out)
		}
	})
}

// FuzzParseStat: /proc/PID/stat holds the program's own name, which it
// sets as it likes (spaces, parentheses): parsing never panics, and the
// fields after the name are read from the last parenthesis.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (bash) S 1 42 42 34816 42 4194560"))
	f.Add([]byte("7 (a) b) R 1 7 7 0 -1 0"))
	f.Add([]byte("9 (x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseStat(b)
		if ok && bytes.LastIndexByte(b, ')') < 0 {
			t.Fatalf("parsed %q without a name: %+v", b, st)
		}
		if full, ok := func() (statFull, bool) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic on %q: %v", b, r)
				}
			}()
			return parseStatFull(b)
		}(); ok && full.pid != st.pid {
			t.Fatalf("two readings of %q: %+v, %+v", b, st, full)
		}
	})
}
