package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShellRefusesKeysAProgramPushed: a program in the session pushes a
// line into its terminal (TIOCSTI, where the kernel still allows it: an
// unconfined session; the sandbox's seccomp filter refuses the ioctl).
// The line reaches bash without a judged Enter: bash refuses it (the
// canary stays absent), the agent is told in the session's next result,
// and the audit log has the refusal as a security event.
func TestShellRefusesKeysAProgramPushed(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skip("this kernel does not let a program push keys into its terminal (dev.tty.legacy_tiocsti)")
	}
	state := t.TempDir()
	logPath := filepath.Join(state, "audit.jsonl")
	s := startServer(t, "--sandbox", "off", "--audit-log", logPath, "--audit-key", filepath.Join(state, "k"))
	dir := t.TempDir()
	canary := "canary-" + marker()
	script := "import fcntl, termios\nfor c in b'touch " + canary + "\\r':\n    fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))\nprint('pushed')\n"
	if err := os.WriteFile(filepath.Join(dir, "push.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	id := s.start(map[string]any{"cwd": dir})
	var told []string
	collect := func(m map[string]any) {
		if l, ok := m["unjudged_refused"].([]any); ok {
			for _, x := range l {
				told = append(told, x.(string))
			}
		}
	}
	collect(s.send(id, "python3 push.py"))
	// The pushed line is read by bash once python has exited: the next
	// results say so.
	eventually(t, 20*time.Second, "the agent is told", func() bool {
		collect(s.ok("session_read", map[string]any{"session_id": id, "timeout_ms": 500}))
		return len(told) > 0
	})
	if !strings.Contains(strings.Join(told, "\n"), canary) {
		t.Fatalf("told %q", told)
	}
	out := s.send(id, "echo after; ls")
	if o := str(out, "output"); !strings.Contains(o, "after") || strings.Contains(o, canary) {
		t.Fatalf("after: %q", o)
	}
	if _, err := os.Stat(filepath.Join(dir, canary)); !os.IsNotExist(err) {
		t.Fatalf("the pushed line ran: %v", err)
	}
	s.close()
	found := false
	ecs := loadECS(t)
	for _, r := range readRecords(t, logPath) {
		if field(r, "rule.id") == "shell.unjudged_line" {
			if !strings.Contains(str(r, "message"), "denied") || !strings.Contains(field(r, "process.command_line").(string), canary) ||
				field(r, "termgate.input.origin") != "unjudged" || field(r, "termgate.session.id") != id {
				t.Fatalf("record: %v", r)
			}
			if bad := ecs.check(r); len(bad) > 0 {
				t.Fatalf("not ECS: %v", bad)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("the refusal is not in the audit log")
	}
}

// TestReservedKeysAreRefused: ctrl+x ctrl+t leads to the keys that accept
// a line once the shell's check passed; the agent cannot type it, whole
// or split across calls, and nothing it typed runs.
func TestReservedKeysAreRefusedByTheGateway(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	s.ok("session_send", map[string]any{"session_id": id, "text": "touch canary", "enter": false, "timeout_ms": 3000, "quiet_ms": 200})
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+x"}, "timeout_ms": 3000, "quiet_ms": 200})
	s.fails("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+t", "a", "b"}, "timeout_ms": 3000}, "reserved")
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}, "timeout_ms": 3000})
	wantOutput(t, s.send(id, "ls"), "")
	if _, err := os.Stat(filepath.Join(dir, "canary")); !os.IsNotExist(err) {
		t.Fatalf("the canary exists: %v", err)
	}
}
