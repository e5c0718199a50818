package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestBashRoundTrips(t *testing.T) {
	s := startServer(t)
	top := t.TempDir() // the session's project: the sandbox lets it write here
	id := s.start(map[string]any{"name": "sh1", "cwd": top})

	r := s.send(id, "echo hello")
	wantOutput(t, r, "hello")
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 0 {
		t.Fatalf("echo: %v", r)
	}
	if r["complete"] != true || r["alive"] != true || r["busy"] != false || str(r, "program") != "bash" {
		t.Fatalf("echo status: %v", r)
	}
	if !strings.HasSuffix(str(r, "prompt"), "#") && !strings.HasSuffix(str(r, "prompt"), "$") {
		t.Fatalf("prompt = %q, want the shell's prompt reported apart from the output", str(r, "prompt"))
	}

	for _, c := range []struct {
		cmd  string
		code int
	}{{"false", 1}, {"(exit 3)", 3}, {"true", 0}, {"no-such-command-xyz", 127}} {
		r := s.send(id, c.cmd)
		if got := exitCode(t, r); got != c.code {
			t.Fatalf("%s: exit code %d, want %d (%v)", c.cmd, got, c.code, r)
		}
	}

	dir := filepath.Join(top, "sub")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.send(id, "cd "+dir)
	wantOutput(t, s.send(id, "pwd"), dir)
	s.send(id, "export TG_TEST_VAR=persisted")
	wantOutput(t, s.send(id, "echo $TG_TEST_VAR"), "persisted")

	// Multi-line output, and a name works where an id does.
	wantOutput(t, s.send("sh1", "printf 'a\\nb\\nc\\n'"), "a\nb\nc")

	// A \r progress bar resolves to what the terminal shows.
	wantOutput(t, s.send(id, `printf 'progress 10%%\rprogress 50%%\rprogress 100%%\n'`), "progress 100%")
	// Colours are stripped.
	r = s.send(id, "mkdir -p "+dir+"/d1 && touch "+dir+"/f1 && ls --color=always "+dir)
	if out := str(r, "output"); strings.Contains(out, "\x1b") || !strings.Contains(out, "d1") || !strings.Contains(out, "f1") {
		t.Fatalf("ls --color output = %q", out)
	}
	// Wide characters.
	wantOutput(t, s.send(id, "echo '日本語のテキスト|end'"), "日本語のテキスト|end")

	// An unfinished command reports the continuation prompt.
	r = s.send(id, "for i in 1 2")
	if r["continued"] != true || r["complete"] != true {
		t.Fatalf("unfinished for: %v", r)
	}
	r = s.send(id, "do echo n$i; done")
	wantOutput(t, r, "n1\nn2")
}

func TestPythonREPL(t *testing.T) {
	s := startServer(t)
	id := s.start(map[string]any{"argv": []string{"python3", "-q"}})
	r := s.send(id, "1+1")
	wantOutput(t, r, "2")
	if str(r, "completion") != "prompt" || str(r, "prompt") != ">>>" {
		t.Fatalf("1+1: %v", r)
	}
	r = s.send(id, "def twice(x):\n    return 2*x\n")
	wantOutput(t, r, "")
	wantOutput(t, s.send(id, "twice(21)"), "42")
	wantOutput(t, s.send(id, "for i in range(3):\n    print('row', i)\n"), "row 0\nrow 1\nrow 2")
	r = s.send(id, "import sys; sys.exit(4)")
	if r["alive"] != false || exitCode(t, r) != 4 || str(r, "completion") != "exited" {
		t.Fatalf("sys.exit: %v", r)
	}
}

func TestSqlitePrompt(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 is not installed (make deps installs it)")
	}
	s := startServer(t)
	id := s.start(map[string]any{"command": "bash"})
	r := s.send(id, "sqlite3")
	if str(r, "completion") != "prompt" || str(r, "program") != "sqlite3" || r["busy"] != true {
		t.Fatalf("sqlite3 start: %v", r)
	}
	s.send(id, "create table t(x); insert into t values (40),(2);")
	r = s.send(id, "select sum(x) from t;")
	wantOutput(t, r, "42")
	// A statement split over lines waits for the end.
	wantOutput(t, s.send(id, "select\n count(*)\n from t;"), "2")
	r = s.send(id, ".quit")
	if str(r, "program") != "bash" || str(r, "completion") != "command_finished" {
		t.Fatalf(".quit: %v", r)
	}
}

