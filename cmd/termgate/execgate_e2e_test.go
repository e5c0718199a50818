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
	return startGateServerOn(t, "", opts, flags...)
}

// startGateServerOn connects with a protocol version ("": the latest).
func startGateServerOn(t *testing.T, protocol string, opts *mcp.ClientOptions, flags ...string) *gateServer {
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
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
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
// the gate refused and the rule. That is rm with the home as its
// argument, or, where the analysis of an interpreter's code saw the
// delete already, the interpreter whose code names the home (~, $HOME,
// os.environ["HOME"]).
func refusedExec(recs []map[string]any, home string) (map[string]any, bool) {
	for _, r := range recs {
		types, _ := field(r, "event.type").([]any)
		if !slices.Contains(types, any("denied")) {
			continue
		}
		args, _ := field(r, "process.args").([]any)
		for _, a := range args {
			if s, _ := a.(string); strings.Contains(s, home) || strings.Contains(s, "~") || strings.Contains(s, "HOME") {
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
		repl  bool           // the session is python's REPL
		// closed: the session's shell integration already takes the
		// form away (its keys run nothing), so there is no exec to refuse.
		closed bool
	}
	forms := []form{
		{name: "python os.system, concatenated", lines: []string{`python3 -c 'import os; os.system("r"+"m -rf " + os.path.expanduser("~"))'`}},
		{name: "python subprocess.run", lines: []string{`python3 -c 'import os, subprocess; subprocess.run(["r"+"m", "-rf", os.environ["HOME"]])'`}},
		{name: "python REPL", start: map[string]any{"argv": []string{"python3", "-q"}}, repl: true, lines: []string{"import os", `os.system("r" + "m -rf " + os.path.expanduser("~"))`}},
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
		{name: "edit-and-execute", closed: true, keys: [][]string{{"e", "c", "h", "o", "space", "h", "i"}, {"ctrl+x", "ctrl+e"}, {"c", "c", "s", "h", "space", "p", "a", "y", "l", "o", "a", "d", ".", "s", "h", "esc", ":", "w", "q", "enter"}}},
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
					file, run, body := "form.sh", "bash form.sh", line+"\n"
					if f.repl {
						// In the REPL: a module written by one call,
						// imported by the next.
						file, run, body = "form_mod.py", "import form_mod", "import os\n"+body
					}
					if err := os.WriteFile(filepath.Join(g.project, file), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					res = g.call("session_send", map[string]any{"session_id": id, "text": run, "timeout_ms": 20000})
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
			if f.closed {
				if !g.canaryAlive() {
					t.Fatal("the canary is gone")
				}
				if _, ok := refusedExec(g.execRecords(t, since), g.home); ok {
					t.Error("a form the shell integration closes reached an exec")
				}
				return
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

// TestExecGateOffDeletes: with the gate off, a script that runs rm -rf
// ~ deletes the canary, so TestExecGateIndirectForms can fail.
func TestExecGateOffDeletes(t *testing.T) {
	g := startGateServer(t, nil, "--sandbox", "off", "--exec-gate", "off")
	if err := os.WriteFile(filepath.Join(g.project, "payload.sh"), []byte(payload), 0o755); err != nil {
		t.Fatal(err)
	}
	id := g.start(map[string]any{"cwd": g.project})
	// A script the line judge cannot read: only the exec gate could stop it.
	g.send(id, "sh payload.sh", "timeout_ms", 20000)
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
// job control, vim, python, pip and npm scripts; every program of it is
// judged and recorded, and none is refused.
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
	// python, and pip (its entry point, through whatever shims PATH has).
	run(`python3 -c 'print(6*7)'`, "42")
	run("pip --version", "pip ")
	// npm scripts: npm runs each through sh -c, a pre-script first.
	if _, err := exec.LookPath("npm"); err == nil {
		pkg := `{"name": "x", "version": "1.0.0", "scripts": {"prebuild": "echo PRE", "build": "node -e \"console.log('npm ' + 'built')\""}}`
		if err := os.WriteFile(filepath.Join(g.project, "package.json"), []byte(pkg), 0o644); err != nil {
			t.Fatal(err)
		}
		run("npm_config_cache=$PWD/.npm npm_config_update_notifier=false npm run -s build", "npm built")
	}
	// vim: edit and write a file.
	g.send(id, "vim -u NONE edited.txt", "timeout_ms", 10000)
	g.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"i", "o", "k", "esc", ":", "w", "q", "enter"}})
	run("cat edited.txt", "ok")

	recs := g.execRecords(t, since)
	names := map[string]bool{}
	ecs := loadECS(t)
	for _, r := range recs {
		if bad := ecs.check(r); len(bad) > 0 {
			t.Errorf("an exec record is not ECS: %v\n%v", bad, r)
		}
		types, _ := field(r, "event.type").([]any)
		if slices.Contains(types, any("denied")) {
			t.Errorf("refused: %v %v (%v)", field(r, "process.args"), field(r, "rule.id"), field(r, "event.reason"))
		}
		if n, ok := field(r, "process.name").(string); ok {
			names[n] = true
		}
	}
	wants := []string{"git", "pre-commit", "make", "cc1", "sleep", "vim", "pip"}
	if _, err := exec.LookPath("npm"); err == nil {
		wants = append(wants, "node")
	}
	for _, want := range wants {
		// A program is named by what it is: vim may be vim.basic.
		found := false
		for n := range names {
			found = found || n == want || strings.HasPrefix(n, want+".")
		}
		if !found {
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

// TestExecGateRenamedCopies: a copy of rm under another name is rm (the
// gate hashes a file that has a system program's size), and is refused;
// a copy changed by one byte is not recognised (a known limit): with the
// sandbox off it runs, and in a confined session Landlock stops it.
func TestExecGateRenamedCopies(t *testing.T) {
	g := startGateServer(t, nil, "--sandbox", "off")
	id := g.start(map[string]any{"cwd": g.project})
	since := g.lastSeq(t)
	r := g.send(id, "cp /bin/rm ./tidy && ./tidy -rf ~; echo rc=$?", "timeout_ms", 20000)
	if !g.canaryAlive() || !strings.Contains(str(r, "output"), "rc=126") && !strings.Contains(str(r, "output"), "not permitted") {
		t.Fatalf("a renamed copy of rm ran: %q, canary alive %v", str(r, "output"), g.canaryAlive())
	}
	rec, ok := refusedExec(g.execRecords(t, since), g.home)
	if !ok || field(rec, "process.name") != "rm" || field(rec, "termgate.exec.identified_by") != "content" {
		t.Fatalf("the refusal's record: %v", rec)
	}

	// The limit: one byte more, and it is a program of its own.
	g.send(id, "cp /bin/rm ./tidy2 && printf '\\0' >> ./tidy2 && ./tidy2 -rf ~", "timeout_ms", 20000)
	if g.canaryAlive() {
		t.Fatal("a changed copy of rm was stopped: the limit in the README no longer holds, update it")
	}

	// Confined, the sandbox stays the boundary.
	c := startGateServer(t, nil)
	cid := c.start(map[string]any{"cwd": c.project})
	c.send(cid, "cp /bin/rm ./tidy2 && printf '\\0' >> ./tidy2 && ./tidy2 -rf ~", "timeout_ms", 20000)
	if !c.canaryAlive() {
		t.Fatal("in a confined session a changed copy of rm deleted the home")
	}
}

// TestExecGateAuditMode: --exec-gate=audit judges and records every exec
// and refuses none; what enforce would refuse is a security record with
// termgate.exec.enforced false. The mode is in session_info and in the
// session-start record.
func TestExecGateAuditMode(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("no mkfs.ext4")
	}
	for _, mode := range []string{"enforce", "audit"} {
		t.Run(mode, func(t *testing.T) {
			g := startGateServer(t, nil, "--exec-gate", mode)
			// mkfs.ext4 -V only prints its version; the policy refuses
			// any mkfs. A script runs it: the line judge sees sh version.sh.
			os.WriteFile(filepath.Join(g.project, "version.sh"), []byte("mkfs.ext4 -V 2>&1 | head -1\n"), 0o644)
			since := g.lastSeq(t)
			id := g.start(map[string]any{"cwd": g.project})
			info := g.ok("session_info", map[string]any{"session_id": id})
			if stages, _ := info["stages"].(map[string]any); stages["exec_gate"] != mode || !strings.Contains(str(info, "sandbox"), "exec gate "+mode) {
				t.Fatalf("session_info: %v, %q", info["stages"], str(info, "sandbox"))
			}
			r := g.send(id, "sh version.sh", "timeout_ms", 20000)
			ran := strings.Contains(str(r, "output"), "mke2fs")
			if ran != (mode == "audit") {
				t.Fatalf("%s: output %q", mode, str(r, "output"))
			}
			var rec map[string]any
			for _, x := range g.execRecords(t, since) {
				// mkfs.ext4 is a link to mke2fs: the program it is.
				if field(x, "process.name") == "mke2fs" {
					rec = x
				}
			}
			if rec == nil || field(rec, "rule.id") != "disk.format" {
				t.Fatalf("no record of mkfs.ext4: %v", rec)
			}
			types, _ := field(rec, "event.type").([]any)
			if mode == "audit" && (field(rec, "termgate.exec.enforced") != false || !slices.Contains(types, any("allowed"))) {
				t.Fatalf("audit mode's record: %v", rec)
			}
			if mode == "enforce" && (!slices.Contains(types, any("denied")) || r["exec_refused"] == nil) {
				t.Fatalf("enforce: record %v, result %v", rec, r)
			}
			var start map[string]any
			for _, x := range readRecords(t, g.auditLog) {
				if field(x, "event.action") == "session-start" {
					start = x
				}
			}
			if field(start, "termgate.sandbox.exec_gate") != mode {
				t.Fatalf("session-start record: %v", field(start, "termgate.sandbox"))
			}
		})
	}
}

// TestExecGateAsksThroughTheCall: a program the policy wants confirmed
// waits in the kernel while the human is asked through the call in
// flight (a client on a protocol that lets the gateway ask mid-call);
// approved it runs, declined it is refused and the result says so. With
// no call in flight (a background job after the call), or a client whose
// protocol forbids asking mid-call, it is refused and the reason says why.
func TestExecGateAsksThroughTheCall(t *testing.T) {
	script := func(g *gateServer, name string) string {
		victim := filepath.Join(g.project, "victim-"+name)
		os.MkdirAll(filepath.Join(victim, "x"), 0o755)
		// rm -r of an absolute path outside the working directory is
		// confirmed (fs.rm_recursive_outside).
		os.WriteFile(filepath.Join(g.project, name+".sh"), []byte("cd /tmp && rm -r "+victim+"\n"), 0o644)
		return victim
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for _, c := range []struct {
		name     string
		answer   *mcp.ElicitResult
		protocol string
		gone     bool
		why      string
	}{
		{"approved", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, "2025-11-25", true, ""},
		{"declined", &mcp.ElicitResult{Action: "decline"}, "2025-11-25", false, "declined"},
		{"a protocol that cannot ask mid-call", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, "", false, "does not let the gateway ask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked atomic.Int32
			g := startGateServerOn(t, c.protocol, confirmClient(c.answer, 0, &asked, nil))
			victim := script(g, "tidy")
			id := g.start(map[string]any{"cwd": g.project})
			r := g.send(id, "sh tidy.sh; echo rc=$?", "timeout_ms", 30000)
			if exists(victim) == c.gone {
				t.Fatalf("victim exists %v; output %q", exists(victim), str(r, "output"))
			}
			if c.gone && asked.Load() != 1 {
				t.Fatalf("asked %d times", asked.Load())
			}
			if !c.gone {
				refs, _ := r["exec_refused"].([]any)
				if len(refs) == 0 {
					t.Fatalf("the result does not say rm was refused: %v", r)
				}
				ref, _ := refs[0].(map[string]any)
				if ref["program"] != "rm" || ref["rule"] != "fs.rm_recursive_outside" || !strings.Contains(fmt.Sprint(ref["reason"]), c.why) {
					t.Fatalf("refusal %v", ref)
				}
			}
		})
	}
	t.Run("no call in flight", func(t *testing.T) {
		var asked atomic.Int32
		g := startGateServerOn(t, "2025-11-25", confirmClient(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, 0, &asked, nil))
		victim := script(g, "later")
		id := g.start(map[string]any{"cwd": g.project})
		since := g.lastSeq(t)
		g.send(id, "(sleep 1; sh later.sh) > /dev/null 2>&1 &")
		eventually(t, 30*time.Second, "a refused exec of rm", func() bool {
			for _, x := range g.execRecords(t, since) {
				if field(x, "process.name") == "rm" && strings.Contains(fmt.Sprint(field(x, "event.reason")), "no call is in flight") {
					return true
				}
			}
			return false
		})
		if !exists(victim) || asked.Load() != 0 {
			t.Fatalf("victim exists %v, asked %d", exists(victim), asked.Load())
		}
	})
}

// TestExecGateExecTool: the exec tool's command is gated too, and its
// result names what was refused.
func TestExecGateExecTool(t *testing.T) {
	g := startGateServer(t, nil, "--sandbox", "off")
	if err := os.WriteFile(filepath.Join(g.project, "payload.sh"), []byte(payload), 0o755); err != nil {
		t.Fatal(err)
	}
	out := g.ok("exec", map[string]any{"command": "sh payload.sh; echo after", "cwd": g.project})
	refs, _ := out["exec_refused"].([]any)
	if !g.canaryAlive() || len(refs) == 0 || !strings.Contains(str(out, "output"), "after") || !strings.Contains(str(out, "sandbox"), "exec gate enforce") {
		t.Fatalf("canary alive %v, result %v", g.canaryAlive(), out)
	}
}

// TestExecGateSandboxRun: termgate sandbox run gates the command's
// programs and says on stderr what it refused; --exec-gate=off does not.
func TestExecGateSandboxRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "version.sh"), []byte("mkfs.ext4 -V\necho next\n"), 0o644)
	out, code := sandboxRun(t, dir, nil, "sh", "version.sh")
	if code != 0 || !strings.Contains(out, "exec refused: mke2fs (mkfs.ext4 -V)") || !strings.Contains(out, "disk.format") || !strings.Contains(out, "next") {
		t.Fatalf("exit %d: %q", code, out)
	}
	out, _ = sandboxRun(t, dir, []string{"--exec-gate", "off"}, "sh", "version.sh")
	if strings.Contains(out, "exec refused") {
		t.Fatalf("--exec-gate=off refused: %q", out)
	}
}
