package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/termgate/termgate/policies"
)

// TestDerivedCode: the code_doc helper of helpers_test.rego derives names
// and listed from the calls and modules as the engine does, so the
// bundle's Rego tests see the code documents the engine builds.
func TestDerivedCode(t *testing.T) {
	helper, err := fs.ReadFile(policies.FS, "helpers_test.rego")
	if err != nil {
		t.Fatal(err)
	}
	b := defaultEngine(t).Bundle()
	pq, err := rego.New(rego.Query(`data.termgate_test.code_doc(input.calls, input.modules, {})`), rego.Module("helpers_test.rego", string(helper)),
		rego.Store(inmem.NewFromObject(b.data)), rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range loadCodeCorpus(t) {
		in := Input{Action: "input", Program: c.program, Text: c.text}
		in.Prepare()
		if in.Code == nil {
			continue
		}
		b.derive(&in, true)
		rs, err := pq.Eval(context.Background(), rego.EvalInput(map[string]any{"calls": in.Code.Calls, "modules": in.Code.Modules}))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q: helper: %v %v", c.text, rs, err)
		}
		got := rs[0].Expressions[0].Value.(map[string]any)
		h, _ := json.Marshal(map[string]any{"names": got["names"], "listed": got["listed"]})
		e, _ := json.Marshal(map[string]any{"names": in.Code.Names, "listed": in.Code.Listed})
		if !bytes.Equal(h, e) {
			t.Errorf("%q:\nhelper %s\nengine %s", c.text, h, e)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d inputs had code", checked)
	}
}

// TestCodeFacts: what the analysis reports of code, call by call.
func TestCodeFacts(t *testing.T) {
	for _, tc := range []struct {
		program, code string
		names         []string // calls, resolved
		shell         string   // the commands the code amounts to: name args…; …
		flags         string   // dynamic, dynamic_shell, reverse_shell, incomplete, parse_error
	}{
		{"python3", `import os as o; o.system("rm -rf /")`, []string{"os.system"}, "rm -rf /", ""},
		{"python3", `from shutil import rmtree as r; r('~/x')`, []string{"shutil.rmtree"}, "rm -r -- ~/x", ""},
		{"python3", `getattr(__import__('os'), 'system')('id')`, []string{"os.system"}, "id", ""},
		{"python3", `globals()['os'].system(x)`, []string{"os.system"}, "", "dynamic dynamic_shell"},
		{"python3", `os.kill(pid, 9)`, []string{"os.kill"}, "kill -9 $pid", ""},
		{"python3", `os.symlink('/etc/passwd', 'p')`, []string{"os.symlink"}, "ln -s -- /etc/passwd p", ""},
		{"python3", `os.open('/etc/x', os.O_WRONLY | os.O_CREAT)`, []string{"os.open"}, " >/etc/x", ""},
		{"python3", `open('/etc/x')`, []string{"open"}, "", ""},
		{"python3", `for x in y:`, nil, "", "incomplete"},
		{"python3", `subprocess.run(f"rm -rf {p}", shell=True)`, []string{"subprocess.run"}, "rm -rf $p", "dynamic_shell"},
		{"node", `const {spawnSync} = require("child_process"); spawnSync("rm", ["-rf", dir])`, []string{"child_process.spawnSync"}, "rm -rf $dir", ""},
		{"node", `import * as cp from 'child_process'; cp.execSync("id")`, []string{"child_process.execSync"}, "id", ""},
		{"node", `require('fs').promises.rm('/x', {recursive: true})`, []string{"fs.promises.rm"}, "rm -r -- /x", ""},
		{"node", `fs.renameSync('a', '/etc/b')`, []string{"fs.renameSync"}, "mv -- a /etc/b", ""},
		{"node", `vm.runInNewContext(code)`, []string{"vm.runInNewContext"}, "", "dynamic"},
		{"node", `const x = {`, nil, "", "incomplete"},
		{"node", "a b c", nil, "", ""},
		{"node", "fs.rmSync(a b)", nil, "", "parse_error"},
	} {
		in := Input{Action: "input", Program: tc.program, Text: tc.code}
		in.Prepare()
		if in.Code == nil {
			t.Errorf("%q: no code document", tc.code)
			continue
		}
		c := in.Code
		var cmds []string
		if in.Shell != nil {
			for _, cmd := range in.Shell.Commands {
				s := strings.Join(append([]string{cmd.Name}, cmd.Args...), " ")
				for _, r := range cmd.Redirects {
					s += " " + r.Op + r.Target
				}
				cmds = append(cmds, s)
			}
		}
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{c.Dynamic, "dynamic"}, {c.DynamicShell, "dynamic_shell"}, {c.ReverseShell, "reverse_shell"}, {c.Incomplete, "incomplete"}, {c.ParseError != "", "parse_error"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if !slices.Equal(c.Names, tc.names) && !(len(c.Names) == 0 && len(tc.names) == 0) || strings.Join(cmds, "; ") != tc.shell || strings.Join(flags, " ") != tc.flags {
			t.Errorf("%s %q:\n got names %q shell %q flags %q\nwant names %q shell %q flags %q", tc.program, tc.code, c.Names, strings.Join(cmds, "; "), flags, tc.names, tc.shell, tc.flags)
		}
	}
}

// TestSQLClassification: statements split and classified, with the
// dialects' quoting.
func TestSQLClassification(t *testing.T) {
	for _, tc := range []struct {
		dialect, text string
		want          string // verb[classes] per statement
	}{
		{"postgres", "SELECT 1; DROP TABLE t", "SELECT[] DROP[drop]"},
		{"postgres", "select ';'; delete from t where x = ';'", "SELECT[] DELETE[]"},
		{"postgres", "SELECT $f$ ; DROP TABLE x; $f$; TRUNCATE t", "SELECT[] TRUNCATE[truncate]"},
		{"postgres", "SELECT E'\\'; DROP TABLE x'", "SELECT[]"},
		{"postgres", "/* a /* nested */ ; DROP TABLE x */ SELECT 1", "SELECT[]"},
		{"mysql", "SELECT 'a\\'; DROP TABLE x'", "SELECT[]"},
		{"mysql", "SELECT `DROP` FROM t; # DROP TABLE x\nSELECT 2", "SELECT[] SELECT[]"},
		{"sqlite", "DELETE FROM t; .shell ls", "DELETE[delete_all] .shell[client_shell]"},
		{"postgres", "GRANT USAGE ON SCHEMA s TO PUBLIC", "GRANT[grant_public]"},
		{"postgres", "ALTER USER u CREATEROLE", "ALTER[superuser]"},
		{"postgres", "COPY (SELECT 1) TO STDOUT", "COPY[]"},
		{"postgres", "COPY t FROM '/etc/passwd'", "COPY[copy_file]"},
		{"mysql", "UPDATE t SET a = 1 LIMIT 1", "UPDATE[]"},
		{"postgres", `\copy t to 'out.csv'`, `\copy[client_write]`},
		{"postgres", `\! ls \\ \dt`, `\![client_shell] \dt[]`},
	} {
		q, _ := ParseSQL(tc.dialect, tc.text)
		var got []string
		for _, s := range q.Statements {
			got = append(got, s.Verb+"["+strings.Join(s.Classes, ",")+"]")
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.dialect, tc.text, strings.Join(got, " "), tc.want)
		}
	}
}

// TestCodeAndSQLDocumentsWithNulls: a caller's code and sql documents (as
// policy eval --jsonl reads them) with null lists are decided, not failed:
// the engine reads a null list as empty and derives the guards itself.
func TestCodeAndSQLDocumentsWithNulls(t *testing.T) {
	e := defaultEngine(t)
	for _, doc := range []string{
		`{"action":"input","program":"python3","code":{"calls":null,"modules":null,"languages":null}}`,
		`{"action":"input","program":"python3","code":{"calls":[{"name":"os.kill","args":null}],"dynamic_calls":["eval"]}}`,
		`{"action":"input","program":"psql","sql":{"statements":null}}`,
		`{"action":"input","program":"psql","sql":{"statements":[{"verb":"DROP","classes":null}],"classes":null}}`,
		`{"action":"input","program":"psql","sql":{"statements":[{"verb":"DROP","classes":["drop_database"]}],"classes":[]}}`,
	} {
		var in Input
		if err := json.Unmarshal([]byte(doc), &in); err != nil {
			t.Fatal(err)
		}
		d, err := e.Decide(context.Background(), in)
		if err != nil {
			t.Errorf("%s: %v", doc, err)
		}
		if strings.Contains(doc, "drop_database") && d.Rule != "sql.drop_database" || strings.Contains(doc, `"eval"`) && d.Rule != "code.dynamic" {
			t.Errorf("%s: %+v: the engine did not derive the guards", doc, d)
		}
	}
}

// TestCodeHosts: the hosts code names are its URLs' hosts and its string
// literals that are addresses or dotted names, canonical; a literal is
// found between two equal quotes whatever an apostrophe elsewhere opened.
func TestCodeHosts(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`urlopen("http://2852039166/x")`, "169.254.169.254"},
		{`connect(("0251.0376.0251.0376", 80))`, "169.254.169.254"},
		{"# it's\nconnect(('169.254.169.254', 80))", "169.254.169.254"},
		{`fetch("http://[::ffff:a9fe:a9fe]/")`, "169.254.169.254"},
		{`get({host: "Metadata.Google.Internal."})`, "metadata.google.internal"},
		{`print("see 169.254.169.254")`, ""},
		{`get("https://example.org/169.254.169.254")`, "example.org"},
		{`d["metadata"]; port = "80"; v = "3"`, ""},
		{`'unterminated 169.254.169.254`, ""},
	} {
		if got := strings.Join(codeHosts(tc.code), " "); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.code, got, tc.want)
		}
	}
}
