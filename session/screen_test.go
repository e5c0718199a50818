package session

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/graphemes"
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

// FuzzScreen feeds the screen arbitrary output. Beyond not crashing: no
// handler may panic (each one is total on any bytes), no byte is lost to a
// bad sequence (text written after the garbage, in the same chunk, reaches
// the screen), and output split across writes reads as it does whole.
func FuzzScreen(f *testing.F) {
	f.Add([]byte("hello\r\n\x1b[31mred\x1b[0m"), uint8(5), uint8(20), uint16(3))
	f.Add([]byte("\x1b[?1049h\x1b[2J\x1b[Hx\x1b[?1049l日本"), uint8(3), uint8(10), uint16(7))
	f.Add([]byte("\x1b]133;;\x07after"), uint8(5), uint8(20), uint16(4))
	f.Add([]byte("cafe\u0301 👩\u200d💻 ❤\ufe0f 🇫🇷 नमस्ते\x1b[5b\x1b[3P\x1b[2@"), uint8(4), uint8(11), uint16(9))
	f.Add([]byte("\x1b[99999999999999999999P\x1b[99999999999999999999;1H"), uint8(5), uint8(20), uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, rows, cols uint8, split uint16) {
		r, c := int(rows%50)+2, int(cols%100)+10
		s := NewScreen(r, c, 50, func([]byte) {})
		start := s.CursorPos()
		const marker = "Zq9 marker"
		// CAN ends any sequence (four: a UTF-8 sequence may eat three),
		// RIS resets the modes, ESC ( B the character set.
		s.Write(append(append([]byte{}, b...), "\x18\x18\x18\x18\x1bc\x1b(B"+marker...))
		if !strings.Contains(s.Render(), marker) {
			t.Fatalf("text after the input was lost: screen %q", s.Render())
		}
		if s.recovered != 0 {
			t.Fatalf("a handler panicked on %q", b)
		}
		// Split anywhere, the same.
		one, two := NewScreen(r, c, 50, nil), NewScreen(r, c, 50, nil)
		one.Write(b)
		k := int(split) % (len(b) + 1)
		two.Write(b[:k])
		two.Write(b[k:])
		if one.Render() != two.Render() || one.CursorPos() != two.CursorPos() {
			t.Fatalf("split at %d: %q vs %q", k, one.Render(), two.Render())
		}
		s.Resize(c/2+2, r+10)
		s.Write(b)
		_ = s.Render()
		_, _ = s.Text(start, s.CursorPos())
		_, _ = s.Text(Pos{Line: start.Line, Col: 3}, Pos{Line: s.CursorPos().Line, Col: 5})
		_ = s.Scrollback(100)
		_ = s.LineText()
		if row, col := s.Cursor(); row < 0 || col < 0 || row >= s.rows || col >= s.cols {
			t.Fatalf("cursor %d,%d", row, col)
		}
		if s.recovered != 0 {
			t.Fatalf("a handler panicked on %q after a resize", b)
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

// A row that wrapped keeps the blanks at its end: they are text a human
// reads, and joining the rows must not glue two words together.
func TestSoftWrapKeepsTrailingBlanks(t *testing.T) {
	for _, c := range []struct {
		cols int
		in   string
	}{
		{11, "connect to server"}, // the space sits in the last column
		{17, "Permission denied, please try again."},
		{10, "a         b"},                 // a whole row of blanks after the first letter
		{12, "ends with blanks   \r\nnext"}, // a hard line end still trims
	} {
		s := NewScreen(5, c.cols, 100, nil)
		start := s.CursorPos()
		feed(s, c.in)
		want := strings.ReplaceAll(c.in, "   \r\n", "\n")
		if got, _ := s.Text(start, s.CursorPos()); got != want {
			t.Errorf("cols %d: Text = %q, want %q", c.cols, got, want)
		}
		if got := s.Scrollback(10); got != want {
			t.Errorf("cols %d: Scrollback = %q, want %q", c.cols, got, want)
		}
	}
}

// Any text, wrapped at any width, reads back as it was written.
func TestWrappedTextReadsBackAtEveryWidth(t *testing.T) {
	words := []string{"connect", "to", "server", "Permission", "denied", "日本語", "café", "a", "", "   ", "x"}
	for cols := 10; cols <= 41; cols++ {
		for seed := range 20 {
			var b strings.Builder
			for i := range 60 {
				b.WriteString(words[(i*7+seed*13+cols)%len(words)])
				if (i+seed)%11 == 0 {
					b.WriteString("\r\n")
				} else {
					b.WriteByte(' ')
				}
			}
			in := b.String()
			s := NewScreen(4, cols, 1000, nil)
			start := s.CursorPos()
			feed(s, in)
			got, _ := s.Text(start, s.CursorPos())
			lines := strings.Split(strings.ReplaceAll(in, "\r\n", "\n"), "\n")
			for i := range lines {
				lines[i] = strings.TrimRight(lines[i], " ")
			}
			if want := strings.Join(lines, "\n"); got != want {
				t.Fatalf("cols %d seed %d:\n got %q\nwant %q", cols, seed, got, want)
			}
		}
	}
}

// A cell holds a whole grapheme cluster: combining marks, ZWJ sequences,
// variation selectors and flags stay with their base character and take
// the columns a terminal gives them.
func TestGraphemeClusters(t *testing.T) {
	for _, c := range []struct {
		name, in string
		col      int // where the cursor ends
	}{
		{"combining acute", "cafe\u0301|", 5},
		{"precomposed", "café|", 5},
		{"devanagari", "नमस्ते|", 4},
		{"thai", "สวัสดีที่นี่|", 7},
		{"zwj sequence", "👩\u200d💻|", 3},
		{"family", "👨\u200d👩\u200d👧\u200d👦|", 3},
		{"variation selector 16", "❤\ufe0f|", 3},
		{"flag", "🇫🇷🇩🇪|", 5},
		{"hangul jamo", "\u1100\u1161\u11a8|", 3},
		{"skin tone", "👍🏽|", 3},
		{"keycap", "1\ufe0f\u20e3|", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewScreen(3, 20, 100, nil)
			start := s.CursorPos()
			feed(s, c.in)
			if got := s.Render(); got != c.in {
				t.Errorf("Render = %q, want %q", got, c.in)
			}
			if got, _ := s.Text(start, s.CursorPos()); got != c.in {
				t.Errorf("Text = %q, want %q", got, c.in)
			}
			if _, col := s.Cursor(); col != c.col {
				t.Errorf("cursor column %d, want %d", col, c.col)
			}
			if got := s.LineText(); got != c.in {
				t.Errorf("LineText = %q, want %q", got, c.in)
			}
			feed(s, "\r\n\r\n\r\n")
			if got := strings.TrimRight(s.Scrollback(10), "\n"); got != c.in {
				t.Errorf("Scrollback = %q, want %q", got, c.in)
			}
			// A column inside the line maps to a cluster boundary in the
			// scrollback as on the screen.
			if got, _ := s.Text(Pos{Line: start.Line, Col: c.col - 1}, Pos{Line: start.Line, Col: c.col}); got != "|" {
				t.Errorf("Text of the last column = %q, want %q", got, "|")
			}
		})
	}
}

// Clusters split across writes, at the wrap column, and overwritten.
func TestGraphemeClustersAcrossWritesAndWraps(t *testing.T) {
	s := NewScreen(3, 5, 100, nil)
	start := s.CursorPos()
	feed(s, "abcde", "\u0301", "f\u0308")
	if got, _ := s.Text(start, s.CursorPos()); got != "abcde\u0301f\u0308" {
		t.Fatalf("mark at the wrap column: %q", got)
	}
	// An emoji that a selector widens at the last column stays narrow
	// rather than spill out of the row.
	s = NewScreen(3, 5, 100, nil)
	feed(s, "abcd❤", "\ufe0f", "x")
	if got := s.Render(); got != "abcd❤\ufe0f\nx" {
		t.Fatalf("widened at the last column: %q", got)
	}
	// Overwriting a cluster replaces all of it.
	s = NewScreen(3, 10, 100, nil)
	feed(s, "e\u0301\u0302x\rab")
	if got := s.Render(); got != "ab" {
		t.Fatalf("overwrite: %q", got)
	}
	// A hostile stream of marks on one base is bounded.
	s = NewScreen(3, 10, 100, nil)
	feed(s, "a"+strings.Repeat("\u0301", 100000)+"b")
	if got := s.Render(); !strings.HasPrefix(got, "a\u0301") || !strings.HasSuffix(got, "b") || len(got) > 200 {
		t.Fatalf("a thousand marks: %d bytes, %q…", len(got), got[:min(len(got), 20)])
	}
}

// The table of clusters stays bounded however many distinct clusters a
// program prints.
func TestClusterTableIsBounded(t *testing.T) {
	s := NewScreen(24, 80, 100, nil)
	var b strings.Builder
	for i := range 200000 {
		b.WriteRune(rune('a' + i%26))
		b.WriteRune(rune(0x300 + i%0x70))
		b.WriteRune(rune(0x300 + (i/0x70)%0x70))
	}
	feed(s, b.String())
	if n := len(s.clusters); n > 2*24*80*2+1100 {
		t.Fatalf("%d clusters held for a 24x80 screen", n)
	}
	if !strings.Contains(s.Render(), "\u0300") && !strings.Contains(s.Render(), "\u0301") {
		t.Fatal("marks lost")
	}
}

// A malformed sequence never costs the output that follows it.
func TestMalformedSequencesKeepTheOutput(t *testing.T) {
	for _, seq := range []string{
		"\x1b]133;;\x07", "\x1b]133;\x07", "\x1b]133\x07", "\x1b]133;;;;\x1b\\", "\x1b]133;D;notanumber\x07",
		"\x1b]133;AB\x07", "\x1b]0;\x07", "\x1b]7\x07", "\x1b]\x07", "\x1b];\x07",
		"\x1b[99999999999999999999999P", "\x1b[99999999999999999999999@", "\x1b[99999999999999999999999X",
		"\x1b[99999999999999999999999A", "\x1b[99999999999999999999999;99999999999999999999999H",
		"\x1b[99999999999999999999999b", "\x1b[99999999999999999999999L", "\x1b[99999999999999999999999M",
		"\x1b[99999999999999999999999S", "\x1b[99999999999999999999999T", "\x1b[99999999999999999999999r",
		"\x1b[?99999999999999999999999h", "\x1b[99999999999999999999999;1r", "\x1bP1;2|xyz\x1b\\",
		"\x1b[" + strings.Repeat("1;", 100) + "m",
	} {
		s := NewScreen(5, 20, 100, nil)
		feed(s, "before "+seq+"after")
		if got := s.Scrollback(100); !strings.Contains(got, "after") {
			t.Errorf("%q: Scrollback = %q: output after the sequence was lost", seq, got)
		}
		if s.recovered != 0 {
			t.Errorf("%q: the parser panicked %d times", seq, s.recovered)
		}
	}
}

// BenchmarkScreenWriteUnicode measures text that is not ASCII: CJK, accents
// written with combining marks, emoji with joiners and selectors.
func BenchmarkScreenWriteUnicode(b *testing.B) {
	var buf strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&buf, "%6d 日本語のテキスト cafe\u0301 नमस्ते 👩\u200d💻 ❤\ufe0f Привет мир %d\r\n", i, i)
	}
	data := []byte(buf.String())
	s := NewScreen(24, 80, DefaultScrollback, nil)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		s.Write(data)
	}
}

// The fast paths agree with the segmentation library: a mark that always
// extends does, and a simple character after a simple one never does.
func TestClusterFastPathsAgreeWithUAX29(t *testing.T) {
	bases := []string{"a", " ", "é", "e\u0301", "日", "한", "\u1100", "क", "क्", "ก", "👩", "👩\u200d", "🇫", "\u0600", "Ж", "ア"}
	joins := func(base string, r rune) bool {
		b := append([]byte(base), string(r)...)
		g := graphemes.FromBytes(b)
		g.Next()
		return len(g.Value()) == len(b)
	}
	for r := rune(0); r <= 0x1ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		if alwaysExtends(r) {
			for _, base := range bases {
				if !joins(base, r) {
					t.Fatalf("U+%04X after %q: a new cluster, but alwaysExtends says it joins", r, base)
				}
			}
		}
		if simpleRune(r) && r >= 0x20 {
			for _, base := range bases {
				last, _ := utf8.DecodeLastRuneInString(base)
				if (last < 0x600 || simpleRune(last)) && joins(base, r) {
					t.Fatalf("U+%04X after %q joins, but the fast path starts a new cluster", r, base)
				}
			}
		}
	}
}
