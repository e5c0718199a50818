package redact

import (
	"bytes"
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
// What it holds back: only the last run of non-blank characters of an
// unfinished line (it could be the start of a secret), an unfinished
// escape sequence, and a line inside an open private-key block. Held bytes
// go out on the next write that settles them, after Idle without a write,
// or when more than HoldCap bytes are held; a forced flush scans what it
// has, and masks a held private-key line whole. The text of the current
// line already sent stays as context, so "password: " sent first and the
// value after a pause is still caught. The price of never making a
// prompt wait: a match that begins in text already sent is masked from
// where the new text begins, so a placeholder can start later than a
// one-pass Redact would start it; what follows is masked all the same.
type Stream struct {
	e    *Engine
	emit func([]byte)
	idle time.Duration

	mu     sync.Mutex
	raw    []byte   // bytes not yet emitted
	parsed int      // raw[:parsed] has gone through the parser
	state  escState // the parser's state at raw[parsed]
	escAt  int      // where the escape sequence being parsed began
	strAt  int      // where a string sequence's payload began
	plain  []byte   // the text projection of raw[:parsed]
	pos    []int32  // plain index → raw offset
	escs   [][2]int // complete escape sequences in raw[:parsed]
	ctx    []byte   // text of the current line already emitted
	blk    blockState
	timer  *time.Timer
	closed bool
	buf    []byte // scratch: ctx + plain
	out    []byte // scratch: what goes to emit
}

// Stream tuning.
const (
	// DefaultIdle is how long held bytes wait for more before they go out.
	DefaultIdle = 30 * time.Millisecond
	// HoldCap bounds what a stream holds back.
	HoldCap = 64 << 10
	// maxToken is the longest trailing run held back for more.
	maxToken = 4096
	// maxContext is how much of the current line is kept as context.
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

// NewStream returns a stream that writes redacted bytes to emit. emit is
// called with the stream's lock held, in order, from Write, Flush, Close
// or the idle timer; it must not call back into the stream.
func (e *Engine) NewStream(idle time.Duration, emit func([]byte)) *Stream {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Stream{e: e, emit: emit, idle: idle}
}

// Write takes the next bytes of the stream. It never fails.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.out = append(s.out[:0], s.e.Redact(string(p))...)
		s.emit(s.out)
		return len(p), nil
	}
	s.raw = append(s.raw, p...)
	s.parse()
	s.flush(len(s.raw) > HoldCap, false)
	if len(s.raw) > 0 {
		if s.timer == nil {
			s.timer = time.AfterFunc(s.idle, s.onIdle)
		} else {
			s.timer.Reset(s.idle)
		}
	}
	return len(p), nil
}

func (s *Stream) onIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.flush(true, false)
	}
}

// Flush sends everything held, scanned as it is.
func (s *Stream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush(true, true)
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
	s.flush(true, true)
}

