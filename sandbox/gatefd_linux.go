package sandbox

import (
	"errors"
	"fmt"
	"os"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The exec gate's two ends of one socket: the launcher loads a seccomp
// filter that sends every execve and execveat of its process tree to a
// listener (SECCOMP_FILTER_FLAG_NEW_LISTENER), and passes the listener to
// the gateway over this socket (SCM_RIGHTS) before its own exec, which is
// the first one the gateway judges.

// gateFD is the launcher's end of the socket.
const gateFD = 5

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

// gateExecs is the launcher's part of the exec gate, after everything
// else of its confinement (seccomp's own filter included): a second
// filter whose only rules notify the listener of each exec, and the
// listener sent to the gateway. The launcher's own exec that follows is
// the first exec the gateway judges.
//
// A filter needs no_new_privs, or CAP_SYS_ADMIN: a confined launch has
// the first already; an unconfined one (--sandbox=off, the "none"
// profile) keeps setuid programs working when the launcher holds
// CAP_SYS_ADMIN (a root gateway), and gets no_new_privs otherwise.
// Another architecture's system calls (a 32-bit program) kill the
// process: they would reach execve unseen.
func gateExecs(s Spec) error {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return fmt.Errorf("exec gate: %v", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return fmt.Errorf("exec gate: %v", err)
	}
	if s.Unconfined && hasEffectiveCap(unix.CAP_SYS_ADMIN) {
		if err := f.SetNoNewPrivsBit(false); err != nil {
			return fmt.Errorf("exec gate: %v", err)
		}
	}
	for _, name := range gateSyscalls {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return fmt.Errorf("exec gate: %s: %v", name, err)
		}
		if err := f.AddRule(sc, seccomp.ActNotify); err != nil {
			return fmt.Errorf("exec gate: %s: %v", name, err)
		}
	}
	if err := f.Load(); err != nil {
		return fmt.Errorf("exec gate: loading the filter: %v", err)
	}
	fd, err := f.GetNotifFd()
	if err != nil || fd < 0 {
		return fmt.Errorf("exec gate: no listener: %v", err)
	}
	if err := unix.Sendmsg(gateFD, []byte{'g'}, unix.UnixRights(int(fd)), nil, 0); err != nil {
		return fmt.Errorf("exec gate: handing the listener to the gateway: %v", err)
	}
	unix.Close(int(fd))
	unix.Close(gateFD)
	return nil
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
