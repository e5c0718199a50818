package main

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/termgate/termgate/policies"
)

// The developer's inner loop in the default profile, in real sessions:
// the user's own toolchains build, test and run in the project, with the
// gateway's caches; the home directory is read less its secrets; a
// user's rc that trips over the sandbox starts quietly.

// startServerHome runs the binary with HOME set to home, in dir (the
// gateway's working directory), and connects a client.
func startServerHome(t testing.TB, home, dir string, opts *mcp.ClientOptions, flags ...string) *server {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"serve"}, flags...)...)
	cmd.Dir = dir
	var log strings.Builder
	logw := &lockedWriter{b: &log}
	cmd.Stderr = logw
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "XDG_") && name != "HOME" {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "HOME="+home, "GORACE=halt_on_error=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to termgate: %v", err)
	}
	s := &server{t: t, cmd: cmd, cs: cs, log: &log, logw: logw}
	t.Cleanup(func() { s.close() })
	return s
}

// devHome makes a throwaway home: a private key pair (generated here),
// known_hosts, cloud credentials, a notes file, and a project below it.
func devHome(t *testing.T) (home, project string) {
	t.Helper()
	home = t.TempDir()
	project = filepath.Join(home, "src", "project")
	files := map[string]string{
		"notes.txt":            "my notes\n",
		".ssh/known_hosts":     "example.com ssh-ed25519 AAAA\n",
		".aws/credentials":     "[default]\naws_secret_access_key = fake-" + marker() + "\n",
		".config/gh/hosts.yml": "github.com:\n  oauth_token: fake-" + marker() + "\n",
		".bash_history":        "export TOKEN=fake-" + marker() + "\n",
	}
	for name, body := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", key).CombinedOutput(); err != nil {
		// No ssh-keygen: a private key's shape, generated here.
		pem := "-----BEGIN OPENSSH PRIVATE KEY-----\nfake" + marker() + "\n-----END OPENSSH PRIVATE KEY-----\n"
		if werr := os.WriteFile(key, []byte(pem), 0o600); werr != nil {
			t.Fatalf("ssh-keygen: %v %s; %v", err, out, werr)
		}
		os.WriteFile(key+".pub", []byte("ssh-ed25519 AAAA test\n"), 0o644)
	}
	return home, project
}

// writeTree writes files below dir, making their directories; a hook or
// a .sh is executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") || strings.Contains(name, "hooks/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// run sends a command line to a bash session and returns its output and
// exit code, failing the test unless it finished.
func (s *server) run(id, line string, timeout time.Duration) (string, int) {
	s.t.Helper()
	r := s.send(id, line, "timeout_ms", int(timeout/time.Millisecond))
	if str(r, "completion") != "command_finished" {
		s.t.Fatalf("%q did not finish: %v", line, r)
	}
	return str(r, "output"), exitCode(s.t, r)
}

// mustRun is run for a command that must succeed.
func (s *server) mustRun(id, line string, timeout time.Duration) string {
	s.t.Helper()
	out, code := s.run(id, line, timeout)
	if code != 0 {
		s.t.Fatalf("%q: exit %d:\n%s", line, code, out)
	}
	return out
}

