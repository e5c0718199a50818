package session

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/sandbox"
)

// TestMain lets this test binary act as the sandbox launcher, as termgate
// does: a confined session re-executes it.
func TestMain(m *testing.M) {
	if sandbox.IsLauncher() {
		sandbox.Main()
	}
	os.Exit(m.Run())
}

func confinedSpec(t *testing.T, minABI int, bestEffort bool) Spec {
	dir := t.TempDir()
	p := sandbox.Profile{Name: "test", Network: "none",
		Read:    []string{"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "{path}"},
		Write:   []string{"{cwd}"},
		Devices: []string{"/dev/null", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/urandom"}}
	sb, err := p.Resolve(sandbox.Vars{Cwd: dir, Home: os.Getenv("HOME"), Path: os.Getenv("PATH")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb.UID, sb.GID, sb.MinABI, sb.BestEffort = -1, -1, minABI, bestEffort
	sb.NeedsCgroup = os.Geteuid() == 0
	return Spec{Argv: []string{"bash"}, Env: testEnv(t), Dir: dir, Rows: 24, Cols: 80, Mode: ModePTY, Sandbox: &sb}
}

// TestKernelThatCannotConfineIsRefused: a session whose profile needs a
// Landlock ABI this kernel does not have is refused, never started
// unconfined; with best effort it starts, and its status says it is
// degraded and what is not enforced.
func TestKernelThatCannotConfineIsRefused(t *testing.T) {
	m := testManager(t, Limits{})
	_, err := m.Start(confinedSpec(t, 99, false))
	if err == nil || !strings.Contains(err.Error(), "need 99") {
		t.Fatalf("a session the kernel cannot confine started: %v", err)
	}
	s, err := m.Start(confinedSpec(t, 99, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitStart(context.Background(), WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	st := s.Sandbox()
	if !strings.HasPrefix(st.String(), "degraded:") || len(st.NotEnforced) == 0 {
		t.Fatalf("best-effort status: %q", st.String())
	}
	// It is still confined by what the kernel has.
	r, err := s.Send(context.Background(), "touch /etc/termgate-pwn 2>/dev/null && echo ESCAPED || echo BLOCKED", true, WaitOpts{Timeout: 10 * time.Second})
	if err != nil || !strings.Contains(r.Output, "BLOCKED") {
		t.Fatalf("best effort: %q %v", r.Output, err)
	}
	// The supported ABI starts confined.
	s, err = m.Start(confinedSpec(t, 0, false))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Sandbox().String(); !strings.HasPrefix(st, "enforced: profile test, landlock ABI 6") {
		t.Fatalf("status %q", st)
	}
}
