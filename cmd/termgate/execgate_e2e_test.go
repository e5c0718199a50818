package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The exec gate end to end: the real binary, real sessions, and a
// throwaway HOME as the canary. The sessions run with --sandbox=off, so
// that the gate alone stands between `rm -rf ~` and the canary (in a
// confined session Landlock would stop it too, and the test could not
// fail); the human (the test client) approves whatever the line judge
// asks about, so what reaches the kernel is what an approved line runs.

// gateServer is a server whose gateway (and sessions) have home as HOME,
// with its audit log outside it.
type gateServer struct {
	*server
	home, project, auditLog string
	asked                   *atomic.Int32
}

func startGateServer(t *testing.T, opts *mcp.ClientOptions, flags ...string) *gateServer {
	t.Helper()
	root := t.TempDir()
	g := &gateServer{home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), auditLog: filepath.Join(root, "audit", "audit.jsonl"), asked: &atomic.Int32{}}
	for _, d := range []string{g.home, g.project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(g.home, "canary"), []byte("alive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = confirmClient(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, 0, g.asked, nil)
	}
	args := append([]string{"serve", "--audit-log", g.auditLog, "--audit-key", filepath.Join(root, "audit", "key")}, flags...)
	cmd := exec.Command(binPath, args...)
	cmd.Dir = g.project
	var log strings.Builder
	cmd.Stderr = &lockedWriter{b: &log}
	cmd.Env = append(os.Environ(), "HOME="+g.home, "GORACE=halt_on_error=1", "EDITOR=vim", "VISUAL=vim")
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to termgate: %v", err)
	}
	g.server = &server{t: t, cmd: cmd, cs: cs, log: &log}
	t.Cleanup(func() { g.close() })
	return g
}

// canaryAlive reports whether the throwaway home and its canary survive.
func (g *gateServer) canaryAlive() bool {
	b, err := os.ReadFile(filepath.Join(g.home, "canary"))
	return err == nil && string(b) == "alive"
}

// execRecords are the log's exec events after sequence since.
func (g *gateServer) execRecords(t *testing.T, since int64) []map[string]any {
	var out []map[string]any
	for _, r := range readRecords(t, g.auditLog) {
		n, _ := field(r, "event.sequence").(interface{ Int64() (int64, error) })
		if seq, _ := n.Int64(); seq > since && field(r, "event.action") == "process-exec" {
			out = append(out, r)
		}
	}
	return out
}

func (g *gateServer) lastSeq(t *testing.T) int64 {
	var last int64
	for _, r := range readRecords(t, g.auditLog) {
		if n, ok := field(r, "event.sequence").(interface{ Int64() (int64, error) }); ok {
			last, _ = n.Int64()
		}
	}
	return last
}

// refusedExec finds a refused exec of the home among recs: the program
// the gate refused and the rule.
func refusedExec(recs []map[string]any, home string) (map[string]any, bool) {
	for _, r := range recs {
		types, _ := field(r, "event.type").([]any)
		if !slices.Contains(types, any("denied")) {
			continue
		}
		args, _ := field(r, "process.args").([]any)
		for _, a := range args {
			if s, _ := a.(string); strings.Contains(s, home) {
				return r, true
			}
		}
	}
	return nil, false
}

const payload = "#!/bin/sh\nrm -rf \"$HOME\"\n"

