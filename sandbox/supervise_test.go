package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needGate(t *testing.T) {
	t.Helper()
	if err := NotifySupport(); err != nil {
		t.Skipf("no exec gate here: %v", err)
	}
}

// recorder is a judge that keeps every request and refuses the programs
// named in deny.
type recorder struct {
	mu   sync.Mutex
	reqs []ExecRequest
	envs [][]string // what r.Environ read, request by request
	deny map[string]bool
	ask  func(ctx context.Context, r *ExecRequest) bool
}

func (rc *recorder) judge(ctx context.Context, r *ExecRequest) ExecVerdict {
	var env []string
	if r.Environ != nil {
		env = r.Environ()
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, *r)
	rc.envs = append(rc.envs, env)
	rc.mu.Unlock()
	if r.Unreadable != nil {
		return ExecVerdict{}
	}
	if rc.ask != nil && r.Program == "sleep" {
		return ExecVerdict{Ask: func(ctx context.Context) bool { return rc.ask(ctx, r) }}
	}
	return ExecVerdict{Allow: !rc.deny[r.Program]}
}

func (rc *recorder) requests() []ExecRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// gated runs argv under the exec gate, confined (or not), and returns
// its output, its exit error, and what the judge saw.
func gated(t *testing.T, unconfined bool, rc *recorder, argv ...string) (string, error, []ExecRequest) {
	t.Helper()
	l := newLayout(t)
	var s Spec
	if unconfined {
		s = Spec{Unconfined: true, UID: -1, GID: -1}
	} else {
		s = testSpec(t, l)
	}
	s.Argv, s.Dir, s.Env = argv, l.project, []string{"PATH=/usr/bin:/bin"}
	out, werr, reqs, _ := gatedSpec(t, s, rc)
	return out, werr, reqs
}

// gatedSpec runs spec s under the exec gate (enforce), judged by rc: its
// output, its exit error, what the judge saw, and the launch's status.
func gatedSpec(t *testing.T, s Spec, rc *recorder) (string, error, []ExecRequest, Status) {
	t.Helper()
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	launch, err := Start(cmd, s, Options{Name: cgroupName(t), Judge: rc.judge, GateMode: "enforce", Programs: NewProgramIndex(SystemProgramDirs())}, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	st := launch.Status()
	if st.ExecGate != "enforce" {
		t.Errorf("status exec gate = %q", st.ExecGate)
	}
	werr := cmd.Wait()
	if err := launch.End(); err != nil {
		t.Errorf("End: %v", err)
	}
	return out.String(), werr, rc.requests(), st
}

func find(reqs []ExecRequest, program string) (ExecRequest, bool) {
	for _, r := range reqs {
		if r.Program == program {
			return r, true
		}
	}
	return ExecRequest{}, false
}

// TestExecGateJudgesEveryExec: the launcher's own exec comes first, then
// every program the session runs, with its argv as the kernel sees it,
// its resolved executable, cwd and parents; a refused one fails with
// EPERM and the program that ran it goes on.
func TestExecGateJudgesEveryExec(t *testing.T) {
	needGate(t)
	for _, unconfined := range []bool{false, true} {
		t.Run(fmt.Sprintf("unconfined=%v", unconfined), func(t *testing.T) {
			rc := &recorder{deny: map[string]bool{"rm": true}}
			script := `/bin/echo one; touch victim; rm -f victim; (exec -a innocent /bin/rm -f victim); ls victim; exit 3`
			out, werr, reqs := gated(t, unconfined, rc, "/bin/bash", "-c", script)
			if ee, ok := werr.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
				t.Fatalf("exit %v; output %q", werr, out)
			}
			if !strings.Contains(out, "one") || !strings.Contains(out, "Operation not permitted") || !strings.Contains(out, "victim") {
				t.Fatalf("output %q", out)
			}
			if len(reqs) == 0 || !reqs[0].Launcher || reqs[0].Argv[0] != "/bin/bash" || reqs[0].Program != "bash" {
				t.Fatalf("the first request is not the launcher's own exec: %+v", reqs)
			}
			for i, r := range reqs {
				if r.Program == "echo" && !slices.Contains(rc.envs[i], "PATH=/usr/bin:/bin") {
					t.Errorf("echo's environment %q", rc.envs[i])
				}
			}
			echo, ok := find(reqs, "echo")
			if !ok || !slices.Equal(echo.Argv, []string{"/bin/echo", "one"}) || echo.Launcher {
				t.Fatalf("echo: %+v", echo)
			}
			if echo.Executable != "/usr/bin/echo" && echo.Executable != "/bin/echo" {
				t.Errorf("echo's executable %q", echo.Executable)
			}
			if real, _ := filepath.EvalSymlinks(echo.Cwd); !strings.HasSuffix(real, "project") {
				t.Errorf("echo's cwd %q", echo.Cwd)
			}
			// The session's bash, then its fork that runs echo.
			if !slices.Equal(echo.Parents, []string{"bash", "bash"}) {
				t.Errorf("echo's parents %q", echo.Parents)
			}
			n := 0
			for _, r := range reqs {
				if r.Program == "rm" {
					n++
					if r.Argv[0] != "rm" && r.Argv[0] != "innocent" {
						t.Errorf("rm's argv %q", r.Argv)
					}
				}
			}
			if n != 2 {
				t.Fatalf("rm was judged %d times, want 2 (once under another argv[0]): %+v", n, reqs)
			}
		})
	}
}

