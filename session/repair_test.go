package session

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/redact"
)

// randomWord is a made-up secret-looking value, new on every run.
func randomWord(n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return string(b)
}

// TestScreenRepair: characters printed from a repaired span are masked on
// the screen, in the scrollback and in the output log; escape sequences
// and cells written over since are left alone.
func TestScreenRepair(t *testing.T) {
	log, err := openOutputLog(t.TempDir(), MinOutputLogMax)
	if err != nil {
		t.Fatal(err)
	}
	defer log.close()
	sc := NewScreen(3, 20, 10, nil)
	sc.log = log
	sc.trackPrints()
	head := "key " + "\x1b[1m" + "abcdefgh" // the secret's head, bold
	sc.Write([]byte(head + "\r\n"))
	start := int64(len("key "))
	end := int64(len(head))
	// Over the screen, into the scrollback and the log (flushed to the
	// file for one of them).
	sc.Write([]byte("x\r\ny\r\n"))
	log.mu.Lock()
	log.flushLocked()
	log.mu.Unlock()
	for _, r := range sc.repair(start, end) {
		log.rewriteRow(r.row, r.text)
	}
	if got := sc.Scrollback(10); !strings.HasPrefix(got, "key ********\n") {
		t.Fatalf("scrollback after the repair: %q", got)
	}
	log.mu.Lock()
	rows, _, err := log.rowsLocked(0, 10, 1<<20)
	log.mu.Unlock()
	if err != nil || len(rows) == 0 || rows[0] != "key ********" {
		t.Fatalf("output log after the repair: %q, %v", rows, err)
	}

	// On the visible screen, and a cell written over since is kept.
	sc2 := NewScreen(3, 20, 10, nil)
	sc2.trackPrints()
	sc2.Write([]byte("ab SECRET cd"))
	sc2.Write([]byte("\x1b[1;5HZ")) // over the second letter of SECRET
	sc2.repair(3, 9)
	if got := strings.SplitN(sc2.Render(), "\n", 2)[0]; got != "ab *Z**** cd" {
		t.Fatalf("screen after the repair: %q", got)
	}
}

