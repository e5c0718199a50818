package session

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/termgate/termgate/redact"
)

// # One Taint per session, and repairs
//
// A session with a redactor owns one redact.Taint (Spec.Taint, or its own):
// its output stream adds what it finds there and masks what it holds, and
// every view made of the session (Redact: results, screens, scrollback,
// the output log, wait_for's text) is redacted with it, so a secret found
// once is masked in every later copy. The Taint is bounded (its limits)
// and dies with the session: a closed session's frozen screen and history
// are redacted with it one last time, and then it is let go.
//
// Where the stream finds that text it already emitted was the head of a
// secret (redact.Repair), the session masks that text where it went: the
// screen's cells, the scrollback, the output log, and a Tap that is a
// Repairer (a recording). The screen remembers where its last prints went
// (printRing), by their offsets in the emitted stream; a cell that no
// longer shows what was printed there (overwritten since) is left alone.
// A repaired character shows as '*': the rest of the secret went out as
// the placeholder.

// Repairer is a Tap that can mask output it was already given: bytes
// [start, end) of the session's output, counted over every Output call.
type Repairer interface {
	Repair(start, end int64)
}

// repairMask replaces a repaired character.
const repairMask = redact.MaskByte

// printRingSize bounds the prints a screen remembers for repairs (a power
// of two). A repair reaches back no further than the stream's context
// (1 KiB of text).
const printRingSize = 2048

// printAt is where one printed character went.
type printAt struct {
	off  int64 // its offset in the emitted stream (of its last byte)
	line int64 // the absolute line (a row of the alternate screen: line - PushedLines)
	col  int32 // its column; negative (^col) on the alternate screen
	v    rune
}

type printRing struct {
	at   [printRingSize]printAt
	next int
	n    int
}

// trackPrints makes the screen remember where its last prints went.
func (s *Screen) trackPrints() {
	if s.prints == nil {
		s.prints = &printRing{}
	}
}

// track records the cell just written at (y, x).
func (s *Screen) track(v rune) {
	r := s.prints
	if r == nil {
		return
	}
	col := int32(s.x)
	if s.useAlt {
		col = ^col
	}
	r.at[r.next] = printAt{off: s.cur, line: s.sbDropped + int64(s.sbLen+s.y), col: col, v: v}
	r.next = (r.next + 1) & (printRingSize - 1)
	if r.n < printRingSize {
		r.n++
	}
}

// logRepair is a row of the output log to write again.
type logRepair struct {
	row  int64
	text string
}

// repair masks the characters printed from bytes [start, end) of what the
// screen was written, where they still show, and returns the scrollback
// rows it changed (the output log holds them too).
func (s *Screen) repair(start, end int64) []logRepair {
	r := s.prints
	if r == nil {
		return nil
	}
	var rows []logRepair
	pushed := s.PushedLines()
	for k := 0; k < r.n; k++ {
		p := r.at[(r.next-1-k)&(printRingSize-1)]
		if p.off < start {
			break // older than the span: the ring is in stream order
		}
		if p.off >= end || p.v == ' ' {
			continue // a blank tells nothing, and masked it would show
		}
		alt := p.col < 0
		if alt {
			p.col = ^p.col
		}
		if p.line >= pushed || alt {
			g := s.main
			if alt {
				g = s.alt
			}
			y := int(p.line - pushed)
			if y < 0 || y >= len(g) || int(p.col) >= len(g[y].cells) || g[y].cells[p.col] != p.v {
				continue
			}
			cells := g[y].cells
			cells[p.col] = repairMask
			if c := int(p.col) + 1; c < len(cells) && cells[c] == wideTail {
				cells[c] = repairMask
			}
			continue
		}
		if p.line < s.sbDropped {
			continue
		}
		i := (s.sbStart + int(p.line-s.sbDropped)) % len(s.sb)
		l := &s.sb[i]
		text, ok := maskAt(l.text, int(p.col), p.v)
		if !ok {
			continue
		}
		l.text = text
		rows = append(rows, logRepair{p.line, text})
	}
	return rows
}

// maskAt replaces the character v at column col of a row's text with as
// many masks as it has bytes (the output log's rows keep their lengths).
func maskAt(text string, col int, v rune) (string, bool) {
	i := colIndex(text, col)
	if i >= len(text) {
		return text, false
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	if r != v {
		return text, false
	}
	return text[:i] + strings.Repeat(string(repairMask), n) + text[i+n:], true
}

// repair masks emitted output that turned out to be the head of a secret:
// on the screen, in the scrollback and the output log, and in the tap. It
// is called by the redactor's stream, with its lock held, as show is.
func (s *Session) repair(r redact.Repair) {
	defer s.recoverIn("output")
	s.mu.Lock()
	if s.frozen != nil || s.broken != nil {
		s.mu.Unlock()
		return
	}
	rows := s.screen.repair(r.Start, r.End)
	tap := s.tap
	s.notifyLocked()
	s.mu.Unlock()
	if rep, ok := tap.(Repairer); ok {
		rep.Repair(r.Start, r.End)
	}
	if s.outlog != nil {
		for _, row := range rows {
			s.outlog.rewriteRow(row.row, row.text)
		}
	}
}

// Taint returns the session's set of found and held secrets (nil without
// a redactor, or once the session is closed).
func (s *Session) Taint() *redact.Taint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taint
}

// Redact masks the secrets of text as the session's views are masked:
// with the redactor's rules and the session's Taint. Without a redactor,
// text is returned as it is.
//
// A secret a view finds that the output stream did not mask — halves a
// program put side by side with cursor moves, which the stream saw apart —
// is held by the session's Taint from then on, as a typed secret is: every
// piece of 8 bytes or more of it is masked in later output, and in what
// is redacted with the Taint again (the recording, event by event).
func (s *Session) Redact(text string) string {
	e := s.spec.Redactor
	if e == nil || text == "" {
		return text
	}
	return redactHolding(e, s.Taint(), text)
}

// viewHeldMax bounds the values a session's views hold: the rest of its
// Taint's held set stays for the secrets typed into it.
const viewHeldMax = 32

// redactHolding is RedactWith(text, t) that also holds, in t, what it finds
// there of 8 bytes or more (see Session.Redact).
func redactHolding(e *redact.Engine, t *redact.Taint, text string) string {
	spans := e.Find(text, t)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	prev := 0
	for _, sp := range spans {
		b.WriteString(text[prev:sp.Start])
		b.WriteString(sp.Placeholder)
		prev = sp.End
		if t != nil && sp.Rule != "known-secret" && sp.End-sp.Start >= 8 {
			if _, held := t.Len(); held < viewHeldMax {
				_ = t.Hold(text[sp.Start:sp.End]) // past the bound, a value is masked whole only
			}
		}
	}
	b.WriteString(text[prev:])
	return b.String()
}

// HoldSecret registers a secret the session is about to be typed: every
// piece of 8 bytes or more of it is masked in the session's output from
// now on. It fails (and the secret must not be typed) when the session has
// no redactor, is closed, or holds as many secrets as it may.
func (s *Session) HoldSecret(value string) error {
	if s.spec.Redactor == nil {
		return errors.New("the session has no redactor to mask it")
	}
	t := s.Taint()
	if t == nil {
		return ErrClosed
	}
	return t.Hold(value)
}
