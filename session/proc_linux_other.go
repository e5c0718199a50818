//go:build !amd64

package session

import "golang.org/x/sys/unix"

// waitSyscall reports the calls that wait for input this architecture has
// besides the ones every Linux has.
func waitSyscall(nr int) bool { return nr == unix.SYS_EPOLL_PWAIT2 }
