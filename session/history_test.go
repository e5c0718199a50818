package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The whole output of a big command stays readable, page by page, and a
// result says where its output sits in it.
func TestReadLogPagesABigOutput(t *testing.T) {
	m := testManager(t, Limits{})
	s := startBash(t, m)
	ctx := context.Background()
	r, err := s.Send(ctx, "seq 1 30000", true, WaitOpts{Timeout: 30 * time.Second})
	if err != nil || r.Completion != CompletionCommandFinished {
		t.Fatalf("seq: %+v %v", r, err)
	}
	// The scrollback (10,000 lines) lost the head; the result says which rows.
	if r.LostLines == 0 || !strings.HasSuffix(r.Output, "\n30000") {
		t.Fatalf("lost %d lines, output ends %q", r.LostLines, r.Output[max(0, len(r.Output)-20):])
	}
	page, err := s.ReadLog(r.LostFrom, 5, 1000)
	if err != nil || page.Text != "1\n2\n3\n4\n5" || page.Next != r.LostFrom+5 || !page.Logged {
		t.Fatalf("first page: %+v %v", page, err)
	}
	// Every row of the output, paged, exactly once.
	var all []string
	for from := r.LostFrom; from < r.RowsEnd; {
		page, err := s.ReadLog(from, int(r.RowsEnd-from), 16000)
		if err != nil || page.Next <= from {
			t.Fatalf("page from %d: %+v %v", from, page, err)
		}
		all = append(all, page.Text)
		from = page.Next
	}
	want := make([]string, 30000)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if got := strings.Join(all, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("paged output: %d bytes, want %d", len(got), len(strings.Join(want, "\n")))
	}
	// Each line of Output begins on the row Rows says.
	lines := strings.Split(r.Output, "\n")
	if len(r.Rows) != len(lines) {
		t.Fatalf("%d rows for %d lines", len(r.Rows), len(lines))
	}
	for _, i := range []int{0, 1, len(lines) / 2, len(lines) - 1} {
		page, _ := s.ReadLog(r.Rows[i], 1, 100)
		if page.Text != lines[i] {
			t.Fatalf("line %d %q is on row %d, which reads %q", i, lines[i], r.Rows[i], page.Text)
		}
	}
	// A negative offset counts from the end: the prompt's row, then back.
	page, _ = s.ReadLog(-3, 2, 100)
	if page.Text != "29999\n30000" {
		t.Fatalf("from the end: %+v", page)
	}
}

// Wrapped lines keep their places: a row offset inside one starts mid-line,
// and a page of rows joins them.
func TestReadLogRowsOfWrappedLines(t *testing.T) {
	m := testManager(t, Limits{})
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: t.TempDir(), Rows: 5, Cols: 10, Mode: ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.WaitStart(ctx, WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Send(ctx, "printf 'connect to server\\nPermission denied\\n'; seq 1 20", true, WaitOpts{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Output, "connect to server\nPermission denied\n1\n") {
		t.Fatalf("output %q", r.Output)
	}
	if r.Rows[1] != r.Rows[0]+2 || r.Rows[2] != r.Rows[1]+2 {
		t.Fatalf("rows %v: each wrapped line takes two", r.Rows[:3])
	}
	page, _ := s.ReadLog(r.Rows[0], 4, 100)
	if page.Text != "connect to server\nPermission denied" {
		t.Fatalf("rows of two wrapped lines: %q", page.Text)
	}
	page, _ = s.ReadLog(r.Rows[0]+1, 1, 100)
	if page.Text != " server" {
		t.Fatalf("the second row of a wrapped line: %q", page.Text)
	}
}

// Without an output log, the scrollback still pages.
func TestReadLogWithoutALog(t *testing.T) {
	m := testManager(t, Limits{})
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY, OutputLogMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.WaitStart(ctx, WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	r, _ := s.Send(ctx, "seq 1 12000", true, WaitOpts{Timeout: 30 * time.Second})
	page, err := s.ReadLog(0, 3, 100)
	if err != nil || page.Logged || page.First == 0 || page.From != page.First {
		t.Fatalf("page %+v %v", page, err)
	}
	if want := fmt.Sprint(page.First - r.LostFrom + 1); !strings.HasPrefix(page.Text, want+"\n") && r.LostLines > 0 {
		t.Fatalf("page %q, want it to begin with %s", page.Text, want)
	}
}