// TestHomeReadByDenyList: a session reads the system and the home
// directory, lists / and ~, and is refused the private key and the
// credentials (a link to the key too) by the sandbox, even where the
// policy asks a human about such a read and the human approves it;
// known_hosts and the public key stay readable; nothing in the home is
// writable.
func TestHomeReadByDenyList(t *testing.T) {
	home, project := devHome(t)
	if err := os.Symlink(filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, "keylink")); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	s := startServerHome(t, home, t.TempDir(), confirmClient(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, 0, &asked, nil))
	id := s.start(map[string]any{"cwd": project})
	if out := s.mustRun(id, "ls /", time.Minute); !strings.Contains(out, "usr") || !strings.Contains(out, "etc") {
		t.Fatalf("ls /: %q", out)
	}
	if out := s.mustRun(id, "ls ~", time.Minute); !strings.Contains(out, "notes.txt") || !strings.Contains(out, "src") {
		t.Fatalf("ls ~: %q", out)
	}
	if out := s.mustRun(id, "cat ~/notes.txt ~/.ssh/known_hosts", time.Minute); !strings.Contains(out, "my notes") || !strings.Contains(out, "example.com") {
		t.Fatalf("reading the home: %q", out)
	}
	s.mustRun(id, "cat ~/.ssh/id_ed25519.pub", time.Minute)
	// REPLs keep their history in the session's private directory.
	if out := s.mustRun(id, "echo $NODE_REPL_HISTORY $PYTHON_HISTORY", time.Minute); !strings.Contains(out, "node_repl_history") || strings.Contains(out, home) {
		t.Fatalf("REPL histories: %q", out)
	}
	for _, f := range []string{"~/.ssh/id_ed25519", "~/keylink", "~/.aws/credentials", "~/.config/gh/hosts.yml", "~/.bash_history"} {
		out, code := s.run(id, "cat "+f, time.Minute)
		if code == 0 || !strings.Contains(out, "Permission denied") || strings.Contains(out, "PRIVATE") || strings.Contains(out, "fake-") {
			t.Fatalf("cat %s: exit %d: %q", f, code, out)
		}
	}
	if out, code := s.run(id, "touch ~/pwn", time.Minute); code == 0 {
		t.Fatalf("touch ~/pwn: %q", out)
	}
	// The result names what the sandbox refused, and why.
	r := s.send(id, "cat ~/.aws/credentials; echo /usr/bin > ~/notes.txt; cat ~/notes.txt", "timeout_ms", 60000)
	refused := map[string]string{}
	for _, x := range refusals(r) {
		refused[str(x, "path")] = str(x, "access") + ": " + str(x, "reason")
	}
	if got := refused[filepath.Join(home, ".aws", "credentials")]; got != "file: the bundle's read_deny keeps it from sessions" {
		t.Errorf("the credentials' refusal: %q (%v)", got, r)
	}
	if got := refused[filepath.Join(home, "notes.txt")]; got != "write: the profile grants it read-only" {
		t.Errorf("the notes' refusal: %q (%v)", got, r)
	}
	if len(refused) != 2 {
		t.Errorf("sandbox_refused = %v", r["sandbox_refused"])
	}
	// A general shell may not start in a directory that holds secrets.
	s.fails("session_start", map[string]any{"cwd": filepath.Join(home, ".config")}, "read_deny")
}

