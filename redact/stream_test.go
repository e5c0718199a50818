package redact

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a stream's time, moved by hand: a pause of any length costs
// a test nothing.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	at     time.Duration
	f      func()
	active bool
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now + d, f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now+d, true
	return was
}

// Advance moves the clock on and runs the timers that come due, in order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*fakeTimer
	for _, t := range c.timers {
		if t.active && t.at <= c.now {
			t.active = false
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// chunk is a write and the pause after it.
type chunk struct {
	text  string
	pause time.Duration
}

// paced runs chunks through a stream on a fake clock and returns what it
// emitted.
func paced(e *Engine, o StreamOptions, chunks ...chunk) string {
	var k sink
	clock := &fakeClock{}
	o.Clock = clock
	s := e.NewStreamWith(k.emit, o)
	for _, c := range chunks {
		s.Write([]byte(c.text))
		clock.Advance(c.pause)
	}
	s.Close()
	return k.String()
}

// TestSlowWritesNeverLeak: a secret written in two parts with any pause
// between them, at any split point, and one byte at a time with a 60 ms
// pause after each, never shows 8 bytes of itself in a row.
func TestSlowWritesNeverLeak(t *testing.T) {
	e := testEngine(t)
	for _, p := range corpus(12) {
		// Without a pause the idle timer never runs (TestStreamEverySplit);
		// with one past the idle time it runs once, however long.
		for i := 1; i < len(p.text); i += splitStep() {
			out := paced(e, StreamOptions{}, chunk{p.text[:i], 150 * time.Millisecond}, chunk{p.text[i:], 0})
			if w := leaks(out, p.secrets); w != "" {
				t.Fatalf("%s split at %d, 150 ms apart: %q came out: %q", p.name, i, w, out)
			}
		}
		var chunks []chunk
		for i := range len(p.text) {
			chunks = append(chunks, chunk{p.text[i : i+1], 60 * time.Millisecond})
		}
		if out := paced(e, StreamOptions{}, chunks...); leaks(out, p.secrets) != "" {
			t.Fatalf("%s one byte every 60 ms: %q", p.name, out)
		}
	}
}

// TestOrdinaryTextFlows: text that no rule could be reading (prompts, the
// echo of typed commands) goes out on the write that brings it, byte by
// byte: nothing waits for a timer.
func TestOrdinaryTextFlows(t *testing.T) {
	e := testEngine(t)
	for _, text := range []string{
		"dev@box:~/src/termgate$ ", "ls -la /tmp", "git commit -m 'fix the build'", "Password: ", "password=",
		"export API_TOKEN=", "mysql> SELECT * FROM users;", ">>> print(1+1)", "Enter passphrase for key '/root/.ssh/id_ed25519': ",
		"[sudo] password for dev: ", "Are you sure you want to continue connecting (yes/no/[fingerprint])? ",
	} {
		var k sink
		s := e.NewStreamWith(k.emit, StreamOptions{Clock: &fakeClock{}})
		for i := range len(text) {
			s.Write([]byte(text[i : i+1]))
			if got := k.String(); got != text[:i+1] {
				t.Fatalf("typing %q: after %d bytes the stream let out %q", text, i+1, got)
			}
		}
		if s.Held() != 0 {
			t.Fatalf("%q: %d bytes held", text, s.Held())
		}
		s.Close()
	}
}

// TestHoldUntilDecided: the head of a secret is held however long the
// pause; it goes out masked when the rest comes, and as it was when what
// comes breaks it.
func TestHoldUntilDecided(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(1, 2))
	tok := "ghp_" + rnd(r, alnum, 36)
	var k sink
	clock := &fakeClock{}
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	s.Write([]byte("token " + tok[:20]))
	clock.Advance(10 * time.Minute)
	if got := k.String(); got != "token " {
		t.Fatalf("after ten minutes the stream let out %q", got)
	}
	s.Write([]byte(tok[20:] + " ok\n"))
	if got := k.String(); strings.Contains(got, tok[4:12]) || !strings.Contains(got, "[REDACTED:github-pat:") || !strings.HasSuffix(got, " ok\n") {
		t.Fatalf("completed: %q", got)
	}

	// Broken: not a token after all.
	k = sink{}
	s = e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	s.Write([]byte("ghp_abc"))
	clock.Advance(time.Hour)
	if got := k.String(); got != "" {
		t.Fatalf("held head let out: %q", got)
	}
	s.Write([]byte(" is a prefix\n"))
	if got := k.String(); got != "ghp_abc is a prefix\n" {
		t.Fatalf("broken: %q", got)
	}

	// An AWS key id, 8 bytes of its 16 given, for a long time.
	k = sink{}
	s = e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	id := "AKIA" + rnd(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	s.Write([]byte("aws_access_key_id = " + id[:12]))
	clock.Advance(time.Hour)
	if got := k.String(); got != "aws_access_key_id = " {
		t.Fatalf("key id head: %q", got)
	}
	s.Write([]byte(id[12:] + "\n"))
	if got := k.String(); strings.Contains(got, id[4:12]) || !strings.Contains(got, "[REDACTED:") {
		t.Fatalf("key id: %q", got)
	}

	// A value after its key: while it is short of what the rule needs, it
	// is held; once it is a password as it stands, the idle time lets it
	// go, masked, and the rest that follows is masked too.
	k = sink{}
	s = e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	s.Write([]byte("password=hu"))
	clock.Advance(time.Hour)
	if got := k.String(); got != "password=" {
		t.Fatalf("password head: %q", got)
	}
	s.Write([]byte("nt"))
	clock.Advance(time.Hour)
	s.Write([]byte("er2 done\n"))
	if got := k.String(); strings.Contains(got, "hu") || strings.Contains(got, "er2") || !strings.HasSuffix(got, " done\n") {
		t.Fatalf("password: %q", got)
	}

	// The scheme of an Authorization header could be the start of the
	// credential itself, until the blank after it.
	k = sink{}
	s = e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	s.Write([]byte("curl -H 'Authorization: Bear"))
	if got := k.String(); got != "curl -H 'Authorization: " {
		t.Fatalf("scheme: %q", got)
	}
	s.Write([]byte("er "))
	if got := k.String(); got != "curl -H 'Authorization: Bearer " {
		t.Fatalf("scheme: %q", got)
	}
}

// TestIdleLetsCompleteSecretGo: a token complete as it stands at the end of
// the output (its end not seen yet) goes out masked after the idle time.
func TestIdleLetsCompleteSecretGo(t *testing.T) {
	e := testEngine(t)
	tok := "ghp_" + rnd(rand.New(rand.NewPCG(3, 4)), alnum, 36)
	var k sink
	clock := &fakeClock{}
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	defer s.Close()
	s.Write([]byte("your token: " + tok))
	if got := k.String(); got != "your token: " {
		t.Fatalf("before idle: %q", got)
	}
	clock.Advance(DefaultIdle)
	if got := k.String(); !strings.HasPrefix(got, "your token: [REDACTED:") || strings.Contains(got, tok[4:12]) {
		t.Fatalf("after idle: %q", got)
	}
}

// TestFlushMasksUndecided: Flush (the program waits for input) decides:
// the beginning of what may be a secret goes out masked, never in clear.
func TestFlushMasksUndecided(t *testing.T) {
	e := testEngine(t)
	var k sink
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: &fakeClock{}})
	s.Write([]byte("export PASSWORD=hunt"))
	s.Flush()
	if got := k.String(); strings.Contains(got, "hunt") || !strings.HasPrefix(got, "export PASSWORD=[REDACTED:") {
		t.Fatalf("flush: %q", got)
	}
	s.Write([]byte("er22\n"))
	s.Close()
	if got := k.String(); strings.Contains(got, "er22") {
		t.Fatalf("the rest after a flush: %q", got)
	}
}

