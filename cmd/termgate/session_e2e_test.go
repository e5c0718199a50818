package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of calls on sessions through the real binary: results
// of multi-line input, leaving full-screen programs, calls that overlap,
// input typed while a command still runs.

func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (scripts/dev deps installs it)", name)
	}
}

func TestMultiLineSendsE2E(t *testing.T) {
	s := startServer(t)
	t.Run("bash", func(t *testing.T) {
		id := s.start(nil)
		for _, c := range []struct{ in, out string }{
			{"echo one\necho two\necho three", "one\ntwo\nthree"},
			{"cat <<EOF\nalpha\nbeta\nEOF", "alpha\nbeta"},
			{"for i in 1 2 3\ndo echo n$i\ndone", "n1\nn2\nn3"},
			{"greet() {\n  echo hello $1\n}\ngreet you", "hello you"},
		} {
			r := s.send(id, c.in)
			wantOutput(t, r, c.out)
			if str(r, "completion") != "command_finished" || exitCode(t, r) != 0 {
				t.Fatalf("%q: %v", c.in, r)
			}
		}
		// The next call gets its own output, nothing left over.
		wantOutput(t, s.send(id, "echo next"), "next")
	})
	t.Run("python", func(t *testing.T) {
		id := s.start(map[string]any{"argv": []string{"python3", "-q"}})
		wantOutput(t, s.send(id, "print(1)\nprint(2)\nprint(3)"), "1\n2\n3")
		wantOutput(t, s.send(id, "def twice(x):\n    return 2*x\n"), "")
		wantOutput(t, s.send(id, "for i in range(2):\n    print('row', twice(i))\n"), "row 0\nrow 2")
		wantOutput(t, s.send(id, "7*6"), "42")
	})
	t.Run("sqlite3", func(t *testing.T) {
		needProgram(t, "sqlite3")
		id := s.start(map[string]any{"argv": []string{"sqlite3"}})
		wantOutput(t, s.send(id, "create table t(x);\ninsert into t values (40),(2);\nselect sum(x) from t;\nselect count(*) from t;"), "42\n2")
	})
}

func TestFullScreenExitsE2E(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	var b strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "stale line %d\n", i)
	}
	os.WriteFile(file, []byte(b.String()), 0o644)
	id := s.start(map[string]any{"cwd": dir})
	s.send(id, "cat "+file)
	keys := func(k ...string) map[string]any {
		t.Helper()
		return s.ok("session_keys", map[string]any{"session_id": id, "keys": k})
	}
	t.Run("vim", func(t *testing.T) {
		needProgram(t, "vim")
		if r := s.send(id, "vim -u NONE -N "+file); r["screen"] != true {
			t.Fatalf("vim: %v", r)
		}
		r := keys(":", "q", "!", "enter")
		wantOutput(t, r, "")
		if str(r, "completion") != "command_finished" || str(r, "program") != "bash" {
			t.Fatalf(":q!: %v", r)
		}
	})
	t.Run("less", func(t *testing.T) {
		needProgram(t, "less")
		if r := s.send(id, "less "+file+"; echo after-less"); r["screen"] != true {
			t.Fatalf("less: %v", r)
		}
		wantOutput(t, keys("q"), "after-less")
		// Enter into a pager reading a pipe is not a line to judge.
		if r := s.send(id, "cat "+file+" | less"); r["screen"] != true {
			t.Fatalf("cat | less: %v", r)
		}
		if r := keys("enter"); r["screen"] != true || !strings.Contains(str(r, "output"), "stale line 2") {
			t.Fatalf("enter in less: %v", r)
		}
		wantOutput(t, keys("q"), "")
	})
	t.Run("fzf", func(t *testing.T) {
		needProgram(t, "fzf")
		if r := s.send(id, "seq 20 | fzf; echo after-fzf"); r["screen"] != true {
			t.Fatalf("fzf: %v", r)
		}
		eventually(t, 20*time.Second, "fzf lists its input", func() bool {
			return strings.Contains(str(s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"}), "output"), "20/20")
		})
		wantOutput(t, keys("enter"), "1\nafter-fzf")
	})
	wantOutput(t, s.send(id, "echo done"), "done")
}

// TestOverlappingCallsE2E: parallel calls on one session through the MCP
// client, as clients make them: none panics, keystrokes never interleave,
// a call that cannot wait gets a busy error and typed nothing.
func TestOverlappingCallsE2E(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	flag := filepath.Join(t.TempDir(), "go")
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Errorf("%s: protocol error: %v", name, err)
			return &mcp.CallToolResult{IsError: true}
		}
		return res
	}
	first := make(chan *mcp.CallToolResult, 1)
	go func() {
		// The loop runs in a bash of its own: input typed while it runs
		// is judged as bash's, which the policy knows (an unknown
		// program in front is confirmed: TestTypedAheadIsJudgedForItsReaders).
		first <- call("session_send", map[string]any{"session_id": id, "text": "bash -c 'while [ ! -e " + flag + " ]; do sleep 0.01; done'; echo first-done"})
	}()
	eventually(t, 20*time.Second, "the first call is typed", func() bool {
		return strings.Contains(str(s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"}), "output"), "first-done")
	})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"session_send", map[string]any{"session_id": id, "text": "echo intruder-send", "timeout_ms": 100}},
		{"session_keys", map[string]any{"session_id": id, "keys": []string{"x", "enter"}, "timeout_ms": 100}},
		{"session_read", map[string]any{"session_id": id, "timeout_ms": 100}},
	} {
		res := call(c.tool, c.args)
		if text := resultText(res); !res.IsError || !strings.Contains(text, "session busy") || !strings.Contains(text, "session_send") {
			t.Fatalf("%s on a busy session: %s", c.tool, text)
		}
	}
	// Calls that can wait run one after the other once the first returns.
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := call("session_send", map[string]any{"session_id": id, "text": fmt.Sprintf("echo parallel-%d-abcdefghijklmnopqrstuvwxyz", i)})
			if res.IsError {
				t.Errorf("parallel send %d: %s", i, resultText(res))
				return
			}
			outs[i] = str(structured(t, res), "output")
		}()
	}
	os.WriteFile(flag, nil, 0o600)
	if r := <-first; r.IsError || str(structured(t, r), "output") != "first-done" {
		t.Fatalf("first call: %s", resultText(r))
	}
	wg.Wait()
	for i, out := range outs {
		if want := fmt.Sprintf("parallel-%d-abcdefghijklmnopqrstuvwxyz", i); out != want {
			t.Fatalf("parallel send %d: output %q, want %q", i, out, want)
		}
	}
	hist := str(s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback"}), "output")
	if strings.Contains(hist, "intruder") {
		t.Fatalf("a refused call typed:\n%s", hist)
	}
	// A send while session_start still waits for the first prompt.
	started := make(chan *mcp.CallToolResult, 1)
	go func() {
		started <- call("session_start", map[string]any{"name": "racer", "command": "sh -c 'sleep 0.3; exec bash'"})
	}()
	eventually(t, 20*time.Second, "the session is listed", func() bool {
		return !s.call("session_info", map[string]any{"session_id": "racer"}).IsError
	})
	res := call("session_send", map[string]any{"session_id": "racer", "text": "echo raced"})
	if text := resultText(res); res.IsError || !strings.Contains(str(structured(t, res), "output"), "raced") {
		t.Fatalf("send during start: %s", text)
	}
	if r := <-started; r.IsError {
		t.Fatalf("start: %s", resultText(r))
	}
}