// TestDevLoopInDefault: the inner loop of a developer, each step in a
// real bash session under the default profile with the user's own
// toolchains: make of a C file, a git commit with a pre-commit hook, npm
// test of a local package, a Python venv that installs a local wheel and
// runs unittest, a Go module built and tested twice (the second time from
// the gateway's cache), man ls, and ipython evaluating 1+1.
func TestDevLoopInDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds real projects with the user's toolchains (a cold Go build cache takes a minute); scripts/dev test runs it with the long tests")
	}
	home, project := devHome(t)
	s := startServerHome(t, home, t.TempDir(), nil)
	id := s.start(map[string]any{"cwd": project})
	cache := filepath.Join(home, ".cache", "termgate", "sessions")

	t.Run("make", func(t *testing.T) {
		need(t, "gcc", "make")
		writeTree(t, filepath.Join(project, "c"), map[string]string{
			"hello.c":  "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n",
			"Makefile": "hello: hello.c\n\tcc -o $@ $<\n",
		})
		if out := s.mustRun(id, "make -C c && ./c/hello", 2*time.Minute); !strings.Contains(out, "hello from c") {
			t.Fatalf("make: %q", out)
		}
	})
	t.Run("git commit with a pre-commit hook", func(t *testing.T) {
		need(t, "git")
		s.mustRun(id, "git init -q repo && git -C repo config user.email dev@example.com && git -C repo config user.name Dev", time.Minute)
		writeTree(t, filepath.Join(project, "repo"), map[string]string{
			".git/hooks/pre-commit": "#!/bin/sh\necho hook-ran > hook.out\n",
			"README":                "hi\n",
		})
		out := s.mustRun(id, "cd repo && git add README && git commit -qm first && cat hook.out && git log --oneline | wc -l; cd ..", time.Minute)
		if !strings.Contains(out, "hook-ran") || !strings.HasSuffix(strings.TrimSpace(out), "1") {
			t.Fatalf("git commit: %q", out)
		}
	})
	t.Run("npm test", func(t *testing.T) {
		need(t, "npm", "node")
		writeTree(t, filepath.Join(project, "js"), map[string]string{
			"package.json": `{"name": "js", "version": "1.0.0", "scripts": {"test": "node test.js"}}`,
			"test.js":      "const assert = require('assert'); assert.strictEqual(1 + 1, 2); console.log('tests ok');\n",
		})
		if out := s.mustRun(id, "cd js && npm test; cd ..", 2*time.Minute); !strings.Contains(out, "tests ok") {
			t.Fatalf("npm test: %q", out)
		}
	})
	t.Run("python venv, a local wheel, unittest", func(t *testing.T) {
		need(t, "python3")
		py := filepath.Join(project, "py")
		writeWheel(t, filepath.Join(py, "tgcalc-0.1-py3-none-any.whl"))
		writeTree(t, py, map[string]string{
			"test_calc.py": "import unittest, tgcalc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(tgcalc.add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n",
		})
		s.mustRun(id, "cd py && python3 -m venv .venv && .venv/bin/pip install -q --no-index ./tgcalc-0.1-py3-none-any.whl; cd ..", 5*time.Minute)
		out := s.mustRun(id, "cd py && .venv/bin/python -m unittest -v 2>&1; cd ..", 2*time.Minute)
		if !strings.Contains(out, "test_add") || !strings.Contains(out, "OK") {
			t.Fatalf("unittest: %q", out)
		}
	})
	t.Run("go build and test twice, from the cache", func(t *testing.T) {
		need(t, "go")
		writeTree(t, filepath.Join(project, "gomod"), map[string]string{
			"go.mod":       "module example.com/hello\n\ngo 1.21\n",
			"main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(greeting()) }\n\nfunc greeting() string { return \"hello from go\" }\n",
			"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif greeting() != \"hello from go\" {\n\t\tt.Fatal(greeting())\n\t}\n}\n",
		})
		if out := s.mustRun(id, "go env GOCACHE", time.Minute); strings.TrimSpace(out) != filepath.Join(cache, "go-build") {
			t.Fatalf("GOCACHE = %q, want %s", out, filepath.Join(cache, "go-build"))
		}
		out := s.mustRun(id, "cd gomod && go build -o hello . && ./hello && go test . ; cd ..", 170*time.Second)
		if !strings.Contains(out, "hello from go") || !strings.Contains(out, "ok ") {
			t.Fatalf("go build and test: %q", out)
		}
		if ents, err := os.ReadDir(filepath.Join(cache, "go-build")); err != nil || len(ents) < 2 {
			t.Fatalf("the gateway's Go build cache holds nothing: %v %d", err, len(ents))
		}
		// A new session: the cache is the same, the test result comes from it.
		id2 := s.start(map[string]any{"cwd": project})
		if out := s.mustRun(id2, "cd gomod && go test . ; cd ..", 170*time.Second); !strings.Contains(out, "(cached)") {
			t.Fatalf("the second go test did not come from the cache: %q", out)
		}
		s.ok("session_close", map[string]any{"session_id": id2})
		if _, err := os.Stat(filepath.Join(home, ".cache", "go-build")); err == nil {
			t.Fatal("a session wrote the user's own ~/.cache/go-build")
		}
	})
	t.Run("man ls", func(t *testing.T) {
		need(t, "man")
		r := s.send(id, "man ls", "wait_for", `list directory contents`, "timeout_ms", 60000)
		if str(r, "completion") != "pattern" {
			t.Fatalf("man ls: %v", r)
		}
		r = s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"q"}})
		if r["complete"] != true {
			t.Fatalf("q did not leave man: %v", r)
		}
		if out, code := s.run(id, "true", time.Minute); code != 0 {
			t.Fatalf("after man: %q", out)
		}
	})
	t.Run("ipython 1+1", func(t *testing.T) {
		if _, err := exec.LookPath("ipython"); err != nil {
			t.Skip("ipython is not installed (pip install ipython, or Debian's ipython3)")
		}
		if out := s.mustRun(id, "ipython -c '1+1'", 2*time.Minute); !strings.Contains(out, "Out[1]: 2") {
			t.Fatalf("ipython: %q", out)
		}
	})
}

