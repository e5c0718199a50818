package session

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/termgate/termgate/sandbox"
)

// ---- tickets: a line the shell runs was judged ----
//
// The judge at Enter sees what the gateway types. A line can reach the
// shell another way: keys a program pushes into the terminal (TIOCSTI,
// where the kernel allows it), a key the generated rc did not unbind, a
// line typed ahead while the gateway thought no prompt was up. So the
// session's own bash refuses, itself, every line for which the gateway
// issued no ticket:
//
//   - Before the gateway writes an Enter that may reach the session's own
//     shell (the shell is the terminal's foreground, or the foreground
//     program is not reading, so the shell may read it next: typed ahead),
//     it issues a ticket: it raises the count in the session's ticket
//     file (written in place, with a sum of its counts, so that a read
//     that met a write half done is no ticket). That file lives in a directory of the gateway's (gateDir, not
//     the session's private directory, which the session may write); a
//     confined session is granted it read-only, and no tool writes there.
//   - In the generated rc, every key that makes readline run the line
//     (Enter, ctrl+j, ctrl+o, in every keymap) is a macro of two keys known
//     only to the shell (random per session): the first runs
//     __termgate_accept (bind -x), the second accepts the line. The check
//     reads the file: with an unused ticket it takes one, otherwise it
//     empties the line before it is accepted, so nothing of it runs (no
//     command, no redirection, no function definition, no assignment),
//     prints one line saying so, and emits an authenticated mark
//     (ESC]133;U;tg=KEY;l=LINE) that the gateway audits and names in the
//     session's next result (Spec.OnUnjudged).
//   - The check is at the accept, not in a DEBUG trap: a DEBUG trap (with
//     extdebug) runs before simple commands only, so `{ :; } >~/.bashrc`
//     or `if :; then :; fi >f` truncate files it never saw, and it costs a
//     test on every simple command of every loop. At the accept the whole
//     line is refused before bash parses it, and the check costs nothing
//     while commands run.
//   - Every Enter the shell takes uses one ticket, whether its line runs
//     a command, nothing (an empty line, a comment, a syntax error) or is
//     one line of a multi-line command: the gateway issues one per Enter,
//     so nothing is left over for a line nobody judged. What can be left
//     over is a ticket for an Enter typed ahead that another program read
//     (the foreground program was busy, then read it itself): the gateway
//     voids every unused ticket whenever the shell is reading at its
//     prompt with nothing typed left unread, after each call (the file
//     holds the count issued and the count voided; the shell takes a
//     ticket only above both).
//   - It fails closed: a ticket file that is missing or unreadable, or
//     holds anything but two counts, is no ticket.
//
// Limits, written down: a program can still type keys that edit the
// line the agent is about to send (the judge at Enter reads what the
// screen shows, and judges that); a shell started inside the session
// (bash in bash, sh, python's pty.spawn) reads no generated rc and has no
// ticket check (its lines are judged at Enter, its execs by the exec
// gate); zsh sessions have no ticket check yet; a judged line that turns
// line editing off (set +o emacs, denied by the default bundle) or
// touches the check's state (names __termgate…, denied too) defeats it;
// an unconfined session can write the ticket file as it can write
// everything of its user's.

// tickets is a session's ticket file: "ISSUED VOIDED SUM", fixed width,
// written in place (a rename would cost a flush of the file on some file
// systems, at every Enter). SUM ties the two counts together
// (ticketSum), so that a read that met a write half done is no ticket.
type tickets struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	issued uint64
	voided uint64
}

// ticketMod is the modulus of a ticket file's sum; the shell computes
// the same ((ISSUED * 31 + VOIDED) % ticketMod) in its arithmetic.
const ticketMod = 1000000007

func ticketSum(issued, voided uint64) uint64 { return (issued*31 + voided) % ticketMod }

// newTickets makes the ticket file in dir (the gateway's directory of
// the session), with no ticket.
func newTickets(dir string) (*tickets, error) {
	t := &tickets{path: filepath.Join(dir, "tickets")}
	f, err := os.OpenFile(t.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("writing the shell's ticket: %w", err)
	}
	t.f = f
	if err := t.writeLocked(); err != nil {
		f.Close()
		return nil, err
	}
	return t, nil
}

