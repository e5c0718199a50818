package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// refusedScript makes raw calls the profile refuses, and prints each
// one's result and errno: "name ret errno". A socket family with a high
// bit set is AF_VSOCK to the kernel, which reads an int.
const refusedScript = `
sub show { my ($n, $r) = @_; my $e = $r < 0 ? $!+0 : 0; printf "%s %d %d\n", $n, $r, $e; }
my $c = "x";
show("vsock", syscall(41, 40, 1, 0));
show("vsockhigh", syscall(41, 0x100000028, 1, 0));
show("tiocsti", syscall(16, 0, 0x5412, $c));
show("tiocstihigh", syscall(16, 0, 0x700005412, $c));
show("ptrace", syscall(101, 0, 0, 0, 0));
show("keyctl", syscall(250, 0, 0, 0, 0));
`

// refusedResults parses refusedScript's output: errno by call.
func refusedResults(t *testing.T, out string) map[string]syscall.Errno {
	t.Helper()
	got := map[string]syscall.Errno{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var name string
		var ret, errno int
		if _, err := fmt.Sscan(line, &name, &ret, &errno); err != nil {
			t.Fatalf("output %q", out)
		}
		if ret >= 0 {
			t.Errorf("%s succeeded (%d) in a confined session", name, ret)
		}
		got[name] = syscall.Errno(errno)
	}
	return got
}

var wantErrno = map[string]syscall.Errno{
	"vsock": unix.EACCES, "vsockhigh": unix.EACCES, "tiocsti": unix.EPERM, "tiocstihigh": unix.EPERM,
	"ptrace": unix.EPERM, "keyctl": unix.EPERM,
}

// TestSeccompRefusalsNamed: with the exec gate, the calls the profile
// refuses fail with the very errno the filter gives without it, and the
// judge is told each one: the call, the argument that decided it, the
// program and its pid. A family or request with high bits set is
// refused too (the kernel reads an int).
func TestSeccompRefusalsNamed(t *testing.T) {
	needGate(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to make raw calls")
	}
	for _, network := range []string{"none", "any"} {
		t.Run(network, func(t *testing.T) {
			l := newLayout(t)
			s := testSpec(t, l)
			s.Network = network
			s.Argv = []string{"/usr/bin/perl", "-e", refusedScript}
			out, err := launch(t, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			plain := refusedResults(t, out)

			rc := &recorder{}
			out, werr, reqs, _ := gatedSpec(t, s, rc)
			if werr != nil {
				t.Fatalf("%v: %s", werr, out)
			}
			named := refusedResults(t, out)
			for name, want := range wantErrno {
				if plain[name] != want || named[name] != want {
					t.Errorf("%s: errno %v without the gate, %v with it; want %v", name, plain[name], named[name], want)
				}
			}
			var refusals []SyscallRefusal
			for _, r := range reqs {
				if r.Refusal != nil {
					refusals = append(refusals, *r.Refusal)
				}
			}
			want := []string{"socket(AF_VSOCK SOCK_STREAM)", "socket(AF_VSOCK SOCK_STREAM)", "ioctl(TIOCSTI)", "ioctl(TIOCSTI)", "ptrace", "keyctl"}
			if len(refusals) != len(want) {
				t.Fatalf("refusals %+v, want %q", refusals, want)
			}
			for i, r := range refusals {
				if r.String() != want[i] || r.Program != "perl" || r.Pid <= 0 || r.Reason == "" || r.Errno != wantErrno[strings.Fields(refusedOrder[i])[0]] {
					t.Errorf("refusal %d: %+v (%s), want %s by perl", i, r, r, want[i])
				}
			}
		})
	}
}

// refusedOrder is refusedScript's calls in order.
var refusedOrder = []string{"vsock", "vsockhigh", "tiocsti", "tiocstihigh", "ptrace", "keyctl"}

// TestDescribeRefusal names arguments as the kernel reads them.
func TestDescribeRefusal(t *testing.T) {
	for _, c := range []struct {
		name string
		args []uint64
		want string
	}{
		{"socket", []uint64{0x100000002, 0x80002, 0}, "socket(AF_INET SOCK_DGRAM)"},
		{"socket", []uint64{1, 5}, "socket(AF_UNIX SOCK_SEQPACKET)"},
		{"socket", []uint64{77, 99}, "socket(family 77 SOCK_RAW)"},
		{"ioctl", []uint64{0, 0xff00005412}, "ioctl(TIOCSTI)"},
		{"clone", []uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNET | 0x11}, "clone(CLONE_NEWUSER|CLONE_NEWNET)"},
		{"mount", nil, "mount"},
		{"socket", nil, "socket(AF_UNSPEC? type 0)"},
	} {
		got := describeRefusal(c.name, c.args)
		if c.name == "socket" && c.args == nil {
			// No arguments at all: still named, never a panic.
			if got.Syscall != "socket" || got.Reason == "" {
				t.Errorf("%v: %+v", c.args, got)
			}
			continue
		}
		if got.String() != c.want || got.Reason == "" {
			t.Errorf("%s %x: %q (%s), want %q", c.name, c.args, got, got.Reason, c.want)
		}
	}
}