// TestMaxHold: a secret held past MaxHold goes out masked, and so does
// the rest of it.
func TestMaxHold(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(5, 6))
	var k sink
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: &fakeClock{}, MaxHold: 256})
	s.Write([]byte("Authorization: Bearer "))
	var sent strings.Builder
	for range 10 {
		part := rnd(r, alnum, 100)
		sent.WriteString(part)
		s.Write([]byte(part))
		if s.Held() > 256+100 {
			t.Fatalf("holding %d bytes", s.Held())
		}
	}
	s.Write([]byte("\n"))
	s.Close()
	out := k.String()
	if w := leaks(out, []string{sent.String()}); w != "" {
		t.Fatalf("a piece came out: %q in %q", w, out)
	}
}

// TestRepair: when a match turns out to begin in text already emitted,
// Repair gets the emitted span, with the offsets of the emitted stream.
func TestRepair(t *testing.T) {
	e := testEngine(t)
	tok := "ghp_" + rnd(rand.New(rand.NewPCG(7, 8)), alnum, 36)
	var k sink
	var reps []Repair
	taint := NewTaint(TaintLimits{})
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: &fakeClock{}, Taint: taint, Repair: func(r Repair) { reps = append(reps, r) }})
	// "gh" goes out before anything can tell it begins a token.
	s.Write([]byte("\x1b[1mremote: gh"))
	s.Write([]byte(tok[2:] + "\x1b[0m\n"))
	out := k.String()
	if len(reps) != 1 || out[reps[0].Start:reps[0].End] != "gh" || reps[0].Rule != "github-pat" {
		t.Fatalf("repairs %+v of %q", reps, out)
	}
	// A copy of a value already emitted, on the line where a rule then
	// finds it.
	v := rnd(rand.New(rand.NewPCG(9, 9)), alnum, 20)
	reps = nil
	s.Write([]byte("value " + v + " "))
	s.Write([]byte("is password=" + v + "\n"))
	out = k.String()
	if len(reps) != 1 || out[reps[0].Start:reps[0].End] != v {
		t.Fatalf("repairs %+v of %q", reps, out)
	}
	s.Close()
}