// TestSessionRepairAndTaint runs a program that prints a value before
// anything can tell it is a secret, and then the assignment that shows it
// is one, a while later: the earlier copy is masked on the screen, in the
// scrollback, in the output log and in every view made with the session's
// Taint; a copy printed later, anywhere, is masked too.
func TestSessionRepairAndTaint(t *testing.T) {
	e, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := testManager(t, Limits{})
	v := randomWord(20)
	script := `printf 'value %s then'; sleep 0.3; printf ' password=%s\n'; read x; printf 'again: %s\n'`
	s, err := m.Start(Spec{
		Argv: []string{"sh", "-c", strings.ReplaceAll(script, "%s", v)}, Env: testEnv(t), Dir: t.TempDir(),
		Rows: 24, Cols: 120, Mode: ModePTY, Redactor: e,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := s.Read(ctx, WaitOpts{Timeout: 10 * time.Second, WaitFor: regexp.MustCompile(`password=\[REDACTED`)})
	if err != nil || r.Completion != CompletionPattern {
		t.Fatalf("read: %+v, %v", r, err)
	}
	r, err = s.Send(ctx, "", true, WaitOpts{Timeout: 10 * time.Second, WaitFor: regexp.MustCompile(`again: \S`)})
	if err != nil {
		t.Fatal(err)
	}
	screen, _, _ := s.Screen()
	page, err := s.ReadLog(0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"screen": screen, "scrollback": s.Scrollback(100), "log": page.Text, "result": s.Redact(r.Output)} {
		if strings.Contains(text, v) || strings.Contains(text, v[:8]) {
			t.Errorf("%s shows the secret: %q", where, text)
		}
	}
	if !strings.Contains(screen, "value ") || !strings.Contains(screen, "[REDACTED:") {
		t.Errorf("screen: %q", screen)
	}
	if found, _ := s.Taint().Len(); found == 0 {
		t.Error("the session's Taint learnt nothing")
	}
	if err := s.HoldSecret(randomWord(16)); err != nil {
		t.Errorf("HoldSecret: %v", err)
	}
	if err := s.Close(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if s.Taint() != nil {
		t.Error("a closed session keeps its Taint")
	}
	if err := s.HoldSecret(randomWord(16)); err == nil {
		t.Error("a closed session held a secret")
	}
	if screen, _, _ := s.Screen(); strings.Contains(screen, v) {
		t.Errorf("the frozen screen shows the secret: %q", screen)
	}
}

// TestWaitForSeesTheRedactedText: halves of a token printed out of order
// (a cursor move puts the first half before the second) are a token only
// on the screen; wait_for matches the redacted text, so a guess at the
// token never matches, and the placeholder does.
func TestWaitForSeesTheRedactedText(t *testing.T) {
	e, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := testManager(t, Limits{})
	tok := "ghp_" + randomWord(36)
	a, b := tok[:20], tok[20:]
	s, err := m.Start(Spec{
		Argv: []string{"sh", "-c", `read x; printf '\033[21G` + b + `'; sleep 0.2; printf '\r` + a + `\n'; printf 'done\n'; read y`},
		Env:  testEnv(t), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: ModePTY, Redactor: e,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.WaitStart(ctx, WaitOpts{Timeout: 5 * time.Second, Quiet: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	guess := regexp.MustCompile(regexp.QuoteMeta(tok[:24]))
	r, err := s.Send(ctx, "", true, WaitOpts{Timeout: 3 * time.Second, Quiet: 500 * time.Millisecond, WaitFor: guess})
	if err != nil {
		t.Fatal(err)
	}
	if r.Completion == CompletionPattern || !strings.Contains(r.Output, "done") {
		t.Fatalf("a guess at the token matched, or the output did not come: %s, %q", r.Completion, s.Redact(r.Output))
	}
	if out := s.Redact(r.Output); strings.Contains(out, a) || !strings.Contains(out, "[REDACTED:github-pat:") {
		t.Fatalf("result: %q", out)
	}
	if out := s.Redact(s.Scrollback(10)); strings.Contains(out, a) || !strings.Contains(out, "[REDACTED:github-pat:") {
		t.Fatalf("scrollback: %q", out)
	}
}

// TestViewsHoldWithinTheirShare: what views find is held, but never more
// than viewHeldMax values: the rest of the session's held set stays for
// the secrets typed into it.
func TestViewsHoldWithinTheirShare(t *testing.T) {
	e, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	taint := redact.NewTaint(redact.TaintLimits{})
	tok := "ghp_" + randomWord(36)
	if got := redactHolding(e, taint, "x "+tok+" y"); strings.Contains(got, tok[4:]) {
		t.Fatalf("view: %q", got)
	}
	// Held: a piece of it is masked now, in any text redacted with taint.
	if got := e.RedactWith("piece "+tok[10:24]+" end", taint); strings.Contains(got, tok[10:24]) {
		t.Fatalf("a piece of what a view found: %q", got)
	}
	for range 2 * viewHeldMax {
		redactHolding(e, taint, "ghp_"+randomWord(36))
	}
	if _, held := taint.Len(); held != viewHeldMax {
		t.Fatalf("views hold %d values, want %d", held, viewHeldMax)
	}
	if err := taint.Hold(randomWord(16)); err != nil {
		t.Fatalf("a typed secret after the views' share: %v", err)
	}
}

// BenchmarkScreenWriteTracked is BenchmarkScreenWrite on a screen that
// remembers where its prints went (a session with a redactor): run side by
// side, the two say what repairs cost the emulator.
func BenchmarkScreenWriteTracked(b *testing.B) {
	var buf strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&buf, "\x1b[32m%6d\x1b[0m  -rw-r--r-- 1 user user  4096 Nov 22 10:00 file-%d.go\r\n", i, i)
	}
	data := []byte(buf.String())
	s := NewScreen(24, 80, DefaultScrollback, nil)
	s.trackPrints()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		s.Write(data)
	}
}
