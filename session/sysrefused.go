package session

import (
	"sync"

	"github.com/termgate/termgate/sandbox"
)

// The calls a session's seccomp filter refused, when its execs are not
// gated (with the exec gate, the gate's judge is told them instead, and
// ties them to the call in flight). The launch tells each one as it
// happens (sandbox.Options.Refused), before the call is answered; the
// session keeps them, merged by call, argument and program and counted,
// until the gateway takes them for a call's result (SysRefusals): a
// program that loops on a refused call makes one entry, not thousands.

// maxSysRefusals bounds the distinct refusals kept between two takes;
// the rest are counted in the last.
const maxSysRefusals = 16

// SysRefusal is a refused call, and how many times it was refused.
type SysRefusal struct {
	sandbox.SyscallRefusal // the first of them
	Count                  int
}

// sysRefused gathers a launch's refusals.
type sysRefused struct {
	mu   sync.Mutex
	list []SysRefusal
}

// add records one refusal; it runs on the launch's supervisor.
func (a *sysRefused) add(r *sandbox.SyscallRefusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.list {
		if o := &a.list[i]; o.Syscall == r.Syscall && o.Arg == r.Arg && o.Program == r.Program {
			o.Count++
			return
		}
	}
	if len(a.list) >= maxSysRefusals {
		a.list[len(a.list)-1].Count++
		return
	}
	a.list = append(a.list, SysRefusal{SyscallRefusal: *r, Count: 1})
}

// take returns what was gathered and forgets it.
func (a *sysRefused) take() []SysRefusal {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.list
	a.list = nil
	return l
}

// SysRefusals returns the calls the session's seccomp filter refused
// since the last time it was asked (nil with the exec gate: its judge
// was told them).
func (s *Session) SysRefusals() []SysRefusal { return s.sysRefused.take() }
