package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// maxSpec bounds a launch spec. A home read by deny-list is hundreds of
// grants, each with its path and identity: more than a pipe's default
// 64 KiB holds.
const maxSpec = 1 << 20

// fitPipe makes the pipe w writes to hold n bytes, so that the spec is
// written whole before the launcher runs (nothing reads it until then).
func fitPipe(w *os.File, n int) error {
	if n <= 60<<10 {
		return nil // a pipe holds 64 KiB
	}
	got, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, n)
	if err != nil {
		return fmt.Errorf("sandbox: the spec is %d bytes, more than a pipe holds (%v; /proc/sys/fs/pipe-max-size)", n, err)
	}
	if got < n {
		return fmt.Errorf("sandbox: the spec is %d bytes, more than a pipe holds (%d)", n, got)
	}
	return nil
}
