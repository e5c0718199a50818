package sandbox

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Naming what seccomp refused. The calls a profile refuses
// (namedRefusals) are sent to a listener of the launch rather than
// answered by the filter: the exec gate's, or, with the gate off, one the
// launcher makes for them alone (Options.Refused; no exec goes to it).
// The supervisor answers each with the errno the filter would have given
// (refusedErrno), and tells the judge (ExecRequest.Refusal) or
// Options.Refused what was refused, so that a call's result and the audit
// log can name it. The answer never depends on the judge: it is the
// errno, given whatever the judge does with the report, and a request
// that arrives once the supervisor is gone fails all the same (the kernel
// answers ENOSYS when no listener is left). Where the kernel has no user
// notification, or for an unconfined launch, the filter answers alone
// and nothing is named.
//
// A program that loops on a refused call would cost the gateway a read
// of /proc per call: each launch has a budget (refusalBudget) of
// refusals named in full. Past it, a refused call is answered at once,
// without reading /proc or checking that it still waits: it is told
// with the process and program last read for its thread (Unread), and
// the gateway counts it into the one entry it already keeps for that
// call and program (so the result and the audit record say "socket(…)
// by perl, 100000 times", not 100000 lines).

// SyscallRefusal is a call the profile's seccomp filter refused.
type SyscallRefusal struct {
	Syscall string // socket, ioctl, ptrace, …
	// Arg is the argument that decided it, by name: the socket's family
	// and type ("AF_INET SOCK_DGRAM"), the ioctl's request ("TIOCSTI"),
	// clone's namespace flags; "" when the call is refused whatever it
	// asks.
	Arg     string
	Errno   syscall.Errno // what the process was answered
	Pid     int           // the process (thread group) that asked
	Program string        // its executable's base name ("?": unreadable)
	Reason  string        // why the profile refuses it, in a phrase
	// Unread: past the launch's budget, the process was not read: Pid
	// and Program are those last read for the same thread (0 and "?"
	// when none was), which a thread id reused within the launch could
	// make another's.
	Unread bool
}

func (r SyscallRefusal) String() string {
	s := r.Syscall
	if r.Arg != "" {
		s += "(" + r.Arg + ")"
	}
	return s
}

// isExec reports whether a request is one of the gate's own (an exec)
// rather than a refusal to name.
func isExec(req *seccomp.ScmpNotifReq) bool {
	n := int(req.Data.Syscall)
	return n == unix.SYS_EXECVE || n == unix.SYS_EXECVEAT
}

// refuse answers a refused call with its errno, after telling the judge.
// Reading what it names costs processIDs' reads and a readlink; the judge
// is told before the answer, so that what the process prints about its
// failure cannot reach a call's result before the refusal does. Past the
// launch's budget the process is not read (see above).
func (s *supervisor) refuse(req *seccomp.ScmpNotifReq) {
	tid := int(req.Pid)
	name, full, by := s.budget.spend(req.Data.Syscall, tid)
	errno := refusedErrno(name)
	defer s.respond(req.ID, false, errno)
	r := describeRefusal(name, req.Data.Args)
	r.Errno = errno
	if !full {
		r.Pid, r.Program, r.Unread = by.pid, by.program, true
		s.judge(s.ctx, &ExecRequest{Pid: r.Pid, Syscall: name, Program: r.Program, Refusal: &r})
		return
	}
	r.Pid, _ = processIDs(tid)
	r.Program = exeName(tid)
	if !s.valid(req.ID) {
		return // gone: its pid may be another's already
	}
	s.budget.remember(tid, refusedBy{pid: r.Pid, program: r.Program})
	s.judge(s.ctx, &ExecRequest{Pid: r.Pid, Syscall: name, Program: r.Program, Refusal: &r})
}

// The budget of refusals a launch names in full: a burst of
// refusalBurst, then refusalRefill a second. A program's occasional
// refusal is always named in full; a loop is, refusalBurst times, then
// counted.
const (
	refusalBurst  = 256
	refusalRefill = 16 // a second
	// maxRefusers bounds the threads whose process and program the
	// budget remembers.
	maxRefusers = 256
)

// refusalBudget is a launch's budget of refusals named in full, and what
// it knows of the threads that asked: their process and program, and
// the names of the calls (libseccomp's lookup is a C call).
type refusalBudget struct {
	mu     sync.Mutex
	burst  int     // refusalBurst when 0; < 0: no budget (every refusal read)
	tokens float64 // refusals that may still be named in full
	last   time.Time
	began  bool
	names  map[seccomp.ScmpSyscall]string
	by     map[int]refusedBy // by thread id
	past   uint64            // refusals answered past the budget
}

// refusedBy is the process and program of a thread that was refused.
type refusedBy struct {
	pid     int
	program string
}

// setBurst sets the budget's burst (tests and benchmarks; < 0: none).
func (b *refusalBudget) setBurst(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.burst, b.began = n, false
}

