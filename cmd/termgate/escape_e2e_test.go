package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/policies"
)

// The reproductions of issue 10, through the real binary: a cwd that is
// a link (or /proc/self/root) must not become a writable /, the
// environment an agent sets must not run code before anything is judged,
// the gateway's own environment must not reach sessions, and a session's
// processes must not outlive session_close.

// serverHome is the throwaway HOME the harness gave a server.
func serverHome(t *testing.T, s *server) string {
	t.Helper()
	home := ""
	for _, kv := range s.cmd.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		t.Fatal("the server has no HOME")
	}
	return home
}

// bundleCopy is the default bundle in a directory of its own, outside any
// project, with edit applied to its data.json.
func bundleCopy(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		p := filepath.Join(dir, "data.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot hashes every file under the roots (names, modes, contents),
// leaving out the audit log, which grows with every call.
func snapshot(t *testing.T, roots ...string) string {
	t.Helper()
	h := sha256.New()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasSuffix(p, ".jsonl") {
				return nil
			}
			if d.IsDir() && strings.HasSuffix(p, "/.cache/termgate") {
				// The gateway's cache directory for sessions' tools
				// (GOCACHE…): the gateway makes it, sessions write it.
				return fs.SkipDir
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s %v\n", p, fi.Mode())
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				h.Write(b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestCwdEscapesAreRefused: session_start and exec with a cwd of
// /proc/self/root, a link to /, to the gateway's state or policy, or to
// the home directory are refused, and say why; nothing outside the
// project changes, the audit key stays unreadable, the policy directory
// unchanged. A relative cwd is taken from the gateway's own.
func TestCwdEscapesAreRefused(t *testing.T) {
	pol := bundleCopy(t, nil)
	s := startServer(t, "--policy-dir", pol)
	home := serverHome(t, s)
	state := filepath.Join(home, ".local", "state", "termgate")
	key := filepath.Join(state, "audit.key")
	keyBytes, err := os.ReadFile(key)
	if err != nil {
		t.Fatalf("the audit key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary")
	if err := os.WriteFile(canary, []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"r": "/", "st": state, "pol": pol, "h": home, "up": filepath.Join(home, ".local"), "self": "/proc/self/root",
	} {
		if err := os.Symlink(target, filepath.Join(project, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The user's cache directory, as most homes have one: the gateway
	// keeps its sessions' tool caches below it (snapshot skips those).
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, home, outside, pol)

	// What a prompt-injected agent would run there.
	attack := fmt.Sprintf("echo pwned > %s; echo 'package x' > %s/pwn.rego; cat %s; rm -rf %s/.bashrc", canary, pol, key, home)
	cases := []struct{ name, cwd, why string }{
		{"/proc/self/root", "/proc/self/root", "under /proc, the kernel's own files"},
		{"/proc/self/cwd", "/proc/self/cwd", "under /proc, the kernel's own files"},
		{"a link to /", filepath.Join(project, "r"), "the whole file system"},
		{"a link to /proc/self/root", filepath.Join(project, "self"), "the whole file system"},
		{"a link to / and back", filepath.Join(project, "r", "tmp", ".."), "the whole file system"},
		{"/", "/", "the whole file system"},
		{"up to / by ..", "../../../../../../../../..", "the whole file system"},
		{"a link to the gateway's state", filepath.Join(project, "st"), "holds the gateway's own " + state},
		{"a link above the gateway's state", filepath.Join(project, "up"), "holds the gateway's own " + state},
		{"a link to the policy directory", filepath.Join(project, "pol"), "holds the gateway's own " + pol},
		{"the home directory", home, "home directory"},
		{"a link to the home directory", filepath.Join(project, "h"), "home directory"},
		{"/etc", "/etc", "outside the directories sessions may start in"},
		{"/dev/shm", "/dev/shm", "under /dev, the kernel's own files"},
		{"/tmp itself, which holds the gateway's home", os.TempDir(), "home directory"},
	}
	// (The server's helpers fail the test that started it: no subtests.)
	for _, c := range cases {
		t.Logf("cwd: %s", c.name)
		msg := s.fails("session_start", map[string]any{"cwd": c.cwd, "command": "bash"}, c.why)
		if !strings.Contains(msg, "nothing was started") {
			t.Errorf("%s: session_start: %q does not say nothing was started", c.name, msg)
		}
		s.fails("exec", map[string]any{"cwd": c.cwd, "command": attack}, c.why)
	}

	// Inside a session in the project, the magic links lead nowhere
	// either: Landlock judges what they reach.
	id := s.start(map[string]any{"cwd": project})
	for _, line := range []string{
		"cat /proc/self/root" + key,
		"cat " + filepath.Join(project, "st", "audit.key"),
		"echo pwned > /proc/self/root" + canary,
		"echo 'package x' > " + filepath.Join(project, "pol", "pwn.rego"),
		"touch /proc/self/root" + filepath.Join(home, ".bashrc"),
	} {
		res := s.call("session_send", map[string]any{"session_id": id, "text": line + " && echo ESCAPED || echo BLOCKED"})
		if res.IsError {
			continue // the policy refused the line: nothing ran
		}
		out := str(structured(t, res), "output")
		if strings.Contains(out, "ESCAPED") || !strings.Contains(out, "BLOCKED") || strings.Contains(out, string(keyBytes)) {
			t.Errorf("%s: %q", line, out)
		}
	}
	s.ok("session_close", map[string]any{"session_id": id})

	// A relative cwd is taken from the gateway's working directory,
	// resolved; "." is that directory, never /.
	gw, err := filepath.EvalSymlinks(s.cmd.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(gw, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{".": gw, "": gw, "sub": filepath.Join(gw, "sub"), "./sub/..": gw} {
		r := s.ok("exec", map[string]any{"command": "pwd", "cwd": cwd})
		if got := strings.TrimSpace(str(r, "output")); got != want {
			t.Errorf("exec in %q ran in %q, want %q", cwd, got, want)
		}
	}

	if after := snapshot(t, home, outside, pol); after != before {
		t.Fatal("something outside the project changed")
	}
	if b, _ := os.ReadFile(key); string(b) != string(keyBytes) {
		t.Fatal("the audit key changed")
	}
}

// TestSandboxRunCwdEscapes: termgate sandbox run takes the directory it
// runs in as a session's cwd: a link to /, /proc/self/root, or the home
// directory is refused before anything runs.
func TestSandboxRunCwdEscapes(t *testing.T) {
	project := t.TempDir()
	home := t.TempDir()
	for name, target := range map[string]string{"r": "/", "self": "/proc/self/root", "h": home} {
		if err := os.Symlink(target, filepath.Join(project, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ dir, why string }{
		{filepath.Join(project, "r"), "the whole file system"},
		{filepath.Join(project, "self"), "the whole file system"},
		{"/proc/self/root", "the kernel's own files"},
		{filepath.Join(project, "h"), "home directory"},
	} {
		cmd := exec.Command(binPath, "sandbox", "run", "--", "sh", "-c", "echo RAN")
		cmd.Dir = c.dir
		cmd.Env = append(os.Environ(), "HOME="+home, "PWD="+c.dir)
		out, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(out), "RAN") || !strings.Contains(string(out), c.why) {
			t.Errorf("sandbox run in %s: %v: %q, want a refusal saying %q", c.dir, err, out, c.why)
		}
	}
	out, code := sandboxRun(t, project, nil, "sh", "-c", "pwd")
	if code != 0 || strings.TrimSpace(out) != project {
		t.Fatalf("sandbox run in the project: %d %q", code, out)
	}
}

// TestAgentEnvCannotRunCode: imported functions, prompt, mail and startup
// variables, HOME and PYTHONPATH are refused in session_start's and exec's
// env, and a startup file in argv by the policy; each refusal names the
// variable. Nothing they would have run ran.
func TestAgentEnvCannotRunCode(t *testing.T) {
	s := startServer(t)
	home := serverHome(t, s)
	project := t.TempDir()
	marker := filepath.Join(project, "ran")
	for _, f := range []string{".bashrc", "keep"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("# the user's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	evil := filepath.Join(project, "evil")
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, ".bashrc"), []byte("touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "sitecustomize.py"), []byte("open('"+marker+"', 'w')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "x.sh"), []byte("touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The user's cache directory: the gateway keeps its sessions' tool
	// caches below it (snapshot skips those).
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, home)
	sub := "$(touch " + marker + ")"
	for _, c := range []struct {
		name string
		env  map[string]string
		why  string
	}{
		{"an imported function", map[string]string{"BASH_FUNC_printf%%": "() { rm -rf ~; touch " + marker + "; }"}, `"BASH_FUNC_printf%%" is never accepted from an agent: it defines a shell function`},
		{"PS1", map[string]string{"PS1": sub}, `"PS1" is never accepted`},
		{"PS2", map[string]string{"PS2": sub}, `"PS2" is never accepted`},
		{"PROMPT_COMMAND", map[string]string{"PROMPT_COMMAND": "touch " + marker}, `"PROMPT_COMMAND" is never accepted`},
		{"MAILPATH", map[string]string{"MAILPATH": marker + "?" + sub}, `"MAILPATH" is never accepted`},
		{"HOME", map[string]string{"HOME": evil}, `"HOME" is never accepted`},
		{"PYTHONPATH", map[string]string{"PYTHONPATH": evil}, `"PYTHONPATH" is never accepted`},
		{"BASH_ENV", map[string]string{"BASH_ENV": filepath.Join(project, "x.sh")}, `"BASH_ENV" is never accepted`},
		{"LD_PRELOAD", map[string]string{"LD_PRELOAD": "/x.so"}, `"LD_PRELOAD" is never accepted`},
		{"a variable off the allowlist", map[string]string{"FOO": "1"}, `"FOO" is not a variable an agent may set: the allowlist is data.termgate.agent_env`},
		{"a value off its shape", map[string]string{"TERM": "xterm" + sub}, `the value of "TERM" does not have the shape`},
	} {
		t.Logf("env: %s", c.name)
		msg := s.fails("session_start", map[string]any{"cwd": project, "command": "bash", "env": c.env}, c.why)
		for _, v := range c.env {
			if strings.Contains(msg, v) {
				t.Errorf("%s: the refusal quotes the value: %q", c.name, msg)
			}
		}
		s.fails("exec", map[string]any{"cwd": project, "command": "true", "env": c.env}, c.why)
	}
	s.fails("exec", map[string]any{"cwd": project, "command": "true", "env": map[string]string{"BASH_FUNC_true%%": "() { touch " + marker + "; }"}}, "never accepted")
	s.fails("session_start", map[string]any{"cwd": project, "argv": []string{"bash", "--rcfile", "x.sh"}}, "denied by start.shell_startup_file")
	s.fails("session_start", map[string]any{"cwd": project, "argv": []string{"bash", "--init-file", "x.sh"}}, "denied by start.shell_startup_file")
	s.fails("session_start", map[string]any{"cwd": project, "command": "env 'BASH_FUNC_printf%%=() { touch " + marker + "; }' bash"}, "denied by start.env_code")
	s.fails("session_start", map[string]any{"cwd": project, "command": "PS1='" + sub + "' bash"}, "denied by start.env_code")
	s.fails("exec", map[string]any{"cwd": project, "command": "env HOME=" + evil + " bash -i"}, "denied by start.env_code")

	// What the allowlist holds works.
	id := s.start(map[string]any{"cwd": project, "env": map[string]string{"TZ": "UTC", "LC_ALL": "C"}})
	wantOutput(t, s.send(id, `echo "$TZ $LC_ALL"`), "UTC C")
	r := s.ok("exec", map[string]any{"cwd": project, "command": `echo "$TZ"`, "env": map[string]string{"TZ": "Europe/Paris"}})
	if got := str(r, "output"); got != "Europe/Paris\n" {
		t.Fatalf("exec with TZ: %q", got)
	}

	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused variable ran code")
	}
	if after := snapshot(t, home); after != before {
		t.Fatal("the home directory changed")
	}
}

// TestGatewayEnvDoesNotReachSessions: credentials the operator exported
// are not visible in a session, an exec or a sandbox run; the profile's
// allowlist is.
func TestGatewayEnvDoesNotReachSessions(t *testing.T) {
	fake := "AKIA" + strings.ToUpper(randomHex(t))[:16]
	t.Setenv("AWS_SECRET_ACCESS_KEY", fake)
	t.Setenv("GITHUB_TOKEN", "ghp_"+randomHex(t))
	t.Setenv("MY_DB_PASSWORD", randomHex(t))
	t.Setenv("SOME_RANDOM_SETTING", "x")
	t.Setenv("LC_TIME", "C")
	count := "env | grep -c -E '^(AWS_SECRET_ACCESS_KEY|GITHUB_TOKEN|MY_DB_PASSWORD|SOME_RANDOM_SETTING)=' ; echo LC_TIME=$LC_TIME"
	s := startServer(t)
	project := t.TempDir()
	id := s.start(map[string]any{"cwd": project})
	wantOutput(t, s.send(id, count), "0\nLC_TIME=C")
	if got := str(s.ok("exec", map[string]any{"cwd": project, "command": count}), "output"); got != "0\nLC_TIME=C\n" {
		t.Fatalf("exec: %q", got)
	}
	out, code := sandboxRun(t, project, nil, "sh", "-c", count)
	if out != "0\nLC_TIME=C\n" {
		t.Fatalf("sandbox run: %d %q", code, out)
	}
	// Not in the session's /proc either (the launcher's environment is
	// the program's).
	r := s.send(id, "cat /proc/$$/environ | tr '\\0' '\\n' | grep -c AWS_SECRET_ACCESS_KEY")
	wantOutput(t, r, "0")
}

// TestConfirmationBindsEnvValues: with --confirm-mode=agent, approving
// rm -rf "$T" with T=scratch does not approve it with T=another
// directory; the approved pair runs once.
func TestConfirmationBindsEnvValues(t *testing.T) {
	pol := bundleCopy(t, func(s string) string {
		return strings.Replace(s, `"names": {`, `"names": {"T": "[A-Za-z0-9_./~-]{1,200}",`, 1)
	})
	s := startServer(t, "--confirm-mode", "agent", "--policy-dir", pol)
	project := t.TempDir()
	scratch := filepath.Join(project, "scratch")
	precious := filepath.Join(project, "precious")
	for _, d := range []string{scratch, precious} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	call := func(t string) map[string]any {
		return map[string]any{"cwd": project, "command": `rm -rf "$T"`, "env": map[string]string{"T": t}}
	}
	msg := s.fails("exec", call(scratch), "call the confirm tool")
	m := regexp.MustCompile(`token "([^"]+)"`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no token in %q", msg)
	}
	s.ok("confirm", map[string]any{"token": m[1], "justification": "the scratch directory is a build output we regenerate"})
	// The same line with another value is another input.
	s.fails("exec", call(precious), "call the confirm tool")
	if _, err := os.Stat(precious); err != nil {
		t.Fatal("the approval of T=scratch removed T=precious")
	}
	s.ok("exec", call(scratch))
	if _, err := os.Stat(scratch); err == nil {
		t.Fatal("the approved input did not run")
	}
}

// TestSessionCloseEndsASwarm: a swarm that keeps forking and calling
// setsid inside a session is gone when session_close returns.
func TestSessionCloseEndsASwarm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the pids cgroup needs root")
	}
	mk := "swarm" + marker()
	project := t.TempDir()
	bin := filepath.Join(project, mk)
	// Each process forks a child that leaves its session, forks another,
	// and exits: the swarm fills its cgroup's bound at once and never
	// stands still.
	script := "import os, time\nwhile True:\n    try:\n        if os.fork() == 0:\n            os.setsid()\n            continue\n        if os.fork() == 0:\n            continue\n        os._exit(0)\n    except OSError:\n        time.sleep(0.01)\n"
	if err := os.WriteFile(bin, []byte("#!/usr/bin/env python3\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The default profile, bounded to 32 processes.
	pol := bundleCopy(t, func(s string) string {
		return strings.Replace(s, `"limits": {"processes": 512`, `"limits": {"processes": 32`, 1)
	})
	s := startServer(t, "--policy-dir", pol, "--close-grace", "500ms")
	id := s.start(map[string]any{"cwd": project})
	s.send(id, "for i in 1 2 3; do ./"+mk+" & done")
	eventually(t, 30*time.Second, "the swarm to run", func() bool { return len(processesWith(mk)) >= 8 })
	r := s.ok("session_close", map[string]any{"session_id": id})
	if r["closed"] != true {
		t.Fatalf("close: %v", r)
	}
	if left := processesWith(mk); len(left) > 0 {
		t.Fatalf("%d swarm processes outlived session_close", len(left))
	}
}
