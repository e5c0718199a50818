package policy

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The input document is built as an OPA value directly: handing OPA a Go
// struct makes it round-trip the struct through JSON on every decision,
// which cost more than a third of a decision's time and most of its
// garbage. TestInputValueMatchesJSON keeps this in step with the JSON tags.
//
// What is the same in every document is shared rather than built again:
// the keys, null, true, empty strings, arrays and objects, the four path
// facts, and the strings a bundle's lists hold and name, alone or as an
// array of one (OPA never writes into an input value;
// TestDocumentsShareNothingMutable decides documents side by side to show
// it); false is left out, as the JSON leaves it out.
// What is built is cut from blocks of terms allocated a few at a time,
// and objects are put together on the stack: the collector's pace is set
// by what a decision allocates.

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
		"credentials", "path_facts", "protected", "sensitive", "leaves", "write_targets", "modes",
	} {
		m[k] = ast.StringTerm(k)
	}
	return m
}()

// factTerms are the path_facts values, indexed by leaves<<2 | protected<<1
// | sensitive; a fact that holds none is an empty object.
var factTerms = func() (t [8]*ast.Term) {
	for i := range t {
		var items [][2]*ast.Term
		for bit, k := range []string{"sensitive", "protected", "leaves"} {
			if i&(1<<bit) != 0 {
				items = append(items, [2]*ast.Term{keys[k], ast.InternedTerm(true)})
			}
		}
		t[i] = ast.InternedEmptyObject
		if len(items) > 0 {
			t[i] = ast.ObjectTerm(items...)
		}
	}
	return t
}()

// documentWords is what the gateway itself writes into documents: actions,
// redirection operators, the single characters that short options split
// into, and the paths most often named.
var documentWords = func() []string {
	v := []string{
		"input", "exec", "start", "connect", "keys",
		">", ">>", "<", "<<", "<<<", "<<-", "&>", "&>>", ">&", "<&", "<>", ">|", "<<heredoc>>",
		"~", "/", ".", "..", "-", "--",
	}
	for c := byte('!'); c <= '~'; c++ {
		v = append(v, string(c))
	}
	return v
}()

// termTable is the strings a bundle shares across its documents: the
// documentWords, the document's keys, and its lists' names and entries,
// each with the one-element array of it (a command's listed, a line's
// names, a flag). It is never written after it is made; each array holds
// exactly its one element (OPA's Array.Append writes into spare capacity).
type termTable map[string]sharedString

type sharedString struct{ str, single *ast.Term }

func newTermTable(data map[string]any) termTable {
	m := make(termTable, len(keys)+len(documentWords))
	add := func(s string) {
		if _, ok := m[s]; !ok && s != "" {
			t := keys[s]
			if t == nil {
				t = ast.StringTerm(s)
			}
			m[s] = sharedString{t, ast.ArrayTerm(t)}
		}
	}
	for k := range keys {
		add(k)
	}
	for _, s := range documentWords {
		add(s)
	}
	tg, _ := data["termgate"].(map[string]any)
	lists, _ := tg["lists"].(map[string]any)
	for name, l := range lists {
		add(name)
		arr, _ := l.([]any)
		for _, v := range arr {
			if s, ok := v.(string); ok && !strings.HasSuffix(name, "_substrings") {
				add(s)
			}
		}
	}
	return m
}

// builder builds one document.
type builder struct {
	shared termTable  // strings shared across documents, or nil
	block  []ast.Term // the block the next terms are cut from
}

// termBlock is how many terms a block holds: 480 bytes, one of the
// allocator's size classes. Blocks that doubled wasted more of their
// tails than the fewer allocations saved.
const termBlock = 20

// term is a new term of v, cut from the builder's block.
func (b *builder) term(v ast.Value) *ast.Term {
	if len(b.block) == cap(b.block) {
		b.block = make([]ast.Term, 0, termBlock)
	}
	b.block = append(b.block, ast.Term{Value: v})
	return &b.block[len(b.block)-1]
}

func (b *builder) str(s string) *ast.Term {
	if s == "" {
		return ast.InternedEmptyString
	}
	if t := b.shared[s].str; t != nil {
		return t
	}
	return b.term(ast.String(s))
}

