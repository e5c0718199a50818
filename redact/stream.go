package redact

import (
	"bytes"
	"encoding/binary"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Stream redacts one output stream (a terminal's bytes) on its way to
// emit. It keeps one escape-sequence parser across writes, matches on the
// text projection of the bytes (escape sequences left out, so a secret
// coloured in parts still matches), and masks the raw span of a secret,
// escape sequences inside it kept after the placeholder so colours do not
// bleed. The payloads of OSC, DCS, APC, PM and SOS strings (window titles,
// hyperlinks) are redacted on their own.
//
// # What it holds back, and for how long
//
// Text goes out as soon as it is written, except:
//
//   - a secret not decided yet (see the package doc): held from its first
//     byte until more text completes it (it is masked) or breaks it (it
//     goes out as it is), however long that takes; held past MaxHold
//     bytes, it goes out masked, and so does the rest of it;
//   - an unfinished escape sequence (until the next write, or the idle
//     time), and a \r that may begin a \r\n (until the next write, or
//     Close: a \r\n cut by a pause, or by a prompt's Flush, is a line
//     end still, or a key's value on the next line would go out in clear).
//
// A line inside a private-key block goes out masked as it comes, whole or
// in parts.
//
// After Idle without a write, a held secret that is complete as it stands
// (a token at the very end of the output, its end not yet seen) goes out
// masked; nothing else is released by time. Flush and Close decide
// everything: what is undecided is masked as the rule it may be, never let
// go in clear; Flush is for when the program is known to be waiting for
// input (its prompt must be seen).
//
// Write never fails, and never blocks on anything but emit. The text of
// the lines already sent stays as context (a few lines, as many as any
// rule's window spans, 1 KiB at most), so "password: " sent first and the
// value after a pause is still caught, and a value on the line after its
// key. A match that begins in text already sent (its head went out before
// anything could tell it was a secret, or a hold was given up at its
// bound) is masked from where the new text begins, and the span already
// sent is reported to Repair, with its offsets in the emitted stream.
type Stream struct {
	e    *Engine
	emit func([]byte)
	o    StreamOptions

	mu     sync.Mutex
	raw    []byte   // bytes not yet emitted
	parsed int      // raw[:parsed] has gone through the parser
	state  escState // the parser's state at raw[parsed]
	escAt  int      // where the escape sequence being parsed began
	strAt  int      // where a string sequence's payload began
	// text is the text of the last lines already emitted (the context,
	// text[:nctx]) and then the text projection of raw[:parsed]: what
	// the rules read, in one piece.
	text    []byte
	nctx    int
	gaps    []gap   // the bytes of raw[:parsed] left out of the text
	ctxAt   []int64 // with Repair: the emitted-stream offset of each context byte; -1: it went out masked
	blk     blockState
	emitted int64 // bytes emitted so far
	timer   Timer
	closed  bool
	out     []byte // scratch: what goes to emit
	runs    []outRun
	masks   []maskAt
	hits    []kwHit // keyword hits near the end of the text, from find
	at2     []int64 // scratch: the next ctxAt
	vm      pvmScratch
}

// gap is a run of raw bytes left out of the text projection: an escape
// sequence, or a control byte.
type gap struct {
	plain int  // the plain offset it comes before
	raw   int  // where it begins in raw
	n     int  // its length
	cum   int  // raw bytes left out up to and including it
	esc   bool // an escape sequence (kept after a placeholder), not a dropped control byte
}

// StreamOptions configure a Stream.
type StreamOptions struct {
	// Idle is how long a stream waits, after the last write, before it
	// lets a complete secret at the end go out masked (DefaultIdle).
	Idle time.Duration
	// Clock is the stream's time (nil: the real clock). Tests give one
	// they move by hand.
	Clock Clock
	// Taint is the owner's set of secrets: what the stream finds is added
	// to it, and what it holds is masked. nil: the stream keeps one of its
	// own (default bounds), so that what it found once is masked wherever
	// it shows again in it.
	Taint *Taint
	// Repair, when set, is told of text already emitted that turned out
	// to be part of a secret. It is called with the stream's lock held,
	// like emit, and must not call back into the stream.
	Repair func(Repair)
	// MaxHold bounds a secret held back undecided (DefaultMaxHold).
	MaxHold int
}

// Repair is text a stream emitted in clear that turned out to be part of a
// secret: bytes [Start, End) of the emitted stream (escape sequences that
// went out between them included). Placeholder is what stands for the
// whole secret; the rest of it was masked where it was still held.
type Repair struct {
	Start, End  int64
	Rule        string
	Placeholder string
}

// Clock is a stream's source of time.
type Clock interface {
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is what a Clock's AfterFunc returns (*time.Timer is one).
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

type realClock struct{}

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Stream tuning.
const (
	// DefaultIdle is how long a stream waits after the last write before
	// a complete secret at the end of its text goes out masked.
	DefaultIdle = 30 * time.Millisecond
	// HoldCap bounds what a stream holds back in all; past it, everything
	// is decided at once (undecided secrets masked).
	HoldCap = 64 << 10
	// DefaultMaxHold bounds one secret held back undecided.
	DefaultMaxHold = 4 << 10
	// maxContext bounds the text kept as context.
	maxContext = 1024
)

type escState uint8

const (
	stGround   escState = iota
	stEsc               // after ESC
	stEscInter          // ESC intermediates
	stCSI               // ESC [ …
	stStr               // OSC, DCS, SOS, PM, APC payload
	stStrEsc            // ESC inside a string: ST or the start of another sequence
)

// flushMode says how much a flush decides.
type flushMode uint8

const (
	modeWrite flushMode = iota // what is settled goes
	modeIdle                   // and complete secrets at the end, masked
	modeFlush                  // everything; undecided secrets masked
	modeClose                  // and unfinished escape sequences
)

// NewStream returns a stream that writes redacted bytes to emit. emit is
// called with the stream's lock held, in order, from Write, Flush, Close
// or the idle timer, once or more for each; it must not call back into
// the stream, nor keep p after it returns (p may be the stream's own
// buffer). idle is StreamOptions.Idle.
func (e *Engine) NewStream(idle time.Duration, emit func([]byte)) *Stream {
	return e.NewStreamWith(emit, StreamOptions{Idle: idle})
}

// NewStreamWith returns a stream configured by o; see NewStream.
func (e *Engine) NewStreamWith(emit func([]byte), o StreamOptions) *Stream {
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.MaxHold <= 0 {
		o.MaxHold = DefaultMaxHold
	}
	if o.Taint == nil {
		o.Taint = NewTaint(TaintLimits{})
	}
	return &Stream{e: e, emit: emit, o: o}
}

// Write takes the next bytes of the stream. It never fails.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.out = append(s.out[:0], s.e.RedactWith(string(p), s.o.Taint)...)
		s.emitOut()
		return len(p), nil
	}
	s.raw = append(s.raw, p...)
	s.parse(false)
	mode := modeWrite
	if len(s.raw) > HoldCap {
		mode = modeFlush
	}
	s.flush(mode)
	if len(s.raw) > 0 {
		if s.timer == nil {
			s.timer = s.o.Clock.AfterFunc(s.o.Idle, s.onIdle)
		} else {
			s.timer.Reset(s.o.Idle)
		}
	}
	return len(p), nil
}

func (s *Stream) onIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.flush(modeIdle)
	}
}

