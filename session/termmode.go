package session

import "golang.org/x/sys/unix"

// RawTerminal reports whether the session's terminal reads raw: neither
// line by line nor echoing. A program that relays another terminal (ssh,
// mosh, docker exec -t) holds the local one so, and then the local echo
// state says nothing of the remote's: a remote password prompt is only
// known by its text (see the gateway's remote prompts). False in pipe
// mode or when the terminal is gone.
func (s *Session) RawTerminal() bool {
	raw := false
	s.ctl(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		raw = err == nil && t.Lflag&(unix.ICANON|unix.ECHO) == 0
	})
	return raw
}