// TestHoldEveryName: a rule run anchored at a name is run from every
// name near the end, not only the first.
func TestHoldEveryName(t *testing.T) {
	e := testEngine(t)
	v := rnd(rand.New(rand.NewPCG(11, 12)), alnum, 40)
	for i := 10; i < len(v); i += 7 {
		out := paced(e, StreamOptions{}, chunk{"apiKey := \"low\"; authKey := \"" + v[:i], time.Hour}, chunk{v[i:] + "\"\n", 0})
		if w := leaks(out, []string{v}); w != "" {
			t.Fatalf("split at %d: %q came out of %q", i, w, out)
		}
	}
}

// TestEmptyWriteKeepsBlocks: a write that brings nothing does not end the
// line it falls in (it ended a Kubernetes Secret's data block, and the
// values after it went out).
func TestEmptyWriteKeepsBlocks(t *testing.T) {
	e := testEngine(t)
	v := rnd(rand.New(rand.NewPCG(13, 14)), b64, 16)
	out := paced(e, StreamOptions{}, chunk{"data:\n  user", 0}, chunk{"", 0}, chunk{"name: " + v + "\nkind: Secret\n", 0})
	if w := leaks(out, []string{v}); w != "" {
		t.Fatalf("%q came out of %q", w, out)
	}
}

// TestCarriageReturnWaitsForTheNextByte: a \r at the end of a write
// waits for the byte that tells whether it ends a line (\r\n), past the
// idle time and a Flush; the next write or Close lets it go. Released
// at the idle time, it was read as a bare \r: a \n after a pause then
// left it in the text, between a key and its value on the next line,
// and the value went out in clear (found by FuzzStream).
func TestCarriageReturnWaitsForTheNextByte(t *testing.T) {
	e := testEngine(t)
	var k sink
	clock := &fakeClock{}
	s := e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
	s.Write([]byte("downloading 45%\r"))
	if got := k.String(); got != "downloading 45%" {
		t.Fatalf("before idle: %q", got)
	}
	clock.Advance(DefaultIdle)
	s.Flush()
	if got := k.String(); got != "downloading 45%" {
		t.Fatalf("after idle and a flush: %q", got)
	}
	s.Write([]byte("downloading 46%"))
	if got := k.String(); got != "downloading 45%\rdownloading 46%" {
		t.Fatalf("after the next write: %q", got)
	}
	s.Write([]byte("\r"))
	s.Close()
	if got := k.String(); got != "downloading 45%\rdownloading 46%\r" {
		t.Fatalf("after Close: %q", got)
	}

	// A key, its line end cut by pauses, and its value on the next line.
	v := rnd(rand.New(rand.NewPCG(5, 6)), "abcdefghijklmnopqrstuvwxyz0123456789", 32)
	for _, flush := range []bool{false, true} {
		var k sink
		clock := &fakeClock{}
		s := e.NewStreamWith(k.emit, StreamOptions{Clock: clock})
		s.Write([]byte("\n<adafruitToken>\r"))
		clock.Advance(DefaultIdle)
		if flush {
			s.Flush()
		}
		s.Write([]byte("\n    " + v + "\r\n</adafruitToken>\r\n"))
		s.Close()
		if w := leaks(k.String(), []string{v}); w != "" {
			t.Fatalf("flush %v: %q came out of %q", flush, w, k.String())
		}
	}
}
