package policy

import "github.com/open-policy-agent/opa/v1/ast"

// The input document is built as an OPA value directly: handing OPA a Go
// struct makes it round-trip the struct through JSON on every decision,
// which cost more than a third of a decision's time and most of its
// garbage. TestInputValueMatchesJSON keeps this in step with the JSON tags.

func str(s string) *ast.Term { return ast.StringTerm(s) }

// strs is a JSON array of strings; nil is null, as encoding/json has it.
func strs(ss []string) *ast.Term {
	if ss == nil {
		return ast.NullTerm()
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(ts...)
}

func obj(kv ...any) *ast.Term {
	items := make([][2]*ast.Term, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		items = append(items, [2]*ast.Term{ast.InternedTerm(kv[i].(string)), kv[i+1].(*ast.Term)})
	}
	return ast.ObjectTerm(items...)
}

// boolean returns OPA's shared true or false term: no allocation.
func boolean(b bool) *ast.Term { return ast.InternedTerm(b) }

func (in *Input) value() ast.Value {
	kv := []any{
		"action", str(in.Action), "text", str(in.Text), "program", str(in.Program),
		"secret", boolean(in.Secret), "program_listed", set(in.ProgramListed),
		"client", obj("name", str(in.Client.Name), "version", str(in.Client.Version)),
	}
	if in.Shell != nil {
		kv = append(kv, "shell", in.Shell.term())
	}
	if s := in.Session; s != nil {
		kv = append(kv, "session", obj("id", str(s.ID), "name", str(s.Name), "argv", strs(s.Argv), "cwd", str(s.Cwd), "profile", str(s.Profile)))
	}
	if s := in.Start; s != nil {
		kv = append(kv, "start", obj("argv", strs(s.Argv), "cwd", str(s.Cwd), "env", strs(s.Env)))
	}
	return obj(kv...).Value
}

func (sh *Shell) term() *ast.Term {
	cmds := ast.NullTerm()
	if sh.Commands != nil {
		cs := make([]*ast.Term, len(sh.Commands))
		for i, c := range sh.Commands {
			cs[i] = c.term()
		}
		cmds = ast.ArrayTerm(cs...)
	}
	return obj("commands", cmds, "pipes", boolean(sh.Pipes),
		"pipe_to_interpreter", boolean(sh.PipeToInterpreter), "decode_to_interpreter", boolean(sh.DecodeToInterpreter),
		"substitutions", boolean(sh.Substitutions), "process_substitution", boolean(sh.ProcessSubstitution),
		"eval", boolean(sh.Eval), "background", boolean(sh.Background),
		"recursive_functions", strs(sh.RecursiveFunctions), "normalized", boolean(sh.Normalized),
		"parse_error", str(sh.ParseError), "incomplete", boolean(sh.Incomplete), "embedded", boolean(sh.Embedded),
		"names", set(sh.Names), "listed", set(sh.Listed))
}

// set is an object of name → true; nil is null, as encoding/json has it.
func set(m map[string]bool) *ast.Term {
	if m == nil {
		return ast.NullTerm()
	}
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, [2]*ast.Term{ast.StringTerm(k), boolean(v)})
	}
	return ast.ObjectTerm(items...)
}

func (c Command) term() *ast.Term {
	reds := ast.NullTerm()
	if c.Redirects != nil {
		rs := make([]*ast.Term, len(c.Redirects))
		for j, r := range c.Redirects {
			rs[j] = obj("op", str(r.Op), "target", str(r.Target))
		}
		reds = ast.ArrayTerm(rs...)
	}
	return obj("name", str(c.Name), "path", str(c.Path), "args", strs(c.Args), "wrappers", strs(c.Wrappers),
		"dynamic", boolean(c.Dynamic), "redirects", reds, "assigns", strs(c.Assigns),
		"flags", set(c.Flags), "operands", strs(c.Operands))
}