// strs is a JSON array of strings; nil is null, as encoding/json has it.
func (b *builder) strs(ss []string) *ast.Term {
	switch {
	case ss == nil:
		return ast.InternedNullTerm
	case len(ss) == 0:
		return ast.InternedEmptyArray
	case len(ss) == 1:
		if t := b.shared[ss[0]].single; t != nil {
			return t
		}
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = b.str(s)
	}
	return b.term(ast.NewArray(ts...))
}

// pairs is an array of two-string arrays (the shell's modes); nil is
// null, as encoding/json has it.
func (b *builder) pairs(ps [][2]string) *ast.Term {
	switch {
	case ps == nil:
		return ast.InternedNullTerm
	case len(ps) == 0:
		return ast.InternedEmptyArray
	}
	ts := make([]*ast.Term, len(ps))
	for i, p := range ps {
		ts[i] = b.term(ast.NewArray(b.str(p[0]), b.str(p[1])))
	}
	return b.term(ast.NewArray(ts...))
}

// fields are an object's key, value pairs, gathered on the stack.
type fields struct {
	n  int
	kv [32][2]*ast.Term // the shell document has the most: 23 of 32
}

// add adds the pair; every key is one of keys. A false value is left
// out, as encoding/json leaves out the document's booleans (omitempty).
func (f *fields) add(k string, v *ast.Term) {
	key := keys[k]
	if key == nil {
		panic("policy: input key " + k + " is missing from keys")
	}
	f.addKey(key, v)
}

func (f *fields) addKey(key, v *ast.Term) {
	if v == ast.InternedBooleanFalse {
		return
	}
	f.kv[f.n] = [2]*ast.Term{key, v}
	f.n++
}

func (b *builder) object(f *fields) *ast.Term {
	return b.term(ast.NewObject(f.kv[:f.n]...))
}

// indexArrays are the arrays of one small index, [0] to [15], shared like
// the one-element arrays of a bundle's strings: each holds exactly its
// element (OPA's Array.Append writes into spare capacity).
var indexArrays = func() (a [16]*ast.Term) {
	for i := range a {
		a[i] = ast.ArrayTerm(ast.InternedTerm(i))
	}
	return a
}()

// indexes is an object of arrays of indexes (list_commands,
// name_commands); nil is null, as encoding/json has it.
func (b *builder) indexes(m map[string][]int) *ast.Term {
	if m == nil {
		return ast.InternedNullTerm
	}
	if len(m) == 0 {
		return ast.InternedEmptyObject
	}
	var buf [16][2]*ast.Term
	items := buf[:0]
	for k, is := range m {
		var v *ast.Term
		if len(is) == 1 && is[0] < len(indexArrays) {
			v = indexArrays[is[0]]
		} else {
			ts := make([]*ast.Term, len(is))
			for i, n := range is {
				ts[i] = ast.InternedTerm(n)
			}
			v = b.term(ast.NewArray(ts...))
		}
		items = append(items, [2]*ast.Term{b.str(k), v})
	}
	return b.term(ast.NewObject(items...))
}

// boolean returns OPA's shared true or false term: no allocation.
func boolean(b bool) *ast.Term { return ast.InternedTerm(b) }

// value is the input document, its strings all built anew.
func (in *Input) value() ast.Value { return in.document(nil) }

