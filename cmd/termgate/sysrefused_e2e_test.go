package main

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// vsockLoop asks for an AF_VSOCK socket 50 times, then to be traced,
// and says what the last call was answered (EPERM is 1).
const vsockLoop = `perl -e 'for (1..50) { syscall(41, 40, 1, 0) } my $r = syscall(101, 0, 0, 0, 0); printf "ptrace %d errno %d\n", $r, $!+0'`

// TestSeccompRefusalsInTheResult: in a confined session with the exec
// gate, the calls seccomp refuses are named in the call's result (one
// line per call and program, counted) and in its outcome record in the
// audit log, and the program still gets its errno; the exec tool's
// result names them too. With --exec-gate=off there is no listener: the
// errno is the same, and nothing is named.
func TestSeccompRefusalsInTheResult(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to make raw calls")
	}
	g := startGateServer(t, nil)
	id := g.start(map[string]any{"cwd": g.project})
	r := g.send(id, vsockLoop, "timeout_ms", 60000)
	if !strings.Contains(str(r, "output"), "ptrace -1 errno 1") {
		t.Fatalf("output %q", str(r, "output"))
	}
	got := map[string]map[string]any{}
	for _, x := range refusals(r) {
		got[str(x, "syscall")] = x
	}
	vs, pt := got["socket(AF_VSOCK SOCK_STREAM)"], got["ptrace"]
	if vs == nil || pt == nil || len(got) != 2 {
		t.Fatalf("sandbox_refused = %v", r["sandbox_refused"])
	}
	for _, x := range []map[string]any{vs, pt} {
		if str(x, "program") != "perl" || str(x, "source") != "seccomp" || str(x, "profile") != "default" ||
			str(x, "access") != "syscall" || str(x, "rule") != "sandbox.seccomp" || str(x, "reason") == "" {
			t.Errorf("refusal %v", x)
		}
	}
	if n := fmt.Sprint(vs["count"]); n != "50" {
		t.Errorf("the socket's count %s, want 50 (%v)", n, vs)
	}
	// The call's outcome record names them, one line each.
	var lines []string
	for _, rec := range readRecords(t, g.auditLog) {
		if l, ok := field(rec, "termgate.sandbox.refused").([]any); ok {
			for _, x := range l {
				lines = append(lines, fmt.Sprint(x))
			}
		}
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "syscall socket(AF_VSOCK SOCK_STREAM) by perl (50 times) [seccomp], profile default")
	}) || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "syscall ptrace by perl [seccomp]") }) {
		t.Errorf("the audit log's refusals: %q", lines)
	}
	// The next call, with nothing refused, names nothing.
	if r := g.send(id, "echo quiet", "timeout_ms", 60000); len(refusals(r)) != 0 {
		t.Errorf("a later call: sandbox_refused = %v", r["sandbox_refused"])
	}

	out := g.ok("exec", map[string]any{"command": vsockLoop, "cwd": g.project})
	names := []string{}
	for _, x := range refusals(out) {
		names = append(names, str(x, "syscall")+" "+str(x, "profile"))
	}
	if !slices.Contains(names, "ptrace default") || !slices.Contains(names, "socket(AF_VSOCK SOCK_STREAM) default") {
		t.Errorf("exec: sandbox_refused = %v", out["sandbox_refused"])
	}

	// termgate sandbox run says it on stderr, once per call and program.
	runOut, code := sandboxRun(t, t.TempDir(), nil, "sh", "-c", vsockLoop)
	if code != 0 || !strings.Contains(runOut, "ptrace -1 errno 1") ||
		strings.Count(runOut, "termgate: sandbox refused syscall socket(AF_VSOCK SOCK_STREAM) by perl") != 1 ||
		strings.Count(runOut, "termgate: sandbox refused syscall ptrace by perl") != 1 || strings.Contains(runOut, "exec refused") {
		t.Errorf("sandbox run: exit %d: %q", code, runOut)
	}

	off := startGateServer(t, nil, "--exec-gate", "off")
	id = off.start(map[string]any{"cwd": off.project})
	r = off.send(id, vsockLoop, "timeout_ms", 60000)
	if !strings.Contains(str(r, "output"), "ptrace -1 errno 1") || len(refusals(r)) != 0 {
		t.Errorf("--exec-gate=off: output %q, sandbox_refused %v", str(r, "output"), r["sandbox_refused"])
	}
}