// TestCloseWhileAWriteIsBlockedE2E: input to a program that does not read
// its terminal ends at the call's timeout, and closing the session does not
// wait for it.
func TestCloseWhileAWriteIsBlockedE2E(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	s.send(id, "stty raw -echo; echo not-reading; sleep 1000", "wait_for", "not-reading")
	big := strings.Repeat("y", 60000)
	s.fails("session_send", map[string]any{"session_id": id, "text": big, "enter": false, "timeout_ms": 300}, "not reading its input")
	blocked := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, _ := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_send", Arguments: map[string]any{"session_id": id, "text": big, "enter": false, "timeout_ms": 600000}})
		blocked <- res
	}()
	// The blocked call holds the turn.
	eventually(t, 20*time.Second, "the write blocks", func() bool {
		res := s.call("session_read", map[string]any{"session_id": id, "timeout_ms": 1})
		return res.IsError && strings.Contains(resultText(res), "session busy")
	})
	done := make(chan map[string]any, 1)
	go func() { done <- s.ok("session_close", map[string]any{"session_id": id}) }()
	select {
	case r := <-done:
		if r["closed"] != true {
			t.Fatalf("close: %v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("session_close waited for a blocked write")
	}
	if res := <-blocked; res == nil || !res.IsError {
		t.Fatalf("the blocked send: %v", res)
	}
	wantOutput(t, s.send(s.start(nil), "echo alive"), "alive")
}

// TestTypingWhileACommandRunsE2E: after a call timed out, the next input's
// result holds its own output; the earlier command's stays for
// session_read.
func TestTypingWhileACommandRunsE2E(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	flag := filepath.Join(t.TempDir(), "go")
	// In a bash of its own, so that what is typed ahead is judged as
	// bash's (see TestTypedAheadIsJudgedForItsReaders).
	r := s.send(id, "bash -c 'while [ ! -e "+flag+" ]; do sleep 0.01; done'; echo old-output", "timeout_ms", 200)
	if r["complete"] != false {
		t.Fatalf("first: %v", r)
	}
	got := make(chan map[string]any, 1)
	go func() { got <- s.send(id, "echo new-output") }()
	eventually(t, 20*time.Second, "the input is typed ahead", func() bool {
		return strings.Contains(str(s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"}), "output"), "echo new-output")
	})
	os.WriteFile(flag, nil, 0o600)
	r = <-got
	out := str(r, "output")
	if !strings.HasSuffix(out, "\nnew-output") || strings.Contains(out, "old-output") || !strings.Contains(out, "session_read returns them") || exitCode(t, r) != 0 {
		t.Fatalf("typed ahead: %v", r)
	}
	wantOutput(t, s.ok("session_read", map[string]any{"session_id": id}), "old-output")
}

// TestPromptChangesE2E: completion follows the prompt the shell shows now.
func TestPromptChangesE2E(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	s.send(id, "PS1='$ '")
	r := s.send(id, "echo changed; (exit 4)", "timeout_ms", 60000)
	wantOutput(t, r, "changed")
	if str(r, "completion") != "command_finished" || exitCode(t, r) != 4 {
		t.Fatalf("after PS1='$ ': %v", r)
	}
	// esc at the prompt completes once the shell reads again (readline
	// then waits for the key esc is the prefix of: ctrl+g cancels it).
	for _, k := range []string{"esc", "ctrl+g"} {
		r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{k}, "timeout_ms": 60000})
		if r["complete"] != true || str(r, "completion") == "timeout" {
			t.Fatalf("%s: %v", k, r)
		}
	}
	wantOutput(t, s.send(id, "echo still"), "still")
}
