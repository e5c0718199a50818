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

// applySeccomp loads the filter: the deny set, clone with namespace flags,
// clone3 (ENOSYS, so libc falls back to clone, which is checked), TTY
// input injection, socket families (AF_VSOCK and AF_ALG always; all but
// AF_UNIX without network), and any non-native architecture (kill).
func applySeccomp(s Spec) error {
	eperm := seccomp.ActErrno.SetReturnCode(int16(syscall.EPERM))
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	add := func(name string, act seccomp.ScmpAction, conds ...seccomp.ScmpCondition) error {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return nil // not on this architecture
		}
		if len(conds) == 0 {
			return f.AddRule(sc, act)
		}
		return f.AddRuleConditional(sc, act, conds)
	}
	for _, name := range deniedSyscalls {
		if err := add(name, eperm); err != nil {
			return fmt.Errorf("seccomp %s: %v", name, err)
		}
	}
	nsFlags := uint64(unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME)
	// clone's flags may hold no namespace flag: one rule per flag.
	for flag := uint64(1); flag <= nsFlags; flag <<= 1 {
		if flag&nsFlags == 0 {
			continue
		}
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, flag, flag)
		if err := add("clone", eperm, cond); err != nil {
			return fmt.Errorf("seccomp clone: %v", err)
		}
	}
	if err := add("clone3", seccomp.ActErrno.SetReturnCode(int16(syscall.ENOSYS))); err != nil {
		return fmt.Errorf("seccomp clone3: %v", err)
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		cond, _ := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xffffffff, req)
		if err := add("ioctl", eperm, cond); err != nil {
			return fmt.Errorf("seccomp ioctl: %v", err)
		}
	}
	eaccess := seccomp.ActErrno.SetReturnCode(int16(syscall.EACCES))
	for _, fam := range []uint64{unix.AF_VSOCK, unix.AF_ALG} {
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareEqual, fam)
		if err := add("socket", eaccess, cond); err != nil {
			return fmt.Errorf("seccomp socket: %v", err)
		}
	}
	if s.Network == "none" {
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareNotEqual, unix.AF_UNIX)
		if err := add("socket", eaccess, cond); err != nil {
			return fmt.Errorf("seccomp socket: %v", err)
		}
		// Without network, no connect at all: Landlock below ABI 9 does
		// not stop connecting to a pathname unix socket outside the
		// sandbox (docker.sock, D-Bus), so connect is refused here.
		if err := add("connect", eaccess); err != nil {
			return fmt.Errorf("seccomp connect: %v", err)
		}
	}
	if s.Network == "proxy" && !s.UnixSockets {
		// Connecting to a unix socket outside the session (docker.sock, a
		// D-Bus bus) is not a matter for Landlock before ABI 9, and connect
		// must stay open for TCP to the proxy: no unix socket is made.
		cond, _ := seccomp.MakeCondition(0, seccomp.CompareEqual, unix.AF_UNIX)
		if err := add("socket", eaccess, cond); err != nil {
			return fmt.Errorf("seccomp socket: %v", err)
		}
	}
	if s.Network == "proxy" && !ownNetwork(s) {
		// A proxy session on the host's network: TCP reaches the proxy's
		// port only (Landlock); datagram and raw sockets are refused here.
		if err := egressSocketRules(add); err != nil {
			return fmt.Errorf("seccomp socket: %v", err)
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("seccomp: loading the filter: %v", err)
	}
	return nil
}

// egressSocketRules refuses AF_INET and AF_INET6 sockets that are not
// streams (the type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC aside).
func egressSocketRules(add func(string, seccomp.ScmpAction, ...seccomp.ScmpCondition) error) error {
	eaccess := seccomp.ActErrno.SetReturnCode(int16(syscall.EACCES))
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		for _, typ := range []uint64{unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_SEQPACKET, unix.SOCK_RDM, unix.SOCK_PACKET} {
			c0, _ := seccomp.MakeCondition(0, seccomp.CompareEqual, fam)
			c1, _ := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xf, typ)
			if err := add("socket", eaccess, c0, c1); err != nil {
				return err
			}
		}
	}
	return nil
}
