package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/policies"
)

// fakeToken is a GitHub-token-shaped string made up here: no real secret.
func fakeToken() string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return "ghp_" + string(b)
}

func fakeWord(prefix string) string {
	const lower = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 12)
	for i := range b {
		b[i] = lower[rand.IntN(len(lower))]
	}
	return prefix + string(b)
}

// TestRedactionOnEveryPath plants secrets on each path out of the gateway
// and checks that none comes back: tool output, the input echo, screens,
// scrollback, resources, exec, session info (argv, title), error messages
// and the server's log.
func TestRedactionOnEveryPath(t *testing.T) {
	token := fakeToken()
	held := fakeWord("held-")
	oneOff := fakeWord("oneoff-")
	t.Setenv("TG_TEST_HELD", held)
	s := startServer(t, "--secret", "db=env:TG_TEST_HELD")
	secrets := []string{token, held, oneOff}
	clean := func(where, text string) {
		t.Helper()
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Fatalf("%s: a secret came back in clear: %q", where, text)
			}
		}
	}
	redacted := func(where, text string) {
		t.Helper()
		clean(where, text)
		if !strings.Contains(text, "[REDACTED:") {
			t.Fatalf("%s: no placeholder in %q", where, text)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := s.start(map[string]any{"cwd": dir})

	// Tool output, with the secret printed in colour and in pieces.
	r := s.send(id, "printf 'tok \\033[31m"+token[:10]+"\\033[0m"+token[10:]+"\\n'")
	redacted("session_send output", str(r, "output"))
	r = s.send(id, "echo "+token)
	redacted("session_send output", str(r, "output"))

	// The echo of what was typed, on the screen and in the scrollback.
	res := s.call("session_read", map[string]any{"session_id": id, "mode": "screen"})
	redacted("screen", resultText(res))
	res = s.call("session_read", map[string]any{"session_id": id, "mode": "scrollback"})
	redacted("scrollback", resultText(res))

	// Resources.
	for _, kind := range []string{"transcript", "screen"} {
		rr, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/" + kind})
		if err != nil {
			t.Fatal(err)
		}
		redacted(kind+" resource", rr.Contents[0].Text)
	}

	// A window title.
	s.send(id, "printf '\\033]0;"+token+"\\007'")
	info := s.ok("session_info", map[string]any{"session_id": id})
	redacted("session_info title", str(info, "title"))

	// exec.
	ex := s.ok("exec", map[string]any{"command": "echo " + token + "; echo done"})
	redacted("exec output", str(ex, "output"))

	// argv in session_start, session_info and session_list.
	res = s.call("session_start", map[string]any{"argv": []string{"sleep", "60", token}})
	clean("session_start with a secret in argv", resultText(res))
	res = s.call("session_list", map[string]any{})
	clean("session_list", resultText(res))

	// An error that quotes the input: a line denied at the gate.
	res = s.call("session_send", map[string]any{"session_id": id, "text": "touch .git/hooks/" + token})
	if !res.IsError {
		t.Fatalf("the canary line was not refused: %s", resultText(res))
	}
	redacted("refusal message", resultText(res))

	// A line typed key by key whose screen echo the redactor masks is
	// refused at Enter: the policy would judge the masked line, not what
	// runs (an env-secret-shaped prefix would hide the pipe after it; a
	// value stops at a ;, so that one would be judged).
	keys := []string{}
	for _, c := range "A_TOKEN=x|touch .git/hooks/canary" {
		if c == ' ' {
			keys = append(keys, "space")
		} else {
			keys = append(keys, string(c))
		}
	}
	res = s.call("session_keys", map[string]any{"session_id": id, "keys": append(keys, "enter")})
	if !res.IsError || !strings.Contains(resultText(res), "masked") {
		t.Fatalf("a masked line was not refused at Enter: %s", resultText(res))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "canary")); err == nil {
		t.Fatal("the canary was created")
	}

	// secret_ref: refused where the terminal echoes, typed at a password
	// prompt, checked by the program, and masked when it prints it back.
	s.fails("session_send", map[string]any{"session_id": id, "secret_ref": "db"}, "echo is on")
	s.fails("session_send", map[string]any{"session_id": id, "secret_ref": "nope"}, `no secret named "nope"`)
	// The program checks what it got against a digest (the variable the
	// secret comes from is not in the session's environment).
	sum := sha256.Sum256([]byte(held))
	if err := os.WriteFile(filepath.Join(dir, "want.sha256"), []byte(hex.EncodeToString(sum[:])), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `import getpass, hashlib
p = getpass.getpass("Password: ")
print("match" if hashlib.sha256(p.encode()).hexdigest() == open("want.sha256").read() else "mismatch")
print("typed:", p)
q = getpass.getpass("Again: ")
print("again:", q)
`
	pw := s.start(map[string]any{"argv": []string{"python3", "-c", prog}, "cwd": dir})
	s.ok("session_read", map[string]any{"session_id": pw, "timeout_ms": 10000, "wait_for": "Password:"})
	r = s.ok("session_send", map[string]any{"session_id": pw, "secret_ref": "db", "wait_for": "Again:"})
	out := str(r, "output")
	if !strings.Contains(out, "match") || strings.Contains(out, "mismatch") {
		t.Fatalf("the program did not get the held secret: %q", out)
	}
	redacted("secret_ref echo", out)
	r = s.ok("session_send", map[string]any{"session_id": pw, "secret": oneOff})
	redacted("one-off secret echo", str(r, "output"))
	if !strings.Contains(str(r, "output"), "again: [REDACTED:known-secret:") {
		t.Fatalf("one-off secret: %q", str(r, "output"))
	}

	s.close()
	clean("server log", s.log.String())
}

// TestRedactCommand: termgate redact filters stdin to stdout with the
// gateway's rules.
func TestRedactCommand(t *testing.T) {
	token := fakeToken()
	cmd := exec.Command(binPath, "redact")
	cmd.Stdin = strings.NewReader("line one\n\x1b[32m" + token + "\x1b[0m\npassword=hunter22\nlast line\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("termgate redact: %v: %s", err, out)
	}
	got := string(out)
	if strings.Contains(got, token) || strings.Contains(got, "hunter22") {
		t.Fatalf("a secret survived: %q", got)
	}
	if !strings.HasPrefix(got, "line one\n\x1b[32m[REDACTED:github-pat:") || !strings.HasSuffix(got, "last line\n") {
		t.Fatalf("output: %q", got)
	}
}

// TestRedactCommandBundleRules: an operator's rule in the bundle's data
// (data.termgate.redaction.rules) is applied with the built-in ones.
func TestRedactCommandBundleRules(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		t.Fatal(err)
	}
	rule := `{"redaction": {"rules": [{"id": "acme-token", "regex": "\\b(acme_[a-z0-9]{16})\\b", "secret_group": 1, "keywords": ["acme_"]}]}}`
	if err := os.MkdirAll(filepath.Join(dir, "termgate"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "termgate", "data.json"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	acme := "acme_" + strings.ToLower(fakeWord("")[:12]) + "0042"
	cmd := exec.Command(binPath, "redact", "--policy-dir", dir)
	cmd.Stdin = strings.NewReader("deploying with " + acme + " now\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("termgate redact: %v: %s", err, out)
	}
	if got := string(out); strings.Contains(got, acme) || !strings.Contains(got, "[REDACTED:acme-token:") {
		t.Fatalf("operator rule not applied: %q", got)
	}
	// A broken rule is refused with its id.
	bad := `{"redaction": {"rules": [{"id": "broken", "regex": "(", "keywords": ["x"]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "termgate", "data.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(binPath, "redact", "--policy-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "broken") {
		t.Fatalf("a broken rule was accepted: %v %s", err, out)
	}
}