// Flush decides everything held, as if the text ended here: complete
// secrets are masked, and so is what may be the beginning of one. Call it
// when the program waits for input, so that its prompt is seen.
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush(modeFlush)
}

// Close flushes and stops the idle timer. Later writes are redacted one
// by one.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.flush(modeClose)
}

// Held returns how many bytes the stream holds back now.
func (s *Stream) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.raw)
}

// Emitted returns how many bytes the stream has emitted: the offset in
// the emitted stream of the next byte it emits.
func (s *Stream) Emitted() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitted
}

func (s *Stream) emitOut() {
	if len(s.out) > 0 {
		s.emitted += int64(len(s.out))
		s.emit(s.out)
	}
}

// parse runs the escape parser over the bytes not parsed yet. A \r\n
// line end is read as \n (a terminal ends its lines so; the rules were
// written for files), so a \r at the very end waits for the next byte,
// unless final.
func (s *Stream) parse(final bool) {
	for i := s.parsed; i < len(s.raw); i++ {
		c := s.raw[i]
		switch s.state {
		case stGround:
			if c == '\r' {
				switch {
				case i+1 == len(s.raw) && !final:
					s.parsed = i
					return
				case i+1 < len(s.raw) && s.raw[i+1] == '\n':
					s.addGap(i, 1, false)
				default:
					s.text = append(s.text, c)
				}
				continue
			}
			if textByte[c] {
				// A run of text, at once.
				j := textRun(s.raw, i+1)
				s.text = append(s.text, s.raw[i:j]...)
				i = j - 1
				continue
			}
			if c == 0x1b {
				s.state, s.escAt = stEsc, i
				continue
			}
			// Other C0 controls (BEL, BS, …) are not text.
			s.addGap(i, 1, false)
		case stEsc:
			switch {
			case c == '[':
				s.state = stCSI
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				s.state, s.strAt = stStr, i+1
			case c >= 0x20 && c <= 0x2f:
				s.state = stEscInter
			default:
				s.endEsc(i + 1)
			}
		case stEscInter:
			if c < 0x20 || c > 0x2f {
				s.endEsc(i + 1)
			}
		case stCSI:
			if c >= 0x40 && c <= 0x7e {
				s.endEsc(i + 1)
			}
		case stStr:
			switch c {
			case 0x07:
				i = s.endStr(i, i+1)
			case 0x1b:
				s.state = stStrEsc
			}
		case stStrEsc:
			if c == '\\' {
				i = s.endStr(i-1, i+1)
			} else {
				// The ESC ended the string and starts a new sequence;
				// c is parsed again after it.
				j := s.endStr(i-1, i-1) + 1 // where the ESC is now
				s.state, s.escAt = stEsc, j
				i = j
			}
		}
	}
	s.parsed = len(s.raw)
}