func TestCtrlCInterruptsSleep(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	r := s.send(id, "sleep 100", "timeout_ms", 300)
	if r["complete"] != false || str(r, "completion") != "timeout" || r["busy"] != true || str(r, "program") != "sleep" {
		t.Fatalf("sleep 100: %v", r)
	}
	r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}})
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 130 {
		t.Fatalf("ctrl+c: %v", r)
	}
	wantOutput(t, s.send(id, "echo after"), "after")
}

func TestReadContinuesATimedOutCommand(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	r := s.send(id, "sleep 0.6; echo done-now", "timeout_ms", 100)
	if r["complete"] != false {
		t.Fatalf("want complete:false, got %v", r)
	}
	r = s.ok("session_read", map[string]any{"session_id": id, "timeout_ms": 5000})
	if r["complete"] != true || str(r, "completion") != "command_finished" || exitCode(t, r) != 0 {
		t.Fatalf("read: %v", r)
	}
	wantOutput(t, r, "done-now")
	// Nothing new since.
	wantOutput(t, s.ok("session_read", map[string]any{"session_id": id}), "")
}

func TestWaitForMatchesOutputNotEcho(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	r := s.send(id, "for i in 1 2 3; do echo step$i; sleep 0.3; done", "wait_for", `step2`)
	if str(r, "completion") != "pattern" || !strings.Contains(str(r, "output"), "step2") || strings.Contains(str(r, "output"), "step3") {
		t.Fatalf("wait_for step2: %v", r)
	}
	// The echoed command line itself holds "for i": it must not match.
	s.ok("session_read", map[string]any{"session_id": id, "timeout_ms": 3000})
	r = s.send(id, "sleep 0.5; echo x", "wait_for", `sleep 0\.5`, "timeout_ms", 1500)
	if str(r, "completion") == "pattern" {
		t.Fatalf("wait_for matched the echo: %v", r)
	}
}

func TestVimScreenAndQuit(t *testing.T) {
	if _, err := exec.LookPath("vim"); err != nil {
		t.Skip("vim is not installed (make deps installs it)")
	}
	s := startServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	file := filepath.Join(dir, "notes.txt")
	r := s.send(id, "vim -u NONE -N "+file)
	if r["screen"] != true || str(r, "program") != "vim" || !strings.Contains(str(r, "output"), "~") {
		t.Fatalf("vim: %v", r)
	}
	scr := s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"})
	if scr["alt_screen"] != true || !strings.Contains(str(scr, "output"), "notes.txt") {
		t.Fatalf("vim screen: %v", scr)
	}
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"i"}})
	s.ok("session_send", map[string]any{"session_id": id, "text": "hello from vim", "enter": false})
	r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"esc", ":", "w", "q", "enter"}})
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 0 || str(r, "program") != "bash" {
		t.Fatalf(":wq: %v", r)
	}
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "hello from vim\n" {
		t.Fatalf("file = %q, %v", b, err)
	}
}

func TestTopScreen(t *testing.T) {
	if _, err := exec.LookPath("top"); err != nil {
		t.Skip("top is not installed")
	}
	s := startServer(t)
	id := s.start(map[string]any{"rows": 30, "cols": 120})
	r := s.send(id, "top -d 1")
	if str(r, "program") != "top" || !strings.Contains(str(r, "output"), "load average") || !strings.Contains(str(r, "output"), "PID") {
		t.Fatalf("top: %v", r)
	}
	r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"q"}})
	if str(r, "program") != "bash" || str(r, "completion") != "command_finished" {
		t.Fatalf("q: %v", r)
	}
}

func TestResize(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	wantOutput(t, s.send(id, "stty size"), "24 80")
	s.ok("session_resize", map[string]any{"session_id": id, "rows": 40, "cols": 132})
	wantOutput(t, s.send(id, "stty size"), "40 132")
	info := s.ok("session_info", map[string]any{"session_id": id})
	if info["rows"] != float64(40) || info["cols"] != float64(132) {
		t.Fatalf("info after resize: %v", info)
	}
}

