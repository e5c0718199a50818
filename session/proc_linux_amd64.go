package session

import "golang.org/x/sys/unix"

// waitSyscall reports the calls that wait for input this architecture has
// besides the ones every Linux has.
func waitSyscall(nr int) bool {
	switch nr {
	case unix.SYS_SELECT, unix.SYS_POLL, unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT2:
		return true
	}
	return false
}
