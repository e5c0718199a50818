package policy

import (
	"os"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"mvdan.cc/sh/v3/syntax"
)

// Exec is a program a session's process asked the kernel to run (action
// "exec"), read by the gateway while the kernel held the exec: the
// policy's answer lets it run or fails it with EPERM.
//
// The engine judges it with the rules every command of a typed line is
// judged with: input.shell is built from the argv as a start's is
// (wrappers, runners, sh -c strings and find -exec followed; the code an
// interpreter is handed becomes input.code), the program
// named by input.program (what the executable is, not argv[0]: exec -a x
// rm is rm; a multi-call binary's applet), and every argument that is the
// session's home, or below it, written with ~ (rm -rf /home/u is judged
// as rm -rf ~). input.text is the argv as one shell-quoted line.
type Exec struct {
	Argv    []string `json:"argv"`    // as the kernel sees it: ~, globs and variables expanded
	Path    string   `json:"path"`    // the executable, resolved
	Cwd     string   `json:"cwd"`     // the process's working directory
	Parents []string `json:"parents"` // programs from the session's down to the one that asks
	// Line is the session's last judged input; LineConfirmed that a human
	// confirmed it. LineCommands are Line's commands (names and
	// arguments, the home as ~), derived by the engine when a human
	// confirmed it, so a rule can let through, without asking again, a
	// program of the line the human already approved.
	Line          string        `json:"line,omitempty"`
	LineConfirmed bool          `json:"line_confirmed,omitempty"`
	LineCommands  []LineCommand `json:"line_commands,omitempty"`
	// IdentifiedBy says how the program was told: path (its file's name),
	// inode (a hard link to a system program), content (a byte-for-byte
	// copy of one) or multi-call (argv[0] picks a multi-call binary's
	// applet).
	IdentifiedBy string `json:"identified_by,omitempty"`
	// Home is the session's home directory (when empty, gateway.home);
	// not part of the document.
	Home string `json:"-"`
	// Env is the environment the exec passes (NAME=value), when the
	// gateway read it; not part of the document (values may be secrets).
	// A confirmed line's variables ($T, ${T}) are expanded from it in
	// LineCommands, so that rm -rf "$T", confirmed, is the rm -rf
	// /x/scratch it runs.
	Env []string `json:"-"`
}

// LineCommand is one command of a confirmed line.
type LineCommand struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

// prepareExec builds what the rules read of an exec: the analysis a
// start's argv gets (parseArgv, with the bundle's data), from the
// process's working directory, the code an interpreter is handed
// adopted as a typed line's is.
func (in *Input) prepareExec(p *syntax.Parser, data *shellData) {
	x := in.Exec
	name := in.Program
	if name == "" {
		name = path.Base(x.Path)
	}
	if in.Program == "" {
		in.Program = name
	}
	if x.Argv == nil {
		x.Argv = []string{}
	}
	if x.Parents == nil {
		x.Parents = []string{}
	}
	home := x.Home
	if home == "" && in.Gateway != nil {
		home = in.Gateway.Home
	}
	cwd := ""
	if strings.HasPrefix(x.Cwd, "/") {
		cwd = homeRel(path.Clean(x.Cwd), home)
	}
	argv := append([]string{name}, x.Argv[min(1, len(x.Argv)):]...)
	sh := parseArgv(argv, data, cwd)
	if len(sh.Commands) > 0 && x.Path != "" {
		sh.Commands[0].Path = x.Path
	}
	homeArgs(&sh, home)
	in.Shell = &sh
	in.adoptCode()
	if in.Text == "" {
		in.Text = QuoteArgv(x.Argv)
	}
	if x.LineConfirmed && x.Line != "" && x.LineCommands == nil {
		line := parseShell(x.Line, p, data, "")
		expandArgs(&line, x.Env)
		homeArgs(&line, home)
		x.LineCommands = make([]LineCommand, 0, len(line.Commands))
		for _, c := range line.Commands {
			x.LineCommands = append(x.LineCommands, LineCommand{Name: c.Name, Args: c.Args})
		}
	}
}

