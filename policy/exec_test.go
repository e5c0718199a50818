package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// execCases: programs the kernel holds, as the gateway reads them, and
// the decision the default bundle reaches: the rules a typed line is
// judged by, on the argv as the kernel sees it.
var execCases = []struct {
	name    string
	program string // what the executable is
	x       Exec
	action  string
	rule    string
}{
	{"rm of the home", "rm", Exec{Argv: []string{"rm", "-rf", "/home/u"}, Path: "/usr/bin/rm"}, "deny", "fs.rm_protected"},
	{"rm of the home, slash", "rm", Exec{Argv: []string{"rm", "-rf", "/home/u/"}, Path: "/usr/bin/rm"}, "deny", "fs.rm_protected"},
	{"exec -a: the file, not argv[0]", "rm", Exec{Argv: []string{"innocent", "-rf", "/home/u"}, Path: "/usr/bin/rm"}, "deny", "fs.rm_protected"},
	{"a shell's string", "dash", Exec{Argv: []string{"sh", "-c", "rm -rf /home/u"}, Path: "/usr/bin/dash"}, "deny", "fs.rm_protected"},
	{"find -exec", "find", Exec{Argv: []string{"find", "/home/u", "-maxdepth", "0", "-exec", "rm", "-rf", "{}", ";"}, Path: "/usr/bin/find"}, "deny", "fs.rm_protected"},
	{"below the home", "rm", Exec{Argv: []string{"rm", "-rf", "/home/u/project/build"}, Path: "/usr/bin/rm"}, "confirm", "fs.rm_recursive_outside"},
	{"a home that only starts the same", "rm", Exec{Argv: []string{"rm", "-rf", "/home/user2/x"}, Path: "/usr/bin/rm"}, "confirm", "fs.rm_recursive_outside"},
	{"dd of a disk", "dd", Exec{Argv: []string{"dd", "if=/dev/zero", "of=/dev/sda"}, Path: "/usr/bin/dd"}, "deny", "disk.raw_write"},
	{"dd into the home's rc", "dd", Exec{Argv: []string{"dd", "if=x", "of=/home/u/.bashrc"}, Path: "/usr/bin/dd"}, "deny", "file.sensitive_write"},
	{"the metadata endpoint", "curl", Exec{Argv: []string{"curl", "http://169.254.169.254/latest"}, Path: "/usr/bin/curl"}, "deny", "net.cloud_metadata"},
	{"true", "true", Exec{Argv: []string{"/bin/true"}, Path: "/usr/bin/true"}, "allow", "allow.default"},
	{"no argv at all", "true", Exec{Argv: nil, Path: "/usr/bin/true"}, "allow", "allow.default"},
	{"a compiler", "cc1", Exec{Argv: []string{"/usr/libexec/gcc/cc1", "-quiet", "main.c", "-o", "/tmp/cc.s"}, Path: "/usr/libexec/gcc/cc1"}, "allow", "allow.default"},
	{"sh -c \"$@\"", "dash", Exec{Argv: []string{"sh", "-c", `"$@"`, "sh", "make"}, Path: "/usr/bin/dash"}, "allow", "allow.default"},
	{"a copy of rm", "rm", Exec{Argv: []string{"./tidy", "notes"}, Path: "/w/tidy", IdentifiedBy: "content"}, "confirm", "exec.disguised_program"},
	{"a confirmed line's program", "rm", Exec{Argv: []string{"rm", "-rf", "/tmp/b1"}, Path: "/usr/bin/rm", Line: "rm -rf /tmp/b*", LineConfirmed: true}, "allow", "exec.confirmed_line"},
	{"$HOME in the confirmed line", "rm", Exec{Argv: []string{"rm", "-r", "/home/u/old"}, Path: "/usr/bin/rm", Line: `rm -r "$HOME/old"`, LineConfirmed: true}, "allow", "exec.confirmed_line"},
	{"a confirmed line's variable, as the exec's environment has it", "rm", Exec{Argv: []string{"rm", "-rf", "/tmp/scratch"}, Path: "/usr/bin/rm", Line: `rm -rf "$T"`, LineConfirmed: true, Env: []string{"PATH=/bin", "T=/tmp/scratch"}}, "allow", "exec.confirmed_line"},
	{"a confirmed line's variable, another value", "rm", Exec{Argv: []string{"rm", "-rf", "/tmp/precious"}, Path: "/usr/bin/rm", Line: `rm -rf "${T}"`, LineConfirmed: true, Env: []string{"T=/tmp/scratch"}}, "confirm", "fs.rm_recursive_outside"},
	{"a confirmed line's variable the exec does not have", "rm", Exec{Argv: []string{"rm", "-rf", "/tmp/scratch"}, Path: "/usr/bin/rm", Line: `rm -rf "$T"`, LineConfirmed: true}, "confirm", "fs.rm_recursive_outside"},
	{"a line judged, not confirmed", "rm", Exec{Argv: []string{"rm", "-rf", "/tmp/b1"}, Path: "/usr/bin/rm", Line: "rm -rf /tmp/b*"}, "confirm", "fs.rm_recursive_outside"},
}

