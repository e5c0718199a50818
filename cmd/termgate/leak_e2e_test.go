package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of this file reproduce, through the real binary, the ways a
// secret used to reach an agent past the redactor — slow output, one
// character at a time, halves put side by side by cursor moves, a held
// secret printed in pieces, a copy before the match that found it — and
// look for it in every view: the result, the screen, the scrollback, the
// transcript, the output log (session_read mode log), exec, the recording
// and the audit log. The secrets are made up at run time; the program
// reads them from files the test writes, so the lines typed hold none.

// randomAlnum is n random letters and digits.
func randomAlnum(n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[rand.IntN(len(alnum))]
	}
	return string(b)
}

// leak returns a piece of 8 bytes of secret that text holds in clear, or
// "" when it holds none (nor the whole of a shorter secret).
func leak(text, secret string) string {
	if len(secret) < 8 {
		if strings.Contains(text, secret) {
			return secret
		}
		return ""
	}
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+8]) {
			return secret[i : i+8]
		}
	}
	return ""
}

// leakServer is a gateway with an audit log and recordings, and the
// files it writes them to.
type leakServer struct {
	*server
	auditLog, recDir string
}

func startLeakServer(t *testing.T, flags ...string) *leakServer {
	t.Helper()
	state := t.TempDir()
	ls := &leakServer{auditLog: filepath.Join(state, "audit.jsonl"), recDir: filepath.Join(state, "rec")}
	ls.server = startServer(t, append([]string{"--audit-log", ls.auditLog, "--audit-key", filepath.Join(state, "audit.key"), "--record-dir", ls.recDir}, flags...)...)
	return ls
}

