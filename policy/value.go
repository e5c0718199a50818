package policy

import "github.com/open-policy-agent/opa/v1/ast"

// The input document is built as an OPA value directly: handing OPA a Go
// struct makes it round-trip the struct through JSON on every decision,
// which cost more than a third of a decision's time and most of its
// garbage. TestInputValueMatchesJSON keeps this in step with the JSON tags.
//
// What is the same in every document is shared rather than built again:
// the keys, null, true, and empty strings and arrays (OPA never writes into
// an input value); false is left out, as the JSON leaves it out.

// keys are the input document's keys, one term each for the process.
var keys = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, k := range []string{
		"action", "text", "program", "secret", "program_listed", "text_listed", "client", "shell", "session", "start",
		"name", "version", "id", "argv", "cwd", "profile", "env", "confined",
		"commands", "pipes", "pipe_to_interpreter", "decode_to_interpreter", "substitutions",
		"process_substitution", "eval", "background", "recursive_functions", "normalized",
		"parse_error", "incomplete", "embedded", "names", "listed", "words_listed", "dynamic", "list_commands", "name_commands",
		"path", "args", "wrappers", "redirects", "assigns", "flags", "operands", "op", "target",
		"paths", "hosts", "gateway_refs", "gateway", "home",
		"code", "languages", "calls", "modules", "shell_commands", "writes", "deletes", "dynamic_calls",
		"dynamic_shell", "reverse_shell", "sql", "dialect", "statements", "classes", "verb", "object", "where",
		"terminal", "reads_lines", "judged", "echo", "ahead", "readers",
		"connect", "host", "port", "via", "address", "address_class", "resolved",
		"credentials", "path_facts", "protected", "sensitive", "write_targets",
	} {
		m[k] = ast.StringTerm(k)
	}
	return m
}()

func str(s string) *ast.Term {
	if s == "" {
		return ast.InternedEmptyString
	}
	return ast.StringTerm(s)
}

// strs is a JSON array of strings; nil is null, as encoding/json has it.
func strs(ss []string) *ast.Term {
	switch {
	case ss == nil:
		return ast.InternedNullTerm
	case len(ss) == 0:
		return ast.InternedEmptyArray
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = str(s)
	}
	return ast.ArrayTerm(ts...)
}

// indexesTerm is an object of arrays of indexes; nil is null, as
// encoding/json has it.
func indexesTerm(m map[string][]int) *ast.Term {
	if m == nil {
		return ast.InternedNullTerm
	}
	items := make([][2]*ast.Term, 0, len(m))
	for k, is := range m {
		ts := make([]*ast.Term, len(is))
		for i, n := range is {
			ts[i] = ast.InternedTerm(n)
		}
		items = append(items, [2]*ast.Term{str(k), ast.ArrayTerm(ts...)})
	}
	return ast.ObjectTerm(items...)
}

// obj builds an object from key, value pairs; every key is one of keys. A
// false value is left out, as encoding/json leaves out the document's
// booleans (omitempty).
func obj(kv ...any) *ast.Term {
	items := make([][2]*ast.Term, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k := keys[kv[i].(string)]
		if k == nil {
			panic("policy: input key " + kv[i].(string) + " is missing from keys")
		}
		v := kv[i+1].(*ast.Term)
		if v == ast.InternedBooleanFalse {
			continue
		}
		items = append(items, [2]*ast.Term{k, v})
	}
	return ast.ObjectTerm(items...)
}

// boolean returns OPA's shared true or false term: no allocation.
func boolean(b bool) *ast.Term { return ast.InternedTerm(b) }

