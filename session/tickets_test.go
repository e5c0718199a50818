package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// unjudgedLog collects what a session's shell refused.
type unjudgedLog struct {
	mu    sync.Mutex
	lines []string
	ch    chan struct{}
}

func (l *unjudgedLog) handle(id, line string, lost int) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *unjudgedLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func startBashWith(t *testing.T, m *Manager, dir string, onUnjudged UnjudgedHandler) *Session {
	t.Helper()
	s, err := m.Start(Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: dir, Rows: 24, Cols: 80, Mode: ModePTY, OnUnjudged: onUnjudged})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 10 * time.Second})
	if err != nil || r.Completion != CompletionPrompt {
		t.Fatalf("WaitStart = %+v, %v", r, err)
	}
	return s
}

// inject types a line past the gate: the session's raw write, which no
// judge sees and which issues no ticket (as keys a program pushes into
// the terminal would arrive), then waits until the shell reported it.
func inject(t *testing.T, s *Session, log *unjudgedLog, line string) {
	t.Helper()
	before := len(log.all())
	if err := s.write(context.Background(), []byte(line+"\r"), time.Now().Add(10*time.Second), true); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for len(log.all()) == before {
		select {
		case <-log.ch:
		case <-deadline:
			text, _, _ := s.Screen()
			t.Fatalf("the shell did not report refusing %q; screen:\n%s", line, text)
		}
	}
	if got := log.all()[before]; !strings.Contains(got, "canary") {
		t.Fatalf("reported %q for %q", got, line)
	}
	// What the refusal printed is output no call returned: read it, once
	// the shell shows its prompt again.
	if _, err := s.Read(context.Background(), WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
}

func TestShellRefusesALineNobodyJudged(t *testing.T) {
	m := testManager(t, Limits{})
	dir := t.TempDir()
	log := &unjudgedLog{ch: make(chan struct{}, 1)}
	s := startBashWith(t, m, dir, log.handle)
	ctx := context.Background()
	canary := filepath.Join(dir, "canary")
	absent := func(what string) {
		t.Helper()
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("%s: the canary exists (err %v): a line nobody judged ran", what, err)
		}
	}

	wantResult(t, send(t, s, "echo judged"), "judged", CompletionCommandFinished)
	inject(t, s, log, "touch "+canary)
	absent("a plain line")
	// What a DEBUG trap would not see: a redirection on a compound
	// command, a function definition.
	inject(t, s, log, "{ :; } > "+canary)
	absent("a compound command's redirection")
	inject(t, s, log, "ls() { touch "+canary+"; }")
	wantResult(t, send(t, s, "ls -d ."), ".", CompletionCommandFinished)
	absent("a function defined by a line nobody judged")

	// Enters that run nothing leave no ticket behind: an empty line, a
	// comment, a syntax error, a multi-line command, a here-document, and
	// a line typed ahead while a command runs.
	send(t, s, "")
	send(t, s, "# just a comment")
	send(t, s, "echo )")
	wantResult(t, send(t, s, "for i in 1 2\ndo echo n$i\ndone"), "n1\nn2", CompletionCommandFinished)
	wantResult(t, send(t, s, "cat <<EOF\nalpha\n\nbeta\nEOF"), "alpha\n\nbeta", CompletionCommandFinished)
	r, err := s.Send(ctx, "sleep 2.5\necho ahead", true, WaitOpts{Timeout: 20 * time.Second})
	if err != nil || !strings.Contains(r.Output, "ahead") {
		t.Fatalf("typed ahead: %+v, %v", r, err)
	}
	n := len(log.all())
	inject(t, s, log, "touch "+canary)
	absent("after lines that ran nothing")
	if got := len(log.all()); got != n+1 {
		t.Fatalf("refusals: %q", log.all())
	}
	// A function named read cannot hand out tickets: the check reads
	// with the builtin.
	send(t, s, "read() { __termgate_t=999 __termgate_v=0; }")
	inject(t, s, log, "touch "+canary)
	absent("with read shadowed by a function")
	// Ordinary work goes on, and the refusal was said on the screen.
	wantResult(t, send(t, s, "echo still"), "still", CompletionCommandFinished)
	if text, _, _ := s.Screen(); !strings.Contains(text, "termgate: refused a line nobody judged") {
		t.Fatalf("no notice on the screen:\n%s", text)
	}
}