// views returns every view of a session an agent can read, by name.
func (s *leakServer) views(id string) map[string]string {
	s.t.Helper()
	v := map[string]string{}
	v["screen"] = str(s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"}), "output")
	v["scrollback"] = str(s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback", "lines": 500}), "output")
	v["output log"] = str(s.ok("session_read", map[string]any{"session_id": id, "mode": "log", "offset": 0, "max_output": 200000}), "output")
	for _, kind := range []string{"transcript", "recording"} {
		rr, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/" + kind})
		if err != nil {
			s.t.Fatalf("%s resource: %v", kind, err)
		}
		v[kind] = rr.Contents[0].Text
	}
	return v
}

// noLeak fails the test when a view holds a piece of a secret in clear.
func noLeak(t *testing.T, views map[string]string, secrets ...string) {
	t.Helper()
	for where, text := range views {
		for _, sec := range secrets {
			if p := leak(text, sec); p != "" {
				t.Errorf("%s shows %q of a secret in clear: %q", where, p, text)
			}
		}
	}
}

// recordingFile is a session's recording on disk, once its session has
// ended and the gateway has closed it.
func (s *leakServer) recordingFile(id string) string {
	s.t.Helper()
	path := filepath.Join(s.recDir, id+".cast")
	var text string
	eventually(s.t, 20*time.Second, "the recording to be closed", func() bool {
		return strings.Contains(s.auditText(), `"session-end"`) && strings.Contains(s.auditText(), id+".cast")
	})
	b, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	text = string(b)
	return text
}

// auditText is the audit log as written so far.
func (s *leakServer) auditText() string {
	s.t.Helper()
	b, err := os.ReadFile(s.auditLog)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeakSplitWrites: a token written in two parts, at several split
// points and pauses (shorter and longer than the stream's idle time), is
// masked whole in every view, and in exec.
func TestLeakSplitWrites(t *testing.T) {
	s := startLeakServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	var tokens []string
	for i, delay := range []string{"0.05", "0.15", "0.4"} {
		for j, at := range []int{6, 20, 39} {
			tok := fakeToken()
			tokens = append(tokens, tok)
			a, b := fmt.Sprintf("a%d%d", i, j), fmt.Sprintf("b%d%d", i, j)
			writeFiles(t, dir, map[string]string{a: "here " + tok[:at], b: tok[at:] + " end\n"})
			cmd := fmt.Sprintf("cat %s; sleep %s; cat %s", a, delay, b)
			// The pause is the input, not the test's wait: the call
			// ends when the command does (a partial line and a pause
			// must not pass for a question).
			r := s.send(id, cmd, "quiet_ms", 10000)
			out := str(r, "output")
			noLeak(t, map[string]string{"result of " + cmd: out}, tok)
			if p := tok[:at]; at >= 5 && strings.Contains(out, p) {
				t.Errorf("%s: the result shows the head %q", cmd, p)
			}
			if !strings.HasPrefix(out, "here [REDACTED:github-pat:") || !strings.HasSuffix(out, " end") {
				t.Errorf("%s: result %q", cmd, out)
			}
			ex := s.ok("exec", map[string]any{"command": cmd, "cwd": dir})
			noLeak(t, map[string]string{"exec " + cmd: str(ex, "output")}, tok)
			if !strings.Contains(str(ex, "output"), "[REDACTED:github-pat:") {
				t.Errorf("exec %s: %q", cmd, str(ex, "output"))
			}
		}
	}
	views := s.views(id)
	s.ok("session_close", map[string]any{"session_id": id})
	views["audit log"] = s.auditText()
	noLeak(t, views, tokens...)
	heads := 0
	for _, tok := range tokens {
		if strings.Contains(views["recording"], tok[:6]) {
			heads++
		}
	}
	if heads > 0 {
		t.Errorf("the recording shows the head of %d tokens", heads)
	}
}

// TestLeakCharByChar: a token printed one character every 60 ms shows
// none of itself, and neither does a password after its key.
func TestLeakCharByChar(t *testing.T) {
	s := startLeakServer(t)
	dir := t.TempDir()
	tok := fakeToken()
	pw := randomAlnum(20)
	writeFiles(t, dir, map[string]string{"t": tok + "\n", "p": "password=" + pw + "\n"})
	id := s.start(map[string]any{"cwd": dir})
	slow := `python3 -c 'import sys, time
for c in open(sys.argv[1]).read():
    sys.stdout.write(c); sys.stdout.flush(); time.sleep(0.06)' `
	for _, f := range []string{"t", "p"} {
		r := s.send(id, slow+f, "timeout_ms", 30000)
		if str(r, "completion") != "command_finished" {
			t.Errorf("%s: the call ended before the command did (%s): %q", f, str(r, "completion"), str(r, "output"))
		}
		noLeak(t, map[string]string{"result": str(r, "output")}, tok, pw)
		if !strings.Contains(str(r, "output"), "[REDACTED:") {
			t.Errorf("result: %q", str(r, "output"))
		}
	}
	ex := s.ok("exec", map[string]any{"command": slow + "t; " + slow + "p", "cwd": dir, "timeout_ms": 30000})
	views := s.views(id)
	views["exec"] = str(ex, "output")
	s.ok("session_close", map[string]any{"session_id": id})
	views["audit log"] = s.auditText()
	noLeak(t, views, tok, pw)
}

// TestLeakOutOfOrderHalves: a program prints the second half of a token
// first and then, after a cursor move back, the first half: only the
// screen holds the token whole. wait_for matches the redacted text, so a
// guess at the token never matches, while the placeholder does; every
// view shows the mask.
func TestLeakOutOfOrderHalves(t *testing.T) {
	s := startLeakServer(t)
	dir := t.TempDir()
	tok := fakeToken()
	writeFiles(t, dir, map[string]string{"a": tok[:20], "b": tok[20:]})
	id := s.start(map[string]any{"cwd": dir})
	cmd := `printf '\033[21G'; cat b; sleep 0.2; printf '\r'; cat a; echo`
	// A guess at the first 24 characters (the first half and 4 more).
	r := s.send(id, cmd, "wait_for", tok[:24], "timeout_ms", 3000)
	if str(r, "completion") == "pattern" {
		t.Fatalf("a guess at the token matched: %v", r)
	}
	// Once a view found the token, the session holds it: printed
	// again, each half is masked as it goes out (known-secret).
	r = s.send(id, cmd, "wait_for", `\[REDACTED:[a-z-]+:[0-9a-f]{4}\]`, "timeout_ms", 10000)
	if str(r, "completion") != "pattern" {
		t.Fatalf("the placeholder did not match: %v", r)
	}
	views := s.views(id)
	s.ok("session_close", map[string]any{"session_id": id})
	views["audit log"] = s.auditText()
	// The recording on disk once the session has ended: the halves the
	// program wrote apart are masked in it too.
	views["recording file"] = s.recordingFile(id)
	noLeak(t, views, tok)
	for where, text := range views {
		if where != "audit log" && !strings.Contains(text, "[REDACTED:") {
			t.Errorf("%s: no placeholder in %q", where, text)
		}
	}
}

// TestLeakHeldSecretInPieces: a held secret (secret_ref) and a one-off
// secret that the program prints back in pieces of 12 bytes show only
// placeholders, in every view; a one-off secret refused (the terminal
// echoes) is held by nothing.
func TestLeakHeldSecretInPieces(t *testing.T) {
	held := randomAlnum(24)
	oneOff := randomAlnum(24)
	refused := randomAlnum(24)
	t.Setenv("TG_TEST_LEAK_HELD", held)
	s := startLeakServer(t, "--secret", "db=env:TG_TEST_LEAK_HELD")
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	// Refused where the terminal echoes: nothing is sent and nothing held,
	// so the value, typed later as plain text, is not masked.
	s.fails("session_send", map[string]any{"session_id": id, "secret": refused}, "echo is on")
	if r := s.send(id, "echo "+refused); !strings.Contains(str(r, "output"), refused) {
		t.Fatalf("a refused one-off secret was held: %q", str(r, "output"))
	}
	pieces := `read -rs P; printf '%s\n%s\n' "${P:0:12}" "${P:12}"; printf '%s' "${P:0:12}"; sleep 0.2; printf '%s\n' "${P:12}"`
	for _, arg := range []map[string]any{{"secret_ref": "db"}, {"secret": oneOff}} {
		// Typed, and then waited for as a human would: until the
		// terminal stops echoing (a password prompt).
		s.send(id, pieces, "wait_for", "never-printed", "timeout_ms", 200)
		eventually(t, 10*time.Second, "the terminal's echo to go off", func() bool {
			return s.ok("session_info", map[string]any{"session_id": id})["echo_off"] == true
		})
		arg["session_id"] = id
		arg["timeout_ms"] = 10000
		r := s.ok("session_send", arg)
		out := str(r, "output")
		noLeak(t, map[string]string{"result": out}, held, oneOff)
		if strings.Count(out, "[REDACTED:known-secret:") < 3 {
			t.Errorf("result: %q", out)
		}
	}
	writeFiles(t, dir, map[string]string{"held": held[:12] + "\n" + held[12:] + "\n"})
	ex := s.ok("exec", map[string]any{"command": "cat held", "cwd": dir})
	views := s.views(id)
	views["exec"] = str(ex, "output")
	s.ok("session_close", map[string]any{"session_id": id})
	views["audit log"] = s.auditText()
	noLeak(t, views, held, oneOff)
}

// TestLeakSecondCopies: a value printed before the assignment that shows
// it is a secret (a while later, on the same line), and copies after it,
// on that line and later ones, are masked in every view; a copy the agent
// types back is masked in the audit log. The first copy went out before
// anything could tell: the session masks it where it went (the screen's
// cells, the scrollback, the output log, the recording).
func TestLeakSecondCopies(t *testing.T) {
	s := startLeakServer(t)
	dir := t.TempDir()
	v := randomAlnum(20)
	writeFiles(t, dir, map[string]string{"v": v})
	id := s.start(map[string]any{"cwd": dir, "rows": 5})
	cmd := `printf 'value '; cat v; sleep 0.3; printf ' then password='; cat v; printf ' and '; cat v; echo; cat v; echo`
	r := s.send(id, cmd, "quiet_ms", 10000)
	out := str(r, "output")
	noLeak(t, map[string]string{"result": out}, v)
	if strings.Count(out, "[REDACTED:") < 3 {
		t.Errorf("result: %q", out)
	}
	// Scroll the line off the 5-row screen: the scrollback and the output
	// log keep it as it was repaired.
	for range 6 {
		s.send(id, "echo filler")
	}
	// The agent types the value back (a bare value: no rule finds it).
	r = s.send(id, "echo "+v+" | wc -c")
	noLeak(t, map[string]string{"echo typed back": str(r, "output")}, v)
	views := s.views(id)
	s.ok("session_close", map[string]any{"session_id": id})
	views["audit log"] = s.auditText()
	noLeak(t, views, v)
	if !strings.Contains(views["output log"], "value ") {
		t.Errorf("output log: %q", views["output log"])
	}
}

// TestLeakQuoteSplitEcho: a token the shell joins from quoted pieces or
// decodes from an escape is in no view as the terminal echoed it, nor in
// the audit log or the recording: the line's parsed words show it, and
// the session holds it before the line is typed.
func TestLeakQuoteSplitEcho(t *testing.T) {
	s := startLeakServer(t)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	spellings := []func(tail string) string{
		func(tail string) string { return "true gh'p_'" + tail },
		func(tail string) string { return `true $'\x67hp_` + tail + `'` },
		func(tail string) string { return `true "gh""p_"` + tail[:18] + `''` + tail[18:] },
		// Across the terminal's 80th column: the echo wraps inside it.
		func(tail string) string { return "true " + strings.Repeat("w", 60) + " gh'p_'" + tail },
	}
	var tails []string
	for _, spell := range spellings {
		tail := randomAlnum(36)
		tails = append(tails, tail)
		r := s.send(id, spell(tail))
		noLeak(t, map[string]string{"result": str(r, "output")}, tail)
	}
	views := s.views(id)
	// The echo is there, masked: the test sees the lines it looks in.
	if n := strings.Count(views["screen"], "[REDACTED:"); n < len(spellings) {
		t.Errorf("the screen shows %d masks for %d echoed lines: %q", n, len(spellings), views["screen"])
	}
	s.ok("session_close", map[string]any{"session_id": id})
	views["recording file"] = s.recordingFile(id)
	views["audit log"] = s.auditText()
	noLeak(t, views, tails...)
}