func (in *Input) value() ast.Value {
	kv := []any{
		"action", str(in.Action), "text", str(in.Text), "program", str(in.Program),
		"secret", boolean(in.Secret), "program_listed", strs(in.ProgramListed), "text_listed", strs(in.TextListed),
		"client", obj("name", str(in.Client.Name), "version", str(in.Client.Version)),
	}
	if in.Shell != nil {
		kv = append(kv, "shell", in.Shell.term())
	}
	if in.Code != nil {
		kv = append(kv, "code", in.Code.term())
	}
	if in.SQL != nil {
		kv = append(kv, "sql", in.SQL.term())
	}
	if s := in.Session; s != nil {
		kv = append(kv, "session", obj("id", str(s.ID), "name", str(s.Name), "argv", strs(s.Argv), "cwd", str(s.Cwd), "profile", str(s.Profile), "confined", boolean(s.Confined)))
	}
	if s := in.Start; s != nil {
		kv = append(kv, "start", obj("argv", strs(s.Argv), "cwd", str(s.Cwd), "env", strs(s.Env), "confined", boolean(s.Confined)))
	}
	if t := in.Terminal; t != nil {
		kv = append(kv, "terminal", obj("reads_lines", boolean(t.ReadsLines), "judged", boolean(t.Judged), "echo", boolean(t.Echo),
			"ahead", boolean(t.Ahead), "readers", strs(t.Readers)))
	}
	if in.Cwd != "" {
		kv = append(kv, "cwd", str(in.Cwd))
	}
	if g := in.Gateway; g != nil {
		gkv := []any{"paths", strs(g.Paths)}
		if g.Home != "" {
			gkv = append(gkv, "home", str(g.Home))
		}
		kv = append(kv, "gateway", obj(gkv...))
	}
	if c := in.Connect; c != nil {
		ckv := []any{"host", str(c.Host), "port", ast.IntNumberTerm(c.Port), "program", str(c.Program), "via", str(c.Via)}
		if c.Address != "" {
			ckv = append(ckv, "address", str(c.Address))
		}
		if c.AddressClass != "" {
			ckv = append(ckv, "address_class", str(c.AddressClass))
		}
		ckv = append(ckv, "resolved", boolean(c.Resolved))
		kv = append(kv, "connect", obj(ckv...))
	}
	o := obj(kv...)
	if in.Exec != nil {
		o.Value.(ast.Object).Insert(execKey, in.Exec.term()) // exec.go
	}
	return o.Value
}

func (sh *Shell) term() *ast.Term {
	cmds := ast.InternedNullTerm
	if sh.Commands != nil {
		cs := make([]*ast.Term, len(sh.Commands))
		for i, c := range sh.Commands {
			cs[i] = c.term()
		}
		cmds = ast.ArrayTerm(cs...)
	}
	kv := []any{"commands", cmds, "pipes", boolean(sh.Pipes),
		"pipe_to_interpreter", boolean(sh.PipeToInterpreter), "decode_to_interpreter", boolean(sh.DecodeToInterpreter),
		"substitutions", boolean(sh.Substitutions), "process_substitution", boolean(sh.ProcessSubstitution),
		"eval", boolean(sh.Eval), "background", boolean(sh.Background),
		"recursive_functions", strs(sh.RecursiveFunctions), "normalized", boolean(sh.Normalized),
		"incomplete", boolean(sh.Incomplete), "embedded", boolean(sh.Embedded),
		"names", strs(sh.Names), "listed", strs(sh.Listed), "words_listed", strs(sh.WordsListed),
		"dynamic", boolean(sh.Dynamic), "write_targets", strs(sh.WriteTargets),
		"list_commands", indexesTerm(sh.ListCommands), "name_commands", indexesTerm(sh.NameCommands)}
	if sh.ParseError != "" {
		kv = append(kv, "parse_error", str(sh.ParseError))
	}
	if len(sh.Hosts) > 0 {
		kv = append(kv, "hosts", strs(sh.Hosts))
	}
	if len(sh.GatewayRefs) > 0 {
		kv = append(kv, "gateway_refs", strs(sh.GatewayRefs))
	}
	if len(sh.PathFacts) > 0 {
		kv = append(kv, "path_facts", pathFactsTerm(sh.PathFacts))
	}
	return obj(kv...)
}