// issue adds one ticket.
func (t *tickets) issue() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.issued++
	return t.writeLocked()
}

// void voids every ticket issued so far and not used.
func (t *tickets) void() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.voided == t.issued {
		return nil
	}
	t.voided = t.issued
	return t.writeLocked()
}

// close lets go of the file.
func (t *tickets) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

func (t *tickets) writeLocked() error {
	if t.f == nil {
		return fmt.Errorf("writing the shell's ticket: %w", os.ErrClosed)
	}
	b := fmt.Appendf(nil, "%018d %018d %010d\n", t.issued, t.voided, ticketSum(t.issued, t.voided))
	if _, err := t.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("writing the shell's ticket: %w", err)
	}
	return nil
}

// newGateDir makes the gateway's directory of a session: files the
// session reads but never writes (its tickets and inputrc). It is tagged
// as the session's private directory is, so that a sweep after a crash
// removes it.
func newGateDir() (string, error) {
	dir, err := os.MkdirTemp("", sandbox.TempPattern("session"))
	if err != nil {
		return "", fmt.Errorf("creating the session's gate directory: %w", err)
	}
	// Readable by the session's processes (which may run as another
	// user), writable by the gateway only.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("creating the session's gate directory: %w", err)
	}
	return dir, nil
}

// acceptKeySeqs returns two random readline key sequences (\C-x\C-t and
// 12 letters): the one the check runs on, and the one that accepts the
// line once it passed. Only the shell knows them: the rc that holds them
// is removed once read.
func acceptKeySeqs() (check, accept, next string, err error) {
	b := make([]byte, 36)
	if _, err := rand.Read(b); err != nil {
		return "", "", "", fmt.Errorf("shell integration keys: %w", err)
	}
	seq := func(b []byte) string {
		var s strings.Builder
		s.WriteString(`\C-x\C-t`)
		for _, c := range b {
			s.WriteByte('a' + c%26)
		}
		return s.String()
	}
	return seq(b[:12]), seq(b[12:24]), seq(b[24:]), nil
}

// mayReachShell reports whether an Enter typed now may be read by the
// session's own shell, so that it needs a ticket: the shell is the
// terminal's foreground (its process group is the session leader's), or
// the foreground program is not waiting for input from the terminal (a
// command still runs, sleeps, or reads a pipe or a socket), so the Enter
// is read by whatever reads next, perhaps the shell.
// Enter into a program that reads it (a REPL, cat, vim) needs none.
func (s *Session) mayReachShell() bool {
	if s.cmd == nil || s.cmd.Process == nil {
		return false
	}
	pgid, reading := s.foregroundReading()
	return pgid == s.cmd.Process.Pid || pgid <= 0 || !reading
}

// issueTicket issues a ticket for an Enter about to be typed, when it
// may reach the session's own shell.
func (s *Session) issueTicket() error {
	if s.tickets == nil || !s.mayReachShell() {
		return nil
	}
	return s.tickets.issue()
}

// voidTickets voids unused tickets when the shell is waiting at its
// prompt with nothing typed left unread: every Enter typed so far was
// taken, by the shell or by a program before it, and a ticket not used
// by now is stale (an Enter typed ahead that another program read, or
// one the read builtin took).
func (s *Session) voidTickets() {
	if s.tickets == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	leader := s.cmd.Process.Pid
	idle := false
	s.ctl(func(fd uintptr) {
		g, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
		if err != nil || g != leader {
			return
		}
		tty, ok := terminalOf(fd)
		idle = ok && readingTerminal(fd) && waitingForInput(leader, tty)
	})
	if idle {
		_ = s.tickets.void() // a failed write leaves more refused, not fewer
	}
}

// ---- the refusal's mark ----

// MarkUnjudged ('U') is the mark the shell prints when it refused a line
// nobody judged: its parameter l= is the line as bash quotes it (printf
// %q), cut to maxUnjudgedLine bytes.
const MarkUnjudged MarkKind = 'U'

const (
	maxUnjudgedLine = 2048
	maxUnjudged     = 16 // refusals the screen keeps until the session takes them
)

