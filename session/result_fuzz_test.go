package session

import (
	"strings"
	"testing"
	"time"
)

// FuzzResult feeds a screen what a program might print (shell-integration
// marks included, malformed and out of order) around typed lines, and
// evaluates and renders the input's result as a wait would: neither may
// panic, and a rendered result never holds more lines than the screen.
func FuzzResult(f *testing.F) {
	f.Add([]byte("one\r\n\x1b]133;D;0\a\x1b]133;A\a$ \x1b]133;B\a"), "echo one", 1, false)
	f.Add([]byte("\x1b]133;C\aa\r\nb\r\n\x1b]133;D;1\a\x1b]133;A\a$ \x1b]133;B\a"), "x\ny", 2, false)
	f.Add([]byte("\x1b]133;A;k=s\a> \x1b]133;B\a"), "for i in 1", 1, false)
	f.Add([]byte(">>> print(1)\r\n1\r\n>>> "), "print(1)\nprint(2)", 2, true)
	f.Add([]byte("\x1b[?1049h\x1b[Hscreen\x1b[?1049l\x1b]133;D;;\a\x1b]133;"), "", 0, true)
	f.Fuzz(func(t *testing.T, out []byte, input string, enters int, keys bool) {
		if len(input) > 4096 {
			input = input[:4096]
		}
		s := &Session{spec: Spec{Argv: []string{"/bin/bash"}, Mode: ModePTY, Rows: 6, Cols: 20}, integration: true, changed: make(chan struct{})}
		s.screen = NewScreen(6, 20, 50, nil)
		s.screen.Write([]byte("$ \x1b]133;B\a"))
		s.mu.Lock()
		defer s.mu.Unlock()
		p := s.newPendingLocked(opSend)
		p.input, p.keys, p.enters = strings.Split(input, "\n"), keys, enters%8
		if keys {
			p.shown = p.input
		}
		half := len(out) / 2
		s.screen.Write(out[:half])
		p.rowOf = append(p.rowOf, p.start.Line, s.screen.CursorPos().Line, -1)
		p.lastSeq, p.lastAt = s.screen.MarkSeq(), s.screen.CursorPos()
		s.screen.Write(out[half:])
		s.bytesOut, s.lastOutput = int64(len(out)), time.Now()
		for _, o := range []WaitOpts{{Quiet: time.Nanosecond}, {WaitFor: regexpMust(`x`)}, {WaitFor: regexpMust(`^\d`)}} {
			s.pending = p
			st, _ := s.evaluate(o)
			if !st.done {
				st = state{done: true, completion: CompletionTimeout, from: p.start, to: s.screen.CursorPos()}
			}
			r := s.renderLocked(st, true)
			if r.Earlier == 0 && !r.Screen && strings.Count(r.Output, "\n") > 6+50+len(p.input) {
				t.Fatalf("%d lines from a screen of 56", strings.Count(r.Output, "\n"))
			}
		}
	})
}