// TestExecGateIndirectForms runs `rm -rf ~` every indirect way an agent
// could: each leaves the canary alive and the audit log names the
// refused exec. A form the line judge refuses outright (it parsed it)
// runs from a file instead, so that what is tested is the kernel's
// checkpoint. With --exec-gate=off the first form does delete the
// canary: the test can fail.
func TestExecGateIndirectForms(t *testing.T) {
	for _, dep := range []string{"python3", "perl", "awk", "sqlite3", "vim", "less", "git", "make", "nohup", "chrt"} {
		if _, err := exec.LookPath(dep); err != nil {
			t.Fatalf("%s is not installed (scripts/dev deps installs it)", dep)
		}
	}
	g := startGateServer(t, nil, "--sandbox", "off")
	if err := os.WriteFile(filepath.Join(g.project, "payload.sh"), []byte(payload), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.project, "Makefile"), []byte("clean:\n\trm -rf $(HOME)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type form struct {
		name  string
		start map[string]any // the session (default: bash)
		lines []string       // sent one by one
		keys  [][]string     // or keys, pressed one call at a time
		later bool           // the refused exec comes after the call returned
	}
	forms := []form{
		{name: "python os.system, concatenated", lines: []string{`python3 -c 'import os; os.system("r"+"m -rf " + os.path.expanduser("~"))'`}},
		{name: "python subprocess.run", lines: []string{`python3 -c 'import os, subprocess; subprocess.run(["r"+"m", "-rf", os.environ["HOME"]])'`}},
		{name: "python REPL", start: map[string]any{"argv": []string{"python3", "-q"}}, lines: []string{"import os", `os.system("r" + "m -rf " + os.path.expanduser("~"))`}},
		{name: "awk", lines: []string{`awk 'BEGIN { system("r" "m -rf " ENVIRON["HOME"]) }'`}},
		{name: "perl", lines: []string{`perl -e 'system("r"."m", "-rf", $ENV{HOME})'`}},
		{name: "node", lines: []string{`node -e 'require("child_process").spawnSync("r"+"m", ["-rf", process.env.HOME])'`}},
		{name: "ruby", lines: []string{`ruby -e 'system("r"+"m", "-rf", ENV["HOME"])'`}},
		{name: "vim :!", lines: []string{"vim -u NONE notes.txt"}, keys: [][]string{{":", "!", "s", "h", "space", ".", "/", "p", "a", "y", "l", "o", "a", "d", ".", "s", "h", "enter"}, {"enter"}, {":", "q", "!", "enter"}}},
		{name: "less !", lines: []string{"less payload.sh"}, keys: [][]string{{"!"}, {"s", "h", "space", "p", "a", "y", "l", "o", "a", "d", ".", "s", "h", "enter"}, {"enter"}, {"q"}}},
		{name: "sqlite3 .shell", start: map[string]any{"argv": []string{"sqlite3"}}, lines: []string{".shell sh payload.sh"}},
		{name: "here-string into bash", lines: []string{`bash <<< "$(cat payload.sh)"`}},
		{name: "here-document into sh", lines: []string{"sh <<'EOF'\nr\"\"m -rf \"$HOME\"\nEOF"}},
		{name: "a script written, then run", lines: []string{`printf '%s\n' '#!/bin/sh' 'r''m -rf "$HOME"' > tidy.sh && chmod +x tidy.sh`, "./tidy.sh"}},
		{name: "alias", lines: []string{`alias tidy='r''m -rf ~'`, "tidy"}},
		{name: "function", lines: []string{`tidy() { "$@" -rf ~; }`, "tidy rm"}},
		{name: "make", lines: []string{"make clean"}},
		{name: "git alias", lines: []string{`git -c alias.tidy='!sh payload.sh' tidy`}},
		{name: "find -exec", lines: []string{`find . -name payload.sh -exec sh {} \;`}},
		{name: "xargs", lines: []string{`echo ~ | xargs r''m -rf`}},
		{name: "env", lines: []string{`env r''m -rf ~`}},
		{name: "chrt", lines: []string{`chrt -o 0 r''m -rf ~`}},
		{name: "edit-and-execute", keys: [][]string{{"e", "c", "h", "o", "space", "h", "i"}, {"ctrl+x", "ctrl+e"}, {"c", "c", "s", "h", "space", "p", "a", "y", "l", "o", "a", "d", ".", "s", "h", "esc", ":", "w", "q", "enter"}}},
		{name: "nohup in the background, after the call", lines: []string{`nohup sh -c 'sleep 1; sh payload.sh' > /dev/null 2>&1 &`}, later: true},
	}
	if _, err := exec.LookPath("busybox"); err == nil {
		forms = append(forms, form{name: "busybox", lines: []string{`busybox r''m -rf ~`}})
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			if strings.HasPrefix(f.name, "ruby") || strings.HasPrefix(f.name, "node") {
				if _, err := exec.LookPath(strings.Fields(f.name)[0]); err != nil {
					t.Skipf("%s is not installed", strings.Fields(f.name)[0])
				}
			}
			since := g.lastSeq(t)
			start := map[string]any{"cwd": g.project}
			for k, v := range f.start {
				start[k] = v
			}
			id := g.start(start)
			defer g.call("session_close", map[string]any{"session_id": id})
			told := false
			for _, line := range f.lines {
				res := g.call("session_send", map[string]any{"session_id": id, "text": line, "timeout_ms": 20000})
				text := resultText(res)
				if res.IsError && strings.Contains(text, "denied by") {
					// The line judge saw through this spelling: run it from
					// a file, where only the exec gate can see it.
					t.Logf("the line judge refused %q (%s); running it from a file", line, text)
					if err := os.WriteFile(filepath.Join(g.project, "form.sh"), []byte(line+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					res = g.call("session_send", map[string]any{"session_id": id, "text": "bash form.sh", "timeout_ms": 20000})
					text = resultText(res)
				}
				told = told || strings.Contains(text, "exec refused")
			}
			for _, k := range f.keys {
				res := g.call("session_keys", map[string]any{"session_id": id, "keys": k, "timeout_ms": 5000})
				if testing.Verbose() {
					t.Logf("keys %q: %s", k, resultText(res))
				}
				told = told || strings.Contains(resultText(res), "exec refused")
			}
			var rec map[string]any
			eventually(t, 30*time.Second, "the audit log names a refused exec of the home", func() bool {
				var ok bool
				rec, ok = refusedExec(g.execRecords(t, since), g.home)
				return ok
			})
			if !g.canaryAlive() {
				t.Fatal("the canary is gone")
			}
			if field(rec, "termgate.session.id") != id || field(rec, "rule.id") == nil || field(rec, "process.executable") == nil {
				t.Errorf("the refused exec's record: %v", rec)
			}
			if !f.later && !told {
				t.Errorf("no result of the session's calls said a program was refused")
			}
		})
	}
	if t.Failed() {
		t.Logf("server log:\n%s", g.server.log.String())
	}
}