func (s *Stream) addGap(at, n int, esc bool) {
	g := gap{plain: len(s.text) - s.nctx, raw: at, n: n, cum: n, esc: esc}
	if k := len(s.gaps); k > 0 {
		g.cum += s.gaps[k-1].cum
		if last := &s.gaps[k-1]; !esc && !last.esc && last.plain == g.plain && last.raw+last.n == at {
			last.n++
			last.cum++
			return
		}
	}
	s.gaps = append(s.gaps, g)
}

func (s *Stream) endEsc(end int) {
	s.addGap(s.escAt, end-s.escAt, true)
	s.state = stGround
}

// endStr ends a string sequence whose payload is raw[s.strAt:term] and
// whose terminator ends at end, redacting the payload in place. It returns
// where parsing goes on (the last byte handled).
func (s *Stream) endStr(term, end int) int {
	payload := s.raw[s.strAt:term]
	if red := s.e.redactPayload(payload, s.o.Taint); red != string(payload) {
		delta := len(red) - len(payload)
		tail := append([]byte(red), s.raw[term:]...)
		s.raw = append(s.raw[:s.strAt], tail...)
		end += delta
	}
	s.addGap(s.escAt, end-s.escAt, true)
	s.state = stGround
	return end - 1
}

// rawOf returns the raw offset of plain byte p (len(plain): the end).
func (s *Stream) rawOf(p int) int {
	k := sort.Search(len(s.gaps), func(i int) bool { return s.gaps[i].plain > p })
	if k == 0 {
		return p
	}
	return p + s.gaps[k-1].cum
}