// spend names call sc and takes one refusal from the budget: full when
// it may be named in full; else by is what is known of thread tid.
func (b *refusalBudget) spend(sc seccomp.ScmpSyscall, tid int) (name string, full bool, by refusedBy) {
	b.mu.Lock()
	defer b.mu.Unlock()
	name, ok := b.names[sc]
	if !ok {
		var err error
		if name, err = sc.GetName(); err != nil {
			name = fmt.Sprintf("syscall %d", sc)
		}
		if b.names == nil {
			b.names = map[seccomp.ScmpSyscall]string{}
		}
		if len(b.names) < 64 {
			b.names[sc] = name
		}
	}
	burst := b.burst
	if burst == 0 {
		burst = refusalBurst
	}
	if burst < 0 {
		return name, true, refusedBy{}
	}
	now := time.Now()
	if !b.began {
		b.tokens, b.last, b.began = float64(burst), now, true
	}
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*refusalRefill)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return name, true, refusedBy{}
	}
	b.past++
	by, ok = b.by[tid]
	if !ok {
		by = refusedBy{program: "?"}
	}
	return name, false, by
}

// remember records the process and program read for thread tid.
func (b *refusalBudget) remember(tid int, by refusedBy) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[int]refusedBy{}
	}
	if _, ok := b.by[tid]; ok || len(b.by) < maxRefusers {
		b.by[tid] = by
	}
}

// pastBudget is how many refusals were answered past the budget.
func (b *refusalBudget) pastBudget() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.past
}

// describeRefusal names what a refused call asked, from its arguments.
func describeRefusal(name string, args []uint64) SyscallRefusal {
	arg := func(i int) uint64 {
		if i < len(args) {
			return args[i]
		}
		return 0
	}
	r := SyscallRefusal{Syscall: name}
	switch name {
	case "socket":
		fam, typ := uint32(arg(0)), uint32(arg(1))
		r.Arg = socketFamily(fam) + " " + socketType(typ)
		switch fam {
		case unix.AF_VSOCK, unix.AF_ALG:
			r.Reason = "no session may open this socket family"
		case unix.AF_UNIX:
			r.Reason = "the profile makes no unix sockets"
		case unix.AF_INET, unix.AF_INET6:
			r.Reason = "the profile allows no such socket (no network, or TCP through the proxy only)"
		default:
			r.Reason = "the profile allows no socket of this family"
		}
	case "ioctl":
		switch uint32(arg(1)) {
		case unix.TIOCSTI:
			r.Arg = "TIOCSTI"
		case unix.TIOCLINUX:
			r.Arg = "TIOCLINUX"
		default:
			r.Arg = fmt.Sprintf("%#x", uint32(arg(1)))
		}
		r.Reason = "typing into a terminal is refused to sessions"
	case "clone":
		r.Arg = cloneNamespaces(arg(0))
		r.Reason = "no session may make namespaces"
	default:
		r.Reason = "no session may use this call"
	}
	return r
}

// socketFamily names an address family.
func socketFamily(f uint32) string {
	switch f {
	case unix.AF_UNIX:
		return "AF_UNIX"
	case unix.AF_INET:
		return "AF_INET"
	case unix.AF_INET6:
		return "AF_INET6"
	case unix.AF_NETLINK:
		return "AF_NETLINK"
	case unix.AF_PACKET:
		return "AF_PACKET"
	case unix.AF_VSOCK:
		return "AF_VSOCK"
	case unix.AF_ALG:
		return "AF_ALG"
	case unix.AF_BLUETOOTH:
		return "AF_BLUETOOTH"
	case unix.AF_CAN:
		return "AF_CAN"
	case unix.AF_XDP:
		return "AF_XDP"
	}
	return fmt.Sprintf("family %d", f)
}

// socketType names a socket type (its flags aside).
func socketType(t uint32) string {
	switch t & 0xf {
	case unix.SOCK_STREAM:
		return "SOCK_STREAM"
	case unix.SOCK_DGRAM:
		return "SOCK_DGRAM"
	case unix.SOCK_RAW:
		return "SOCK_RAW"
	case unix.SOCK_SEQPACKET:
		return "SOCK_SEQPACKET"
	case unix.SOCK_RDM:
		return "SOCK_RDM"
	case unix.SOCK_PACKET:
		return "SOCK_PACKET"
	}
	return fmt.Sprintf("type %d", t&0xf)
}

// cloneNamespaces names the namespace flags of clone's flags.
func cloneNamespaces(flags uint64) string {
	var names []string
	for _, f := range []struct {
		bit  uint64
		name string
	}{
		{unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWIPC, "CLONE_NEWIPC"},
		{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"}, {unix.CLONE_NEWNET, "CLONE_NEWNET"},
		{unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {unix.CLONE_NEWTIME, "CLONE_NEWTIME"},
	} {
		if flags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}
