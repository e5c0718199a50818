package session

import "strings"

// A closed session stays readable (session_read, session_info, the
// transcript and screen resources) until MaxExited newer ones push it out
// of the manager. It does not keep its emulator for that: once closed, it
// keeps its final screen, the tail of its history (at most frozenBytes),
// and what no read had returned yet (at most frozenBytes too), and drops
// the screen, the scrollback ring, the redactor's stream, the recording
// tap and its environment. BenchmarkClosedSessionRetained measures what is
// left.

// frozenBytes bounds the history, and the unread output, a closed session
// keeps; frozenLines bounds the history's lines.
const (
	frozenBytes = 32 << 10
	frozenLines = 1000
)

// frozen is what a closed session keeps of its screen.
type frozen struct {
	screen   string
	row, col int
	history  string // the last lines of the scrollback and screen
	unread   string // output no read returned, for the next session_read
	title    string
}

// freeze keeps what a closed session shows and lets go of the rest. It is
// called once, after close has stopped the session's goroutines.
func (s *Session) freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen != nil || s.screen == nil {
		return
	}
	f := &frozen{title: s.screen.Title()}
	f.row, f.col = s.screen.Cursor()
	f.screen = s.screen.Render()
	f.history = tail(s.screen.Scrollback(frozenLines), frozenBytes)
	if s.pending == nil || s.pending.idle {
		f.unread = s.readNowLocked().Output
	} else {
		// A call ended before its input did: what came since.
		f.unread = s.withBacklogLocked(s.ownOutput(s.pending, s.pending.begin(), s.screen.CursorPos(), false).text, false)
	}
	if len(f.unread) > frozenBytes {
		f.unread = "[... earlier output dropped ...]\n" + tail(f.unread, frozenBytes)
	}
	if e := s.spec.Redactor; e != nil {
		// The session's Taint goes with it: what it knows is masked in
		// what the closed session keeps, one last time.
		f.screen, f.history, f.unread = redactHolding(e, s.taint, f.screen), redactHolding(e, s.taint, f.history), redactHolding(e, s.taint, f.unread)
	}
	f.screen, f.unread = strings.Clone(f.screen), strings.Clone(f.unread)
	s.frozen = f
	// A call still in flight may look at the screen once more before it
	// sees the session closed: it finds a blank one, not a nil.
	s.screen = newBlankScreen()
	s.stream, s.tap, s.pending, s.backlog, s.replies, s.taint = nil, nil, nil, nil, nil, nil
	s.spec.Env, s.spec.NewTap, s.spec.Sandbox, s.spec.Taint = nil, nil, nil, nil
	if s.cmd != nil {
		s.cmd.Env, s.cmd.Args = nil, nil
	}
}

// tail returns the last whole lines of text that fit in max bytes, as a
// string of its own (not a window on text's memory).
func tail(text string, max int) string {
	if len(text) > max {
		text = text[len(text)-max:]
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return strings.Clone(text)
}

// scrollback returns the last n lines a closed session kept.
func (f *frozen) scrollback(n int) string {
	h := f.history
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == '\n' {
			if n--; n == 0 {
				return h[i+1:]
			}
		}
	}
	return h
}

// frozenRead returns, once, what no read had returned when the session
// closed.
func (s *Session) frozenReadLocked() Result {
	r := Result{Output: strings.TrimRight(s.frozen.unread, "\n"), Complete: true, Completion: CompletionExited}
	s.frozen.unread = ""
	if s.exited {
		code := s.exitCode
		r.ExitCode = &code
	}
	return r
}
