package session

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

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

// TestWaitingForInputReadsTheTerminal: a process blocked reading its
// terminal (its standard input, or /dev/tty when the terminal is its
// controlling one) waits for input; one blocked reading a pipe, or
// another terminal's /dev/tty, does not (what is typed goes to whatever
// reads the terminal next), and one asleep is not waiting either.
func TestWaitingForInputReadsTheTerminal(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	tty, ok := terminalOf(master.Fd())
	if !ok {
		t.Fatal("the terminal's slave was not found")
	}
	otherMaster, other, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer otherMaster.Close()
	defer other.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	devTTY := []string{"sh", "-c", "exec head -c1 </dev/tty"}
	for _, c := range []struct {
		name  string
		stdin *os.File // also the controlling terminal, when it is one
		argv  []string
		nr    int
		want  bool
	}{
		{"terminal", slave, []string{"head", "-c1"}, unix.SYS_READ, true},
		{"/dev/tty", slave, devTTY, unix.SYS_READ, true},
		{"pipe", pr, []string{"head", "-c1"}, unix.SYS_READ, false},
		{"another /dev/tty", other, devTTY, unix.SYS_READ, false},
		{"sleep", slave, []string{"sleep", "60"}, unix.SYS_CLOCK_NANOSLEEP, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startBlocked(t, c.stdin, c.argv, c.nr)
			if got := waitingForInput(p.Pid, tty); got != c.want {
				t.Fatalf("waitingForInput = %v, want %v", got, c.want)
			}
			if waitingForInput(p.Pid, ttyID{}) {
				t.Fatal("waiting for an unknown terminal")
			}
		})
	}
}

// startBlocked starts argv in a session of its own with stdin (its
// controlling terminal, when it is a terminal) and waits until it is
// blocked in system call nr; it is killed when the test ends.
func startBlocked(t *testing.T, stdin *os.File, argv []string, nr int) *os.Process {
	t.Helper()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		t.Skipf("%s is not installed", argv[0])
	}
	_, notTTY := unix.IoctlGetTermios(int(stdin.Fd()), unix.TCGETS)
	attr := &os.ProcAttr{Files: []*os.File{stdin, nil, nil}, Sys: &syscall.SysProcAttr{Setsid: true, Setctty: notTTY == nil}}
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); p.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for !blockedIn(p.Pid, nr) {
		if st, ok := readStat(p.Pid); !ok || st.state == 'Z' || time.Now().After(deadline) {
			t.Fatalf("%v never blocked in system call %d", argv, nr)
		}
		time.Sleep(time.Millisecond)
	}
	return p
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
