package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy is wrapped by the error a call gets when another call on the same
// session is still in flight and did not end within the second call's
// timeout. Nothing of the second call reached the terminal.
var ErrBusy = errors.New("session busy")

// BusyError says which call holds the session's turn.
type BusyError struct {
	Holder string        // the call in flight: session_send, session_keys, session_read or session_start
	For    time.Duration // how long it has been in flight
	Read   bool          // the refused call was a read: nothing was read
}

func (e *BusyError) Error() string {
	what := "nothing was sent"
	if e.Read {
		what = "nothing was read (mode screen and scrollback read at once)"
	}
	return fmt.Sprintf("%v: another call (%s, %s so far) is in flight; %s. Calls on one session run one at a time: retry when it returns", ErrBusy, e.Holder, e.For.Round(time.Millisecond), what)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// The operations that take a session's turn, named as the tools that make
// them so that a busy error tells the agent which of its calls is running.
const (
	opSend  = "session_send"
	opKeys  = "session_keys"
	opRead  = "session_read"
	opStart = "session_start"
)

// acquire takes the session's turn for one call: only one input or "new"
// read runs at a time, so that no two calls interleave keystrokes or claim
// the same output. It waits for the call in flight until deadline or ctx
// ends; a zero deadline does not wait at all. release gives the turn back.
func (s *Session) acquire(ctx context.Context, op string, deadline time.Time) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	take := func() func() {
		s.mu.Lock()
		s.turnOp, s.turnAt = op, time.Now()
		s.mu.Unlock()
		return func() {
			s.mu.Lock()
			s.turnOp = ""
			s.mu.Unlock()
			<-s.turn
		}
	}
	select {
	case s.turn <- struct{}{}:
		return take(), nil
	default:
	}
	busy := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		holder, since := s.turnOp, s.turnAt
		if holder == "" {
			holder = "another call"
		}
		return &BusyError{Holder: holder, For: time.Since(since), Read: op == opRead}
	}
	wait := time.Until(deadline)
	if deadline.IsZero() || wait <= 0 {
		return nil, busy()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.turn <- struct{}{}:
		return take(), nil
	case <-t.C:
		return nil, busy()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