func TestLongOutputIsCapped(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	r := s.send(id, "seq 1 5000", "max_output", 2000)
	out := str(r, "output")
	if r["truncated"] != true || !strings.HasPrefix(out, "1\n2\n") || !strings.HasSuffix(out, "4999\n5000") {
		t.Fatalf("capped output: head %q tail %q truncated %v", out[:min(40, len(out))], out[max(0, len(out)-40):], r["truncated"])
	}
	if !strings.Contains(out, "lines (") || !strings.Contains(out, `"mode":"log"`) || len([]rune(out)) > 2000 {
		t.Fatalf("cap marker missing or output over the cap (%d runes): %q", len([]rune(out)), out)
	}
	sb := s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback", "lines": 3})
	if !strings.HasPrefix(str(sb, "output"), "4999\n5000\n") {
		t.Fatalf("scrollback = %q", str(sb, "output"))
	}
}

func TestPipeMode(t *testing.T) {
	s := startServer(t)
	id := s.start(map[string]any{"argv": []string{"sh"}, "mode": "pipe"})
	r := s.send(id, "echo piped; echo err >&2")
	wantOutput(t, r, "piped\nerr")
	if str(r, "completion") != "quiet" {
		t.Fatalf("pipe completion: %v", r)
	}
}

func TestConcurrentSessions(t *testing.T) {
	s := startServer(t)
	const n = 10
	ids := make([]string, n)
	for i := 1; i < n; i++ {
		ids[i] = s.start(nil)
	}
	// A call on one session that cannot end before the others have (it
	// waits for a file the test makes only after them) must not hold them.
	dir := t.TempDir()
	ids[0] = s.start(map[string]any{"cwd": dir}) // a directory the session may write
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "go")
	slow := make(chan *mcp.CallToolResult, 1)
	go func() {
		slow <- s.call("session_send", map[string]any{"session_id": ids[0], "text": "touch " + started + "; while [ ! -e " + release + " ]; do sleep 0.01; done; echo slow", "timeout_ms": 120000})
	}()
	eventually(t, time.Minute, "the slow call runs", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("session-%d", i)
			for range 5 {
				res := s.call("session_send", map[string]any{"session_id": ids[i], "text": "echo " + want})
				if got := str(structured(t, res), "output"); got != want {
					errs <- fmt.Errorf("session %d: output %q, want %q", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case r := <-slow:
		t.Fatalf("the slow call ended before it was released: %v", r)
	default:
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, structured(t, <-slow), "slow")
	list := s.ok("session_list", nil)
	if got := len(list["sessions"].([]any)); got != n {
		t.Fatalf("session_list has %d sessions, want %d", got, n)
	}
}

func TestBadInputsGetErrorsAndChangeNothing(t *testing.T) {
	s := startServer(t, "--max-input", "1024")
	id := s.start(nil)
	s.fails("session_send", map[string]any{"session_id": "s-NOSUCHSESS", "text": "x"}, "no such session")
	s.fails("session_send", map[string]any{"session_id": id, "text": "echo x", "wait_for": "("}, "not a valid regular expression")
	s.fails("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c", "hyperspace"}}, "unknown key")
	s.fails("session_keys", map[string]any{"session_id": id, "keys": []string{"down*100000"}}, "repeat count")
	s.fails("session_start", map[string]any{"rows": 1}, "rows must be")
	s.fails("session_start", map[string]any{"cols": 5000}, "rows must be")
	s.fails("session_resize", map[string]any{"session_id": id, "rows": 0, "cols": 80}, "rows must be")
	s.fails("session_send", map[string]any{"session_id": id, "text": strings.Repeat("x", 2000)}, "over the limit")
	s.fails("session_start", map[string]any{"argv": []string{"no-such-program-xyz"}}, "command not found")
	s.fails("session_start", map[string]any{"cwd": "/no/such/dir"}, "not a directory")
	s.fails("session_start", map[string]any{"mode": "telepathy"}, "mode must be")
	s.fails("session_read", map[string]any{"session_id": id, "mode": "sideways"}, "mode must be")
	s.fails("session_send", map[string]any{"session_id": id, "text": "x", "timeout_ms": -1}, "timeout_ms")
	// Schema violations are tool errors too.
	res := s.call("session_send", map[string]any{"session_id": id, "text": 42})
	if !res.IsError {
		t.Fatalf("text:42 accepted: %s", resultText(res))
	}
	// Nothing of the above reached the terminal: the next command's output
	// is its own, and the history holds no stray input.
	wantOutput(t, s.send(id, "echo still-fine"), "still-fine")
	hist := str(s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback"}), "output")
	for _, stray := range []string{"xxxx", "hyperspace", "echo x"} {
		if strings.Contains(hist, stray) {
			t.Fatalf("rejected input %q reached the terminal:\n%s", stray, hist)
		}
	}

	// An exited session stays readable and refuses input.
	ex := s.start(map[string]any{"command": "sh -c 'echo last words; exit 7'"})
	eventually(t, 5*time.Second, "the program exits", func() bool {
		return s.ok("session_info", map[string]any{"session_id": ex})["alive"] == false
	})
	info := s.ok("session_info", map[string]any{"session_id": ex})
	if exitCode(t, info) != 7 {
		t.Fatalf("exit code: %v", info)
	}
	sb := s.ok("session_read", map[string]any{"session_id": ex, "mode": "scrollback"})
	if !strings.Contains(str(sb, "output"), "last words") {
		t.Fatalf("final output lost: %v", sb)
	}
	s.fails("session_send", map[string]any{"session_id": ex, "text": "x"}, "has exited")

	// Closing is idempotent.
	c1 := s.ok("session_close", map[string]any{"session_id": id})
	c2 := s.ok("session_close", map[string]any{"session_id": id})
	if c1["already_closed"] != false || c2["already_closed"] != true {
		t.Fatalf("close twice: %v then %v", c1, c2)
	}
	s.fails("session_send", map[string]any{"session_id": id, "text": "x"}, "closed")
}

// TestMalformedJSONRPC writes raw lines to the server: bad JSON and bad
// requests get JSON-RPC errors, and the server keeps serving.
func TestMalformedJSONRPC(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.Dir = t.TempDir()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("server stopped answering: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a non-JSON line %q", lines.Text())
		}
		return m
	}
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	errCode := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":2,"method":`, -32700},
		{`not json at all`, -32700},
		{`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, -32600},
		{`[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, -32600},
		{`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, -32601},
	} {
		send(c.line)
		if m := next(); errCode(m) != c.code {
			t.Fatalf("%s: got %v, want error code %v", c.line, m, c.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	m := next()
	if m["id"] != float64(6) || m["result"] == nil {
		t.Fatalf("tools/list after bad input: %v", m)
	}
}

// ---- no orphans ----

// orphanCheck starts a session with a backgrounded sleep marker and returns
// the marker.
func orphanSetup(t *testing.T, s *server) string {
	t.Helper()
	id := s.start(nil)
	mk := marker()
	s.send(id, "sleep "+mk+" &")
	s.send(id, "nohup sleep "+mk+" >/dev/null 2>&1 &")
	eventually(t, 5*time.Second, "the markers run", func() bool { return len(processesWith("sleep "+mk)) == 2 })
	return mk
}

func TestNoOrphansOnClientDisconnect(t *testing.T) {
	s := startServer(t)
	mk := orphanSetup(t, s)
	s.close() // closes stdin: the client is gone
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit after stdin EOF")
	}
	if pids := processesWith("sleep " + mk); len(pids) > 0 {
		t.Fatalf("orphans after client disconnect: %v", pids)
	}
}

func TestNoOrphansOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startServer(t)
			mk := orphanSetup(t, s)
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "server exits on "+sig.String(), func() bool {
				return syscall.Kill(s.pid(), 0) != nil || isZombie(s.pid())
			})
			eventually(t, 5*time.Second, "no orphans", func() bool { return len(processesWith("sleep "+mk)) == 0 })
		})
	}
}

func isZombie(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return strings.Contains(string(b), ") Z ")
}

func TestNoOrphansOnIdleTimeout(t *testing.T) {
	s := startServer(t, "--idle-timeout", "1s")
	mk := orphanSetup(t, s)
	eventually(t, 15*time.Second, "the idle session and its background jobs are gone", func() bool {
		return len(processesWith("sleep "+mk)) == 0
	})
	eventually(t, 5*time.Second, "the idle session is reported closed", func() bool {
		for _, v := range s.ok("session_list", nil)["sessions"].([]any) {
			if v.(map[string]any)["closed"] != true {
				return false
			}
		}
		return true
	})
}

func TestNoOrphansOnClose(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	mk := marker()
	s.send(id, "sleep "+mk+" & disown; (trap '' HUP; sleep "+mk+") &")
	eventually(t, 5*time.Second, "markers run", func() bool { return len(processesWith("sleep "+mk)) == 2 })
	r := s.ok("session_close", map[string]any{"session_id": id})
	if r["closed"] != true {
		t.Fatalf("close: %v", r)
	}
	if pids := processesWith("sleep " + mk); len(pids) > 0 {
		t.Fatalf("orphans after session_close: %v", pids)
	}
}

func TestExecTool(t *testing.T) {
	s := startServer(t)
	r := s.ok("exec", map[string]any{"command": "echo out; echo err >&2; exit 5"})
	if str(r, "output") != "out\nerr\n" || exitCode(t, r) != 5 || r["timed_out"] != false {
		t.Fatalf("exec: %v", r)
	}
	mk := marker()
	r = s.ok("exec", map[string]any{"command": "sleep " + mk + " & sleep " + mk, "timeout_ms": 300})
	if r["timed_out"] != true {
		t.Fatalf("exec timeout: %v", r)
	}
	if pids := processesWith("sleep " + mk); len(pids) > 0 {
		t.Fatalf("exec left processes behind: %v", pids)
	}
}

func TestResources(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	s.send(id, "echo resource-check")
	ctx := context.Background()
	res, err := s.cs.ReadResource(ctx, &mcpReadParams{URI: "termgate://sessions/" + id + "/transcript"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "resource-check") {
		t.Fatalf("transcript: %v %v", res, err)
	}
	res, err = s.cs.ReadResource(ctx, &mcpReadParams{URI: "termgate://sessions/" + id + "/screen"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "resource-check") {
		t.Fatalf("screen: %v %v", res, err)
	}
	res, err = s.cs.ReadResource(ctx, &mcpReadParams{URI: "termgate://policy"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"policy": "opa sha256:`) {
		t.Fatalf("policy: %v %v", res, err)
	}
	if _, err := s.cs.ReadResource(ctx, &mcpReadParams{URI: "termgate://sessions/s-NOPE/transcript"}); err == nil {
		t.Fatal("reading an unknown session's transcript succeeded")
	}
}