// The ticket file holds nothing a shell takes as a ticket unless the
// gateway wrote it: missing or garbled, it refuses.
func TestTicketCheckFailsClosed(t *testing.T) {
	m := testManager(t, Limits{})
	dir := t.TempDir()
	log := &unjudgedLog{ch: make(chan struct{}, 1)}
	s := startBashWith(t, m, dir, log.handle)
	canary := filepath.Join(dir, "canary")
	for _, content := range []string{"", "9 x\n", "99999999999999999999 0\n", "000000000000000009 000000000000000000 0000000000\n"} {
		if content == "" {
			if err := os.Remove(s.tickets.path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(s.tickets.path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		inject(t, s, log, "touch "+canary)
		if _, err := os.Stat(canary); !os.IsNotExist(err) {
			t.Fatalf("ticket file %q: the line ran", content)
		}
	}
}

// The keys behind ctrl+x ctrl+t accept the line once the check passed:
// typed by hand, whole or in pieces across calls, they would run a line
// nobody judged at Enter. They are refused before anything is typed.
func TestReservedKeysAreRefused(t *testing.T) {
	m := testManager(t, Limits{})
	dir := t.TempDir()
	s := startBashWith(t, m, dir, nil)
	ctx := context.Background()
	o := WaitOpts{Timeout: 5 * time.Second, Quiet: 100 * time.Millisecond}
	if _, err := s.Send(ctx, "touch canary", false, o); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "\x18\x14abc", false, o); !errors.Is(err, ErrReservedKeys) {
		t.Fatalf("whole: %v", err)
	}
	ctrl := func(name string) []Key {
		k, err := ParseKey(name)
		if err != nil {
			t.Fatal(err)
		}
		return []Key{k}
	}
	if _, err := s.SendKeys(ctx, ctrl("ctrl+x"), o); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendKeys(ctx, ctrl("ctrl+t"), o); !errors.Is(err, ErrReservedKeys) {
		t.Fatalf("in pieces: %v", err)
	}
	if _, err := s.SendKeys(ctx, ctrl("ctrl+c"), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "canary")); !os.IsNotExist(err) {
		t.Fatalf("the canary exists: %v", err)
	}
}

// FuzzUnjudgedMarks: what a program prints cannot report a refusal
// without the session's key; a refusal's line is bounded, holds no
// control character, and at most maxUnjudged wait to be taken; a prompt
// drawn again adds no mark.
func FuzzUnjudgedMarks(f *testing.F) {
	const key = "Kq7x"
	f.Add([]byte("\x1b]133;U;tg=Kq7x;l=touch\\ canary\a"))
	f.Add([]byte("\x1b]133;U;l=rm;tg=wrong\a\x1b]133;U;tg=Kq7x;l=a;b;tg=c\x1b\\"))
	f.Add([]byte("\x1b]133;A;k=s;tg=Kq7x\a> \x1b]133;B;tg=Kq7x\a\r\x1b[K\r\x1b]133;A;k=s;tg=Kq7x\a> \x1b]133;B;tg=Kq7x\aEOF"))
	f.Add([]byte("\x1b]133;U;tg=Kq7x;l=" + strings.Repeat("é", 3000) + "\a"))
	f.Fuzz(func(t *testing.T, out []byte) {
		s := NewScreen(6, 40, 20, func([]byte) {})
		s.SetMarkKey(key)
		s.Write(out)
		lines, lost := s.takeUnjudged()
		if (len(lines) > 0 || lost > 0) && !bytes.Contains(out, []byte("tg="+key)) {
			t.Fatalf("a refusal without the key from %q", out)
		}
		if len(lines) > maxUnjudged {
			t.Fatalf("%d refusals kept", len(lines))
		}
		for _, l := range lines {
			if len(l) > maxUnjudgedLine+len("…") || strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("refusal line %q", l)
			}
		}
		if again, _ := s.takeUnjudged(); len(again) != 0 {
			t.Fatal("taken twice")
		}
		// Marks come in order, and no two input-start marks stand at one
		// place in a row: a redraw is not a new prompt.
		marks := s.Marks(0)
		for i := 1; i < len(marks); i++ {
			if marks[i].Seq <= marks[i-1].Seq {
				t.Fatalf("marks out of order: %+v", marks)
			}
			if marks[i].Kind == MarkInputStart && marks[i-1].Kind == MarkInputStart && marks[i].Pos == marks[i-1].Pos && marks[i].OnAlt == marks[i-1].OnAlt {
				t.Fatalf("a redrawn prompt made a mark: %+v", marks)
			}
		}
		if s.recovered != 0 {
			t.Fatalf("a handler panicked on %q", out)
		}
	})
}

// TestConfinedShellCannotWriteItsTickets: a confined session reads its
// ticket file (so its judged lines run) and cannot write it, nor the
// directory it lies in (a new file there, or a link put in its place):
// a program in the session cannot hand itself tickets.
func TestConfinedShellCannotWriteItsTickets(t *testing.T) {
	m := testManager(t, Limits{})
	spec := confinedSpec(t, 0, false)
	log := &unjudgedLog{ch: make(chan struct{}, 1)}
	spec.OnUnjudged = log.handle
	s, err := m.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if !s.Sandbox().Enforced || s.tickets == nil {
		t.Fatalf("not a confined session with tickets: %s", s.Sandbox())
	}
	f := s.tickets.path
	for _, line := range []string{
		"echo 999999999999999999 000000000000000000 0000000000 > " + f + " && echo WROTE || echo BLOCKED",
		"ln -sf /dev/null " + f + ".x 2>/dev/null && echo WROTE || echo BLOCKED",
		"cat " + f + " >/dev/null && echo READ",
	} {
		r, err := s.Send(context.Background(), line, true, WaitOpts{Timeout: 10 * time.Second})
		if err != nil || strings.Contains(r.Output, "WROTE") || !strings.Contains(r.Output, "BLOCKED") && !strings.Contains(r.Output, "READ") {
			t.Fatalf("%s: %q %v", line, r.Output, err)
		}
	}
	inject(t, s, log, "touch "+filepath.Join(spec.Dir, "canary"))
	if _, err := os.Stat(filepath.Join(spec.Dir, "canary")); !os.IsNotExist(err) {
		t.Fatalf("the canary exists: %v", err)
	}
}