// flush emits what mode lets go.
func (s *Stream) flush(mode flushMode) {
	// A \r at the end waits for the next byte until Close: read as a
	// bare \r, it would stay in the text before a \n that comes later,
	// and split a key from its value on the next line for the rules.
	s.parse(mode >= modeClose)
	limit := s.parsed
	if s.state != stGround && mode < modeClose {
		limit = s.escAt
		if mode == modeFlush && len(s.raw)-s.escAt > HoldCap {
			// A string sequence that never ends: redact what it has
			// and let it go.
			mode = modeClose
		}
	}
	if mode == modeClose && s.state >= stStr {
		payload := s.raw[s.strAt:]
		s.raw = append(s.raw[:s.strAt], s.e.redactPayload(payload, s.o.Taint)...)
	}
	if mode == modeClose && s.state != stGround {
		// An unfinished sequence goes out as it is.
		s.addGap(s.escAt, len(s.raw)-s.escAt, true)
		s.state = stGround
		s.parsed = len(s.raw)
		limit = len(s.raw)
	}
	buf, nctx := s.text, s.nctx
	np := len(buf) - nctx
	if np == 0 && limit == 0 {
		return // nothing new
	}
	lineStart := bytes.LastIndexByte(buf[nctx:], '\n') + 1 // where the unfinished line begins, after the context
	// The last line is complete when the text ends with its newline (the
	// context's last line is not, when nothing follows it yet).
	final := len(buf) > 0 && buf[len(buf)-1] == '\n'
	s.hits = s.hits[:0]
	spans := merge(s.e.findHits(buf, nctx, &s.blk, final, s.o.Taint, &s.hits))
	hold := np
	if lineStart < np {
		if u := s.e.undecidedIn(buf, s.hits, s.o.Taint, &s.vm); u.at >= 0 {
			hold, spans = s.decide(u, mode, spans, nctx, lineStart)
		}
	}
	cut := limit
	if hold < np {
		cut = s.rawOf(hold)
	}
	if cut == 0 {
		return
	}
	// What goes out: runs of raw bytes as they are, between masks (a
	// placeholder, then the escape sequences that were inside the
	// secret). The raw runs go to emit as they are, not copied.
	runs := s.runs[:0] // where each clear run begins in raw and in the output
	masks := s.masks[:0]
	s.out = s.out[:0]
	prev, off := 0, 0
	for _, sp := range spans {
		if sp.start < nctx {
			s.repair(sp, buf)
		}
		if sp.end <= nctx || sp.start-nctx >= hold {
			continue // already sent, or held
		}
		start, end := max(sp.start-nctx, 0), min(sp.end-nctx, hold)
		rs, re := s.rawOf(start), s.rawOf(end-1)+1
		runs = append(runs, outRun{prev, off})
		m := len(s.out)
		s.out = append(s.out, s.e.Placeholder(sp.rule, buf[sp.start:sp.end])...)
		for _, g := range s.gaps {
			if g.esc && g.raw >= rs && g.raw+g.n <= re {
				s.out = append(s.out, s.raw[g.raw:g.raw+g.n]...)
			}
		}
		masks = append(masks, maskAt{prev, rs, m, len(s.out)})
		off += rs - prev + len(s.out) - m
		prev = re
	}
	runs = append(runs, outRun{prev, off})
	s.runs, s.masks = runs, masks
	s.keepContext(nctx, hold, spans, runs)
	for _, m := range masks {
		s.send(s.raw[m.clearFrom:m.clearTo])
		s.send(s.out[m.from:m.to])
	}
	s.send(s.raw[prev:cut])
	// Drop what went out (emit has returned: it was given raw itself).
	n := copy(s.raw, s.raw[cut:])
	s.raw = s.raw[:n]
	s.parsed -= cut
	s.escAt -= cut
	s.strAt -= cut
	kept := s.gaps[:0]
	cum := 0
	for _, g := range s.gaps {
		if g.raw >= cut {
			g.plain -= hold
			g.raw -= cut
			cum += g.n
			g.cum = cum
			kept = append(kept, g)
		}
	}
	s.gaps = kept
}

// decide settles what an undecided secret u (in s.text: the context, then
// the pending text) means for this flush: how much of the pending text
// goes (the hold point, in plain), and what is masked.
func (s *Stream) decide(u undecided, mode flushMode, spans []span, nctx, lineStart int) (int, []span) {
	end := len(s.text)
	np := end - nctx
	switch {
	case mode >= modeFlush, end-u.at > s.o.MaxHold,
		mode == modeIdle && covered(spans, u.at, end):
		// Decided now: a complete secret is masked, and so is what may
		// be the beginning of one. Never in clear. What is masked so is
		// remembered as found: a copy of it (earlier on the line, or
		// after the program's prompt) is masked too.
		if !covered(spans, u.at, end) {
			spans = merge(append(spans, span{u.at, end, u.rule}))
			s.o.Taint.Add(string(s.text[u.at:end]), u.rule)
		}
		return np, spans
	case u.at < nctx+lineStart:
		// A secret that began before the unfinished line: what of it
		// is on the lines that go out now is masked, the unfinished
		// line is held.
		if !covered(spans, u.at, nctx+lineStart) {
			spans = merge(append(spans, span{u.at, nctx + lineStart, u.rule}))
		}
		return lineStart, spans
	}
	return u.at - nctx, spans
}

