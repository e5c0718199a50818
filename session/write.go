package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotReading is wrapped by the error of a write that the program did not
// take in before the call's deadline: it is not reading its terminal (a
// full-screen program that stopped, a process blocked elsewhere) and the
// terminal's input buffer is full.
var ErrNotReading = errors.New("the program is not reading its input")

// pollable turns the PTY master creack/pty returns into a file the runtime
// poller drives, so that reads and writes honour deadlines and a Close
// unblocks them. creack/pty's master is in blocking mode (its ioctls call
// Fd, which switches a file to blocking), and SetWriteDeadline then fails
// with os.ErrNoDeadline. The master is duplicated, the copy set
// non-blocking, and os.NewFile registers it with the poller. From here on
// the file's descriptor is only ever used through SyscallConn (see ctl):
// calling Fd would switch it back to blocking.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("duplicating the terminal: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("making the terminal non-blocking: %w", err)
	}
	p := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := p.SetWriteDeadline(time.Time{}); err != nil {
		p.Close()
		return nil, fmt.Errorf("the terminal cannot take deadlines: %w", err)
	}
	return p, nil
}

// ctl runs f with the PTY master's descriptor for an ioctl. It reports
// false when there is no PTY or it is closed; the descriptor cannot be
// closed (and reused) while f runs.
func (s *Session) ctl(f func(fd uintptr)) bool {
	if s.pty == nil {
		return false
	}
	rc, err := s.pty.SyscallConn()
	if err != nil {
		return false
	}
	return rc.Control(f) == nil
}

// terminalEchoOff reports whether the terminal reads with echo off.
func (s *Session) terminalEchoOff() bool {
	off := false
	s.ctl(func(fd uintptr) { off = echoOff(fd) })
	return off
}

// echoFlagOff reports whether the terminal's ECHO flag is off, in any
// mode: neither the kernel nor a line editor (readline honours it) echoes
// what is typed.
func (s *Session) echoFlagOff() bool {
	off := false
	s.ctl(func(fd uintptr) {
		if t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err == nil {
			off = t.Lflag&unix.ECHO == 0
		}
	})
	return off
}

// foregroundNow returns the terminal's foreground process group and its
// program's name.
func (s *Session) foregroundNow() (pgid int, name string) {
	s.ctl(func(fd uintptr) { pgid, name = foreground(fd) })
	return pgid, name
}

// foregroundGroup returns the terminal's foreground process group only:
// where nothing asks which program it runs, nothing pays for identifying
// it (identify reads /proc for the relays it may run), which the
// completion checks do on every change of the screen.
func (s *Session) foregroundGroup() (pgid int) {
	s.ctl(func(fd uintptr) {
		if g, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil && g > 0 {
			pgid = g
		}
	})
	return pgid
}

// foregroundReading returns the terminal's foreground process group and
// whether its program is blocked reading the terminal itself (not a pipe,
// a socket or a file).
func (s *Session) foregroundReading() (pgid int, reading bool) {
	tty := ttyID{}
	s.ctl(func(fd uintptr) {
		if g, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil && g > 0 {
			pgid = g
		}
		tty, _ = terminalOf(fd)
	})
	return pgid, pgid > 0 && waitingForInput(leaderOrNewest(pgid), tty)
}

// input is where typed bytes go.
func (s *Session) input() *os.File {
	if s.pty != nil {
		return s.pty
	}
	return s.stdin
}

// past is a deadline that has passed: setting it makes a blocked write
// return at once.
var past = time.Unix(1, 0)

// write types b, all of it or until the deadline (or ctx) ends the write.
// Only one write runs at a time; a write waiting for another gives up at
// its deadline too. When the session is closing, a waiting or blocked
// write fails at once: closing never waits for a writer.
func (s *Session) write(ctx context.Context, b []byte, deadline time.Time, tap bool) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case s.broken != nil:
		s.mu.Unlock()
		return s.broken
	case s.exited:
		s.mu.Unlock()
		return ErrExited
	}
	var tapper Tap
	if tap {
		s.lastInput = time.Now()
		s.bytesIn += int64(len(b))
		tapper = s.tap
	}
	s.mu.Unlock()
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(defaultWriteTimeout)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case s.wsem <- struct{}{}:
	case <-s.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%w: another write to the terminal did not finish before this call's deadline; nothing was typed", ErrNotReading)
	}
	defer func() { <-s.wsem }()
	w := s.input()
	_ = w.SetWriteDeadline(deadline)
	// Close sets s.closing and then a past deadline: whichever order this
	// write saw them in, it does not block past the close.
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	stop := context.AfterFunc(ctx, func() { _ = w.SetWriteDeadline(past) })
	defer stop()
	echoOff := tapper != nil && s.terminalEchoOff()
	n, err := w.Write(b)
	if tapper != nil && n > 0 {
		tapper.Input(b[:n], echoOff)
	}
	if n > 0 {
		s.mu.Lock()
		s.lastTyped = b[n-1] // reservedKeys reads it
		s.mu.Unlock()
	}
	if err == nil {
		return nil
	}
	select {
	case <-s.closing:
		return ErrClosed
	default:
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w after %d of %d bytes were typed", cerr, n, len(b))
		}
		return fmt.Errorf("%w: %d of %d bytes were typed before the call's deadline", ErrNotReading, n, len(b))
	}
	return fmt.Errorf("writing to session: %w", err)
}

// defaultWriteTimeout bounds a write made without a deadline.
const defaultWriteTimeout = 10 * time.Second

// kickWriters makes every write in flight or waiting fail, so that closing
// never waits for a program that does not read. Idempotent.
func (s *Session) kickWriters() {
	s.closingOnce.Do(func() { close(s.closing) })
	_ = s.input().SetWriteDeadline(past)
}

// writeEOF types ctrl+d (PTY) or closes stdin (pipe) at the start of a
// close; a write in flight has been kicked, so this waits at most grace.
func (s *Session) writeEOF(grace time.Duration) {
	if s.pty == nil {
		_ = s.stdin.Close()
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case s.wsem <- struct{}{}:
	case <-t.C:
		return
	}
	defer func() { <-s.wsem }()
	_ = s.pty.SetWriteDeadline(time.Now().Add(grace))
	_, _ = s.pty.Write([]byte{4})
}

// maxReplyQueue bounds the terminal replies waiting to be written: a program
// that floods queries without reading the answers loses the excess.
const maxReplyQueue = 4 << 10

// replyTimeout bounds one write of terminal replies.
const replyTimeout = time.Second

// reply queues an answer to a terminal query. It runs on the reader's
// goroutine with s.mu held, so it must not block: one writer goroutine per
// session (replyLoop) writes the queue.
func (s *Session) reply(b []byte) {
	if s.pty == nil || len(s.replies)+len(b) > maxReplyQueue {
		return
	}
	s.replies = append(s.replies, b...)
	select {
	case s.replyKick <- struct{}{}:
	default:
	}
}

// replyLoop writes queued terminal replies until the session closes.
func (s *Session) replyLoop() {
	defer close(s.replyDone)
	defer s.recoverIn("reply writer")
	for {
		select {
		case <-s.replyKick:
		case <-s.closing:
			return
		}
		s.mu.Lock()
		b := s.replies
		s.replies = nil
		s.mu.Unlock()
		if len(b) > 0 {
			_ = s.write(context.Background(), b, time.Now().Add(replyTimeout), false)
		}
	}
}
