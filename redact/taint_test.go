package redact

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestTaintMasksLaterCopies: once a stream finds a secret, every later
// copy of the value is masked, in the stream and in every RedactWith that
// shares the Taint (the audit path, another view), also inside a longer
// token; and in one text, a copy before the match is masked too.
func TestTaintMasksLaterCopies(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(51, 52))
	v := rnd(r, alnum, 24)
	taint := NewTaint(TaintLimits{})
	out := paced(e, StreamOptions{Taint: taint},
		chunk{"DB_PASSWORD=" + v + "\n", time.Second},
		chunk{"the value again: " + v + "\n", 0},
		chunk{"inside a word: x" + v + "y\n", 0})
	if strings.Contains(out, v) || strings.Count(out, "[REDACTED:") != 3 || !strings.Contains(out, "inside a word: x[REDACTED:") {
		t.Fatalf("stream: %q", out)
	}
	if got := e.RedactWith("audit: ran with "+v, taint); strings.Contains(got, v) {
		t.Fatalf("RedactWith: %q", got)
	}
	if got := e.Redact("audit: ran with " + v); !strings.Contains(got, v) {
		t.Fatalf("without the taint a bare value is not a secret: %q", got)
	}
	// One text: the copy before the match is masked too.
	w := rnd(r, alnum, 20)
	if got := e.Redact("value " + w + " set as password=" + w); strings.Contains(got, w) {
		t.Fatalf("same line: %q", got)
	}
	if found, _ := taint.Len(); found != 1 {
		t.Fatalf("taint holds %d found values", found)
	}
}

// TestHeldPieces: every piece of 8 bytes or more of a held secret is
// masked, wherever it is cut (printf '%s\n%s\n' "${P:0:12}" "${P:12}").
func TestHeldPieces(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(53, 54))
	p := rnd(r, alnum, 28)
	taint := NewTaint(TaintLimits{})
	if err := taint.Hold(p); err != nil {
		t.Fatal(err)
	}
	for cut := gramLen; cut+gramLen <= len(p); cut++ {
		text := p[:cut] + "\n" + p[cut:] + "\n"
		for _, out := range []string{
			e.RedactWith(text, taint),
			paced(e, StreamOptions{Taint: taint}, chunk{p[:cut] + "\n", time.Second}, chunk{p[cut:] + "\n", 0}),
		} {
			if strings.Contains(out, p[:cut]) || strings.Contains(out, p[cut:]) || strings.Count(out, "[REDACTED:known-secret:") != 2 {
				t.Fatalf("cut at %d: %q", cut, out)
			}
		}
	}
	// Any piece, anywhere.
	for i := 0; i+gramLen <= len(p); i += 3 {
		piece := p[i:min(i+gramLen+i%5, len(p))]
		if out := e.RedactWith("x"+piece+"x", taint); strings.Contains(out, piece) {
			t.Fatalf("piece %q: %q", piece, out)
		}
	}
	// The engine's own held secrets (secret_ref) are masked the same way.
	e2 := testEngine(t)
	if err := e2.AddSecret(p); err != nil {
		t.Fatal(err)
	}
	if out := e2.Redact(p[:12] + "\n" + p[12:] + "\n"); strings.Contains(out, p[:12]) || strings.Contains(out, p[12:]) {
		t.Fatalf("engine: %q", out)
	}
}

// TestTaintLimits: a Taint is bounded; a held secret past its bounds is
// refused (so the caller refuses to type it), found values push out the
// oldest, and so is the engine's own set.
func TestTaintLimits(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	taint := NewTaint(TaintLimits{Held: 3, HeldBytes: 100, Found: 4, MaxValue: 64})
	for i := range 3 {
		if err := taint.Hold(rnd(r, alnum, 20)); err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
	}
	if err := taint.Hold(rnd(r, alnum, 20)); !errors.Is(err, ErrTaintFull) {
		t.Fatalf("a fourth held secret: %v", err)
	}
	if err := NewTaint(TaintLimits{MaxValue: 64}).Hold(rnd(r, alnum, 65)); err == nil {
		t.Fatal("a held secret over MaxValue was taken")
	}
	if err := taint.Hold("abc"); err == nil {
		t.Fatal("a 3-byte held secret was taken")
	}
	var first string
	for i := range 10 {
		v := rnd(r, alnum, 16)
		if i == 0 {
			first = v
		}
		taint.Add(v, "test")
	}
	if found, held := taint.Len(); found != 4 || held != 3 {
		t.Fatalf("found %d, held %d", found, held)
	}
	e := testEngine(t)
	if got := e.RedactWith(first, taint); got != first {
		t.Fatalf("the oldest found value was not pushed out: %q", got)
	}
	// The engine: 256 values by default, then refused.
	for i := range 256 {
		if err := e.AddSecret(fmt.Sprintf("held-%03d-%s", i, rnd(r, alnum, 8))); err != nil {
			t.Fatalf("secret %d: %v", i, err)
		}
	}
	if err := e.AddSecret("one-too-many-" + rnd(r, alnum, 8)); !errors.Is(err, ErrTaintFull) {
		t.Fatalf("the 257th secret: %v", err)
	}
}

// TestTaintHoldsItsHead: the beginning of a held or found value at the end
// of a write is held back until the value is complete or broken.
func TestTaintHoldsItsHead(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(57, 58))
	p := rnd(r, alnum, 24)
	taint := NewTaint(TaintLimits{})
	if err := taint.Hold(p); err != nil {
		t.Fatal(err)
	}
	var chunks []chunk
	for i := range len(p) {
		chunks = append(chunks, chunk{p[i : i+1], 60 * time.Millisecond})
	}
	out := paced(e, StreamOptions{Taint: taint}, append([]chunk{{"typed: ", 0}}, append(chunks, chunk{"\n", 0})...)...)
	if w := leaks(out, []string{p}); w != "" {
		t.Fatalf("%q came out of %q", w, out)
	}
}

// TestFlushRemembersWhatItMasks: what may be the beginning of a secret
// when the stream is flushed (the program waits for input right after it)
// is masked, and remembered: a later copy of it is masked too, though no
// rule would find it alone.
func TestFlushRemembersWhatItMasks(t *testing.T) {
	e := testEngine(t)
	head := "ghp_" + rnd(rand.New(rand.NewPCG(53, 54)), alnum, 20) // a token cut short
	var out strings.Builder
	s := e.NewStreamWith(func(p []byte) { out.Write(p) }, StreamOptions{Taint: NewTaint(TaintLimits{}), Clock: &fakeClock{}})
	s.Write([]byte("enter it: " + head))
	s.Flush()
	s.Write([]byte("\nyou typed " + head + " here\n"))
	s.Close()
	if got := out.String(); strings.Contains(got, head[4:]) || strings.Count(got, "[REDACTED:") != 2 {
		t.Fatalf("stream: %q", got)
	}
}
