package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

	// --exec-gate=off judges no exec, yet the calls seccomp refused are
	// named all the same: in the session's result, the exec tool's, and
	// sandbox run's stderr.
	off := startGateServer(t, nil, "--exec-gate", "off")
	id = off.start(map[string]any{"cwd": off.project})
	r = off.send(id, vsockLoop, "timeout_ms", 60000)
	got = map[string]map[string]any{}
	for _, x := range refusals(r) {
		got[str(x, "syscall")] = x
	}
	if vs := got["socket(AF_VSOCK SOCK_STREAM)"]; !strings.Contains(str(r, "output"), "ptrace -1 errno 1") || len(got) != 2 ||
		vs == nil || fmt.Sprint(vs["count"]) != "50" || str(vs, "program") != "perl" || str(vs, "source") != "seccomp" || got["ptrace"] == nil {
		t.Errorf("--exec-gate=off: output %q, sandbox_refused %v", str(r, "output"), r["sandbox_refused"])
	}
	if r := off.send(id, "echo quiet", "timeout_ms", 60000); len(refusals(r)) != 0 {
		t.Errorf("--exec-gate=off: a later call: sandbox_refused = %v", r["sandbox_refused"])
	}
	out = off.ok("exec", map[string]any{"command": vsockLoop, "cwd": off.project})
	names = names[:0]
	for _, x := range refusals(out) {
		names = append(names, str(x, "syscall")+" "+str(x, "profile"))
	}
	if !slices.Contains(names, "ptrace default") || !slices.Contains(names, "socket(AF_VSOCK SOCK_STREAM) default") {
		t.Errorf("--exec-gate=off: exec: sandbox_refused = %v", out["sandbox_refused"])
	}
	runOut, code = sandboxRun(t, t.TempDir(), []string{"--exec-gate", "off"}, "sh", "-c", vsockLoop)
	if code != 0 || !strings.Contains(runOut, "ptrace -1 errno 1") ||
		strings.Count(runOut, "termgate: sandbox refused syscall socket(AF_VSOCK SOCK_STREAM) by perl") != 1 {
		t.Errorf("--exec-gate=off: sandbox run: exit %d: %q", code, runOut)
	}
}

// hammer asks for an AF_VSOCK socket until it has asked 100,000 times
// and the file stop exists, creating the file hammering once it is well
// under way; then it says how many were refused with EACCES, of how many.
const hammer = `perl -e 'my ($n, $e) = (0, 0); while ($n < 100000 || ! -e "stop") { for (1..1000) { $e++ if syscall(41, 40, 1, 0) < 0 && $!+0 == 13 } $n += 1000; if ($n == 5000) { open my $f, ">", "hammering" or die; close $f } } print "refused $e of $n\n"'`

// TestSeccompRefusalsHammered: a confined program that loops on a
// refused call (past 100,000 times) does not hold the gateway up:
// another session's echo round trip completes while it still loops (it
// stops only once the test, after that round trip, says so), every call
// is refused with its errno, and the call's result and the audit log
// carry one entry for it with the exact count, not one record per call.
// With the exec gate and without it.
func TestSeccompRefusalsHammered(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl to make raw calls")
	}
	for _, mode := range []string{"off", "enforce"} {
		t.Run(mode, func(t *testing.T) {
			g := startGateServer(t, nil, "--exec-gate", mode)
			loud := g.start(map[string]any{"cwd": g.project})
			quiet := g.start(map[string]any{"cwd": g.project})
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := g.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_send",
					Arguments: map[string]any{"session_id": loud, "text": hammer, "timeout_ms": 600000}})
				done <- answer{res, err}
			}()
			eventually(t, 2*time.Minute, "the loop to be under way", func() bool {
				_, err := os.Stat(filepath.Join(g.project, "hammering"))
				return err == nil
			})
			wantOutput(t, g.send(quiet, "echo $((6*7))-alive"), "42-alive")
			select {
			case a := <-done:
				t.Fatalf("the loop ended before it was told to: %v %v", a.err, a.res)
			default:
			}
			if err := os.WriteFile(filepath.Join(g.project, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.err != nil || a.res.IsError {
				t.Fatalf("the loop's call: %v %s", a.err, resultText(a.res))
			}
			r := structured(t, a.res)
			var refused, asked int
			m := regexp.MustCompile(`refused (\d+) of (\d+)`).FindStringSubmatch(str(r, "output"))
			if m != nil {
				refused, _ = strconv.Atoi(m[1])
				asked, _ = strconv.Atoi(m[2])
			}
			if m == nil || refused != asked || asked < 100000 {
				t.Fatalf("output %q", str(r, "output"))
			}
			rs := refusals(r)
			if len(rs) != 1 || str(rs[0], "syscall") != "socket(AF_VSOCK SOCK_STREAM)" || str(rs[0], "program") != "perl" ||
				fmt.Sprint(rs[0]["count"]) != fmt.Sprint(asked) {
				t.Fatalf("sandbox_refused = %v, want one entry counting %d", r["sandbox_refused"], asked)
			}
			recs := readRecords(t, g.auditLog)
			var lines []string
			for _, rec := range recs {
				if l, ok := field(rec, "termgate.sandbox.refused").([]any); ok {
					for _, x := range l {
						if s := fmt.Sprint(x); strings.Contains(s, "AF_VSOCK") {
							lines = append(lines, s)
						}
					}
				}
			}
			want := fmt.Sprintf("syscall socket(AF_VSOCK SOCK_STREAM) by perl (%d times) [seccomp]", asked)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) || len(recs) > 100 {
				t.Errorf("the audit log (%d records) names the refusal %q, want once %q", len(recs), lines, want)
			}
		})
	}
}
