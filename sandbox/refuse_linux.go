package sandbox

import (
	"fmt"
	"strings"
	"syscall"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Naming what seccomp refused. With the exec gate, the calls a profile
// refuses (namedRefusals) are sent to the gate's listener rather than
// answered by the filter: the supervisor answers each with the errno the
// filter would have given (refusedErrno), and tells the judge what was
// refused (ExecRequest.Refusal), so that a call's result and the audit log
// can name it. The answer never depends on the judge: it is the errno,
// given whatever the judge does with the report, and a request that
// arrives once the supervisor is gone fails all the same (the kernel
// answers ENOSYS when no listener is left). With the gate off there is
// no listener: the filter answers, and nothing is named.

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
// failure cannot reach a call's result before the refusal does.
func (s *supervisor) refuse(req *seccomp.ScmpNotifReq) {
	name, err := req.Data.Syscall.GetName()
	if err != nil {
		name = fmt.Sprintf("syscall %d", req.Data.Syscall)
	}
	errno := refusedErrno(name)
	defer s.respond(req.ID, false, errno)
	r := describeRefusal(name, req.Data.Args)
	r.Errno = errno
	tid := int(req.Pid)
	r.Pid, _ = processIDs(tid)
	r.Program = exeName(tid)
	if !s.valid(req.ID) {
		return // gone: its pid may be another's already
	}
	s.judge(s.ctx, &ExecRequest{Pid: r.Pid, Syscall: name, Program: r.Program, Refusal: &r})
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
