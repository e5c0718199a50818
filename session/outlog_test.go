package session

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// logScreen is a screen with an output log of max bytes, as a session has.
func logScreen(t *testing.T, rows, cols int, max int64) (*Screen, *outputLog) {
	t.Helper()
	l, err := openOutputLog(t.TempDir(), max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.close() })
	s := NewScreen(rows, cols, 100, nil)
	s.log = l
	return s, l
}

// readAll pages through rows [from, to) of a log.
func readAll(t *testing.T, l *outputLog, from, to int64, budget int) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	var out []string
	for from = max(from, l.first); from < to; {
		rows, wraps, err := l.rowsLocked(from, to, budget)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		text, used, _ := joinRows(rows, wraps, budget)
		out = append(out, text)
		from += int64(used)
	}
	return out
}

func TestOutputLogKeepsEveryRowInOrder(t *testing.T) {
	s, l := logScreen(t, 24, 80, MinOutputLogMax)
	for i := range 50000 {
		fmt.Fprintf(s, "line %d\r\n", i)
		if i%1000 == 0 {
			l.flushIfLarge()
		}
	}
	if l.first != 0 {
		t.Fatalf("dropped from row %d of a log that fits", l.first)
	}
	got := strings.Join(readAll(t, l, 0, s.PushedLines(), 7000), "\n")
	want := make([]string, 0, 50000)
	for i := range int(s.PushedLines()) {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	if got != strings.Join(want, "\n") {
		t.Fatalf("paged log differs: %d bytes, want %d", len(got), len(strings.Join(want, "\n")))
	}
}

func TestOutputLogDropsTheOldestAndCountsThem(t *testing.T) {
	s, l := logScreen(t, 24, 80, MinOutputLogMax)
	const n = 400000 // ~5 MB through a 1 MiB ring
	for i := range n {
		fmt.Fprintf(s, "row %07d\r\n", i)
		if i%1000 == 0 {
			l.flushIfLarge() // as the session's reader does after each batch
		}
	}
	l.mu.Lock()
	l.flushLocked()
	first, start, end := l.first, l.start, l.end
	l.mu.Unlock()
	if end-start > MinOutputLogMax || end-start < MinOutputLogMax-2*logCheckSize {
		t.Fatalf("holds %d bytes of a %d-byte log", end-start, MinOutputLogMax)
	}
	if first == 0 || start == 0 {
		t.Fatal("nothing dropped")
	}
	pages := readAll(t, l, 0, s.PushedLines(), 16000)
	rows := strings.Split(strings.Join(pages, "\n"), "\n")
	if rows[0] != fmt.Sprintf("row %07d", first) {
		t.Fatalf("first row read %q, want row %d", rows[0], first)
	}
	for i, r := range rows {
		if r != fmt.Sprintf("row %07d", first+int64(i)) {
			t.Fatalf("row %d = %q", first+int64(i), r)
		}
	}
	if int64(len(rows)) != s.PushedLines()-first {
		t.Fatalf("%d rows read, want %d", len(rows), s.PushedLines()-first)
	}
	if fi, err := l.f.Stat(); err != nil || fi.Size() > MinOutputLogMax {
		t.Fatalf("file size %v (%v), want ≤ %d", fi.Size(), err, MinOutputLogMax)
	}
	if l.elided != 0 {
		t.Fatalf("%d rows elided", l.elided)
	}
}

// Too much output at once for memory keeps its rows' places, not their
// text, and says so.
func TestOutputLogElidesAFloodBetweenFlushes(t *testing.T) {
	s, l := logScreen(t, 5, 1000, MinOutputLogMax)
	// REP fills a row of a 48-byte cluster: 1000 columns, 48 kB a row,
	// from a few bytes of output.
	feed(s, "👨\u200d👩\u200d👧\u200d👦")
	for range 200 {
		feed(s, "\x1b[999b\r\n👨\u200d👩\u200d👧\u200d👦")
	}
	l.bufMu.Lock()
	size, elided := len(l.buf), l.elided
	l.bufMu.Unlock()
	if size > logBufMax+64<<10 || elided == 0 {
		t.Fatalf("buffered %d bytes, elided %d rows", size, elided)
	}
	l.mu.Lock()
	l.flushLocked()
	rows, _, err := l.rowsLocked(0, s.PushedLines(), 1<<30)
	first := l.first
	l.mu.Unlock()
	if err != nil || int64(len(rows)) != s.PushedLines()-first {
		t.Fatalf("%d rows read from %d, want %d (%v)", len(rows), first, s.PushedLines()-first, err)
	}
}

func TestOutputLogJoinsWrappedRows(t *testing.T) {
	s, l := logScreen(t, 3, 10, MinOutputLogMax)
	in := "connect to server\r\nPermission denied\r\n日本語のテキストです\r\nend"
	feed(s, in, "\r\n\r\n\r\n\r\n")
	got := strings.TrimRight(strings.Join(readAll(t, l, 0, s.PushedLines(), 1000), ""), "\n")
	if want := "connect to server\nPermission denied\n日本語のテキストです\nend"; got != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
	// Paged one row at a time, a wrapped line comes in pieces that join.
	var b strings.Builder
	for r := int64(0); r < s.PushedLines(); r++ {
		l.mu.Lock()
		rows, wraps, _ := l.rowsLocked(r, r+1, 1000)
		l.mu.Unlock()
		text, _, _ := joinRows(rows, wraps, 1000)
		b.WriteString(text)
		if !wraps[0] {
			b.WriteString("\n")
		}
	}
	if got := strings.TrimRight(b.String(), "\n"); got != "connect to server\nPermission denied\n日本語のテキストです\nend" {
		t.Fatalf("row by row = %q", got)
	}
}

func TestOutputLogFileHasNoName(t *testing.T) {
	dir := t.TempDir()
	l, err := openOutputLog(dir, MinOutputLogMax)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("the log has a name in the session's directory: %v", ents)
	}
}

func TestJoinRowsBudget(t *testing.T) {
	rows, wraps := []string{"abc", "def", "ghi"}, []bool{false, false, false}
	if text, used, cut := joinRows(rows, wraps, 7); text != "abc\ndef" || used != 2 || cut {
		t.Fatalf("joinRows = %q %d %v", text, used, cut)
	}
	if text, used, cut := joinRows([]string{"日本語のテキスト"}, []bool{false}, 3); text != "日本語" || used != 1 || !cut {
		t.Fatalf("a row over the budget: %q %d %v", text, used, cut)
	}
	if text, _, _ := joinRows([]string{"a  ", "", "b"}, []bool{true, false, false}, 100); text != "a\nb" {
		t.Fatalf("blanks before a line end: %q", text)
	}
}

// BenchmarkScreenWriteLogged is BenchmarkScreenWrite with the output log a
// session has: every row that scrolls off is buffered and written out.
func BenchmarkScreenWriteLogged(b *testing.B) {
	var buf strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&buf, "\x1b[32m%6d\x1b[0m  -rw-r--r-- 1 user user  4096 Nov 22 10:00 file-%d.go\r\n", i, i)
	}
	data := []byte(buf.String())
	l, err := openOutputLog(b.TempDir(), DefaultOutputLogMax)
	if err != nil {
		b.Fatal(err)
	}
	defer l.close()
	s := NewScreen(24, 80, DefaultScrollback, nil)
	s.log = l
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		// As the session's reader does: a chunk, then a flush if large.
		for p := data; len(p) > 0; {
			n := min(len(p), 16<<10)
			s.Write(p[:n])
			l.flushIfLarge()
			p = p[n:]
		}
	}
}
