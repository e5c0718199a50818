package policy

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/termgate/termgate/policies"
)

// TestEveryRunnerHandsCodeToTheAnalysis: the code a runner of
// data.termgate.runners hands to an interpreter reaches the code analysis
// (input.code names the call) and is judged once: one rm, not a second
// one from scanning the runner's or the interpreter's arguments for
// literals.
func TestEveryRunnerHandsCodeToTheAnalysis(t *testing.T) {
	d := defaultShellData()
	e := defaultEngine(t)
	for _, name := range d.runnerNames() {
		r := d.runners[name]
		words := []string{name}
		if len(r.subcommands) > 0 {
			words = append(words, r.subcommands[0])
		}
		for range r.skip {
			words = append(words, "x")
		}
		for _, code := range []struct{ argv, call string }{
			{`python3 -c 'import shutil; shutil.rmtree("/etc")'`, "shutil.rmtree"},
			{`node -e 'require("fs").rmSync("/etc", {recursive: true})'`, "fs.rmSync"},
			{`perl -e 'system("rm -rf /etc")'`, "system"},
		} {
			line := strings.Join(words, " ") + " " + code.argv
			if r.each {
				// Several arguments are read as the program and its
				// arguments, each argument as a line and all of them as
				// one: the code is found, and the line is refused.
				in := e.Build(Input{Action: "input", Program: "bash", Text: line})
				dec, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
				if in.Code == nil || !strings.Contains(strings.Join(in.Code.Names, " "), code.call) || err != nil || dec.Action != "deny" {
					t.Errorf("%q: code %+v, %s %s %v, want the call %s and a deny", line, in.Code, dec.Action, dec.Rule, err, code.call)
				}
			}
			if r.line || r.each || r.lines {
				line = strings.Join(words, " ") + ` "` + strings.ReplaceAll(code.argv, `"`, `\"`) + `"`
			}
			in := e.Build(Input{Action: "input", Program: "bash", Text: line})
			if in.Code == nil || !strings.Contains(strings.Join(in.Code.Names, " "), code.call) {
				t.Errorf("%q: code %+v, want the call %s", line, in.Code, code.call)
				continue
			}
			rms := 0
			for _, c := range in.Shell.Commands {
				if c.Name == "rm" {
					rms++
				}
			}
			if rms != 1 {
				t.Errorf("%q: %d rm commands, want 1: %+v", line, rms, in.Shell.Commands)
			}
			dec, err := e.Decide(context.Background(), Input{Action: "input", Program: "bash", Text: line})
			if err != nil || dec.Action != "deny" || dec.Rule != "fs.rm_protected" {
				t.Errorf("%q: %s %s, %v", line, dec.Action, dec.Rule, err)
			}
		}
	}
}

// TestCodeRunsWhereTheProgramRuns: the commands REPL code and a database
// client's commands amount to are resolved against the foreground
// program's directory, as a typed line's are.
func TestCodeRunsWhereTheProgramRuns(t *testing.T) {
	e := defaultEngine(t)
	for _, tc := range []struct{ program, text, want string }{
		{"python3", `import shutil; shutil.rmtree("build")`, "/srv/app/build"},
		{"node", `require("fs").rmSync("../data", {recursive: true})`, "/srv/data"},
		{"python3", `import os; os.system("rm -rf cache")`, "/srv/app/cache"},
		{"psql", `\! rm -rf dump`, "/srv/app/dump"},
		{"psql", `\o out.txt`, "/srv/app/out.txt"},
	} {
		in := e.Build(Input{Action: "input", Program: tc.program, Text: tc.text, Cwd: "/srv/app"})
		var got []string
		if in.Shell != nil {
			for _, c := range in.Shell.Commands {
				got = append(got, c.Paths...)
				for _, r := range c.Redirects {
					got = append(got, r.Path)
				}
			}
		}
		if !strings.Contains(strings.Join(got, " "), tc.want) {
			t.Errorf("%s %q: paths %q, want %s", tc.program, tc.text, got, tc.want)
		}
	}
}

// TestCodeFollowsTheBundlesRunners: the shell lines code hands to a shell
// are parsed with the bundle that judges them: a runner an operator adds
// runs its command in REPL code too.
func TestCodeFollowsTheBundlesRunners(t *testing.T) {
	files := map[string]string{}
	err := fs.WalkDir(policies.FS, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !(strings.HasSuffix(p, ".rego") || p == "data.json") || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		b, err := fs.ReadFile(policies.FS, p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(files["data.json"]), &data); err != nil {
		t.Fatal(err)
	}
	data["termgate"].(map[string]any)["runners"].(map[string]any)["mywrap"] = map[string]any{"options": []any{"-n"}}
	b, _ := json.Marshal(data)
	files["data.json"] = string(b)
	dir := t.TempDir()
	writeBundle(t, dir, files)
	custom, err := New(context.Background(), Source{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Input{
		{Action: "input", Program: "python3", Text: `import os; os.system("mywrap -n 1 rm -rf ~")`},
		{Action: "input", Program: "bash", Text: `node -e 'require("child_process").execSync("mywrap rm -rf ~")'`},
		{Action: "input", Program: "psql", Text: `\! mywrap rm -rf ~`},
	} {
		dec, err := custom.Decide(context.Background(), in)
		if err != nil || dec.Rule != "fs.rm_protected" {
			t.Errorf("%s %q with mywrap a runner: %s %s, %v", in.Program, in.Text, dec.Action, dec.Rule, err)
		}
		dec, err = defaultEngine(t).Decide(context.Background(), in)
		if err != nil || dec.Rule == "fs.rm_protected" {
			t.Errorf("%s %q without: %s %s, %v", in.Program, in.Text, dec.Action, dec.Rule, err)
		}
	}
}
