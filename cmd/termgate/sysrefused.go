package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// The calls a session's seccomp filter refused, named. With the exec gate
// on, the sandbox sends them to the gate's judge as they happen (each
// told before it is answered with its errno: sandbox/refuse_linux.go);
// the judge hands them here. Each call in flight on the session gathers
// them, one entry per call, argument and program, counted, so a program
// that retries in a loop makes one line, not thousands; the call's result
// lists them in sandbox_refused (source "seccomp"), and its outcome
// record in the audit log carries them in termgate.sandbox.refused, like
// the other refusals of the call. One refused with no call in flight
// waits for the session's next call.
//
// With --exec-gate=off (no execs judged) the launcher still sends the
// refused calls to a listener of its own, which no exec reaches; the
// session gathers them (session.SysRefusals, counted the same way), and
// the next call's result takes those refused since the last one, as it
// takes Landlock's. The exec tool's command gathers its own
// (ExecResult.SysRefused), and `termgate sandbox run` tells them on
// stderr. Past a launch's budget of refusals read in full, a refused
// call is answered at once and only counted into its entry.

// maxSysRefusals bounds the distinct refusals one call (or a session's
// wait for its next call) keeps; the rest are counted in the last.
const maxSysRefusals = 16

// sysRefusals gathers refusals, merged by what was refused and by whom
// (the call, the file or destination, the access, the program).
type sysRefusals struct {
	mu   sync.Mutex
	list []Refusal
}

// add records r; it reports whether r is new (not a repeat).
func (s *sysRefusals) add(r Refusal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.list {
		if o := &s.list[i]; o.Syscall == r.Syscall && o.Program == r.Program && o.Path == r.Path &&
			o.Destination == r.Destination && o.Access == r.Access {
			o.Count++
			return false
		}
	}
	if len(s.list) >= maxSysRefusals {
		s.list[len(s.list)-1].Count++
		return false
	}
	r.Count = 1
	s.list = append(s.list, r)
	return true
}

// take returns what was gathered and forgets it.
func (s *sysRefusals) take() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.list
	s.list = nil
	return l
}

// sysRefused is told of a call the profile of st's session refused.
func (x *execGate) sysRefused(st gateState, sr *sandbox.SyscallRefusal) {
	r := sysRefusal(sr, st.ref.Profile)
	var fresh bool
	switch {
	case len(st.calls) > 0:
		for _, c := range st.calls {
			fresh = c.sys.add(r) || fresh
		}
	case st.call != nil:
		fresh = st.call.sys.add(r) // the exec tool's own call
	case st.session != nil:
		fresh = st.session.sys.add(r)
	}
	if fresh {
		// Once per call and kind: a loop does not flood the log.
		x.g.log.Info("sandbox refused a call", "session", st.ref.ID, "syscall", r.Syscall, "program", r.Program, "pid", r.Pid)
	}
}

// sysRefusals returns the calls seccomp refused during the call ctx
// carries (and those refused on session id while no call was in flight),
// each with profile when it does not have one.
func (x *execGate) sysRefusals(ctx context.Context, id, profile string) []Refusal {
	if x == nil {
		return nil
	}
	var out []Refusal
	if id != "" {
		x.mu.Lock()
		gs := x.sessions[id]
		x.mu.Unlock()
		if gs != nil {
			out = gs.sys.take()
		}
	}
	if call, _ := ctx.Value(gateCallKey{}).(*gateCall); call != nil {
		out = append(out, call.sys.take()...)
	}
	return withProfile(out, profile)
}

// seccompRefusals returns what seccomp refused on session s since its
// last call: from the exec gate (the calls in flight, sysRefusals), or,
// with the gate off, from the session itself.
func (g *gateway) seccompRefusals(ctx context.Context, s *session.Session, profile string) []Refusal {
	out := g.gate.sysRefusals(ctx, s.ID(), profile)
	return append(out, g.sessionSysRefusals(s.ID(), s.SysRefusals(), profile)...)
}

// sessionSysRefusals are the refusals a session or an exec command
// gathered without the exec gate, as a result lists them (each logged
// once per call).
func (g *gateway) sessionSysRefusals(id string, list []session.SysRefusal, profile string) []Refusal {
	var out []Refusal
	for _, sr := range list {
		r := sysRefusal(&sr.SyscallRefusal, profile)
		r.Count = sr.Count
		g.log.Info("sandbox refused a call", "session", id, "syscall", r.Syscall, "program", r.Program, "pid", r.Pid, "count", r.Count)
		out = append(out, r)
	}
	return out
}

// sysRefusal is a refused call as a result lists it.
func sysRefusal(sr *sandbox.SyscallRefusal, profile string) Refusal {
	return Refusal{
		Access: "syscall", Syscall: sr.String(), Program: sr.Program, Pid: sr.Pid, Profile: profile,
		Rule: "sandbox.seccomp", Reason: sr.Reason + " (" + sr.Errno.Error() + ")", Source: "seccomp",
	}
}

// callSysRefusals is sysRefusals for the exec tool's own call.
func (c *gateCall) sysRefusals(profile string) []Refusal {
	if c == nil {
		return nil
	}
	return withProfile(c.sys.take(), profile)
}

func withProfile(rs []Refusal, profile string) []Refusal {
	for i := range rs {
		if rs[i].Profile == "" {
			rs[i].Profile = profile
		}
	}
	return rs
}

// refusalTeller says on stderr what seccomp refused in termgate sandbox
// run, once per call, argument and program.
type refusalTeller struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func newRefusalTeller(w io.Writer) *refusalTeller {
	return &refusalTeller{w: w, seen: map[string]bool{}}
}

func (t *refusalTeller) tell(r *sandbox.SyscallRefusal) {
	key := r.String() + " by " + r.Program
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[key] || len(t.seen) >= 4*maxSysRefusals {
		return
	}
	t.seen[key] = true
	fmt.Fprintf(t.w, "termgate: sandbox refused syscall %s (pid %d): %s (%s)\n", key, r.Pid, r.Reason, r.Errno.Error())
}
