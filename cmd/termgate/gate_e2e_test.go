package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The line the policy judges is the line the program runs: each test here
// is a bypass that ran `rm -rf *` (or another denied line) past the gate,
// driven through the real binary. Each works in a fresh directory holding
// canary files, which the attack would delete.

// canaries makes files in dir and returns a check that they are all still
// there.
func canaries(t *testing.T, dir string) func() bool {
	t.Helper()
	names := []string{"canary-a", "canary-b"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() bool {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				return false
			}
		}
		return true
	}
}

// keysOf spells a text as session_keys key names, one a character.
func keysOf(text string) []string {
	var keys []string
	for _, c := range text {
		if c == ' ' {
			keys = append(keys, "space")
		} else {
			keys = append(keys, string(c))
		}
	}
	return keys
}

// TestProgramIdentifiedByExecutable: a shell that calls itself something
// else (exec -a), a restricted shell's name (rbash), a shell behind a
// relay on a terminal of its own (script -qc, python's pty.spawn) is
// still a shell, and its lines are judged as a shell's.
func TestProgramIdentifiedByExecutable(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script is not installed (scripts/dev deps installs it)")
	}
	for _, c := range []struct{ name, setup string }{
		{"exec -a", "exec -a x bash --norc"},
		{"rbash", "rbash --norc"},
		{"script -qc", "script -qc 'bash --norc' /dev/null"},
		{"pty.spawn", `python3 -c 'import pty; pty.spawn("/bin/bash")'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t) // its helpers fail the test they were made in
			dir := t.TempDir()
			alive := canaries(t, dir)
			id := s.start(map[string]any{"cwd": dir})
			s.ok("session_send", map[string]any{"session_id": id, "text": c.setup, "timeout_ms": 5000, "quiet_ms": 500})
			eventually(t, 10*time.Second, "the inner shell in front", func() bool {
				info := s.ok("session_info", map[string]any{"session_id": id})
				return info["busy"] == true || c.name == "exec -a"
			})
			msg := s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf *", "timeout_ms": 5000}, "fs.rm_protected")
			if !alive() {
				t.Fatalf("the canaries were deleted (refusal: %s)", msg)
			}
			info := s.ok("session_info", map[string]any{"session_id": id})
			if str(info, "program") != "bash" {
				t.Fatalf("program = %q, want bash", str(info, "program"))
			}
			// Typed key by key, the line is judged at Enter as a shell's.
			res := s.call("session_keys", map[string]any{"session_id": id, "keys": append(keysOf("rm -rf *"), "enter"), "timeout_ms": 10000})
			if !res.IsError || !alive() {
				t.Fatalf("keys: %v %s; canaries alive %v", res.IsError, resultText(res), alive())
			}
		})
	}
}

// TestFakeShellMarksAreIgnored: a background job prints an input-start
// mark (ESC]133;B) after the typed line, which moved where the judged
// line started: the line at Enter read as empty, and ran unjudged.
func TestFakeShellMarksAreIgnored(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	alive := canaries(t, dir)
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	id := s.start(map[string]any{"cwd": dir})
	s.send(id, `(read x < go; printf '\033]133;A\007\033]133;B\007'; : > printed) &`)
	s.ok("session_keys", map[string]any{"session_id": id, "keys": keysOf("rm -rf *")})
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("go\n"))
	f.Close()
	eventually(t, 10*time.Second, "the fake mark printed", func() bool {
		_, err := os.Stat(filepath.Join(dir, "printed"))
		return err == nil
	})
	// Let the reader take the printed mark in before Enter.
	s.ok("session_read", map[string]any{"session_id": id})
	res := s.call("session_keys", map[string]any{"session_id": id, "keys": []string{"enter"}, "timeout_ms": 10000})
	if !res.IsError || !strings.Contains(resultText(res), "fs.rm_protected") || !alive() {
		t.Fatalf("Enter after a fake mark: error %v: %s; canaries alive %v", res.IsError, resultText(res), alive())
	}
}

// TestWrappedRowBlanksAreRead: rm, blanks to the end of the row, and -rf *
// on the next: the whole input is read, from its first row (where the
// prompt is) to the end of its last, blanks of the soft-wrapped row kept
// (the line is rm -rf *). Read from the cursor's row only, a shell without
// termgate's marks showed no prompt there, and the line ran unjudged.
func TestWrappedRowBlanksAreRead(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	alive := canaries(t, dir)
	id := s.start(map[string]any{"cwd": dir, "cols": 40})
	s.ok("session_send", map[string]any{"session_id": id, "text": "bash --norc", "timeout_ms": 3000, "quiet_ms": 300})
	s.ok("session_send", map[string]any{"session_id": id, "text": "PS1='$ '", "timeout_ms": 3000, "quiet_ms": 300})
	keys := []string{"r", "m", "space*36"}
	keys = append(keys, keysOf("-rf *")...)
	res := s.call("session_keys", map[string]any{"session_id": id, "keys": append(keys, "enter"), "timeout_ms": 10000})
	if !res.IsError || !strings.Contains(resultText(res), "fs.rm_protected") || !alive() {
		t.Fatalf("a line wrapped over blanks: error %v: %s; canaries alive %v", res.IsError, resultText(res), alive())
	}
}

// TestEmptyAndUnknownLinesAtEnter: Enter on an empty line at a prompt
// goes through; on a line that neither the screen (no prompt found) nor
// what was typed (history recall) can give, it is refused.
func TestEmptyAndUnknownLinesAtEnter(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	alive := canaries(t, dir)
	id := s.start(map[string]any{"cwd": dir})
	s.ok("session_send", map[string]any{"session_id": id, "text": ""})
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"enter"}})
	// A shell whose prompt termgate cannot find; a line it was never
	// shown recalled from history.
	s.ok("session_send", map[string]any{"session_id": id, "text": "bash --norc", "timeout_ms": 3000, "quiet_ms": 300})
	s.ok("session_send", map[string]any{"session_id": id, "text": "PS1='λ '", "timeout_ms": 3000, "quiet_ms": 300})
	s.ok("session_send", map[string]any{"session_id": id, "text": "history -c", "timeout_ms": 3000, "quiet_ms": 300})
	s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf *", "timeout_ms": 3000}, "fs.rm_protected")
	res := s.call("session_keys", map[string]any{"session_id": id, "keys": []string{"up", "enter"}, "timeout_ms": 10000})
	if !res.IsError || !strings.Contains(resultText(res), "can be read neither") {
		t.Fatalf("an unknown line at Enter: error %v: %s", res.IsError, resultText(res))
	}
	if !alive() {
		t.Fatal("the canaries were deleted")
	}
}

// TestLineEditingFeaturesAreOff: history expansion, edit-and-execute and
// key bindings that run code are switched off in the generated rc, and
// turning them back on is denied.
func TestLineEditingFeaturesAreOff(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	s.send(id, "echo first")
	wantOutput(t, s.send(id, "echo !!"), "!!")
	// C-x C-e runs the line through $EDITOR and then runs it: unbound.
	s.send(id, "export EDITOR=true VISUAL=true")
	s.ok("session_keys", map[string]any{"session_id": id, "keys": append(keysOf("touch pwned"), "ctrl+x", "ctrl+e"), "timeout_ms": 3000, "quiet_ms": 300})
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}, "timeout_ms": 3000})
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("edit-and-execute ran a line that was never judged")
	}
	// The one key bound to shell code is the shell's own check of judged
	// lines (session/tickets.go).
	wantOutput(t, s.send(id, "type fc 2>&1 | head -1; bind -X | grep -vc termgate_accept"), "bash: type: fc: not found\n0")
	for _, line := range []string{
		`bind -x '"\C-t": touch pwned'`,
		`bind '"\C-t": "touch pwned\n"'`,
		"set -o vi",
		"set -H",
		"fc -s",
		"history -s 'touch pwned'",
		"enable fc",
		"PROMPT_COMMAND='touch pwned'",
		"trap 'touch pwned' DEBUG",
		"echo $__termgate_post",
	} {
		s.fails("session_send", map[string]any{"session_id": id, "text": line}, "denied by shell.")
	}
}

// TestRefusedContinuationCancelsTheCommand: after `rm -rf \`, a refused
// continuation left `rm -rf` in the shell, and the next unrelated line
// completed it (rm -rf ls build).
func TestRefusedContinuationCancelsTheCommand(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	if err := os.Mkdir(build, 0o755); err != nil {
		t.Fatal(err)
	}
	id := s.start(map[string]any{"cwd": dir})
	if r := s.send(id, `rm -rf \`); r["continued"] != true {
		t.Fatalf("rm -rf \\ did not leave the shell waiting: %v", r)
	}
	msg := s.fails("session_send", map[string]any{"session_id": id, "text": "~"}, "fs.rm_protected")
	if !strings.Contains(msg, "was cancelled") {
		t.Fatalf("the refusal does not say what was cancelled: %s", msg)
	}
	r := s.send(id, "ls build")
	if _, err := os.Stat(build); err != nil {
		t.Fatalf("build/ was deleted by the line that completed the refused command: %v", r)
	}
	// The same at Enter: a continuation typed key by key.
	s.send(id, `rm -rf \`)
	res := s.call("session_keys", map[string]any{"session_id": id, "keys": []string{"~", "enter"}, "timeout_ms": 10000})
	if !res.IsError {
		t.Fatalf("the continuation at Enter: %s", resultText(res))
	}
	s.send(id, "ls build")
	if _, err := os.Stat(build); err != nil {
		t.Fatal("build/ was deleted after a refusal at Enter")
	}
}

// TestPiecesWithoutAPromptAreJudged: where termgate cannot find the
// prompt (PS1='λ ' in a shell without integration, sys.ps1=” in python),
// a line typed in pieces and then Enter is judged as the whole line that
// was typed.
func TestPiecesWithoutAPromptAreJudged(t *testing.T) {
	t.Run("bash", func(t *testing.T) {
		s := startServer(t)
		dir := t.TempDir()
		alive := canaries(t, dir)
		id := s.start(map[string]any{"cwd": dir})
		s.ok("session_send", map[string]any{"session_id": id, "text": "bash --norc", "timeout_ms": 3000, "quiet_ms": 300})
		s.ok("session_send", map[string]any{"session_id": id, "text": "PS1='λ '", "timeout_ms": 3000, "quiet_ms": 300})
		s.ok("session_send", map[string]any{"session_id": id, "text": "rm -rf ", "enter": false, "timeout_ms": 3000, "quiet_ms": 300})
		res := s.call("session_send", map[string]any{"session_id": id, "text": "*", "timeout_ms": 5000, "quiet_ms": 300})
		if !res.IsError || !strings.Contains(resultText(res), "fs.rm_protected") || !alive() {
			t.Fatalf("pieces: error %v: %s; canaries alive %v", res.IsError, resultText(res), alive())
		}
	})
	t.Run("python", func(t *testing.T) {
		s := startServer(t)
		dir := t.TempDir()
		alive := canaries(t, dir)
		id := s.start(map[string]any{"cwd": dir, "argv": []string{"python3", "-q"}})
		s.send(id, "import sys, os")
		s.ok("session_send", map[string]any{"session_id": id, "text": "sys.ps1 = ''; sys.ps2 = ''", "timeout_ms": 3000, "quiet_ms": 300})
		s.ok("session_send", map[string]any{"session_id": id, "text": "os.system('rm -rf ", "enter": false, "timeout_ms": 3000, "quiet_ms": 300})
		res := s.call("session_send", map[string]any{"session_id": id, "text": "*')", "timeout_ms": 5000, "quiet_ms": 300})
		if !res.IsError || !alive() {
			t.Fatalf("pieces: error %v: %s; canaries alive %v", res.IsError, resultText(res), alive())
		}
	})
}

// TestEchoOffIsNotALicence: text sent while the terminal does not echo
// (stty -echo, then a shell without line editing, which reads lines with
// the terminal's echo off) is judged and audited as any other line.
func TestEchoOffIsNotALicence(t *testing.T) {
	state := t.TempDir()
	logPath := filepath.Join(state, "audit.jsonl")
	s := startServer(t, "--audit-log", logPath, "--audit-key", filepath.Join(state, "k"))
	dir := t.TempDir()
	alive := canaries(t, dir)
	id := s.start(map[string]any{"cwd": dir})
	s.send(id, "stty -echo")
	s.ok("session_send", map[string]any{"session_id": id, "text": "sh", "timeout_ms": 3000, "quiet_ms": 300})
	eventually(t, 5*time.Second, "echo off", func() bool {
		return s.ok("session_info", map[string]any{"session_id": id})["echo_off"] == true
	})
	s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf *"}, "fs.rm_protected")
	res := s.call("session_keys", map[string]any{"session_id": id, "keys": append(keysOf("rm -rf *"), "enter"), "timeout_ms": 10000})
	if !res.IsError || !alive() {
		t.Fatalf("keys with echo off: %v %s; alive %v", res.IsError, resultText(res), alive())
	}
	s.send(id, "echo visible")
	s.close()
	found := false
	for _, r := range readRecords(t, logPath) {
		if field(r, "process.command_line") == "rm -rf *" && field(r, "termgate.decision.action") == "deny" && field(r, "termgate.input.echo_off") == true {
			found = true
		}
	}
	if !found {
		t.Fatal("the line sent with echo off is not in the audit log as it was sent")
	}
}

// TestRefusedSecretRegistersNothing: a one-off secret the gateway refused
// to type (the terminal echoes) is not registered: the attack line it
// carried is not masked afterwards, in results or the audit log.
func TestRefusedSecretRegistersNothing(t *testing.T) {
	state := t.TempDir()
	logPath := filepath.Join(state, "audit.jsonl")
	s := startServer(t, "--audit-log", logPath, "--audit-key", filepath.Join(state, "k"))
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	attack := "touch .git/hooks/pre-commit"
	s.fails("session_send", map[string]any{"session_id": id, "secret": attack}, "echo is on")
	msg := s.fails("session_send", map[string]any{"session_id": id, "text": attack}, "denied")
	if !strings.Contains(msg, ".git/hooks/pre-commit") || strings.Contains(msg, "known-secret") {
		t.Fatalf("the refused secret was registered: %s", msg)
	}
	s.close()
	found := false
	for _, r := range readRecords(t, logPath) {
		if field(r, "process.command_line") == attack {
			found = true
		}
	}
	if !found {
		t.Fatal("the audit log does not show the denied line as it was sent")
	}
}

// TestPipeModeContinuation: in pipe mode, text sent without Enter is
// kept and judged with what completes it.
func TestPipeModeContinuation(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	alive := canaries(t, dir)
	id := s.start(map[string]any{"cwd": dir, "argv": []string{"bash"}, "mode": "pipe"})
	s.ok("session_send", map[string]any{"session_id": id, "text": "rm -rf ", "enter": false, "timeout_ms": 2000, "quiet_ms": 200})
	s.fails("session_send", map[string]any{"session_id": id, "text": "*", "timeout_ms": 3000}, "fs.rm_protected")
	// An unfinished command, continued on the next line.
	s.ok("session_send", map[string]any{"session_id": id, "text": "echo start; rm -rf \\", "timeout_ms": 2000, "quiet_ms": 200})
	s.fails("session_send", map[string]any{"session_id": id, "text": "/", "timeout_ms": 3000}, "fs.rm_protected")
	if !alive() {
		t.Fatal("the canaries were deleted")
	}
}

// TestTypedAheadIsJudgedForItsReaders: input typed while a command runs
// lands in whatever reads next: the command, if it reads later, or the
// shell once it ends. It was judged as the command's (sleep: nothing to
// judge), and rm -rf * ran in the shell after it. It is judged as each
// reader's; an unknown program that may read it is confirmed.
func TestTypedAheadIsJudgedForItsReaders(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	alive := canaries(t, dir)
	id := s.start(map[string]any{"cwd": dir})
	if r := s.send(id, "sleep 60", "timeout_ms", 100); r["complete"] != false {
		t.Fatalf("sleep: %v", r)
	}
	eventually(t, 10*time.Second, "sleep in front", func() bool {
		return str(s.ok("session_info", map[string]any{"session_id": id}), "program") == "sleep"
	})
	msg := s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf *"}, "fs.rm_protected")
	if !strings.Contains(msg, "may be read by bash next") {
		t.Fatalf("the refusal does not say why it was judged as bash's: %s", msg)
	}
	s.fails("session_send", map[string]any{"session_id": id, "text": "echo typed-ahead"}, "terminal.unjudged_reader")
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}})
	eventually(t, 10*time.Second, "the shell in front again", func() bool {
		return s.ok("session_info", map[string]any{"session_id": id})["busy"] == false
	})
	r := s.send(id, "echo after")
	wantOutput(t, r, "after")
	if strings.Contains(str(r, "output"), "typed-ahead") || !alive() {
		t.Fatalf("something typed ahead ran: %v; canaries alive %v", r, alive())
	}
}
