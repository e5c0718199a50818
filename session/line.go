package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// lineState is what the gateway typed into the terminal's line editor
// since the line was last empty: every byte that reaches a PTY is typed
// by this package, so while only plain text was typed, the line the
// program holds is known without reading the screen. Keys that edit the
// line out of sight (arrows, tab, history search, ctrl+u) make it unknown;
// an accepted line (Enter) and ctrl+c, which every line editor termgate
// judges answers by discarding its line, make it known and empty again.
type lineState struct {
	text    string
	unknown bool
}

// maxTracked bounds the tracked line: past it the line is unknown.
const maxTracked = 64 << 10

// typed updates the line with bytes typed that hold no accept key.
func (l *lineState) typed(b []byte) {
	for len(b) > 0 {
		c := b[0]
		switch {
		case c == 0x03: // ctrl+c: the line (and an unfinished command) is discarded
			*l = lineState{}
		case c == 0x7f || c == 0x08: // backspace at the end of a known line
			if !l.unknown && l.text != "" {
				_, n := utf8.DecodeLastRuneInString(l.text)
				l.text = l.text[:len(l.text)-n]
			}
		case c < 0x20:
			l.unknown, l.text = true, ""
		default:
			if !l.unknown {
				l.text += string(c)
				if len(l.text) > maxTracked {
					l.unknown, l.text = true, ""
				}
			}
		}
		b = b[1:]
	}
}

// accepted is the line after Enter: empty, and known.
func (l *lineState) accepted() { *l = lineState{} }

// TypedLine is the text typed into the terminal's line editor since its
// line was last empty, and whether it is known (only plain text was
// typed; see lineState). An input that continues it (text sent without
// Enter, then the rest) is judged with it before anything is typed: the
// line that will run is the whole line.
func (s *Session) TypedLine() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spec.Mode != ModePTY {
		return "", false
	}
	return s.line.text, !s.line.unknown
}

// errUnreadable and errNotProvenEmpty are the refusals of a line at Enter
// that cannot be judged.
var (
	errUnreadable     = errors.New("the line at Enter can be read neither from the screen nor from what was typed (keys that edit the line were pressed where its prompt cannot be found); the typed line was cleared and nothing ran. Press ctrl+c and send the whole line with session_send")
	errNotProvenEmpty = errors.New("the line at Enter looks empty, but keys that edit the line were pressed since it was last empty, so termgate cannot prove that it is; nothing ran. Press ctrl+c first, or send the whole line with session_send")
)

// judgeAtEnter asks judge about every reading of the line Enter would run:
// the screen's (shown, when the prompt was found: after an authenticated
// shell-integration mark or a known REPL prompt) and what was typed (when
// known). The two can differ only when something other than typing
// changed the line or the screen; both are judged, and either refusing
// refuses. An empty line is let through when nothing was typed since the
// line was last empty and the screen, where it can be read, agrees; a line
// that neither reading can give is refused.
func judgeAtEnter(judge func(string) error, shown string, shownOK bool, typed lineState) error {
	var cands []string
	if shownOK {
		cands = append(cands, shown)
	}
	if !typed.unknown && (!shownOK || strings.TrimSpace(typed.text) != strings.TrimSpace(shown)) {
		cands = append(cands, typed.text)
	}
	if len(cands) == 0 {
		return errUnreadable
	}
	judged := 0
	for _, c := range cands {
		if strings.TrimSpace(c) == "" {
			continue
		}
		judged++
		if err := judge(c); err != nil {
			return err
		}
	}
	if judged == 0 && typed.unknown {
		return errNotProvenEmpty
	}
	return nil
}

// cancelKeys are what cancels a program's unfinished input: ctrl+c where
// it discards the whole command being entered (a shell at its
// continuation prompt drops the command; python raises KeyboardInterrupt;
// node, irb, mysql, psql and gdb drop the buffer), else end of line and
// kill to its start (ctrl+e ctrl+u), which every line editor termgate
// judges knows. redis-cli and sqlite3 are not sent ctrl+c: it ends them.
func cancelKeys(program string) []byte {
	if isShell(program) {
		return []byte{0x03}
	}
	if fam := familyOf(program); fam != nil {
		switch fam.name {
		case "python", "node", "irb", "mysql", "psql", "gdb":
			return []byte{0x03}
		}
	}
	return []byte{0x05, 0x15}
}