func TestExecDecisions(t *testing.T) {
	e := defaultEngine(t)
	for _, c := range execCases {
		t.Run(c.name, func(t *testing.T) {
			x := c.x
			x.Home, x.Cwd, x.Parents = "/home/u", "/home/u/project", []string{"bash"}
			d, err := e.Decide(context.Background(), Input{Action: "exec", Program: c.program, Exec: &x})
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != c.action || d.Rule != c.rule {
				t.Fatalf("%q: %s by %s (%s), want %s by %s\ninput %+v", c.x.Argv, d.Action, d.Rule, d.Reason, c.action, c.rule, d.Input.Shell)
			}
			// The document keeps the argv as the kernel sees it; the
			// commands the rules read have ~.
			if !slices.Equal(d.Input.Exec.Argv, orEmpty(c.x.Argv)) {
				t.Errorf("exec.argv changed: %q", d.Input.Exec.Argv)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestExecDocument: what the engine builds of an exec, and that the OPA
// value it hands the policy is what the JSON says.
func TestExecDocument(t *testing.T) {
	in := Input{Action: "exec", Program: "rm", Exec: &Exec{
		Argv: []string{"x", "-rf", "--one-file-system", "/home/u", "of=/home/u/a", "/home/u2", "it's"}, Path: "/usr/bin/rm",
		Cwd: "/w", Parents: []string{"bash", "python3"}, Line: "rm -rf ~/a", LineConfirmed: true, IdentifiedBy: "path", Home: "/home/u/",
	}}
	in.Prepare()
	if got, want := in.Shell.Commands[0].Args, []string{"-rf", "--one-file-system", "~", "of=~/a", "/home/u2", "it's"}; !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	if in.Shell.Commands[0].Name != "rm" || in.Shell.Commands[0].Path != "/usr/bin/rm" {
		t.Errorf("command %+v", in.Shell.Commands[0])
	}
	if want := `x -rf --one-file-system /home/u 'of=/home/u/a' /home/u2 "it's"`; in.Text != want {
		t.Errorf("text %q, want %q", in.Text, want)
	}
	if len(in.Exec.LineCommands) != 1 || !slices.Equal(in.Exec.LineCommands[0].Args, []string{"-rf", "~/a"}) {
		t.Errorf("line commands %+v", in.Exec.LineCommands)
	}
	defaultEngine(t).Bundle().derive(&in, true)
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"/home/u/"`)) {
		t.Error("the home is in the document")
	}
	want, err := ast.ValueFromReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.value(); got.Compare(want) != 0 {
		t.Fatalf("\n got %v\nwant %v", got, want)
	}
}

// FuzzExecInput: any argv a process can pass (any bytes, any count) is
// judged without a panic or an error, and the engine's value of it is
// what its JSON says.
func FuzzExecInput(f *testing.F) {
	for _, c := range execCases {
		f.Add(strings.Join(c.x.Argv, "\x00"), c.program, c.x.Line)
	}
	f.Add("sh\x00-c\x00$(rm -rf ~)", "dash", "")
	f.Add("busybox\x00rm\x00-rf\x00/home/u", "busybox", "`")
	f.Add("\xff\xfe\x00--=\x00=/home/u", "", "rm -rf '")
	e := defaultEngine(f)
	f.Fuzz(func(t *testing.T, argv, program, line string) {
		x := &Exec{Argv: strings.Split(argv, "\x00"), Path: "/usr/bin/" + program, Home: "/home/u", Line: line, LineConfirmed: line != ""}
		d, err := e.Decide(context.Background(), Input{Action: "exec", Program: program, Exec: x})
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		switch d.Action {
		case "allow", "deny", "confirm":
		default:
			t.Fatalf("%q: action %q", argv, d.Action)
		}
	})
}