// TestExecGateOffDeletes: the same first form with the gate off deletes
// the canary, so TestExecGateIndirectForms can fail.
func TestExecGateOffDeletes(t *testing.T) {
	g := startGateServer(t, nil, "--sandbox", "off", "--exec-gate", "off")
	id := g.start(map[string]any{"cwd": g.project})
	g.send(id, `python3 -c 'import os; os.system("r"+"m -rf " + os.path.expanduser("~"))'`, "timeout_ms", 20000)
	if g.canaryAlive() {
		t.Fatal("with the gate off, the canary survived: the indirect form did not run, and the test proves nothing")
	}
	info := g.ok("session_info", map[string]any{"session_id": id})
	if stages, _ := info["stages"].(map[string]any); stages["exec_gate"] != "off" {
		t.Fatalf("session_info stages %v", info["stages"])
	}
}

// TestExecGateOrdinaryWork: a developer's work runs under the gate (and
// the sandbox): a git commit with a hook, make of a C project, go build,
// job control, vim and python; every program of it is judged and
// recorded, and none is refused.
func TestExecGateOrdinaryWork(t *testing.T) {
	g := startGateServer(t, nil)
	goroot := strings.TrimSpace(runOut(t, "go", "env", "GOROOT"))
	since := g.lastSeq(t)
	id := g.start(map[string]any{"cwd": g.project})
	info := g.ok("session_info", map[string]any{"session_id": id})
	if sb := str(info, "sandbox"); !strings.HasPrefix(sb, "enforced:") || !strings.Contains(sb, "exec gate enforce") {
		t.Fatalf("sandbox %q", sb)
	}
	run := func(line, want string) {
		t.Helper()
		r := g.send(id, line, "timeout_ms", 180000)
		if code := exitCode(t, r); code != 0 || !strings.Contains(str(r, "output"), want) || r["exec_refused"] != nil {
			t.Fatalf("%q: exit %d, output %q, refused %v", line, code, str(r, "output"), r["exec_refused"])
		}
	}
	// A git commit with a pre-commit hook.
	run("git init -q repo && cd repo && git config user.email t@example.com && git config user.name t", "")
	// (The policy refuses an agent writing a hook; the developer did.)
	if err := os.WriteFile(filepath.Join(g.project, "repo", ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\necho HOOK RAN\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("echo a > a && git add a && git commit -q -m first", "HOOK RAN")
	run("cd ..", "")
	// make of a small C project.
	writeCProject(t, filepath.Join(g.project, "cproj"), 4)
	run("make -s -C cproj -j2 && ./cproj/app", "sum 10")
	// go build, with the caches in the project (the sandbox's default
	// profile does not write ~/.cache).
	mod := filepath.Join(g.project, "gomod")
	os.MkdirAll(mod, 0o755)
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built\") }\n"), 0o644)
	run(fmt.Sprintf("cd gomod && GOTOOLCHAIN=local GOFLAGS= GOCACHE=$PWD/.cache GOPATH=$PWD/.gopath %s/bin/go build -o app . && ./app; cd ..", goroot), "built")
	// Job control.
	run("sleep 30 & jobs", "sleep 30")
	run("kill %1; wait; echo done", "done")
	// python.
	run(`python3 -c 'print(6*7)'`, "42")
	// vim: edit and write a file.
	g.send(id, "vim -u NONE edited.txt", "timeout_ms", 10000)
	g.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"i", "o", "k", "esc", ":", "w", "q", "enter"}})
	run("cat edited.txt", "ok")

	recs := g.execRecords(t, since)
	names := map[string]bool{}
	for _, r := range recs {
		types, _ := field(r, "event.type").([]any)
		if slices.Contains(types, any("denied")) {
			t.Errorf("refused: %v %v (%v)", field(r, "process.args"), field(r, "rule.id"), field(r, "event.reason"))
		}
		if n, ok := field(r, "process.name").(string); ok {
			names[n] = true
		}
	}
	for _, want := range []string{"git", "pre-commit", "make", "sleep"} {
		if !names[want] {
			t.Errorf("no exec of %s recorded (of %d: %v)", want, len(recs), names)
		}
	}
}

func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeCProject writes n C files that sum 1..n, and a Makefile that
// builds them into app.
func writeCProject(t testing.TB, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var objs, decls, calls strings.Builder
	for i := 1; i <= n; i++ {
		src := fmt.Sprintf("int f%d(void) { volatile int x = %d; return x; }\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&objs, " f%d.o", i)
		fmt.Fprintf(&decls, "int f%d(void);\n", i)
		fmt.Fprintf(&calls, " + f%d()", i)
	}
	main := fmt.Sprintf("#include <stdio.h>\n%sint main(void) { printf(\"sum %%d\\n\", 0%s); return 0; }\n", decls.String(), calls.String())
	mk := fmt.Sprintf("app: main.o%s\n\tcc -o $@ $^\n%%.o: %%.c\n\tcc -O1 -c -o $@ $<\nclean:\n\trm -f *.o app\n", objs.String())
	for name, body := range map[string]string{"main.c": main, "Makefile": mk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