// document is the input document, sharing the terms of shared.
func (in *Input) document(shared termTable) ast.Value {
	b := &builder{shared: shared}
	var f fields
	f.add("action", b.str(in.Action))
	f.add("text", b.str(in.Text))
	f.add("program", b.str(in.Program))
	f.add("secret", boolean(in.Secret))
	f.add("program_listed", b.strs(in.ProgramListed))
	f.add("text_listed", b.strs(in.TextListed))
	var cf fields
	cf.add("name", b.str(in.Client.Name))
	cf.add("version", b.str(in.Client.Version))
	f.add("client", b.object(&cf))
	if in.Shell != nil {
		f.add("shell", b.shell(in.Shell))
	}
	if in.Code != nil {
		f.add("code", b.code(in.Code))
	}
	if in.SQL != nil {
		f.add("sql", b.sql(in.SQL))
	}
	if s := in.Session; s != nil {
		var sf fields
		sf.add("id", b.str(s.ID))
		sf.add("name", b.str(s.Name))
		sf.add("argv", b.strs(s.Argv))
		sf.add("cwd", b.str(s.Cwd))
		sf.add("profile", b.str(s.Profile))
		sf.add("confined", boolean(s.Confined))
		f.add("session", b.object(&sf))
	}
	if s := in.Start; s != nil {
		var sf fields
		sf.add("argv", b.strs(s.Argv))
		sf.add("cwd", b.str(s.Cwd))
		sf.add("env", b.strs(s.Env))
		sf.add("confined", boolean(s.Confined))
		f.add("start", b.object(&sf))
	}
	if t := in.Terminal; t != nil {
		var tf fields
		tf.add("reads_lines", boolean(t.ReadsLines))
		tf.add("judged", boolean(t.Judged))
		tf.add("echo", boolean(t.Echo))
		tf.add("ahead", boolean(t.Ahead))
		tf.add("readers", b.strs(t.Readers))
		f.add("terminal", b.object(&tf))
	}
	if in.Cwd != "" {
		f.add("cwd", b.str(in.Cwd))
	}
	if g := in.Gateway; g != nil {
		var gf fields
		gf.add("paths", b.strs(g.Paths))
		if g.Home != "" {
			gf.add("home", b.str(g.Home))
		}
		f.add("gateway", b.object(&gf))
	}
	if c := in.Connect; c != nil {
		var cf fields
		cf.add("host", b.str(c.Host))
		cf.add("port", ast.IntNumberTerm(c.Port))
		cf.add("program", b.str(c.Program))
		cf.add("via", b.str(c.Via))
		if c.Address != "" {
			cf.add("address", b.str(c.Address))
		}
		if c.AddressClass != "" {
			cf.add("address_class", b.str(c.AddressClass))
		}
		cf.add("resolved", boolean(c.Resolved))
		f.add("connect", b.object(&cf))
	}
	if in.Exec != nil {
		f.addKey(execKey, in.Exec.term(b)) // exec.go
	}
	return b.object(&f).Value
}

func (b *builder) shell(sh *Shell) *ast.Term {
	cmds := ast.InternedNullTerm
	if sh.Commands != nil {
		cs := make([]*ast.Term, len(sh.Commands))
		for i := range sh.Commands {
			cs[i] = b.command(&sh.Commands[i])
		}
		cmds = b.term(ast.NewArray(cs...))
	}
	var f fields
	f.add("commands", cmds)
	f.add("pipes", boolean(sh.Pipes))
	f.add("pipe_to_interpreter", boolean(sh.PipeToInterpreter))
	f.add("decode_to_interpreter", boolean(sh.DecodeToInterpreter))
	f.add("substitutions", boolean(sh.Substitutions))
	f.add("process_substitution", boolean(sh.ProcessSubstitution))
	f.add("eval", boolean(sh.Eval))
	f.add("background", boolean(sh.Background))
	f.add("recursive_functions", b.strs(sh.RecursiveFunctions))
	f.add("normalized", boolean(sh.Normalized))
	f.add("incomplete", boolean(sh.Incomplete))
	f.add("embedded", boolean(sh.Embedded))
	f.add("names", b.strs(sh.Names))
	f.add("listed", b.strs(sh.Listed))
	f.add("words_listed", b.strs(sh.WordsListed))
	f.add("dynamic", boolean(sh.Dynamic))
	f.add("write_targets", b.strs(sh.WriteTargets))
	f.add("modes", b.pairs(sh.Modes))
	f.add("list_commands", b.indexes(sh.ListCommands))
	f.add("name_commands", b.indexes(sh.NameCommands))
	if sh.ParseError != "" {
		f.add("parse_error", b.str(sh.ParseError))
	}
	if len(sh.Hosts) > 0 {
		f.add("hosts", b.strs(sh.Hosts))
	}
	if len(sh.GatewayRefs) > 0 {
		f.add("gateway_refs", b.strs(sh.GatewayRefs))
	}
	if len(sh.PathFacts) > 0 {
		f.add("path_facts", b.pathFacts(sh.PathFacts))
	}
	return b.object(&f)
}