// TestOutputFloodIsBounded pushes 200 MB through one session: the server's
// memory stays bounded and the newest output is not lost.
func TestOutputFloodIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB through a PTY takes a while")
	}
	s := startServer(t)
	id := s.start(nil)
	start := time.Now()
	r := s.send(id, "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz012345678 | head -c 200000000; echo; echo END-OF-FLOOD", "timeout_ms", 300000)
	elapsed := time.Since(start)
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 0 {
		t.Fatalf("flood: %v", map[string]any{"completion": r["completion"], "exit": r["exit_code"]})
	}
	out := str(r, "output")
	if !strings.HasSuffix(out, "END-OF-FLOOD") || r["truncated"] != true {
		t.Fatalf("newest output lost: tail %q", out[max(0, len(out)-100):])
	}
	hwm := vmHWM(t, s.pid())
	t.Logf("200 MB in %v (%.0f MB/s); server peak RSS %d MiB", elapsed.Round(time.Millisecond), 200/elapsed.Seconds(), hwm>>20)
	if hwm > 100<<20 {
		t.Fatalf("server peak RSS %d MiB, want under 100 MiB", hwm>>20)
	}
	wantOutput(t, s.send(id, "echo alive"), "alive")
	// The output log kept the newest 64 MiB on disk, said what it dropped,
	// and goes with the session.
	page := s.ok("session_read", map[string]any{"session_id": id, "mode": "log", "offset": 0, "lines": 2})
	log, _ := page["log"].(map[string]any)
	if log == nil || log["on_disk"] != true || log["first_line"].(float64) == 0 || !strings.Contains(str(page, "output"), "are gone: the output log keeps the newest 67108864 bytes") {
		t.Fatalf("log after the flood: %v", page)
	}
	logs := outputLogs(t, s.pid())
	if len(logs) != 1 || logs[0] > 64<<20 || logs[0] < 60<<20 {
		t.Fatalf("output log sizes %v, want one of at most 64 MiB", logs)
	}
	s.ok("session_close", map[string]any{"session_id": id})
	if logs := outputLogs(t, s.pid()); len(logs) != 0 {
		t.Fatalf("output logs left open after close: %v", logs)
	}
}

