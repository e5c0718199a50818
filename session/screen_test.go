package session

import (
	"fmt"
	"strings"
	"testing"
)

func feed(s *Screen, chunks ...string) {
	for _, c := range chunks {
		s.Write([]byte(c))
	}
}

func TestScreenBasics(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"plain", "hello\r\nworld", "hello\nworld"},
		{"carriage return overwrites", "progress 10%\rprogress 99%\rdone       ", "done       %"},
		{"erase line", "progress 10%\r\x1b[Kdone", "done"},
		{"sgr stripped", "\x1b[1;31mred\x1b[0m plain", "red plain"},
		{"cursor moves", "abc\x1b[2Dx", "axc"},
		{"absolute position", "\x1b[3;5Hx", "\n\n    x"},
		{"backspace", "abc\b\bZ", "aZc"},
		{"tab", "a\tb", "a       b"},
		{"wide characters", "日本語|x", "日本語|x"},
		{"wide overwrite splits", "日本\r\x1b[Ca", " a本"},
		{"insert chars", "abc\r\x1b[2@", "  abc"},
		{"delete chars", "abcdef\r\x1b[2P", "cdef"},
		{"erase display below", "line1\r\nline2\x1b[1;1H\x1b[J", ""},
		{"dec line drawing", "\x1b(0lqk\x1b(B", "┌─┐"},
		{"osc title ignored in text", "\x1b]0;title\x07text", "text"},
		{"repeat", "a\x1b[3b", "aaaa"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewScreen(5, 20, 100, nil)
			feed(s, c.in)
			if got := s.Render(); got != c.want {
				t.Fatalf("Render() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestScreenWrapsAndJoins(t *testing.T) {
	s := NewScreen(4, 10, 100, nil)
	start := s.CursorPos()
	feed(s, strings.Repeat("x", 25), "\r\nnext")
	text, lost := s.Text(start, s.CursorPos())
	if lost != 0 || text != strings.Repeat("x", 25)+"\nnext" {
		t.Fatalf("Text = %q (lost %d): soft-wrapped lines must join", text, lost)
	}
	// A wide character that does not fit in the last column wraps whole.
	s = NewScreen(3, 5, 100, nil)
	feed(s, "abcd日")
	if got := s.Render(); got != "abcd\n日" {
		t.Fatalf("wide wrap: %q", got)
	}
}

func TestScrollbackIsBoundedAndNumbered(t *testing.T) {
	s := NewScreen(5, 20, 1000, nil)
	start := s.CursorPos()
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(s, "%d\r\n", i)
	}
	if s.FirstLine() != 3000+1-1000-5 {
		t.Fatalf("FirstLine = %d", s.FirstLine())
	}
	text, lost := s.Text(start, s.CursorPos())
	if lost != s.FirstLine() {
		t.Fatalf("lost = %d, want %d", lost, s.FirstLine())
	}
	lines := strings.Split(text, "\n")
	if lines[0] != fmt.Sprint(s.FirstLine()+1) || lines[len(lines)-2] != "3000" {
		t.Fatalf("kept %q … %q", lines[0], lines[len(lines)-2])
	}
	if got := s.Scrollback(3); got != "2998\n2999\n3000" {
		t.Fatalf("Scrollback(3) = %q", got)
	}
}

func TestScrollbackHoldsTenThousandLines(t *testing.T) {
	s := NewScreen(24, 80, DefaultScrollback, nil)
	for i := 1; i <= 12000; i++ {
		fmt.Fprintf(s, "line %d\r\n", i)
	}
	sb := strings.Split(s.Scrollback(DefaultScrollback), "\n")
	if len(sb) != DefaultScrollback || sb[len(sb)-1] != "line 12000" {
		t.Fatalf("scrollback holds %d lines ending %q", len(sb), sb[len(sb)-1])
	}
}

func TestAltScreenRestoresMain(t *testing.T) {
	s := NewScreen(5, 20, 100, nil)
	feed(s, "$ vim\r\n")
	feed(s, "\x1b[?1049h\x1b[H\x1b[2J~\r\n~\r\n\x1b[5;1H-- INSERT --")
	if !s.AltScreen() || !strings.Contains(s.Render(), "-- INSERT --") {
		t.Fatalf("alt screen: %q", s.Render())
	}
	feed(s, "\x1b[?1049l")
	if s.AltScreen() || s.Render() != "$ vim" {
		t.Fatalf("after leaving alt screen: %q", s.Render())
	}
	if strings.Contains(s.Scrollback(100), "INSERT") {
		t.Fatal("the alternate screen leaked into the scrollback")
	}
}

func TestScreenAnswersQueries(t *testing.T) {
	var replies []string
	s := NewScreen(24, 80, 100, func(b []byte) { replies = append(replies, string(b)) })
	feed(s, "\x1b[5;10H", "\x1b[6n", "\x1b[c", "\x1b[>c", "\x1b[5n", "\x1b[18t")
	want := []string{"\x1b[5;10R", "\x1b[?62;22c", "\x1b[>1;95;0c", "\x1b[0n", "\x1b[8;24;80t"}
	if fmt.Sprint(replies) != fmt.Sprint(want) {
		t.Fatalf("replies = %q, want %q", replies, want)
	}
}

func TestModesForKeys(t *testing.T) {
	s := NewScreen(5, 20, 100, nil)
	feed(s, "\x1b[?1h\x1b=")
	if !s.AppCursor() || !s.AppKeypad() {
		t.Fatal("DECCKM/DECKPAM not tracked")
	}
	up, _ := ParseKey("up")
	if got := string(up.Bytes(KeyModes{AppCursor: s.AppCursor()})); got != "\x1bOA" {
		t.Fatalf("up in application mode = %q", got)
	}
	feed(s, "\x1b[?1l")
	if got := string(up.Bytes(KeyModes{AppCursor: s.AppCursor()})); got != "\x1b[A" {
		t.Fatalf("up in normal mode = %q", got)
	}
}

func TestShellMarks(t *testing.T) {
	s := NewScreen(5, 40, 100, nil)
	feed(s, "\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07", "echo hi\r\n\x1b]133;C\x07hi\r\n\x1b]133;D;3\x07\x1b]133;A\x07$ \x1b]133;B\x07")
	marks := s.Marks(3)
	if len(marks) != 4 || marks[0].Kind != MarkOutputStart || marks[1].Kind != MarkCommandEnded || marks[1].ExitCode != 3 || !marks[1].HasCode {
		t.Fatalf("marks = %+v", marks)
	}
	text, _ := s.Text(marks[0].Pos, marks[1].Pos)
	if text != "hi\n" {
		t.Fatalf("output between C and D = %q", text)
	}
	feed(s, "\x1b]133;A;k=s\x07> ")
	if m := s.Marks(7); len(m) != 1 || m[0].Extra != "k=s" {
		t.Fatalf("secondary prompt mark = %+v", m)
	}
}

func TestScreenSurvivesHostileInput(t *testing.T) {
	s := NewScreen(5, 10, 100, nil)
	for _, in := range []string{
		"\x1b[99999;99999H", "\x1b[-1A", "\x1b[0;0r", "\x1b[5;2r", "\x1b[999L", "\x1b[999M", "\x1b[999@", "\x1b[999P",
		"\x1b[999S", "\x1b[999T", "\x1b[999X", "\x1b]" + strings.Repeat("x", 100000) + "\x07", "\xff\xfe\xc3", "\x1b[?1049h\x1b[?1049h\x1b[?1049l",
		strings.Repeat("\x1b[1b", 100), "\x1bc",
	} {
		feed(s, in)
		_ = s.Render()
		_, _ = s.Text(Pos{}, s.CursorPos())
	}
	s.Resize(2, 10)
	s.Resize(50, 200)
	feed(s, "ok")
	if !strings.Contains(s.Render(), "ok") {
		t.Fatalf("screen broken after hostile input: %q", s.Render())
	}
}

func FuzzScreen(f *testing.F) {
	f.Add([]byte("hello\r\n\x1b[31mred\x1b[0m"), uint8(5), uint8(20))
	f.Add([]byte("\x1b[?1049h\x1b[2J\x1b[Hx\x1b[?1049l日本"), uint8(3), uint8(10))
	f.Fuzz(func(t *testing.T, b []byte, rows, cols uint8) {
		r, c := int(rows%50)+2, int(cols%100)+10
		s := NewScreen(r, c, 50, func([]byte) {})
		start := s.CursorPos()
		s.Write(b)
		s.Resize(c/2+2, r+10)
		s.Write(b)
		_ = s.Render()
		_, _ = s.Text(start, s.CursorPos())
		_ = s.Scrollback(100)
		if row, col := s.Cursor(); row < 0 || col < 0 {
			t.Fatalf("cursor %d,%d", row, col)
		}
	})
}

// BenchmarkScreenWrite measures how fast the screen digests typical
// terminal output: coloured lines that scroll.
func BenchmarkScreenWrite(b *testing.B) {
	var buf strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&buf, "\x1b[32m%6d\x1b[0m  -rw-r--r-- 1 user user  4096 Nov 22 10:00 file-%d.go\r\n", i, i)
	}
	data := []byte(buf.String())
	s := NewScreen(24, 80, DefaultScrollback, nil)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		s.Write(data)
	}
}