// covered tells whether spans (sorted, merged) cover [from, to) entirely.
func covered(spans []span, from, to int) bool {
	for _, sp := range spans {
		if sp.start <= from && sp.end > from {
			from = sp.end
		}
		if from >= to {
			return true
		}
	}
	return from >= to
}

// repair reports the part of sp already emitted in clear.
func (s *Stream) repair(sp span, buf []byte) {
	if s.o.Repair == nil {
		return
	}
	first, last := int64(-1), int64(-1)
	for i := sp.start; i < min(sp.end, len(s.ctxAt)); i++ {
		if at := s.ctxAt[i]; at >= 0 {
			if first < 0 {
				first = at
			}
			last = at
			s.ctxAt[i] = -1 // reported once
		}
	}
	if first < 0 {
		return
	}
	s.o.Repair(Repair{Start: first, End: last + 1, Rule: sp.rule, Placeholder: s.e.Placeholder(sp.rule, buf[sp.start:sp.end])})
}

// outRun is where a run of bytes that go out in clear begins, in raw and
// in what this flush emits.
type outRun struct{ raw, out int }

// maskAt is a mask of a flush: the raw bytes before it that go out as
// they are, and the mask itself in s.out.
type maskAt struct{ clearFrom, clearTo, from, to int }

// send emits p, if there is anything in it.
func (s *Stream) send(p []byte) {
	if len(p) > 0 {
		s.emitted += int64(len(p))
		s.emit(p)
	}
}

// keepContext keeps the end of what went out as context for what
// follows, in front of what is held: the last lines (as many as a rule's
// window spans, and the current one), at most maxContext bytes; with
// Repair, the emitted offset of each byte that went out in clear. The
// emitted count is still that before this flush's out.
func (s *Stream) keepContext(nctx, hold int, spans []span, runs []outRun) {
	text := s.text[:nctx+hold]
	i := len(text)
	for n := 0; n <= s.e.ctxLines && i >= 0; n++ {
		i = bytes.LastIndexByte(text[:i], '\n')
	}
	from := max(i+1, len(text)-maxContext)
	if s.o.Repair != nil {
		s.at2 = s.at2[:0]
		if from < nctx {
			s.at2 = append(s.at2, s.ctxAt[from:]...)
		}
		k := 0 // the clear run of the byte at hand
		for p := max(from, nctx) - nctx; p < hold; p++ {
			at := int64(-1)
			masked := false
			for _, sp := range spans {
				if sp.start-nctx <= p && p < sp.end-nctx {
					masked = true
					break
				}
			}
			if !masked {
				r := s.rawOf(p)
				for k+1 < len(runs) && runs[k+1].raw <= r {
					k++
				}
				at = s.emitted + int64(runs[k].out+r-runs[k].raw)
			}
			s.at2 = append(s.at2, at)
		}
		s.ctxAt, s.at2 = s.at2, s.ctxAt
	}
	// The kept lines, then what is held.
	n := copy(s.text, s.text[from:])
	s.text = s.text[:n]
	s.nctx = nctx + hold - from
}

// redactPayload redacts the payload of a string sequence. Hyperlinks carry
// their text percent-encoded: a payload that holds a secret once decoded
// goes out decoded, masked.
func (e *Engine) redactPayload(p []byte, t *Taint) string {
	red := e.RedactWith(string(p), t)
	if bytes.IndexByte(p, '%') < 0 {
		return red
	}
	dec, err := url.PathUnescape(string(p))
	if err != nil || dec == string(p) {
		return red
	}
	if rdec := e.RedactWith(dec, t); rdec != dec {
		return rdec
	}
	return red
}

// textRun returns where the run of text bytes (textByte) that goes on at
// b[i] ends. Eight bytes at a time while none is below 0x20 or 0x7f, then
// one by one through the word that has one (a newline, most often).
func textRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			y := x ^ (0x7f * ones)
			if (x-0x20*ones)&^x&highs != 0 || (y-ones)&^y&highs != 0 {
				break
			}
			i += 8
		}
		for end := min(i+8, len(b)); i < end; i++ {
			if !textByte[b[i]] {
				return i
			}
		}
		if i >= len(b) {
			return i
		}
	}
}

// textByte: a byte of the text projection but \r (which waits to see
// whether a \n follows).
var textByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 0x20 && c != 0x7f || c == '\n' || c == '\t'
	}
	return t
}()