// outputLogs returns the sizes of the unnamed output logs a server holds.
func outputLogs(t *testing.T, pid int) []int64 {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.Contains(target, "termgate-session-") || !strings.HasSuffix(target, "(deleted)") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() {
			sizes = append(sizes, fi.Size())
		}
	}
	return sizes
}

// vmHWM returns a process's peak resident set size in bytes.
func vmHWM(t testing.TB, pid int) int64 { return procStatusKB(t, pid, "VmHWM") << 10 }

// procStatusKB reads a kB field of /proc/PID/status.
func procStatusKB(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func TestZshShellIntegration(t *testing.T) {
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh is not installed (scripts/dev deps installs it)")
	}
	s := startServer(t)
	id := s.start(map[string]any{"argv": []string{"zsh"}})
	r := s.send(id, "echo from zsh")
	wantOutput(t, r, "from zsh")
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 0 {
		t.Fatalf("zsh echo: %v", r)
	}
	if got := exitCode(t, s.send(id, "(exit 9)")); got != 9 {
		t.Fatalf("zsh exit code %d, want 9", got)
	}
	s.send(id, "cd /tmp")
	wantOutput(t, s.send(id, "pwd"), "/tmp")
}

// TestLearnedPrompt: a shell without integration (dash) completes on the
// prompt it showed at start.
func TestLearnedPrompt(t *testing.T) {
	s := startServer(t)
	// dash's own prompt: an agent may not set PS1 (the shell would expand
	// it), so the prompt is dash's "$ " (or "# " as root).
	out := s.ok("session_start", map[string]any{"argv": []string{"sh"}})
	want := map[bool]string{true: "#", false: "$"}[os.Geteuid() == 0]
	// The prompt is recognised by its shape once the shell blocks reading,
	// not waited out as a quiet period.
	if str(out, "prompt") != want || out["shell_integration"] != false || str(out, "completion") != "prompt" {
		t.Fatalf("start: %v", out)
	}
	id := str(out, "session_id")
	r := s.send(id, "echo learned; sleep 0.5; echo done")
	wantOutput(t, r, "learned\ndone")
	if str(r, "completion") != "prompt" {
		t.Fatalf("completion: %v", r)
	}
	out = s.ok("session_start", map[string]any{"argv": []string{"bash", "--norc"}})
	if !strings.HasPrefix(str(out, "prompt"), "bash-") || str(out, "completion") != "prompt" {
		t.Fatalf("bash --norc start: %v", out)
	}
	r = s.send(str(out, "session_id"), "printf 'a#%s\\n' b")
	wantOutput(t, r, "a#b")
	if str(r, "completion") != "prompt" {
		t.Fatalf("bash --norc completion: %v", r)
	}
}

func TestNodeAndGdbPrompts(t *testing.T) {
	s := startServer(t)
	if _, err := exec.LookPath("node"); err == nil {
		id := s.start(map[string]any{"argv": []string{"node"}})
		r := s.send(id, "[1,2,3].map(x => x * 2).join('-')")
		wantOutput(t, r, "'2-4-6'")
		if str(r, "completion") != "prompt" {
			t.Fatalf("node: %v", r)
		}
	}
	if _, err := exec.LookPath("gdb"); err == nil {
		id := s.start(map[string]any{"argv": []string{"gdb", "-q", "-nx"}})
		r := s.send(id, "print 6*7")
		wantOutput(t, r, "$1 = 42")
		if str(r, "completion") != "prompt" || str(r, "prompt") != "(gdb)" {
			t.Fatalf("gdb: %v", r)
		}
	}
}