// TestExecGateIdentifiesCopies: a link, a hard link and a byte-for-byte
// copy of an indexed program are that program; a copy changed by a byte
// is not (a known limit), and keeps its own name.
func TestExecGateIdentifiesCopies(t *testing.T) {
	bin := t.TempDir()
	elsewhere := t.TempDir()
	tool := filepath.Join(bin, "wipe")
	body := []byte("#!/bin/sh\necho wiping\n" + strings.Repeat("#", 1000) + "\n")
	if err := os.WriteFile(tool, body, 0o755); err != nil {
		t.Fatal(err)
	}
	x := NewProgramIndex([]string{bin})
	ident := func(p, argv0 string) (string, string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		fd, st, err := openNoFollow(real, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		return x.Identify(real, &st, argv0)
	}
	link := filepath.Join(elsewhere, "harmless")
	hard := filepath.Join(elsewhere, "hard")
	cp := filepath.Join(elsewhere, "copy")
	changed := filepath.Join(elsewhere, "changed")
	if err := os.Symlink(tool, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(tool, hard); err != nil {
		t.Logf("no hard link across these directories: %v", err)
		hard = ""
	}
	if err := os.WriteFile(cp, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, append(append([]byte{}, body...), '\n'), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, name, how string }{
		{tool, "wipe", "path"},
		{link, "wipe", "path"},
		{cp, "wipe", "content"},
		{changed, "changed", "path"},
	}
	if hard != "" {
		cases = append(cases, struct{ path, name, how string }{hard, "wipe", "inode"})
	}
	for _, c := range cases {
		if name, how := ident(c.path, "x"); name != c.name || how != c.how {
			t.Errorf("%s: %s by %s, want %s by %s", c.path, name, how, c.name, c.how)
		}
	}
	// A multi-call binary runs the applet argv[0] names.
	bb := filepath.Join(elsewhere, "busybox")
	if err := os.WriteFile(bb, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for argv0, want := range map[string]string{"rm": "rm", "/bin/ls": "ls", "busybox": "busybox", "": "busybox"} {
		if name, _ := ident(bb, argv0); name != want {
			t.Errorf("busybox with argv[0] %q: %s, want %s", argv0, name, want)
		}
	}
}

// TestExecGateAskWaits: an answer that takes time holds its process
// alone: other execs of the launch go on meanwhile; when the launch ends
// while it waits, the ask's ctx ends and the exec is refused.
func TestExecGateAskWaits(t *testing.T) {
	needGate(t)
	asked := make(chan struct{})
	release := make(chan bool)
	var once sync.Once
	rc := &recorder{ask: func(ctx context.Context, r *ExecRequest) bool {
		first := false
		once.Do(func() { first = true; close(asked) })
		if !first {
			return false // the shell tries the next PATH directory: refused at once
		}
		select {
		case ok := <-release:
			return ok
		case <-ctx.Done():
			return false
		}
	}}
	l := newLayout(t)
	s := testSpec(t, l)
	s.Argv = []string{"/bin/sh", "-c", "sleep 0.01 & /bin/echo meanwhile; wait $!; echo slept=$?"}
	s.Env = []string{"PATH=/usr/bin:/bin"}
	cmd := exec.Command("/bin/false")
	var out lockedBuf
	cmd.Stdout, cmd.Stderr = &out, &out
	launch, err := Start(cmd, s, Options{Name: cgroupName(t), Judge: rc.judge}, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	defer launch.End()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("sleep was never asked about")
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "meanwhile") {
		if time.Now().After(deadline) {
			t.Fatalf("echo did not run while sleep waited: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	release <- false
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if !strings.Contains(out.String(), "slept=126") && !strings.Contains(out.String(), "Operation not permitted") {
		t.Fatalf("refused sleep: %q", out.String())
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestExecGateNeedsTheKernel: on a kernel without seccomp user
// notification a gated launch is refused, never started ungated; with
// best effort it starts, and its status says the gate is not enforced.
func TestExecGateNeedsTheKernel(t *testing.T) {
	l := newLayout(t)
	noKernel := func() error { return fmt.Errorf("no seccomp user notification here") }
	rc := &recorder{}
	for _, best := range []bool{false, true} {
		s := testSpec(t, l)
		cmd := exec.Command("/bin/false")
		launch, err := Start(cmd, s, Options{Name: cgroupName(t), Judge: rc.judge, GateMode: "enforce", GateBestEffort: best, notifySupport: noKernel}, cmd.Start)
		if !best {
			if err == nil || !strings.Contains(err.Error(), "needs seccomp user notification") {
				t.Fatalf("started without the gate: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		launch.End()
		st := launch.Status()
		if st.ExecGate != "" || !strings.Contains(st.String(), "NOT enforced: exec gate: no seccomp user notification") {
			t.Fatalf("best-effort status %q", st.String())
		}
	}
	if len(rc.requests()) != 0 {
		t.Fatalf("a judge was asked without a gate: %+v", rc.requests())
	}
}

// TestExecGateEndsWithTheLaunch: End stops the gate while an answer is
// still being asked (its ctx ends, the exec is refused), and a process
// that outlived the launch's cgroup can run nothing more.
func TestExecGateEndsWithTheLaunch(t *testing.T) {
	needGate(t)
	asked := make(chan struct{})
	var once sync.Once
	rc := &recorder{ask: func(ctx context.Context, r *ExecRequest) bool {
		once.Do(func() { close(asked) })
		<-ctx.Done()
		return true // too late: the listener is closing
	}}
	l := newLayout(t)
	s := testSpec(t, l)
	s.Argv, s.Env = []string{"/bin/sh", "-c", "exec sleep 5"}, []string{"PATH=/usr/bin:/bin"}
	cmd := exec.Command("/bin/false")
	launch, err := Start(cmd, s, Options{Name: cgroupName(t), Judge: rc.judge}, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("never asked")
	}
	ended := make(chan error, 1)
	go func() { ended <- launch.End() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("End did not return while an answer was pending")
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the launch's program ran to its end")
	}
}

// TestExecGateInAProxySession: a launch with both the egress channel
// and the exec gate (the default profile's case) hands each its own
// descriptor: the proxy serves the session's connection, and the gate
// judges the session's programs, curl among them.
func TestExecGateInAProxySession(t *testing.T) {
	needGate(t)
	requireIsolation(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello through the proxy") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	log := &egressLog{ended: make(chan struct{}, 8), verdic: allowNames("allowed.test")}
	e, err := NewEgress(EgressOptions{Judge: log.judge, Report: log.report,
		Hosts: map[string][]netip.Addr{"allowed.test": {netip.MustParseAddr("127.0.0.1")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	l := newLayout(t)
	s, _ := proxySpec(t, l, e, fmt.Sprintf("curl -sS --max-time 20 http://allowed.test:%d/; echo; /bin/echo gate-saw-me", port))
	rc := &recorder{}
	out, werr, reqs, st := gatedSpec(t, s, rc)
	if werr != nil || !strings.Contains(out, "hello through the proxy") || !strings.Contains(out, "gate-saw-me") {
		t.Fatalf("exit %v, output %q", werr, out)
	}
	if st.ExecGate != "enforce" || st.Network == "" {
		t.Fatalf("status %+v", st)
	}
	if _, ok := find(reqs, "curl"); !ok {
		t.Fatalf("the gate did not judge curl: %+v", reqs)
	}
	if r, ok := find(reqs, "echo"); !ok || !slices.Contains(r.Argv, "gate-saw-me") {
		t.Fatalf("the gate did not judge echo: %+v", reqs)
	}
}

// TestExecGateThreadsAndConcurrentExecs: an exec asked for by a thread
// that is not its process's first is the process's (its thread group),
// and execs asked for at once are each judged once and answered.
func TestExecGateThreadsAndConcurrentExecs(t *testing.T) {
	needGate(t)
	rc := &recorder{}
	script := "import os, threading, time\n" +
		"print(os.getpid(), flush=True)\n" +
		"threading.Thread(target=lambda: os.execv('/bin/echo', ['/bin/echo', 'from-a-thread'])).start()\n" +
		"time.sleep(60)\n"
	out, werr, reqs := gated(t, false, rc, "/usr/bin/python3", "-c", script)
	if werr != nil || !strings.Contains(out, "from-a-thread") {
		t.Fatalf("exit %v; output %q", werr, out)
	}
	echo, ok := find(reqs, "echo")
	if !ok || fmt.Sprint(echo.Pid) != strings.Fields(out)[0] {
		t.Fatalf("the thread's exec is not its process's (pid %s): %+v", strings.Fields(out)[0], echo)
	}
	if len(echo.Parents) != 1 || !strings.HasPrefix(echo.Parents[0], "python3") {
		t.Errorf("echo's parents %q", echo.Parents)
	}

	rc = &recorder{}
	const n = 24
	out, werr, reqs = gated(t, false, rc, "/bin/bash", "-c", fmt.Sprintf("for i in $(seq %d); do /bin/echo x$i & done; wait", n))
	if werr != nil {
		t.Fatalf("exit %v; output %q", werr, out)
	}
	seen := map[string]int{}
	for _, r := range reqs {
		if r.Program == "echo" {
			seen[r.Argv[1]]++
		}
	}
	for i := 1; i <= n; i++ {
		if x := fmt.Sprintf("x%d", i); seen[x] != 1 || !strings.Contains(out, x+"\n") {
			t.Errorf("%s judged %d times; output %q", x, seen[x], out)
		}
	}
}
