package session

import (
	"os"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestOutputPendingCountsWhatWasJustWritten: bytes a program wrote to its
// terminal are counted at once, before the kernel's worker moved them
// from the master's flip buffer to its queue (TIOCINQ alone says 0 until
// then, most of the time right after a write, and for long on a busy
// machine: a program that printed its answer and went back to read then
// looked as if the screen showed all it printed).
func TestOutputPendingCountsWhatWasJustWritten(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	raw(t, slave)
	buf := make([]byte, 64)
	for i := range 2000 {
		if _, err := slave.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if n, err := outputPending(master.Fd()); err != nil || n != 5 {
			t.Fatalf("write %d: %d bytes pending, %v; want 5", i, n, err)
		}
		if n, err := master.Read(buf); err != nil || n != 5 {
			t.Fatalf("read %d: %d %v", i, n, err)
		}
	}
}

// raw turns the terminal's output processing off, so that what is
// written is what the master reads.
func raw(t *testing.T, f *os.File) {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
}
