package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The exec gate's two ends of one socket: the launcher loads a seccomp
// filter that sends every execve and execveat of its process tree to a
// listener (SECCOMP_FILTER_FLAG_NEW_LISTENER), and passes the listener to
// the gateway over this socket (SCM_RIGHTS) before its own exec, which is
// the first one the gateway judges. Without the gate (NameRefusals) the
// same socket hands over a listener that only the refused calls reach.

// gateSocket makes the socket: the gateway's end, and the launcher's.
func gateSocket() (mine, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: the exec gate's socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "exec-gate"), os.NewFile(uintptr(fds[1]), "exec-gate-launcher"), nil
}

// gateSyscalls are the calls the gate holds: every way to run a program.
var gateSyscalls = []string{"execve", "execveat"}

// listens reports whether the launcher makes a listener: for the exec
// gate, or for the refusals alone (NameRefusals).
func (s Spec) listens() bool { return s.ExecGate || s.NameRefusals }

// gateExecs is the launcher's part of the exec gate, after everything
// else of its confinement (seccomp's own filter included): a second
// filter whose rules notify the listener of each exec and of the calls
// the profile refuses, and the listener sent to the gateway. The
// launcher's own exec that follows is the first exec the gateway judges.
// With NameRefusals and no gate, the filter holds the refusals only: no
// exec reaches the listener, and none is judged.
//
// A filter needs no_new_privs, or CAP_SYS_ADMIN: a confined launch has
// the first already; an unconfined one (--sandbox=off, the "none"
// profile) keeps setuid programs working when the launcher holds
// CAP_SYS_ADMIN (a root gateway), and gets no_new_privs otherwise.
// Another architecture's system calls (a 32-bit program) kill the
// process: they would reach execve unseen.
//
// The filter is loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where
// the kernel has it (Linux 5.19): once the gateway has received an exec,
// only a fatal signal ends the wait, so a signal does not restart the
// exec as a second request while the first is being judged (or a human
// asked).
func gateExecs(s Spec) error {
	if s.GateFD < 5 {
		return fmt.Errorf("exec gate: no socket for the listener (descriptor %d)", s.GateFD)
	}
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("exec gate: %v", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return fmt.Errorf("exec gate: %v", err)
	}
	if s.NameRefusals && !s.ExecGate && s.Unconfined {
		return errors.New("exec gate: refusals to name in an unconfined launch")
	}
	if s.ExecGate {
		for _, name := range gateSyscalls {
			sc, err := seccomp.GetSyscallFromName(name)
			if err != nil {
				return fmt.Errorf("exec gate: %s: %v", name, err)
			}
			if err := f.AddRule(sc, seccomp.ActNotify); err != nil {
				return fmt.Errorf("exec gate: %s: %v", name, err)
			}
		}
	}
	if !s.Unconfined {
		// The calls the profile refuses come here too, to be named
		// (refuse_linux.go); applySeccomp left them out of its filter.
		if err := addRefusals(f, s, func(string) seccomp.ScmpAction { return seccomp.ActNotify }); err != nil {
			return fmt.Errorf("exec gate: %v", err)
		}
	}
	if !(s.Unconfined && hasEffectiveCap(unix.CAP_SYS_ADMIN)) {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("exec gate: no_new_privs: %v", err)
		}
	}
	fd, err := loadWithListener(f)
	if err != nil {
		return fmt.Errorf("exec gate: loading the filter: %v", err)
	}
	if err := unix.Sendmsg(s.GateFD, []byte{'g'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("exec gate: handing the listener to the gateway: %v", err)
	}
	unix.Close(fd)
	unix.Close(s.GateFD)
	return nil
}

// loadWithListener loads the filter libseccomp compiled (its BPF, as
// seccomp_export_bpf writes it) with a new listener, and returns the
// listener.
func loadWithListener(f *seccomp.ScmpFilter) (int, error) {
	mfd, err := unix.MemfdCreate("termgate-exec-gate", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	file := os.NewFile(uintptr(mfd), "exec-gate-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return -1, err
	}
	b, err := io.ReadAll(io.NewSectionReader(file, 0, 1<<20))
	if err != nil {
		return -1, err
	}
	const insn = int(unsafe.Sizeof(unix.SockFilter{}))
	if len(b) == 0 || len(b)%insn != 0 || len(b)/insn > 0xffff {
		return -1, fmt.Errorf("the compiled filter is %d bytes", len(b))
	}
	prog := make([]unix.SockFilter, len(b)/insn)
	for i := range prog {
		x := b[i*insn:]
		prog[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(x), Jt: x[2], Jf: x[3], K: binary.NativeEndian.Uint32(x[4:])}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	for {
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
		switch {
		case e == 0:
			return int(fd), nil
		case e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0:
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV // before Linux 5.19
		default:
			return -1, e
		}
	}
}

// hasEffectiveCap reports whether this thread holds capability c.
func hasEffectiveCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// receiveListener takes the listener from the launcher: its descriptor,
// or an error when the launcher closed the socket without sending one
// (it failed first: its status says why).
func receiveListener(sock *os.File) (int, error) {
	rc, err := sock.SyscallConn()
	if err != nil {
		return -1, err
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	// A blocking receive: the launcher sends, or exits and closes.
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return -1, fmt.Errorf("sandbox: receiving the exec gate's listener: %w", err)
	}
	if n == 0 && oobn == 0 {
		return -1, errors.New("sandbox: the launcher sent no exec gate listener")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("sandbox: the exec gate's listener: malformed message (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("sandbox: the exec gate's listener: malformed message (%v)", err)
	}
	return fds[0], nil
}
