package sandbox

import (
	"fmt"
	"syscall"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in every confined session: mounts and
// namespaces, the kernel's own surface, io_uring, reaching into other
// processes, file handles (security-anchors §1.9).
var deniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "unshare", "setns", "open_tree", "move_mount", "fsopen", "fsmount",
	"fsconfig", "fspick", "mount_setattr", "chroot",
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "iopl", "ioperm",
	"syslog", "quotactl", "lookup_dcookie", "vhangup",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
	"open_by_handle_at", "name_to_handle_at",
}

// refusedErrno is the errno a refused call fails with: EACCES for the
// socket rules (what a program expects of a forbidden socket), EPERM for
// everything else. The filter and the exec gate's supervisor (which
// answers the refusals it is sent, refuse_linux.go) both take it from
// here, so a program sees the same errno with the gate on or off.
func refusedErrno(name string) syscall.Errno {
	if name == "socket" || name == "connect" {
		return syscall.EACCES
	}
	return syscall.EPERM
}

// refuseRule is one rule that refuses a call: its name and the conditions
// on its arguments (none: every call).
type refuseRule struct {
	name  string
	conds []seccomp.ScmpCondition
}

// lowWord compares the low 32 bits of argument arg with v: the kernel
// reads an int argument (a socket family or type, an ioctl request) from
// those bits only, so comparing all 64 would let a program set a high bit
// and pass a rule the kernel would then not see.
func lowWord(arg uint, v uint64) seccomp.ScmpCondition {
	c, _ := seccomp.MakeCondition(arg, seccomp.CompareMaskedEqual, 0xffffffff, v)
	return c
}

// namedRefusals are the rules the launch's listener is sent when it has
// one (the exec gate's, or one for them alone: Spec.NameRefusals; their
// refusals are then named: refuse_linux.go), and that the filter answers
// with refusedErrno otherwise: the deny set,
// clone with namespace flags, TTY input injection, and the socket
// families and types the profile refuses (AF_VSOCK and AF_ALG always;
// all but AF_UNIX without network; non-stream inet sockets for a proxy
// session). None is hot or made by libc in normal work: a rule with
// conditions costs nothing to the calls it does not match.
func namedRefusals(s Spec) []refuseRule {
	var rules []refuseRule
	for _, name := range deniedSyscalls {
		rules = append(rules, refuseRule{name: name})
	}
	nsFlags := uint64(unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME)
	// clone's flags may hold no namespace flag: one rule per flag.
	for flag := uint64(1); flag <= nsFlags; flag <<= 1 {
		if flag&nsFlags == 0 {
			continue
		}
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, flag, flag)
		rules = append(rules, refuseRule{name: "clone", conds: []seccomp.ScmpCondition{cond}})
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		rules = append(rules, refuseRule{name: "ioctl", conds: []seccomp.ScmpCondition{lowWord(1, req)}})
	}
	for _, fam := range []uint64{unix.AF_VSOCK, unix.AF_ALG} {
		rules = append(rules, refuseRule{name: "socket", conds: []seccomp.ScmpCondition{lowWord(0, fam)}})
	}
	if s.Network == "none" {
		// Anything but AF_UNIX, whatever the high bits say.
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareNotEqual, unix.AF_UNIX)
		rules = append(rules, refuseRule{name: "socket", conds: []seccomp.ScmpCondition{cond}})
	}
	if s.Network == "proxy" && !ownNetwork(s) {
		// A proxy session on the host's network: TCP reaches the proxy's
		// port only (Landlock); datagram and raw sockets are refused here.
		rules = append(rules, egressSocketRules()...)
	}
	return rules
}

// applySeccomp loads the filter: the named refusals (namedRefusals; with
// a listener they go to its filter instead, gateExecs), clone3
// (ENOSYS, so libc falls back to clone, which is checked), unix sockets
// in a proxy session without them, connect without network, and any
// non-native architecture (kill).
func applySeccomp(s Spec) error {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	if !s.listens() {
		// No listener to name them: the plain errno.
		if err := addRefusals(f, s, func(name string) seccomp.ScmpAction {
			return seccomp.ActErrno.SetReturnCode(int16(refusedErrno(name)))
		}); err != nil {
			return err
		}
	}
	if err := addRule(f, "clone3", seccomp.ActErrno.SetReturnCode(int16(syscall.ENOSYS))); err != nil {
		return fmt.Errorf("seccomp clone3: %v", err)
	}
	if s.Network == "proxy" && !s.UnixSockets {
		// Connecting to a unix socket outside the session (docker.sock, a
		// D-Bus bus) is not a matter for Landlock before ABI 9, and connect
		// must stay open for TCP to the proxy: no unix socket is made. Not
		// named: libc makes one for every user or host lookup (nscd), so
		// every curl or ssh would report it.
		if err := addRule(f, "socket", seccomp.ActErrno.SetReturnCode(int16(refusedErrno("socket"))), lowWord(0, unix.AF_UNIX)); err != nil {
			return fmt.Errorf("seccomp socket: %v", err)
		}
	}
	if s.Network == "none" {
		// Without network, no connect at all: Landlock below ABI 9 does
		// not stop connecting to a pathname unix socket outside the
		// sandbox (docker.sock, D-Bus), so connect is refused here. It
		// is not named: inet sockets are refused (and named) at socket,
		// and what reaches connect is a unix socket, which every user
		// lookup of libc tries (nscd), so naming it would be noise.
		if err := addRule(f, "connect", seccomp.ActErrno.SetReturnCode(int16(refusedErrno("connect")))); err != nil {
			return fmt.Errorf("seccomp connect: %v", err)
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: loading the filter: %v", err)
	}
	return nil
}

// addRefusals adds s's named refusals to f, each with the action act
// gives its call.
func addRefusals(f *seccomp.ScmpFilter, s Spec, act func(name string) seccomp.ScmpAction) error {
	for _, r := range namedRefusals(s) {
		if err := addRule(f, r.name, act(r.name), r.conds...); err != nil {
			return fmt.Errorf("seccomp %s: %v", r.name, err)
		}
	}
	return nil
}

// addRule adds one rule; a call this architecture does not have is left
// out.
func addRule(f *seccomp.ScmpFilter, name string, act seccomp.ScmpAction, conds ...seccomp.ScmpCondition) error {
	sc, err := seccomp.GetSyscallFromName(name)
	if err != nil {
		return nil // not on this architecture
	}
	if len(conds) == 0 {
		return f.AddRule(sc, act)
	}
	return f.AddRuleConditional(sc, act, conds)
}

// egressSocketRules refuse AF_INET and AF_INET6 sockets that are not
// streams (the type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC aside).
func egressSocketRules() []refuseRule {
	var rules []refuseRule
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		for _, typ := range []uint64{unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_SEQPACKET, unix.SOCK_RDM, unix.SOCK_PACKET} {
			c1, _ := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xf, typ)
			rules = append(rules, refuseRule{name: "socket", conds: []seccomp.ScmpCondition{lowWord(0, fam), c1}})
		}
	}
	return rules
}
