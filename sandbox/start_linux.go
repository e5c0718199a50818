package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// Options are what one launch needs besides its spec.
type Options struct {
	// Name names the launch's cgroup (termgate/<owner>/<name>, see
	// NewCgroup): unique among the gateway's live launches.
	Name string
	// Tmp is the launch's private temporary directory (its TMPDIR, which
	// it may write), owned by the caller. Empty: the launch makes one,
	// tagged with this gateway (TempPattern(TmpKind), so that a sweep
	// finds it if the gateway dies), and removes it at End.
	Tmp string
	// TmpKind is the kind of the tmp the launch makes: "exec", or "run"
	// (also when empty).
	TmpKind string
	// Judge, when set, gates every exec of the launch's processes: each
	// is held in the kernel until the judge answers (the exec gate).
	Judge ExecJudge
	// GateMode names the gate's mode in the status ("enforce", "audit").
	GateMode string
	// GateBestEffort starts the launch without the gate on a kernel that
	// cannot hold execs (no seccomp user notification), and says so in
	// its status, instead of refusing it.
	GateBestEffort bool
	// Programs identifies the programs execs run; nil: by their names.
	Programs *ProgramIndex
	// Refused, when set and Judge is not, is told of each call the
	// profile's seccomp filter refused a confined launch (with Judge, the
	// judge is: ExecRequest.Refusal). The launcher then sends those calls
	// to a listener of the launch's own, which no exec reaches. It runs
	// on the launch's supervisor goroutines, before the call is answered:
	// it must be quick and safe for concurrent use. Where the kernel has
	// no user notification the filter answers alone, unnamed.
	Refused func(*SyscallRefusal)

	notifySupport func() error // NotifySupport; tests stand in a kernel without it
	refusalBurst  int          // the refusal budget's burst (0: refusalBurst; < 0: none)
}

// Launch is a program started through the launcher, and what confines it
// while it runs: its cgroup, its private tmp, its exec gate. End releases
// them.
type Launch struct {
	status Status
	cgroup *Cgroup
	sup    *supervisor
	tmp    string // removed at End: the launch made it

	endOnce sync.Once
	endErr  error
}

// Start starts cmd as spec says, the one way a session, the exec tool
// and `termgate sandbox run` start a program: it readies the spec
// (Attach: the kernel's support checked, every path sealed, the cgroup
// made), points cmd at the launcher, calls start (cmd.Start, or a PTY
// start) and waits until the program runs confined, its exec gate
// receiving, or the launcher says why not. Spec's Argv, Env and Dir must
// be set. On an error nothing of the launch is left: a started process
// is killed and waited for, its cgroup, tmp and gate are gone.
func Start(cmd *exec.Cmd, spec Spec, o Options, start func() error) (*Launch, error) {
	l := &Launch{}
	tmp := o.Tmp
	if tmp == "" && !spec.Unconfined {
		kind := o.TmpKind
		if kind == "" {
			kind = "run"
		}
		if kind != "exec" && kind != "run" {
			return nil, fmt.Errorf("sandbox: a launch's tmp of kind %q would never be swept", kind)
		}
		var err error
		if tmp, err = os.MkdirTemp("", TempPattern(kind)); err != nil {
			return nil, fmt.Errorf("sandbox: the launch's tmp: %w", err)
		}
		l.tmp = tmp
	}
	st, cg, err := spec.Attach(o.Name, tmp)
	l.status, l.cgroup = st, cg
	if err != nil {
		l.End()
		return nil, err
	}
	if o.Judge != nil {
		support := NotifySupport
		if o.notifySupport != nil {
			support = o.notifySupport
		}
		if err := support(); err != nil {
			if !o.GateBestEffort {
				l.End()
				return nil, fmt.Errorf("the exec gate needs seccomp user notification, which this kernel or libseccomp lacks (%v); --exec-gate=off runs without it, --sandbox=best-effort runs degraded", err)
			}
			l.status.NotEnforced = append(l.status.NotEnforced, "exec gate: no seccomp user notification ("+err.Error()+")")
		} else {
			spec.ExecGate = true
			l.status.ExecGate = o.GateMode
			if l.status.ExecGate == "" {
				l.status.ExecGate = "on"
			}
		}
	}
	judge := o.Judge
	if judge == nil && o.Refused != nil && !spec.Unconfined {
		support := NotifySupport
		if o.notifySupport != nil {
			support = o.notifySupport
		}
		if support() == nil {
			spec.NameRefusals = true
			judge = refusalsOnly(o.Refused)
		}
	}
	ln, err := prepare(cmd, spec)
	if err != nil {
		l.End()
		return nil, err
	}
	defer ln.close()
	if err := start(); err != nil {
		ln.closeChildEnds(cmd)
		if cmd.Process != nil { // started, then failed (a PTY's setup)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		l.End()
		return nil, fmt.Errorf("starting %s: %w", spec.Argv[0], err)
	}
	ln.closeChildEnds(cmd)
	fail := func(err error) (*Launch, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		l.End()
		return nil, err
	}
	if err := ln.send(cmd.Process.Pid); err != nil {
		return fail(err)
	}
	if ln.gate != nil {
		fd, gerr := receiveListener(ln.gate)
		if gerr != nil {
			// The launcher failed before it got as far: its status says why.
			if serr := ln.started(cmd); serr != nil {
				return fail(serr)
			}
			return fail(gerr)
		}
		sup, err := supervise(fd, cmd.Process.Pid, judge, o.Programs)
		if err != nil {
			return fail(err)
		}
		if o.refusalBurst != 0 {
			sup.budget.setBurst(o.refusalBurst)
		}
		l.sup = sup
	}
	if err := ln.started(cmd); err != nil {
		return fail(err)
	}
	return l, nil
}

// refusalsOnly is the supervisor's judge of a launch whose listener
// only the refused calls reach: each is told to refused. No exec is sent
// there (the filter has no rule for one); were one to come, it is
// refused.
func refusalsOnly(refused func(*SyscallRefusal)) ExecJudge {
	return func(_ context.Context, r *ExecRequest) ExecVerdict {
		if r.Refusal != nil {
			refused(r.Refusal)
		}
		return ExecVerdict{}
	}
}

// Status says how the launch is confined.
func (l *Launch) Status() Status { return l.status }

// RefusedPastBudget is how many refused calls were answered past the
// launch's budget of refusals named in full (refuse_linux.go).
func (l *Launch) RefusedPastBudget() uint64 {
	if l.sup == nil {
		return 0
	}
	return l.sup.budget.pastBudget()
}

// End releases the launch once its program has exited (or must go): every
// process left in its cgroup is killed and waited for, the cgroup
// removed, the exec gate stopped (a process that escaped the cgroup fails
// every exec from then on), and the tmp the launch made removed. It is
// idempotent; every call returns the first one's error.
func (l *Launch) End() error {
	l.endOnce.Do(func() {
		var errs []error
		if l.cgroup != nil {
			if err := l.cgroup.Kill(); err != nil {
				errs = append(errs, err)
			}
			if err := l.cgroup.Remove(); err != nil {
				errs = append(errs, err)
			}
		}
		if l.sup != nil {
			l.sup.stop()
		}
		if l.tmp != "" {
			if err := os.RemoveAll(l.tmp); err != nil {
				errs = append(errs, err)
			}
		}
		l.endErr = errors.Join(errs...)
	})
	return l.endErr
}