func (c Command) term() *ast.Term {
	reds := ast.InternedNullTerm
	if c.Redirects != nil {
		rs := make([]*ast.Term, len(c.Redirects))
		for j, r := range c.Redirects {
			if r.Path != "" {
				rs[j] = obj("op", str(r.Op), "target", str(r.Target), "path", str(r.Path))
			} else {
				rs[j] = obj("op", str(r.Op), "target", str(r.Target))
			}
		}
		reds = ast.ArrayTerm(rs...)
	}
	operands := strs(c.Operands)
	paths := operands // the engine shares the slice while no operand resolves elsewhere
	if len(c.Paths) != len(c.Operands) || len(c.Paths) > 0 && &c.Paths[0] != &c.Operands[0] || c.Paths == nil && c.Operands != nil {
		paths = strs(c.Paths)
	}
	kv := []any{"name", str(c.Name), "args", strs(c.Args), "wrappers", strs(c.Wrappers),
		"dynamic", boolean(c.Dynamic), "redirects", reds, "assigns", strs(c.Assigns),
		"flags", strs(c.Flags), "operands", operands, "paths", paths, "listed", strs(c.Listed)}
	if c.Path != "" {
		kv = append(kv, "path", str(c.Path))
	}
	if c.Cwd != "" {
		kv = append(kv, "cwd", str(c.Cwd))
	}
	if c.Credentials != nil { // derived (a list, possibly empty), else absent
		kv = append(kv, "credentials", strs(c.Credentials))
	}
	return obj(kv...)
}

func (c *Code) term() *ast.Term {
	calls := ast.InternedNullTerm
	if c.Calls != nil {
		cs := make([]*ast.Term, len(c.Calls))
		for i, call := range c.Calls {
			cs[i] = obj("name", str(call.Name), "args", strs(call.Args), "dynamic", boolean(call.Dynamic))
		}
		calls = ast.ArrayTerm(cs...)
	}
	kv := []any{"languages", strs(c.Languages), "calls", calls, "names", strs(c.Names), "modules", strs(c.Modules),
		"shell_commands", strs(c.ShellCommands), "writes", strs(c.Writes), "deletes", strs(c.Deletes),
		"dynamic_calls", strs(c.DynamicCalls), "dynamic", boolean(c.Dynamic), "dynamic_shell", boolean(c.DynamicShell),
		"reverse_shell", boolean(c.ReverseShell), "incomplete", boolean(c.Incomplete), "listed", strs(c.Listed)}
	if c.ParseError != "" {
		kv = append(kv, "parse_error", str(c.ParseError))
	}
	if len(c.Hosts) > 0 {
		kv = append(kv, "hosts", strs(c.Hosts))
	}
	return obj(kv...)
}

func (q *SQL) term() *ast.Term {
	sts := ast.InternedNullTerm
	if q.Statements != nil {
		ts := make([]*ast.Term, len(q.Statements))
		for i, s := range q.Statements {
			kv := []any{"text", str(s.Text), "verb", str(s.Verb), "where", boolean(s.Where), "classes", strs(s.Classes)}
			if s.Object != "" {
				kv = append(kv, "object", str(s.Object))
			}
			ts[i] = obj(kv...)
		}
		sts = ast.ArrayTerm(ts...)
	}
	return obj("dialect", str(q.Dialect), "statements", sts, "classes", strs(q.Classes), "incomplete", boolean(q.Incomplete))
}

// pathFactsTerm is the path_facts object; a fact that holds neither is
// an empty object.
func pathFactsTerm(m map[string]PathFact) *ast.Term {
	items := make([][2]*ast.Term, 0, len(m))
	for w, f := range m {
		items = append(items, [2]*ast.Term{str(w), obj("protected", boolean(f.Protected), "sensitive", boolean(f.Sensitive))})
	}
	return ast.ObjectTerm(items...)
}