func (b *builder) command(c *Command) *ast.Term {
	reds := ast.InternedNullTerm
	if c.Redirects != nil {
		rs := make([]*ast.Term, len(c.Redirects))
		for j, r := range c.Redirects {
			var rf fields
			rf.add("op", b.str(r.Op))
			rf.add("target", b.str(r.Target))
			if r.Path != "" {
				rf.add("path", b.str(r.Path))
			}
			rs[j] = b.object(&rf)
		}
		reds = b.term(ast.NewArray(rs...))
	}
	operands := b.strs(c.Operands)
	paths := operands // the engine shares the slice while no operand resolves elsewhere
	if len(c.Paths) != len(c.Operands) || len(c.Paths) > 0 && &c.Paths[0] != &c.Operands[0] || c.Paths == nil && c.Operands != nil {
		paths = b.strs(c.Paths)
	}
	var f fields
	f.add("name", b.str(c.Name))
	f.add("args", b.strs(c.Args))
	f.add("wrappers", b.strs(c.Wrappers))
	f.add("dynamic", boolean(c.Dynamic))
	f.add("redirects", reds)
	f.add("assigns", b.strs(c.Assigns))
	f.add("flags", b.strs(c.Flags))
	f.add("operands", operands)
	f.add("paths", paths)
	f.add("listed", b.strs(c.Listed))
	if c.Path != "" {
		f.add("path", b.str(c.Path))
	}
	if c.Cwd != "" {
		f.add("cwd", b.str(c.Cwd))
	}
	if c.Credentials != nil { // derived (a list, possibly empty), else absent
		f.add("credentials", b.strs(c.Credentials))
	}
	return b.object(&f)
}

func (b *builder) code(c *Code) *ast.Term {
	calls := ast.InternedNullTerm
	if c.Calls != nil {
		cs := make([]*ast.Term, len(c.Calls))
		for i, call := range c.Calls {
			var cf fields
			cf.add("name", b.str(call.Name))
			cf.add("args", b.strs(call.Args))
			cf.add("dynamic", boolean(call.Dynamic))
			cs[i] = b.object(&cf)
		}
		calls = b.term(ast.NewArray(cs...))
	}
	var f fields
	f.add("languages", b.strs(c.Languages))
	f.add("calls", calls)
	f.add("names", b.strs(c.Names))
	f.add("modules", b.strs(c.Modules))
	f.add("shell_commands", b.strs(c.ShellCommands))
	f.add("writes", b.strs(c.Writes))
	f.add("deletes", b.strs(c.Deletes))
	f.add("dynamic_calls", b.strs(c.DynamicCalls))
	f.add("dynamic", boolean(c.Dynamic))
	f.add("dynamic_shell", boolean(c.DynamicShell))
	f.add("reverse_shell", boolean(c.ReverseShell))
	f.add("incomplete", boolean(c.Incomplete))
	f.add("listed", b.strs(c.Listed))
	if c.ParseError != "" {
		f.add("parse_error", b.str(c.ParseError))
	}
	if len(c.Hosts) > 0 {
		f.add("hosts", b.strs(c.Hosts))
	}
	return b.object(&f)
}

func (b *builder) sql(q *SQL) *ast.Term {
	sts := ast.InternedNullTerm
	if q.Statements != nil {
		ts := make([]*ast.Term, len(q.Statements))
		for i, s := range q.Statements {
			var sf fields
			sf.add("text", b.str(s.Text))
			sf.add("verb", b.str(s.Verb))
			sf.add("where", boolean(s.Where))
			sf.add("classes", b.strs(s.Classes))
			if s.Object != "" {
				sf.add("object", b.str(s.Object))
			}
			ts[i] = b.object(&sf)
		}
		sts = b.term(ast.NewArray(ts...))
	}
	var f fields
	f.add("dialect", b.str(q.Dialect))
	f.add("statements", sts)
	f.add("classes", b.strs(q.Classes))
	f.add("incomplete", boolean(q.Incomplete))
	return b.object(&f)
}

// pathFacts is the path_facts object.
func (b *builder) pathFacts(m map[string]PathFact) *ast.Term {
	var buf [16][2]*ast.Term
	items := buf[:0]
	if len(m) > len(buf) {
		items = make([][2]*ast.Term, 0, len(m))
	}
	for w, f := range m {
		i := 0
		if f.Protected {
			i |= 2
		}
		if f.Sensitive {
			i |= 1
		}
		if f.Leaves {
			i |= 4
		}
		items = append(items, [2]*ast.Term{b.str(w), factTerms[i]})
	}
	return b.term(ast.NewObject(items...))
}
