package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/sandbox"
)

// The end-to-end tests drive the real binary over stdio with the go-sdk
// client, as an MCP client would. TestMain builds it once.

var binPath string // set once by TestMain, read-only afterwards

func TestMain(m *testing.M) {
	if sandbox.IsLauncher() {
		sandbox.Main() // a confined session of an in-memory gateway re-executes this binary
	}
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.fuzzworker") {
			os.Exit(m.Run()) // a fuzz worker runs fuzz targets only: no binary to build
		}
	}
	dir, err := os.MkdirTemp("", "termgate-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "termgate")
	// The tests' build carries the test hooks (testhooks_on.go).
	args := []string{"build", "-tags", "termgate_testhooks", "-o", binPath}
	if os.Getenv("TERMGATE_TEST_RACE") != "" {
		args = append(args, "-race") // the server under test runs with the race detector too
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building termgate:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running termgate binary with a connected client.
type server struct {
	t   testing.TB
	cmd *exec.Cmd
	cs  *mcp.ClientSession
	log *strings.Builder
	// logw writes log; logText reads it while the server runs.
	logw *lockedWriter
}

// logText is the server's log so far.
func (s *server) logText() string { return s.logw.String() }

// startServer runs the binary with extra flags and connects a client.
func startServer(t testing.TB, flags ...string) *server {
	t.Helper()
	return startServerWith(t, nil, flags...)
}

// startServerWith connects a client with the given options (an
// elicitation handler, say).
func startServerWith(t testing.TB, opts *mcp.ClientOptions, flags ...string) *server {
	t.Helper()
	return startServerVia(t, opts, nil, flags...)
}

// startServerVia connects through wrap(the command's transport): a
// logging transport, say.
func startServerVia(t testing.TB, opts *mcp.ClientOptions, wrap func(mcp.Transport) mcp.Transport, flags ...string) *server {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"serve"}, flags...)...)
	cmd.Dir = t.TempDir()
	var log strings.Builder
	logw := &lockedWriter{b: &log}
	cmd.Stderr = logw
	// No user rc files leak into tests; a data race in the server halts it.
	// HOME is apart from the working directory: sessions start in the
	// latter, and the gateway's own state (audit log and key) lives in
	// the former, where no session may reach.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GORACE=halt_on_error=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}
	if wrap != nil {
		tr = wrap(tr)
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting to termgate: %v", err)
	}
	s := &server{t: t, cmd: cmd, cs: cs, log: &log, logw: logw}
	t.Cleanup(func() {
		s.close()
		if t.Failed() {
			// What the server said (a race report, a panic's stack) is
			// what a failure on a machine one cannot reach is read from.
			text := s.logText()
			if len(text) > 16<<10 {
				text = "…" + text[len(text)-16<<10:]
			}
			t.Logf("the server's log:\n%s", text)
		}
	})
	return s
}

func (s *server) close() {
	if s.cs != nil {
		_ = s.cs.Close()
		s.cs = nil
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// call calls a tool and returns its result; a protocol error fails the test.
func (s *server) call(name string, args map[string]any) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s(%v): protocol error: %v", name, args, err)
	}
	return res
}

// ok calls a tool that must succeed and returns its structured content.
func (s *server) ok(name string, args map[string]any) map[string]any {
	s.t.Helper()
	res := s.call(name, args)
	if res.IsError {
		s.t.Fatalf("%s(%v) failed: %s", name, args, resultText(res))
	}
	return structured(s.t, res)
}

// fails calls a tool that must fail with an error result mentioning want.
func (s *server) fails(name string, args map[string]any, want string) string {
	s.t.Helper()
	res := s.call(name, args)
	text := resultText(res)
	if !res.IsError {
		s.t.Fatalf("%s(%v) = success %q, want an error mentioning %q", name, args, text, want)
	}
	if !strings.Contains(text, want) {
		s.t.Fatalf("%s(%v) error = %q, want it to mention %q", name, args, text, want)
	}
	return text
}

// start starts a session and returns its id.
func (s *server) start(args map[string]any) string {
	s.t.Helper()
	out := s.ok("session_start", args)
	id, _ := out["session_id"].(string)
	if id == "" {
		s.t.Fatalf("session_start returned no session_id: %v", out)
	}
	return id
}

// send sends text and returns the structured result.
func (s *server) send(id, text string, extra ...any) map[string]any {
	s.t.Helper()
	args := map[string]any{"session_id": id, "text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return s.ok("session_send", args)
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("structured content: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func exitCode(t testing.TB, m map[string]any) int {
	t.Helper()
	v, ok := m["exit_code"].(float64)
	if !ok {
		t.Fatalf("no exit_code in %v", m)
	}
	return int(v)
}

// wantOutput checks a result's output exactly.
func wantOutput(t testing.TB, m map[string]any, want string) {
	t.Helper()
	if got := str(m, "output"); got != want {
		t.Fatalf("output = %q, want %q (result %v)", got, want, m)
	}
}

// marker returns a unique sleep duration that names a test's processes in
// /proc, so that a test can tell its own orphans from anything else.
func marker() string {
	return "9" + strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 10)
}

// processesWith returns the pids whose command line contains s.
func processesWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if strings.Contains(string(st), ") Z ") {
			continue // a zombie is already dead
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runBinary runs the termgate binary with args in dir and returns its
// combined output and exit code.
func runBinary(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}