func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
}

// writeWheel writes a pure-Python wheel of a package tgcalc (add), made
// here: no build tool, no index.
func writeWheel(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	files := []struct{ name, body string }{
		{"tgcalc/__init__.py", "def add(a, b):\n    return a + b\n"},
		{"tgcalc-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tgcalc\nVersion: 0.1\n"},
		{"tgcalc-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: termgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, fl := range files {
		w, err := z.Create(fl.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(fl.body))
		sum := sha256.Sum256([]byte(fl.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", fl.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(fl.body))
	}
	record.WriteString("tgcalc-0.1.dist-info/RECORD,,\n")
	w, err := z.Create("tgcalc-0.1.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestQuietStart: a user's ~/.bashrc that, as pyenv init does, writes
// under the home directory: what it fails on because of the sandbox is
// not in the session's first output but in session_info's
// startup_warnings and the server log; its standard output and a real
// error (a command not found) are shown as a terminal would show them.
func TestQuietStart(t *testing.T) {
	home, project := devHome(t)
	if err := os.MkdirAll(filepath.Join(home, ".fakeenv", "shims"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, home, map[string]string{".bashrc": `# as pyenv init and friends do
echo rc-says-hello
if ! touch "$HOME/.fakeenv/shims/.rehash" 2>/dev/null; then
  echo "pyenv: cannot rehash: $HOME/.fakeenv/shims isn't writable" >&2
fi
t=$(mktemp "$HOME/.rc-tmp.XXXXXX")
echo "state" > "$HOME/.rc-state"
termgate-no-such-command-` + marker() + `
touch rc-wrote-the-project
`})
	s := startServerHome(t, home, t.TempDir(), nil)
	out := s.ok("session_start", map[string]any{"cwd": project})
	first := str(out, "output")
	for _, bad := range []string{"isn't writable", "Permission denied", "mktemp", "rc-state"} {
		if strings.Contains(first, bad) {
			t.Errorf("the first output holds what the sandbox caused (%q):\n%s", bad, first)
		}
	}
	for _, want := range []string{"rc-says-hello", "termgate-no-such-command-", "command not found"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first output lacks %q:\n%s", want, first)
		}
	}
	if str(out, "completion") != "prompt" && str(out, "completion") != "command_finished" {
		t.Errorf("the start did not end at the prompt: %v", out)
	}
	info := s.ok("session_info", map[string]any{"session_id": str(out, "session_id")})
	var warnings []string
	for _, w := range info["startup_warnings"].([]any) {
		warnings = append(warnings, w.(string))
	}
	joined := strings.Join(warnings, "\n")
	if len(warnings) != 3 || !strings.Contains(joined, "isn't writable") || !strings.Contains(joined, "mktemp") || !strings.Contains(joined, ".rc-state") {
		t.Fatalf("startup_warnings = %q", warnings)
	}
	if _, err := os.Stat(filepath.Join(project, "rc-wrote-the-project")); err != nil {
		t.Fatalf("the rc did not run to its end: %v", err)
	}
	eventually(t, 10*time.Second, "the server log to name the warnings", func() bool {
		return strings.Contains(s.logText(), "startup files were refused by the sandbox")
	})
	// The next command's output is the command's alone.
	if out := s.mustRun(str(out, "session_id"), "echo next", time.Minute); out != "next" {
		t.Fatalf("echo next: %q", out)
	}
}

// TestScratchCwd: a client that starts the server in the home directory
// and gives no cwd gets a session in the gateway's scratch directory;
// the home directory itself is still refused when asked for.
func TestScratchCwd(t *testing.T) {
	home, _ := devHome(t)
	s := startServerHome(t, home, home, nil)
	out := s.ok("session_start", map[string]any{})
	want := filepath.Join(home, ".local", "share", "termgate-scratch")
	if str(out, "cwd") != want {
		t.Fatalf("cwd = %q, want %s (%v)", str(out, "cwd"), want, out)
	}
	if got := s.mustRun(str(out, "session_id"), "pwd && touch made-here && ls", time.Minute); got != want+"\nmade-here" {
		t.Fatalf("pwd: %q", got)
	}
	ex := s.ok("exec", map[string]any{"command": "pwd"})
	if strings.TrimSpace(str(ex, "output")) != want {
		t.Fatalf("exec pwd: %v", ex)
	}
	s.fails("session_start", map[string]any{"cwd": home}, "home directory")
	s.fails("session_start", map[string]any{"cwd": "."}, "home directory")
}

// TestPrivilegeRefusedAtOnce: in a confined session sudo and su cannot
// work (no capabilities, no_new_privs): they are refused at once, with
// the reason, and no human is asked; with the sandbox off the human is
// asked, as before.
func TestPrivilegeRefusedAtOnce(t *testing.T) {
	var asked atomic.Int32
	opts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	home, project := devHome(t)
	s := startServerHome(t, home, t.TempDir(), opts)
	id := s.start(map[string]any{"cwd": project})
	for _, line := range []string{"sudo ls", "su -c id", "doas ls"} {
		text := s.fails("session_send", map[string]any{"session_id": id, "text": line}, "denied by privilege.escalation")
		if !strings.Contains(text, "no_new_privs") {
			t.Fatalf("%s: %q", line, text)
		}
	}
	s.fails("session_start", map[string]any{"cwd": project, "command": "sudo -i"}, "denied by privilege.escalation")
	if n := asked.Load(); n != 0 {
		t.Fatalf("a human was asked %d times", n)
	}
	off := startServerHome(t, home, t.TempDir(), opts, "--sandbox", "off")
	id = off.start(map[string]any{"cwd": project})
	off.fails("session_send", map[string]any{"session_id": id, "text": "sudo ls"}, "not confirmed")
	if n := asked.Load(); n != 1 {
		t.Fatalf("unconfined: a human was asked %d times, want 1", n)
	}
}

// fakeRemote is what ssh does to the local terminal once it is logged in:
// raw mode, and the remote side's prompt on the screen (here a remote
// sudo's). It reads one line (up to CR, as a raw terminal sends it) and
// says whether it was the secret, by its hash; then it acts as a remote
// shell prompt and reports each line it gets. It runs under a copy of
// python3 named ssh, the leader of the terminal's foreground process
// group: the gateway names a program by its executable (not argv[0]), so
// what it sees of ssh is that name and the terminal.
const fakeRemote = `import hashlib, os, sys, termios, tty
fd = 0
old = termios.tcgetattr(fd)
tty.setraw(fd)
def line():
    b = b""
    while True:
        c = os.read(fd, 1)
        if c in (b"\r", b"\n", b""):
            return b
        b += c
try:
    os.write(1, b"[sudo] password for agent: ")
    ok = hashlib.sha256(line()).hexdigest() == sys.argv[1]
    os.write(1, b"\r\nremote: " + (b"MATCH" if ok else b"NOMATCH") + b"\r\n")
    while True:
        os.write(1, b"remote$ ")
        got = line()
        os.write(1, b"\r\nremote ran [" + got + b"]\r\n")
        if got == b"exit":
            break
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, old)
`

// TestSecretRefToARemotePrompt: over ssh the local terminal is raw and
// its echo state says nothing of the remote prompt's. A secret_ref typed
// at a remote password prompt (known by its text) reaches it; plain text
// there is refused, so the agent's next line never lands in the prompt
// as a password; at a raw screen that shows no prompt, secret_ref is
// refused and nothing is sent.
func TestSecretRefToARemotePrompt(t *testing.T) {
	need(t, "python3")
	home, project := devHome(t)
	writeTree(t, project, map[string]string{"remote.py": fakeRemote})
	// The system's python (a version manager's shim on PATH is a script
	// that runs what its own name says).
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3 to copy:", err)
	}
	b, err := os.ReadFile(python)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "ssh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := "pw-" + marker()
	sum := sha256.Sum256([]byte(secret))
	t.Setenv("TERMGATE_TEST_REMOTE_PW", secret)
	// The copy named ssh is what the exec gate asks about (a system
	// program under another name); here it records it and lets it run.
	s := startServerHome(t, home, t.TempDir(), nil, "--secret", "remote_pw=env:TERMGATE_TEST_REMOTE_PW", "--exec-gate", "audit")
	id := s.start(map[string]any{"cwd": project})
	r := s.send(id, fmt.Sprintf("./ssh remote.py %x", sum), "wait_for", `password for agent:`, "timeout_ms", 60000)
	if str(r, "completion") != "pattern" || str(r, "program") != "ssh" {
		t.Fatalf("the remote prompt did not come: %v", r)
	}
	// Plain text at the remote password prompt: refused, nothing typed.
	s.fails("session_send", map[string]any{"session_id": id, "text": "ls -la"}, "asking for a password")
	// The secret: typed there; the remote side says it got it, and the
	// value is nowhere in what the agent reads.
	r = s.ok("session_send", map[string]any{"session_id": id, "secret_ref": "remote_pw", "wait_for": `remote\$`, "timeout_ms": 60000})
	if out := str(r, "output"); !strings.Contains(out, "remote: MATCH") || strings.Contains(out, secret) || str(r, "completion") != "pattern" {
		t.Fatalf("secret_ref to the remote prompt: %v", r)
	}
	// At the remote shell's prompt (raw, no password prompt): a
	// secret_ref is refused, and nothing reaches the remote side.
	s.fails("session_send", map[string]any{"session_id": id, "secret_ref": "remote_pw"}, "shows no password prompt")
	r = s.send(id, "exit", "wait_for", `remote ran \[exit\]`, "timeout_ms", 60000)
	if out := str(r, "output"); str(r, "completion") != "pattern" || strings.Count(out, "remote ran [") != 1 {
		t.Fatalf("a refused input reached the remote side: %q", out)
	}
	if strings.Contains(s.logText(), secret) {
		t.Fatal("the secret is in the server log")
	}
}

// TestSecretRefOverRealSSH is TestSecretRefToARemotePrompt with the real
// thing: an sshd on loopback that this test starts (key login), and a
// remote read -s prompt behind ssh -tt. The gateway runs with the sandbox
// off: the session reaches a port no profile opens.
func TestSecretRefOverRealSSH(t *testing.T) {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/sshd"); err != nil {
			t.Skip("sshd is not installed (Debian's openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	need(t, "ssh", "ssh-keygen", "sha256sum")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory, as its package makes it
	}
	dir := t.TempDir()
	for _, k := range []string{"hostkey", "userkey"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "userkey.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin yes\nPidFile %s\n",
		port, filepath.Join(dir, "hostkey"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600)
	daemon := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var dlog strings.Builder
	daemon.Stderr = &lockedWriter{b: &dlog}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	eventually(t, 20*time.Second, "sshd to listen", func() bool {
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	home, project := devHome(t)
	secret := "pw-" + marker()
	sum := sha256.Sum256([]byte(secret))
	t.Setenv("TERMGATE_TEST_REMOTE_PW", secret)
	s := startServerHome(t, home, t.TempDir(), nil, "--sandbox", "off", "--secret", "remote_pw=env:TERMGATE_TEST_REMOTE_PW")
	id := s.start(map[string]any{"cwd": project})
	// The remote side's script, on this machine's disk (the remote is
	// this machine): a remote sudo's prompt, read with the remote
	// terminal's echo off; then a remote shell prompt.
	writeTree(t, project, map[string]string{"remote-prompt.sh": fmt.Sprintf(`read -rs -p '[sudo] password for agent: ' pw; echo
if [ "$(printf %%s "$pw" | sha256sum | cut -c1-64)" = %x ]; then echo remote: MATCH; else echo remote: NOMATCH; fi
read -r -p 'remote$ ' l; echo "remote ran [$l]"
`, sum)})
	line := fmt.Sprintf("ssh -tt -i %s -p %d -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR %s@127.0.0.1 bash %s",
		filepath.Join(dir, "userkey"), port, me.Username, filepath.Join(project, "remote-prompt.sh"))
	r := s.send(id, line, "wait_for", `password for agent:`, "timeout_ms", 60000)
	if str(r, "completion") != "pattern" || str(r, "program") != "ssh" {
		t.Fatalf("the remote prompt did not come: %v\nsshd: %s", r, dlog.String())
	}
	s.fails("session_send", map[string]any{"session_id": id, "text": "ls -la"}, "asking for a password")
	r = s.ok("session_send", map[string]any{"session_id": id, "secret_ref": "remote_pw", "wait_for": `remote\$`, "timeout_ms": 60000})
	if out := str(r, "output"); !strings.Contains(out, "remote: MATCH") || strings.Contains(out, secret) {
		t.Fatalf("secret_ref over ssh: %v", r)
	}
	r = s.send(id, "bye", "wait_for", `remote ran \[bye\]`, "timeout_ms", 60000)
	if str(r, "completion") != "pattern" {
		t.Fatalf("after the secret: %v", r)
	}
}

// BenchmarkDevHomeStart is session_start of bash to its first prompt in
// a developer's home (a hundred dotfiles and directories, a .config of
// forty tools, keys and credentials), side by side: the default profile
// as shipped, which reads the home by deny-list (every entry granted on
// its own, enumerated at start), and the same profile reading the fixed
// list of tool-chain directories and dotfiles it read before.
//
//	go test ./cmd/termgate -run '^$' -bench DevHomeStart -benchtime 50x
func BenchmarkDevHomeStart(b *testing.B) {
	home := b.TempDir()
	project := filepath.Join(home, "src", "project")
	var files []string
	for i := range 60 {
		files = append(files, fmt.Sprintf(".tool%02drc", i), fmt.Sprintf("dir%02d/file", i))
	}
	for i := range 40 {
		files = append(files, fmt.Sprintf(".config/app%02d/settings.json", i))
	}
	files = append(files, ".ssh/id_ed25519", ".ssh/id_ed25519.pub", ".ssh/known_hosts", ".aws/credentials", ".config/gh/hosts.yml", ".bashrc", ".gitconfig", "src/project/main.go")
	for _, f := range files {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	bundle := func(edit func(string) string) string {
		dir := b.TempDir()
		if err := os.CopyFS(dir, policies.FS); err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(dir, "data.json")
		src, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(src))), 0o644); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	fixed := bundle(func(s string) string {
		old := `"{path}", "{home}/.pyenv", "{home}/.nvm", "{home}/.cargo", "{home}/.rustup", "{home}/go", "{home}/.local/bin", "{home}/.local/lib", "{home}/.gitconfig", "{home}/.bashrc", "{home}/.profile", "{home}/.bash_profile", "{home}/.zshrc", "{home}/.inputrc", "{home}/.vimrc"]`
		s = strings.Replace(s, `"{path}", "{home}/*"]`, old, 1)
		return strings.Replace(s, `"list": ["/"],`, ``, 1)
	})
	byDeny := bundle(func(s string) string { return s })
	deny := startServerHome(b, home, b.TempDir(), nil, "--policy-dir", byDeny, "--max-sessions", "4096")
	list := startServerHome(b, home, b.TempDir(), nil, "--policy-dir", fixed, "--max-sessions", "4096")
	start := func(s *server) time.Duration {
		t0 := time.Now()
		out := s.ok("session_start", map[string]any{"cwd": project})
		d := time.Since(t0)
		if str(out, "completion") != "prompt" {
			b.Fatalf("start did not end on a prompt: %v", out)
		}
		s.ok("session_close", map[string]any{"session_id": str(out, "session_id")})
		return d
	}
	var dList, dDeny []time.Duration
	b.ResetTimer()
	for range b.N {
		dList = append(dList, start(list))
		dDeny = append(dDeny, start(deny))
	}
	b.StopTimer()
	reportPair(b, dList, dDeny, "fixed-list", "deny-list")
}