// expandArgs expands the variables of every argument of sh from env
// ($NAME and ${NAME}); an argument with a variable env does not hold, or
// any other expansion, stays as written.
func expandArgs(sh *Shell, env []string) {
	if len(env) == 0 {
		return
	}
	vals := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	for i := range sh.Commands {
		c := &sh.Commands[i]
		for j, a := range c.Args {
			if !strings.Contains(a, "$") {
				continue
			}
			whole := true
			x := os.Expand(a, func(name string) string {
				v, ok := vals[name]
				whole = whole && ok
				return v
			})
			if whole {
				c.Args[j] = x
			}
		}
	}
}

// homeArgs writes the home directory as ~ in every argument and
// redirection target of sh: the home itself, a path below it, and the
// value of an option or assignment (--dir=/home/u/x, of=/home/u/x); and
// $HOME and ${HOME} (as a typed line spells them) too.
func homeArgs(sh *Shell, home string) {
	home = strings.TrimRight(home, "/")
	for i := range sh.Commands {
		c := &sh.Commands[i]
		for j, a := range c.Args {
			c.Args[j] = homeWord(a, home)
		}
		for j, r := range c.Redirects {
			c.Redirects[j].Target = homeWord(r.Target, home)
		}
	}
}

func homeWord(a, home string) string {
	if k, v, ok := strings.Cut(a, "="); ok && !strings.HasPrefix(a, "/") {
		if w := homePath(v, home); w != v {
			return k + "=" + w
		}
		return a
	}
	return homePath(a, home)
}

func homePath(p, home string) string {
	for _, h := range []string{"${HOME}", "$HOME", home} {
		if h == "" {
			continue
		}
		if p == h {
			return "~"
		}
		if rest, ok := strings.CutPrefix(p, h); ok && strings.HasPrefix(rest, "/") {
			return "~" + rest
		}
	}
	return p
}

// QuoteArgv writes an argv as one shell line, each word quoted where the
// shell would read it otherwise.
func QuoteArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(q)
	}
	return b.String()
}

// The exec document's keys, one term each, as value.go keeps the others.
var (
	execKey  = ast.StringTerm("exec")
	execKeys = func() map[string]*ast.Term {
		m := map[string]*ast.Term{}
		for _, k := range []string{"argv", "path", "cwd", "parents", "line", "line_confirmed", "line_commands", "identified_by", "name", "args"} {
			m[k] = ast.StringTerm(k)
		}
		return m
	}()
)

// term is the exec document as an OPA value, as encoding/json would
// write it (TestInputValueMatchesJSON), built by the document's builder.
func (x *Exec) term(b *builder) *ast.Term {
	var f fields
	f.addKey(execKeys["argv"], b.strs(x.Argv))
	f.addKey(execKeys["path"], b.str(x.Path))
	f.addKey(execKeys["cwd"], b.str(x.Cwd))
	f.addKey(execKeys["parents"], b.strs(x.Parents))
	if x.Line != "" {
		f.addKey(execKeys["line"], b.str(x.Line))
	}
	f.addKey(execKeys["line_confirmed"], boolean(x.LineConfirmed))
	if len(x.LineCommands) > 0 {
		cs := make([]*ast.Term, len(x.LineCommands))
		for i, c := range x.LineCommands {
			var cf fields
			cf.addKey(execKeys["name"], b.str(c.Name))
			cf.addKey(execKeys["args"], b.strs(c.Args))
			cs[i] = b.object(&cf)
		}
		f.addKey(execKeys["line_commands"], b.term(ast.NewArray(cs...)))
	}
	if x.IdentifiedBy != "" {
		f.addKey(execKeys["identified_by"], b.str(x.IdentifiedBy))
	}
	return b.object(&f)
}
