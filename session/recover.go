package session

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"syscall"
)

// PanicFunc is told about a panic recovered in one of a session's
// goroutines: the session, which goroutine, the value and the stack.
type PanicFunc func(sessionID, goroutine string, value any, stack []byte)

// ErrBroken is wrapped by the error of any input to a session whose output
// could no longer be read after an internal error.
var ErrBroken = fmt.Errorf("session is broken")

// recoverIn is deferred first thing in every goroutine a session owns. A
// panic there is a bug; it must not take the gateway and every other
// session down. It is reported (with its stack) to the session's panic
// handler, the session is marked broken, and its program is killed so that
// the waiter collects it and the session reads as exited. Every lock the
// goroutines take is released by defer, so none is left held.
func (s *Session) recoverIn(goroutine string) {
	v := recover()
	if v == nil {
		return
	}
	reportPanic(s.spec.OnPanic, s.id, goroutine, v, debug.Stack())
	s.mu.Lock()
	if s.broken == nil {
		s.broken = fmt.Errorf("%w: its %s stopped on an internal error (logged); close it and start another", ErrBroken, goroutine)
	}
	if goroutine == "waiter" && !s.exited {
		s.exited, s.exitCode, s.signal = true, -1, "internal error"
	}
	s.notifyLocked()
	s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		// Without its reader the program would block on a full terminal,
		// and without its waiter nobody would collect it: end it. The
		// waiter (if alive) marks the session exited.
		signalTree(s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// reportPanic tells f (or the default slog logger) about a panic.
func reportPanic(f PanicFunc, id, goroutine string, v any, stack []byte) {
	defer func() { _ = recover() }() // a broken handler must not panic again
	if f != nil {
		f(id, goroutine, v, stack)
		return
	}
	slog.Error("session goroutine panicked", "session", id, "goroutine", goroutine, "panic", fmt.Sprint(v), "stack", string(stack))
}