// unjudgedMark keeps one refusal the shell reported (params without the
// key); at most maxUnjudged wait to be taken, later ones are counted.
func (s *Screen) unjudgedMark(params []byte) {
	// l= is the last parameter: all after it is the line (which may hold
	// a ";").
	line := ""
	if i := strings.Index(string(params), "l="); i >= 0 {
		line = string(params[i+2:])
	}
	line = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(line, "\uFFFD"))
	if len(line) > maxUnjudgedLine {
		line = line[:maxUnjudgedLine]
		for len(line) > 0 && !utf8.ValidString(line[max(0, len(line)-utf8.UTFMax):]) {
			line = line[:len(line)-1]
		}
		line += "…"
	}
	if len(s.unjudged) >= maxUnjudged {
		s.unjudgedLost++
		return
	}
	s.unjudged = append(s.unjudged, line)
}

// takeUnjudged returns the refusals not taken yet, and how many more
// there were.
func (s *Screen) takeUnjudged() ([]string, int) {
	l, n := s.unjudged, s.unjudgedLost
	s.unjudged, s.unjudgedLost = nil, 0
	return l, n
}

// UnjudgedHandler is told, on the session's reader goroutine and with no
// lock held, about each line the session's shell refused because no
// ticket let it run (redacted, as bash quotes it), or about lost refusals
// (line empty, lost > 0) when more came at once than the screen keeps.
type UnjudgedHandler func(id, line string, lost int)

// reportUnjudged hands the refusals the screen took to the session's
// handler: call it with s.mu not held.
func (s *Session) reportUnjudged(lines []string, lost int) {
	h := s.spec.OnUnjudged
	if h == nil {
		return
	}
	for _, l := range lines {
		h(s.id, s.Redact(l), 0)
	}
	if lost > 0 {
		h(s.id, "", lost)
	}
}

// redrawnMark reports whether a prompt mark only repeats the last
// prompt's, where it was: readline draws the prompt's last line again
// around a bind -x command (the ticket check runs on every Enter), and
// ctrl+l or a resize do the same. Such a mark is no new prompt: a new one
// starts with a prompt-start mark (the prompt hook's, or the continuation
// prompt's own) on a row below. Dropped, it does not move where the
// judged line starts, and no wait counts it as a prompt.
func (s *Screen) redrawnMark(kind MarkKind, extra string) bool {
	n := len(s.marks)
	at := s.CursorPos()
	switch kind {
	case MarkPromptStart:
		// The continuation prompt draws its own A: again at the last A's
		// place, with only that prompt's B since.
		s.redraw = n >= 2 && s.marks[n-1].Kind == MarkInputStart && s.marks[n-2].Kind == MarkPromptStart &&
			s.marks[n-2].Pos == at && s.marks[n-2].Extra == extra && s.marks[n-2].OnAlt == s.useAlt
		return s.redraw
	case MarkInputStart:
		// The same B again at its place (after an A dropped as a redraw,
		// or alone: PS1's last line holds no A).
		s.redraw = false
		return n > 0 && s.marks[n-1].Kind == MarkInputStart && s.marks[n-1].OnAlt == s.useAlt && s.marks[n-1].Pos == at
	default:
		s.redraw = false
		return false
	}
}

// ErrReservedKeys is returned for input that holds ctrl+x ctrl+t: the
// prefix of the keys the shell's ticket check runs on.
var ErrReservedKeys = errors.New("ctrl+x ctrl+t is reserved for termgate's check of judged lines in the shell; nothing was typed")

// reservedKeys refuses input that would type ctrl+x ctrl+t into a shell
// with the ticket check, whole or split across calls (readline keeps a
// key sequence's prefix between them): behind that prefix lie the keys
// that accept the line once it holds a ticket, which bind -p lists, and
// typed, they would run a line the judge at Enter never saw.
func (s *Session) reservedKeys(b []byte) error {
	if s.tickets == nil || len(b) == 0 {
		return nil
	}
	s.mu.Lock()
	last := s.lastTyped
	s.mu.Unlock()
	if bytes.Contains(b, []byte{0x18, 0x14}) || last == 0x18 && b[0] == 0x14 {
		return fmt.Errorf("%w: %w", ErrLineRefused, ErrReservedKeys)
	}
	return nil
}