// refusedRun launches s with o, collecting what Options.Refused is told.
func refusedRun(t *testing.T, s Spec, o Options) (string, []SyscallRefusal, *Launch) {
	t.Helper()
	var mu sync.Mutex
	var got []SyscallRefusal
	o.Name = cgroupName(t)
	o.Refused = func(r *SyscallRefusal) {
		mu.Lock()
		got = append(got, *r)
		mu.Unlock()
	}
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	l, err := Start(cmd, s, o, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if err := l.End(); err != nil {
		t.Errorf("End: %v", err)
	}
	if werr != nil {
		t.Fatalf("the program failed: %v: %s", werr, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return out.String(), got, l
}

// TestSeccompRefusalsNamedWithoutGate: with no exec gate, a confined
// launch still names the calls its profile refuses (Options.Refused),
// with the very errno the filter gives, and no exec is held: the script
// runs a program (the listener's judge would refuse any exec it were
// sent), which runs.
func TestSeccompRefusalsNamedWithoutGate(t *testing.T) {
	needGate(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to make raw calls")
	}
	l := newLayout(t)
	s := testSpec(t, l)
	s.Argv = []string{"/usr/bin/perl", "-e", refusedScript + `system("/bin/echo", "ran", "echo") == 0 or print "echo failed\n";`}
	out, refusals, launch := refusedRun(t, s, Options{})
	if !strings.Contains(out, "ran echo") {
		t.Fatalf("the exec did not run: %q", out)
	}
	got := refusedResults(t, strings.ReplaceAll(out, "ran echo\n", ""))
	for name, want := range wantErrno {
		if got[name] != want {
			t.Errorf("%s: errno %v, want %v", name, got[name], want)
		}
	}
	want := []string{"socket(AF_VSOCK SOCK_STREAM)", "socket(AF_VSOCK SOCK_STREAM)", "ioctl(TIOCSTI)", "ioctl(TIOCSTI)", "ptrace", "keyctl"}
	if len(refusals) != len(want) {
		t.Fatalf("refusals %+v, want %q", refusals, want)
	}
	for i, r := range refusals {
		if r.String() != want[i] || r.Program != "perl" || r.Pid <= 0 || r.Unread || r.Errno != wantErrno[refusedOrder[i]] {
			t.Errorf("refusal %d: %+v (%s), want %s by perl", i, r, r, want[i])
		}
	}
	if st := launch.Status(); st.ExecGate != "" {
		t.Errorf("status says an exec gate: %+v", st)
	}

	// Without user notification, the filter answers alone: the same
	// errnos, nothing named.
	out, refusals, _ = refusedRun(t, s, Options{notifySupport: func() error { return errors.New("none here") }})
	got = refusedResults(t, strings.ReplaceAll(out, "ran echo\n", ""))
	for name, want := range wantErrno {
		if got[name] != want {
			t.Errorf("no notification: %s: errno %v, want %v", name, got[name], want)
		}
	}
	if len(refusals) != 0 {
		t.Errorf("no notification: refusals %+v", refusals)
	}
}

// refusalLoop asks for an AF_VSOCK socket n times and says how many
// were refused with EACCES.
const refusalLoop = `my $n = shift; my $e = 0; for (1..$n) { $e++ if syscall(41, 40, 1, 0) < 0 && $!+0 == 13 } print "refused $e\n";`

// TestRefusalBudget: a program that loops on a refused call is told in
// full up to the launch's budget, then counted without its process being
// read: every call is refused with its errno, every one is told (so the
// count is exact), and those past the budget carry the program read for
// their thread.
func TestRefusalBudget(t *testing.T) {
	needGate(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to make raw calls")
	}
	l := newLayout(t)
	s := testSpec(t, l)
	const n = 3000
	s.Argv = []string{"/usr/bin/perl", "-e", refusalLoop, fmt.Sprint(n)}
	out, refusals, launch := refusedRun(t, s, Options{refusalBurst: 100})
	if strings.TrimSpace(out) != fmt.Sprintf("refused %d", n) {
		t.Fatalf("output %q", out)
	}
	if len(refusals) != n {
		t.Fatalf("told %d refusals, want %d", len(refusals), n)
	}
	unread := 0
	for i, r := range refusals {
		if r.String() != "socket(AF_VSOCK SOCK_STREAM)" || r.Program != "perl" || r.Pid <= 0 || r.Errno != unix.EACCES {
			t.Fatalf("refusal %d: %+v", i, r)
		}
		if r.Unread {
			unread++
		}
	}
	// The budget refills while the loop runs: at least n-100-(the refill
	// over the run) are past it; the run is not timed, so only bounds
	// that hold however slow the machine is are checked.
	if unread == 0 || unread > n-100 || launch.RefusedPastBudget() != uint64(unread) {
		t.Errorf("%d refusals past the budget (launch says %d), want 1..%d", unread, launch.RefusedPastBudget(), n-100)
	}
}

// FuzzDescribeRefusal: a refused call's arguments are the program's to
// choose; naming them never panics and always says what and why.
func FuzzDescribeRefusal(f *testing.F) {
	f.Add(uint8(0), uint64(40), uint64(1), uint64(0))
	f.Add(uint8(1), uint64(0), uint64(0x5412), uint64(0))
	f.Add(uint8(2), uint64(unix.CLONE_NEWUSER|unix.CLONE_NEWNET), uint64(0), uint64(0))
	f.Add(uint8(3), ^uint64(0), ^uint64(0), ^uint64(0))
	names := []string{"socket", "ioctl", "clone", "ptrace", "mount", "keyctl"}
	f.Fuzz(func(t *testing.T, which uint8, a0, a1, a2 uint64) {
		name := names[int(which)%len(names)]
		for _, args := range [][]uint64{{a0, a1, a2, 0, 0, 0}, {a0}, nil} {
			r := describeRefusal(name, args)
			if r.Syscall != name || r.Reason == "" || !strings.HasPrefix(r.String(), name) {
				t.Fatalf("%s %x: %+v", name, args, r)
			}
		}
	})
}