// parse runs the escape parser over the bytes not parsed yet.
func (s *Stream) parse() {
	for i := s.parsed; i < len(s.raw); i++ {
		c := s.raw[i]
		switch s.state {
		case stGround:
			if isText(c) {
				// A run of text, at once.
				j := i + 1
				for j < len(s.raw) && isText(s.raw[j]) {
					j++
				}
				s.plain = append(s.plain, s.raw[i:j]...)
				for k := i; k < j; k++ {
					s.pos = append(s.pos, int32(k))
				}
				i = j - 1
				continue
			}
			switch {
			case c == 0x1b:
				s.state, s.escAt = stEsc, i
			case c == '\n' || c == '\t' || c == '\r' || c >= 0x20 && c != 0x7f:
				s.plain = append(s.plain, c)
				s.pos = append(s.pos, int32(i))
			}
			// Other C0 controls (BEL, BS, …) are not text.
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

func (s *Stream) endEsc(end int) {
	s.escs = append(s.escs, [2]int{s.escAt, end})
	s.state = stGround
}

// endStr ends a string sequence whose payload is raw[s.strAt:term] and
// whose terminator ends at end, redacting the payload in place. It returns
// where parsing goes on (the last byte handled).
func (s *Stream) endStr(term, end int) int {
	payload := s.raw[s.strAt:term]
	if red := s.e.redactPayload(payload); red != string(payload) {
		delta := len(red) - len(payload)
		tail := append([]byte(red), s.raw[term:]...)
		s.raw = append(s.raw[:s.strAt], tail...)
		end += delta
	}
	s.escs = append(s.escs, [2]int{s.escAt, end})
	s.state = stGround
	return end - 1
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// flush emits what is settled: everything when force is set, otherwise
// all but a trailing token of an unfinished line. all emits an unfinished
// escape sequence too (on Close).
func (s *Stream) flush(force, all bool) {
	limit := len(s.raw)
	if s.state != stGround && !all {
		limit = s.escAt
		if force && len(s.raw)-s.escAt > HoldCap {
			// A string sequence that never ends: redact what it has
			// and let it go.
			limit, all = len(s.raw), true
		}
	}
	if all && s.state >= stStr {
		payload := s.raw[s.strAt:]
		s.raw = append(s.raw[:s.strAt], s.e.redactPayload(payload)...)
		s.state = stGround
		limit = len(s.raw)
	}
	np := sort.Search(len(s.pos), func(i int) bool { return int(s.pos[i]) >= limit })
	hold := np
	final := force
	if !force {
		lastNL := bytes.LastIndexByte(s.plain[:np], '\n')
		tail := s.plain[lastNL+1 : np]
		switch {
		case len(tail) == 0:
		case s.blk.kind != blockNone || opensBlock(s.plain[:lastNL+1]):
			hold = lastNL + 1 // a line of an open block goes out whole, masked
		case len(tail) > maxToken:
		default:
			k := len(tail)
			for k > 0 && !isBlank(tail[k-1]) {
				k--
			}
			hold = lastNL + 1 + k
		}
		final = hold > 0 && s.plain[hold-1] == '\n'
	}
	cut := limit
	if hold < np {
		cut = int(s.pos[hold])
	}
	if cut == 0 {
		return
	}
	s.buf = append(append(s.buf[:0], s.ctx...), s.plain[:hold]...)
	spans := merge(s.e.find(s.buf, &s.blk, final))
	s.out = s.out[:0]
	prev := 0
	nctx := len(s.ctx)
	for _, sp := range spans {
		start, end := sp.start-nctx, sp.end-nctx
		if end <= 0 {
			continue
		}
		start = max(start, 0)
		rs, re := int(s.pos[start]), int(s.pos[end-1])+1
		s.out = append(s.out, s.raw[prev:rs]...)
		s.out = append(s.out, s.e.Placeholder(sp.rule, s.buf[sp.start:sp.end])...)
		for _, e := range s.escs {
			if e[0] >= rs && e[1] <= re {
				s.out = append(s.out, s.raw[e[0]:e[1]]...)
			}
		}
		prev = re
	}
	s.out = append(s.out, s.raw[prev:cut]...)
	// The current line's text stays as context for what follows.
	if i := bytes.LastIndexByte(s.buf, '\n'); i >= 0 {
		s.ctx = append(s.ctx[:0], s.buf[i+1:]...)
	} else {
		s.ctx = append(s.ctx[:0], s.buf...)
	}
	if len(s.ctx) > maxContext {
		s.ctx = append(s.ctx[:0], s.ctx[len(s.ctx)-maxContext:]...)
	}
	// Drop what went out.
	n := copy(s.raw, s.raw[cut:])
	s.raw = s.raw[:n]
	s.parsed -= cut
	s.escAt -= cut
	s.strAt -= cut
	n = copy(s.plain, s.plain[hold:])
	s.plain = s.plain[:n]
	n = copy(s.pos, s.pos[hold:])
	s.pos = s.pos[:n]
	for i := range s.pos {
		s.pos[i] -= int32(cut)
	}
	kept := s.escs[:0]
	for _, e := range s.escs {
		if e[0] >= cut {
			kept = append(kept, [2]int{e[0] - cut, e[1] - cut})
		}
	}
	s.escs = kept
	if len(s.out) > 0 {
		s.emit(s.out)
	}
}

// redactPayload redacts the payload of a string sequence. Hyperlinks carry
// their text percent-encoded, so a payload that holds a secret only once
// decoded is masked whole.
func (e *Engine) redactPayload(p []byte) string {
	red := e.Redact(string(p))
	if red != string(p) || bytes.IndexByte(p, '%') < 0 {
		return red
	}
	dec, err := url.PathUnescape(string(p))
	if err != nil {
		return red
	}
	if spans := e.find([]byte(dec), &blockState{}, true); len(spans) > 0 {
		return e.Placeholder(spans[0].rule, []byte(dec))
	}
	return red
}

// opensBlock tells whether complete lines may open a multi-line block.
func opensBlock(text []byte) bool {
	for _, k := range blockKeywords {
		if bytes.Contains(text, k) {
			return true
		}
	}
	return false
}

// isText: a byte of the text projection.
func isText(c byte) bool {
	return c >= 0x20 && c != 0x7f || c == '\n' || c == '\t' || c == '\r'
}
