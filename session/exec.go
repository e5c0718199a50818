package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/sandbox"
)

// ExecResult is the outcome of Exec.
type ExecResult struct {
	Output    string
	ExitCode  int
	TimedOut  bool
	Truncated bool // output beyond the byte budget was dropped from the middle
	Duration  time.Duration
	Sandbox   sandbox.Status // how it ran confined, when it did
	// SysRefused: the calls its seccomp filter refused, without the
	// exec gate (with it, the gate's judge was told them).
	SysRefused []SysRefusal
}

// Exec runs argv to completion in its own session with stdout and stderr
// merged, killing its whole process tree at the time limit. At most maxBytes
// of output are kept: the head and the tail, with the middle dropped.
//
// With a redactor, output is redacted as it streams, before the head and
// tail are kept: a secret cannot straddle the cut.
//
// With a sandbox spec, the command runs confined as a session would be;
// with a gate, each program it runs is judged first.
func Exec(ctx context.Context, argv []string, dir string, env []string, limit time.Duration, maxBytes int, red *redact.Engine, sb *sandbox.Spec, gate *ExecGate) (ExecResult, error) {
	if len(argv) == 0 {
		return ExecResult{}, errors.New("no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	// A background process that keeps the output pipe open must not hold
	// the call: after the command exits, its pipe is closed and the rest
	// of its tree killed.
	cmd.WaitDelay = 200 * time.Millisecond
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return ExecResult{}, err
	}
	defer devnull.Close()
	cmd.Stdin = devnull
	buf := &headTail{max: maxBytes}
	var out io.Writer = buf
	var taint *redact.Taint
	if red != nil {
		// One Taint for the command: what is found once is masked in every
		// copy; text that went out before a match showed it to be a secret
		// is masked where the buffer still holds it.
		taint = redact.NewTaint(redact.TaintLimits{})
		stream := red.NewStreamWith(func(p []byte) { _, _ = buf.Write(p) }, redact.StreamOptions{
			Taint: taint, Repair: func(r redact.Repair) { buf.repair(r.Start, r.End) },
		})
		defer stream.Close()
		out = stream
	}
	cmd.Stdout, cmd.Stderr = out, out
	var status sandbox.Status
	var refused *sysRefused
	start := time.Now()
	if sb == nil && gate != nil {
		sb = &sandbox.Spec{Unconfined: true, UID: -1, GID: -1} // unconfined, but its execs judged
	}
	if sb != nil {
		spec := *sb
		spec.Argv, spec.Env, spec.Dir = argv, env, dir
		id := "exec-" + newID()
		o := sandbox.Options{Name: id, TmpKind: "exec"}
		if gate != nil {
			o.Judge, o.GateMode, o.GateBestEffort, o.Programs = gate.Judge(id), gate.Mode, gate.BestEffort, gate.Programs
		} else if !spec.Unconfined {
			refused = &sysRefused{}
			o.Refused = refused.add
		}
		l, err := sandbox.Start(cmd, spec, o, cmd.Start)
		if err != nil {
			return ExecResult{}, fmt.Errorf("not run: %w", err)
		}
		// Whatever the command left in its cgroup goes, its exec gate
		// stops, its tmp is removed.
		defer l.End()
		status = l.Status()
	} else if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var res ExecResult
	var werr error
	select {
	case werr = <-done:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.TimedOut = true
	}
	// Whatever the command left running in its session goes with it.
	signalTree(pid, syscall.SIGKILL)
	if res.TimedOut {
		werr = <-done
	}
	res.Duration = time.Since(start)
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			res.ExitCode = ee.ExitCode()
		}
	} else if werr != nil {
		return res, werr
	}
	if s, ok := out.(*redact.Stream); ok {
		s.Close() // every byte is in buf before it is read
	}
	res.Output, res.Truncated = buf.String()
	if red != nil {
		res.Output = red.RedactWith(res.Output, taint)
	}
	res.Sandbox = status
	res.SysRefused = refused.take() // each was told before its call was answered
	return res, nil
}

// headTail keeps the first and last max/2 bytes written to it.
type headTail struct {
	max     int
	head    []byte
	tail    []byte // ring
	tailPos int
	dropped int64
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	half := max(h.max/2, 1) // a byte of each at least
	if room := half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(h.tail) < half {
			k := min(half-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(half-h.tailPos, len(p))
		copy(h.tail[h.tailPos:], p[:k])
		h.dropped += int64(k)
		h.tailPos = (h.tailPos + k) % half
		p = p[k:]
	}
	return n, nil
}

// repair masks the text of bytes [start, end) of what was written, widened
// to whole characters, where the head or the tail still holds them.
func (h *headTail) repair(start, end int64) {
	headN := int64(len(h.head))
	total := headN + int64(len(h.tail)) + h.dropped
	tailFrom := total - int64(len(h.tail))
	// at reads what is kept of the output: a dropped byte reads as a
	// blank, which no character continues.
	at := func(off int64) *byte {
		switch {
		case off < headN:
			return &h.head[off]
		case off >= tailFrom:
			return &h.tail[(h.tailPos+int(off-tailFrom))%len(h.tail)]
		}
		return nil
	}
	start, end = max(start, 0), min(end, total)
	if start >= end {
		return
	}
	// Offsets fit in an int: the output is held in memory.
	a, b := redact.CharSpan(func(i int) byte {
		if p := at(int64(i)); p != nil {
			return *p
		}
		return ' '
	}, int(total), int(start), int(end))
	var m redact.TextMasker
	for off := int64(a); off < int64(b); off++ {
		if off >= headN && off < tailFrom {
			off = tailFrom // what was dropped is not there to mask
		}
		if p := at(off); p != nil && off < int64(b) {
			*p = m.Mask(*p)
		}
	}
}

func (h *headTail) String() (string, bool) {
	if h.dropped == 0 {
		return string(h.head) + string(h.tail), false
	}
	t := append(append([]byte{}, h.tail[h.tailPos:]...), h.tail[:h.tailPos]...)
	return string(h.head) + fmt.Sprintf("\n[... %d bytes dropped ...]\n", h.dropped) + string(t), true
}