// cancelInput types the program's cancel keys and waits for the program
// to show the result: until the terminal settles and, where the program's
// prompt could be found, no longer shows the cancelled line at it. The
// terminal can look settled before the program took the keys in (python,
// still blocked where it waits for input when ctrl+c's signal is sent,
// prints its KeyboardInterrupt and new prompt only later); what it prints
// of the cancel would then be taken for the next input's output. The wait is bounded (cancelRedraw, and the
// call's deadline) and does not depend on the call's context, which may
// be what ended the call. The tracked line is empty and known afterwards.
func (s *Session) cancelInput(ctx context.Context, deadline time.Time, program string) {
	s.mu.Lock()
	_, prompted := s.pendingLineLocked(program)
	s.mu.Unlock()
	at := time.Now()
	if s.write(context.Background(), cancelKeys(program), at.Add(time.Second), true) == nil {
		cctx := context.WithoutCancel(ctx)
		limit := at.Add(cancelRedraw)
		for start := at; s.settle(cctx, start, true, time.Until(limit), deadline) && prompted; {
			start = time.Now() // before looking: what shows after it is waited for
			s.mu.Lock()
			line, known := s.pendingLineLocked(s.programLocked())
			s.mu.Unlock()
			if !known || strings.TrimSpace(line) == "" {
				break // redrawn, or no longer at a prompt of its own
			}
		}
	}
	s.mu.Lock()
	s.line.accepted()
	s.mu.Unlock()
}

// cancelRedraw bounds the wait for a program to redraw its prompt after
// its input was cancelled.
const cancelRedraw = 5 * time.Second

// CancelInput cancels what the terminal's line editor holds — the typed
// line and a command left unfinished (after `rm -rf \`) — so that a refused
// continuation leaves nothing for the next line to complete. It types only
// the foreground program's cancel keys (cancelKeys), and only into a line
// editor (a shell or a REPL termgate knows); it reports what it typed
// ("ctrl+c", "ctrl+e ctrl+u") or "" when it typed nothing. It takes the
// session's turn as an input does.
func (s *Session) CancelInput(ctx context.Context, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	release, err := s.acquire(ctx, opKeys, deadline)
	if err != nil {
		return "", err
	}
	defer release()
	if s.spec.Mode != ModePTY {
		return "", nil
	}
	s.mu.Lock()
	program := s.programLocked()
	held := s.line.unknown || s.line.text != "" || s.atContinuationLocked()
	s.mu.Unlock()
	if !lineEditor(program) || !held {
		return "", nil
	}
	s.cancelInput(ctx, deadline, program)
	s.mu.Lock()
	s.readPos = s.screen.CursorPos() // what the cancel printed is no one's output
	s.mu.Unlock()
	if k := cancelKeys(program); len(k) == 1 {
		return "ctrl+c", nil
	}
	return "ctrl+e ctrl+u", nil
}

// atContinuationLocked reports whether the shell's newest prompt is its
// continuation prompt (an authenticated A;k=s mark): it holds an unfinished
// command.
func (s *Session) atContinuationLocked() bool {
	if !s.integration {
		return false
	}
	marks := s.screen.Marks(max(s.screen.MarkSeq()-4, 0))
	for i := len(marks) - 1; i >= 0; i-- {
		if marks[i].Kind == MarkPromptStart {
			return strings.Contains(marks[i].Extra, "k=s")
		}
		if marks[i].Kind != MarkInputStart {
			return false
		}
	}
	return false
}

// refusedAtEnter wraps a judge's refusal, or an unreadable line, as the
// error of an input refused at Enter.
func refusedAtEnter(err error) error {
	return fmt.Errorf("%w: %w", ErrLineRefused, err)
}
