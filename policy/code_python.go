package policy

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	ts "github.com/tree-sitter/go-tree-sitter"
	tspython "github.com/tree-sitter/tree-sitter-python/bindings/go"
	"golang.org/x/text/unicode/norm"
)

// Python code is parsed with tree-sitter's Python grammar (see the package
// doc for why), and the tree walked for what the policy needs: imports and
// aliases, calls and their constant-folded arguments.

// pySinks maps a resolved Python function to what it does.
var pySinks = map[string]sinkKind{
	"os.system": sinkShell, "os.popen": sinkShell, "os.popen2": sinkShell, "os.popen3": sinkShell, "os.popen4": sinkShell,
	"subprocess.getoutput": sinkShell, "subprocess.getstatusoutput": sinkShell,
	"commands.getoutput": sinkShell, "commands.getstatusoutput": sinkShell, "platform.popen": sinkShell,
	"asyncio.create_subprocess_shell": sinkShell,
	"subprocess.run":                  sinkProc, "subprocess.call": sinkProc, "subprocess.check_call": sinkProc,
	"subprocess.check_output": sinkProc, "subprocess.Popen": sinkProc, "pty.spawn": sinkProc,
	"os.execv": sinkExecv, "os.execve": sinkExecv, "os.execvp": sinkExecv, "os.execvpe": sinkExecv,
	"os.posix_spawn": sinkExecv, "os.posix_spawnp": sinkExecv,
	"os.execl": sinkExecl, "os.execle": sinkExecl, "os.execlp": sinkExecl, "os.execlpe": sinkExecl,
	"os.spawnl": sinkSpawnl, "os.spawnle": sinkSpawnl, "os.spawnlp": sinkSpawnl, "os.spawnlpe": sinkSpawnl,
	"os.spawnv": sinkSpawnv, "os.spawnve": sinkSpawnv, "os.spawnvp": sinkSpawnv, "os.spawnvpe": sinkSpawnv,
	"asyncio.create_subprocess_exec": sinkArgs,
	"os.remove":                      sinkRemove, "os.unlink": sinkRemove, "os.rmdir": sinkRmdir, "os.removedirs": sinkRmdir,
	"shutil.rmtree": sinkRmtree, "pathlib.Path.unlink": sinkRemove, "pathlib.Path.rmdir": sinkRmdir,
	"open": sinkOpen, "io.open": sinkOpen, "codecs.open": sinkOpen, "os.open": sinkOpen, "pathlib.Path.open": sinkOpen,
	"pathlib.Path.write_text": sinkWrite, "pathlib.Path.write_bytes": sinkWrite, "pathlib.Path.touch": sinkWrite,
	"os.truncate": sinkTruncate, "os.mkfifo": sinkWrite, "os.mknod": sinkWrite,
	"shutil.copy": sinkCopy, "shutil.copy2": sinkCopy, "shutil.copyfile": sinkCopy, "shutil.copytree": sinkCopy,
	"shutil.move": sinkMove, "os.rename": sinkMove, "os.replace": sinkMove, "os.renames": sinkMove,
	"pathlib.Path.rename": sinkMove, "pathlib.Path.replace": sinkMove,
	"os.symlink": sinkLink, "os.link": sinkLink, "pathlib.Path.symlink_to": sinkLink,
	"os.chmod": sinkChmod, "os.lchmod": sinkChmod, "pathlib.Path.chmod": sinkChmod,
	"os.chown": sinkChown, "os.lchown": sinkChown, "shutil.chown": sinkChown,
	"os.kill": sinkKill, "os.killpg": sinkKillpg,
	"eval": sinkEval, "exec": sinkEval, "compile": sinkDynamic, "execfile": sinkDynamic,
	"runpy.run_path": sinkDynamic, "runpy.run_module": sinkDynamic, "code.interact": sinkDynamic,
	"pickle.loads": sinkDynamic, "pickle.load": sinkDynamic, "marshal.loads": sinkDynamic, "dill.loads": sinkDynamic,
	"socket.socket.connect": sinkConnect, "socket.create_connection": sinkConnect, "socket.socket.connect_ex": sinkConnect,
	"os.dup2": sinkDup, "os.dup": sinkDup,
}

// pyMethods: methods whose receiver the analysis cannot resolve (a name
// bound on an earlier line: `p = subprocess` then `p.run([…])`), known by
// their name alone. Only names no common library uses for something else.
var pyMethods = map[string]string{
	"system": "os.system", "popen": "os.popen", "getoutput": "subprocess.getoutput",
	"getstatusoutput": "subprocess.getstatusoutput", "check_output": "subprocess.check_output",
	"check_call": "subprocess.check_call", "Popen": "subprocess.Popen", "rmtree": "shutil.rmtree",
	"write_text": "pathlib.Path.write_text", "write_bytes": "pathlib.Path.write_bytes",
	"unlink": "pathlib.Path.unlink", "rmdir": "pathlib.Path.rmdir", "removedirs": "os.removedirs",
	"execv": "os.execv", "execve": "os.execve", "execvp": "os.execvp", "execl": "os.execl", "execlp": "os.execlp",
	"spawnl": "os.spawnl", "spawnv": "os.spawnv", "killpg": "os.killpg", "dup2": "os.dup2",
	"symlink_to": "pathlib.Path.symlink_to", "connect": "socket.socket.connect", "connect_ex": "socket.socket.connect_ex",
	"create_subprocess_shell": "asyncio.create_subprocess_shell", "create_subprocess_exec": "asyncio.create_subprocess_exec",
}

// pyDynamicModules: using these at all runs native code or code chosen at
// run time.
var pyDynamicModules = map[string]bool{"ctypes": true, "cffi": true, "_ctypes": true, "importlib.machinery": true}

// pyGrammar is what the walk needs of the grammar, looked up once, on
// first use (not at start: the sandbox launcher is this binary too): the
// language, node kinds by id, and field ids by name. (The walk reads a
// tree copied out of C in one call, tstree.go, and looks kinds and fields
// up by id.)
var pyGrammarOnce = sync.OnceValue(func() pyGrammarT {
	tsLibcAllocator()
	g := pyGrammarT{raw: tspython.Language(), fields: map[string]uint16{}}
	g.lang = ts.NewLanguage(g.raw)
	n := g.lang.NodeKindCount()
	g.kinds = make([]string, n)
	for id := uint32(0); id < n; id++ {
		g.kinds[id] = g.lang.NodeKindForId(uint16(id))
	}
	for _, f := range []string{"alias", "arguments", "attribute", "expression", "function", "left", "module_name",
		"name", "object", "operator", "right", "subscript", "value"} {
		g.fields[f] = g.lang.FieldIdForName(f)
	}
	return g
})

type pyGrammarT struct {
	lang   *ts.Language
	raw    unsafe.Pointer // the grammar's TSLanguage, for parseTS
	kinds  []string
	fields map[string]uint16
}

// pyKind is a node's kind.
func pyKind(n *tsNode) string {
	kinds := pyGrammarOnce().kinds
	if id := int(n.KindId()); id < len(kinds) {
		return kinds[id]
	}
	return ""
}

// pyVocabulary holds every name a call the analysis judges is resolved
// from: the last part of each function it knows, the modules, and the
// names through which code looks a function up at run time. Code that
// mentions none of them is not parsed.
var pyVocabulary = sync.OnceValue(func() map[string]bool {
	return vocabulary(pySinks, pyMethods, pyDynamicModules,
		"import", "getattr", "__import__", "import_module", "globals", "locals", "vars", "modules", "__builtins__",
		"__dict__", "__loader__", "__spec__", "__globals__", "__subclasses__", "__code__", "__closure__", "__getattribute__", "Path", "PosixPath", "PurePath", "PurePosixPath", "ctypes", "cffi")
})

// pyAnalysis walks one parsed Python program.
type pyAnalysis struct {
	d       *derived
	src     string            // the code parsed: a node's text is a slice of it
	aliases map[string]string // local name → what it is: "os", "os.system", "pathlib.Path"
	consts  map[string]value  // local name → a constant it was given
	star    []string          // modules imported with *
	nodes   int
	// argCache holds the calls' arguments read so far, by node.
	argCache map[*tsNode]*pyArgs
}

// maxNodes bounds the nodes of a tree the analysis visits, and maxNest how
// deep it follows them: hostile input must not make a decision slow.
const (
	maxNodes = 20000
	maxNest  = 200
)

// analysePython analyses Python code at depth into d.
func analysePython(d *derived, code string) {
	if len(code) > maxCode {
		code = code[:maxCode]
		d.code.ParseError = "the code is longer than the gateway analyses"
	}
	code = dedent(code)
	if !mentionsAny(code, pyVocabulary()) {
		// No name the analysis resolves a call to, or builds one from,
		// is in the code: the parse could find nothing (1+1, print(x),
		// [x*2 for x in y]). A name bound on an earlier line resolves to
		// nothing the tables know either.
		pyIncomplete(d, code)
		return
	}
	root := parseTS(pyGrammarOnce().raw, code).root()
	if root == nil {
		// No tree (the parser gave up after parseTimeout): judged on
		// what the lexical scan finds, as code that does not parse.
		if d.code.ParseError == "" {
			d.code.ParseError = "the Python parser gave up on the code"
		}
		d.code.Modules = append(d.code.Modules, identifiers(code)...)
		shellOut(&d.sh, code, d.depth+1)
		return
	}
	a := &pyAnalysis{d: d, src: code, aliases: map[string]string{}, consts: map[string]value{}}
	a.walk(root, 0)
	if root.HasError() {
		// Unfinished code runs nothing yet, and code that does not parse
		// nothing at all; both are judged on what can be seen all the same
		// (the REPL runs the whole statement once it is finished): what
		// the tree lost in its error nodes, the lexical scan still finds,
		// module names and strings handed to a shell.
		if !pyIncomplete(d, code) && d.code.ParseError == "" {
			d.code.ParseError = "the Python code does not parse"
		}
		d.code.Modules = append(d.code.Modules, identifiers(code)...)
		shellOut(&d.sh, code, d.depth+1)
	}
}

// pyIncomplete marks code the REPL would wait on (an open bracket, string
// or block) and reports whether it did.
func pyIncomplete(d *derived, code string) bool {
	t := strings.TrimRight(code, " \t\r\n")
	open := 0
	inStr := byte(0)
	triple := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case inStr != 0:
			switch {
			case c == '\\':
				i++
			case c == inStr && triple && strings.HasPrefix(t[i:], strings.Repeat(string(c), 3)):
				inStr, triple = 0, false
				i += 2
			case c == inStr && !triple:
				inStr = 0
			case c == '\n' && !triple:
				inStr = 0
			}
		case c == '#':
			for i < len(t) && t[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			inStr = c
			if strings.HasPrefix(t[i:], strings.Repeat(string(c), 3)) {
				triple = true
				i += 2
			}
		case c == '(' || c == '[' || c == '{':
			open++
		case c == ')' || c == ']' || c == '}':
			open--
		}
	}
	if open > 0 || triple && inStr != 0 || strings.HasSuffix(t, ":") || strings.HasSuffix(t, "\\") {
		d.code.Incomplete = true
		return true
	}
	return false
}

// dedent removes the indentation every line shares: a line typed inside a
// block (`    os.system(…)`) is judged on its own.
func dedent(code string) string {
	lines := strings.Split(code, "\n")
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		switch {
		case first:
			prefix, first = ind, false
		default:
			for !strings.HasPrefix(ind, prefix) {
				prefix = prefix[:len(prefix)-1]
			}
		}
	}
	if prefix == "" {
		return code
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(lines, "\n")
}

// identifiers are the dotted names of code, found lexically (for code that
// does not parse).
func identifiers(code string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(code, func(r rune) bool {
		return !(r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r > 127)
	}) {
		f = norm.NFKC.String(strings.Trim(f, "."))
		if f == "" || '0' <= f[0] && f[0] <= '9' {
			continue
		}
		root, _, _ := strings.Cut(f, ".")
		out = addOnce(out, root)
		if len(out) > 200 {
			break
		}
	}
	return out
}

func (a *pyAnalysis) text(n *tsNode) string {
	s, e := n.StartByte(), n.EndByte()
	if s > e || e > uint(len(a.src)) {
		return ""
	}
	return a.src[s:e]
}

// walk visits every node once, in source order: an import or assignment
// is seen before the calls that follow it.
func (a *pyAnalysis) walk(n *tsNode, nest int) {
	if n == nil || nest > maxNest {
		return
	}
	a.nodes++
	if a.nodes > maxNodes {
		return
	}
	switch pyKind(n) {
	case "import_statement":
		a.importStmt(n)
		return
	case "import_from_statement":
		a.importFrom(n)
		return
	case "assignment":
		a.assignment(n)
	case "call":
		a.callNode(n)
	case "attribute", "identifier":
		a.reference(n)
	case "subscript":
		a.subscript(n)
	}
	// Only named nodes matter; the punctuation between them is skipped.
	count := n.NamedChildCount()
	for i := uint(0); i < count; i++ {
		a.walk(n.NamedChild(i), nest+1)
	}
}

// dotted is the text of a dotted_name, NFKC-folded as Python folds
// identifiers.
func (a *pyAnalysis) name(n *tsNode) string {
	if n == nil {
		return ""
	}
	t := a.text(n)
	if !isASCII(t) {
		t = norm.NFKC.String(t)
	}
	return strings.Join(strings.Fields(t), "")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (a *pyAnalysis) importStmt(n *tsNode) {
	for i := uint(0); i < n.NamedChildCount(); i++ {
		c := n.NamedChild(i)
		switch pyKind(c) {
		case "dotted_name":
			mod := a.name(c)
			root, _, _ := strings.Cut(mod, ".")
			a.aliases[root] = root
			a.module(mod)
		case "aliased_import":
			mod := a.name(c.ChildByFieldId(pyGrammarOnce().fields["name"]))
			if al := a.name(c.ChildByFieldId(pyGrammarOnce().fields["alias"])); al != "" {
				a.aliases[al] = mod
			}
			a.module(mod)
		}
	}
}

func (a *pyAnalysis) importFrom(n *tsNode) {
	mod := a.name(n.ChildByFieldId(pyGrammarOnce().fields["module_name"]))
	a.module(mod)
	for i := uint(0); i < n.NamedChildCount(); i++ {
		c := n.NamedChild(i)
		if a.isModuleName(n, c) {
			continue
		}
		switch pyKind(c) {
		case "dotted_name":
			name := a.name(c)
			a.aliases[name] = mod + "." + name
			a.module(mod + "." + name)
		case "aliased_import":
			name := a.name(c.ChildByFieldId(pyGrammarOnce().fields["name"]))
			if al := a.name(c.ChildByFieldId(pyGrammarOnce().fields["alias"])); al != "" {
				a.aliases[al] = mod + "." + name
			}
			a.module(mod + "." + name)
		case "wildcard_import":
			a.star = append(a.star, mod)
		}
	}
}

func (a *pyAnalysis) isModuleName(stmt, c *tsNode) bool {
	m := stmt.ChildByFieldId(pyGrammarOnce().fields["module_name"])
	return m != nil && m.StartByte() == c.StartByte() && m.EndByte() == c.EndByte()
}

// module records a module the code names, and flags the modules whose use
// runs native code.
func (a *pyAnalysis) module(mod string) {
	if mod == "" {
		return
	}
	a.d.code.Modules = append(a.d.code.Modules, mod)
	root, _, _ := strings.Cut(mod, ".")
	if pyDynamicModules[root] || pyDynamicModules[mod] {
		a.d.dynamic("import " + mod)
	}
}

// assignment records aliases (s = os.system, o = __import__('os')) and
// constants (p = '/etc').
func (a *pyAnalysis) assignment(n *tsNode) {
	left, right := n.ChildByFieldId(pyGrammarOnce().fields["left"]), n.ChildByFieldId(pyGrammarOnce().fields["right"])
	if left == nil || right == nil || pyKind(left) != "identifier" {
		return
	}
	name := a.name(left)
	if q := a.resolve(right); q != "" {
		a.aliases[name] = q
		delete(a.consts, name)
		if q == "pathlib.Path" && pyKind(right) == "call" {
			// p = Path('/etc/x'): p is a path object and its path
			if v := a.eval(right, 0); v.known {
				a.consts[name] = v
			}
		}
		return
	}
	delete(a.aliases, name)
	if v := a.eval(right, 0); v.known {
		a.consts[name] = v
	} else {
		delete(a.consts, name)
	}
}

// reference notes a name of a module that runs native code, wherever it
// stands (ctypes.CDLL, a bare ctypes).
func (a *pyAnalysis) reference(n *tsNode) {
	if pyKind(n) == "identifier" {
		if q := a.aliases[a.name(n)]; q != "" {
			root, _, _ := strings.Cut(q, ".")
			if pyDynamicModules[root] {
				a.d.dynamic(q)
			}
		}
		switch a.name(n) {
		case "__builtins__", "__loader__", "__spec__":
			a.d.dynamic(a.name(n))
		}
		return
	}
	if attr := n.ChildByFieldId(pyGrammarOnce().fields["attribute"]); attr != nil {
		switch a.name(attr) {
		case "__dict__", "__globals__", "__subclasses__", "__builtins__", "__code__", "__closure__", "__getattribute__":
			// introspection that reaches functions by a name the code
			// holds as data: ().__class__.__base__.__subclasses__()…
			a.d.dynamic(clip(a.text(n)))
		}
	}
}

// subscript flags lookups of functions by a name known at run time:
// globals()[…], vars(os)[…], os.__dict__[…], sys.modules[…].
func (a *pyAnalysis) subscript(n *tsNode) {
	v := n.ChildByFieldId(pyGrammarOnce().fields["value"])
	if v == nil {
		return
	}
	switch {
	case pyKind(v) == "call":
		switch a.resolveName(v.ChildByFieldId(pyGrammarOnce().fields["function"])) {
		case "globals", "locals", "vars":
			a.d.dynamic(a.text(n))
		}
	case a.resolveName(v) == "sys.modules":
		a.d.dynamic(a.text(n))
	}
}

// resolveName is the qualified name an expression names, when it is a name
// or attribute chain (os.path.join, an alias of one), or "".
func (a *pyAnalysis) resolveName(n *tsNode) string {
	if n == nil {
		return ""
	}
	switch pyKind(n) {
	case "identifier":
		name := a.name(n)
		if q, ok := a.aliases[name]; ok {
			return q
		}
		switch name {
		case "Path", "PosixPath", "PurePath", "PurePosixPath":
			// pathlib's classes, imported on an earlier line
			return "pathlib." + name
		}
		for _, m := range a.star {
			if _, ok := pySinks[m+"."+name]; ok {
				return m + "." + name
			}
		}
		return name
	case "attribute":
		obj := a.resolve(n.ChildByFieldId(pyGrammarOnce().fields["object"]))
		attr := a.name(n.ChildByFieldId(pyGrammarOnce().fields["attribute"]))
		if obj == "" || attr == "" {
			return ""
		}
		return obj + "." + attr
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return a.resolve(n.NamedChild(0))
		}
	}
	return ""
}

// resolve is resolveName, and also what a call that returns a module or
// a function names: __import__('os'), importlib.import_module('os'),
// getattr(os, 'system'), pathlib.Path(p) (as pathlib.Path, for its
// methods).
func (a *pyAnalysis) resolve(n *tsNode) string {
	if n == nil {
		return ""
	}
	if pyKind(n) != "call" {
		return a.resolveName(n)
	}
	fn := a.resolveName(n.ChildByFieldId(pyGrammarOnce().fields["function"]))
	args := a.argNodes(n)
	switch fn {
	case "__import__", "importlib.import_module", "builtins.__import__":
		if len(args) > 0 {
			if v := a.eval(args[0], 0); v.known {
				a.module(v.s)
				return v.s
			}
		}
	case "getattr", "builtins.getattr":
		if len(args) >= 2 {
			obj := a.resolve(args[0])
			if v := a.eval(args[1], 0); v.known && obj != "" {
				return obj + "." + v.s
			}
		}
	case "pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath", "pathlib.PurePosixPath", "pathlib.Path.home", "pathlib.Path.cwd",
		"pathlib.Path.expanduser", "pathlib.Path.resolve", "pathlib.Path.absolute", "pathlib.Path.joinpath",
		"pathlib.Path.with_name", "pathlib.Path.with_suffix":
		return "pathlib.Path"
	}
	return ""
}

// pyArgs are a call's arguments: positional, and keyword by name.
type pyArgs struct {
	pos []*tsNode
	kw  map[string]*tsNode
}

// args reads a call's arguments once.
func (a *pyAnalysis) args(call *tsNode) *pyArgs {
	if c, ok := a.argCache[call]; ok {
		return c
	}
	c := &pyArgs{}
	if a.argCache == nil {
		a.argCache = map[*tsNode]*pyArgs{}
	}
	a.argCache[call] = c
	al := call.ChildByFieldId(pyGrammarOnce().fields["arguments"])
	if al == nil {
		return c
	}
	n := al.NamedChildCount()
	for i := uint(0); i < n && i < 64; i++ {
		arg := al.NamedChild(i)
		switch pyKind(arg) {
		case "keyword_argument":
			if c.kw == nil {
				c.kw = map[string]*tsNode{}
			}
			c.kw[a.name(arg.ChildByFieldId(pyGrammarOnce().fields["name"]))] = arg.ChildByFieldId(pyGrammarOnce().fields["value"])
		case "dictionary_splat", "comment":
		default:
			c.pos = append(c.pos, arg)
		}
	}
	return c
}

// argNodes are a call's positional arguments.
func (a *pyAnalysis) argNodes(call *tsNode) []*tsNode { return a.args(call).pos }

// kwarg is the value of a call's keyword argument, or nil.
func (a *pyAnalysis) kwarg(call *tsNode, name string) *tsNode { return a.args(call).kw[name] }

// callNode judges one call.
func (a *pyAnalysis) callNode(n *tsNode) {
	fnNode := n.ChildByFieldId(pyGrammarOnce().fields["function"])
	if fnNode == nil {
		return
	}
	name := a.resolve(fnNode)
	args := a.argNodes(n)
	// A method of a path object: Path(p).write_text(…) writes p.
	var self *tsNode
	if pyKind(fnNode) == "attribute" {
		obj := fnNode.ChildByFieldId(pyGrammarOnce().fields["object"])
		if strings.HasPrefix(name, "pathlib.Path.") {
			self = a.pathOf(obj)
		}
	}
	kind, ok := pySinks[name]
	if !ok && pyKind(fnNode) == "attribute" {
		// An unresolved receiver: known by the method's name alone.
		if q, found := pyMethods[a.name(fnNode.ChildByFieldId(pyGrammarOnce().fields["attribute"]))]; found {
			name, kind, ok = q, pySinks[q], true
			if strings.HasPrefix(q, "pathlib.Path.") {
				self = fnNode.ChildByFieldId(pyGrammarOnce().fields["object"])
			}
		}
	}
	switch name {
	case "getattr", "builtins.getattr":
		if len(args) >= 2 && !a.eval(args[1], 0).known {
			a.d.dynamic(a.text(n))
		}
		return
	case "__import__", "importlib.import_module", "builtins.__import__":
		if len(args) > 0 && !a.eval(args[0], 0).known {
			a.d.dynamic(a.text(n))
		}
		return
	case "setattr", "delattr":
		return
	}
	if !ok {
		root, _, _ := strings.Cut(name, ".")
		if pyDynamicModules[root] {
			a.d.call(name, sinkDynamic, nil, nil, callOpts{})
		}
		return
	}
	var vals []value
	var lists [][]value
	if self != nil {
		vals = append(vals, a.eval(self, 0))
		lists = append(lists, nil)
	}
	for _, arg := range args {
		l := a.list(arg)
		if l != nil {
			vals = append(vals, joinValues(l))
		} else {
			vals = append(vals, a.eval(arg, 0))
		}
		lists = append(lists, l)
	}
	opts := callOpts{}
	if sh := a.kwarg(n, "shell"); sh != nil && a.text(sh) != "False" && a.text(sh) != "0" {
		opts.shell = true
	}
	for _, k := range []string{"stdin", "stdout", "stderr"} {
		if v := a.kwarg(n, k); v != nil && strings.Contains(a.text(v), "fileno") {
			opts.socketStreams = true
		}
	}
	if kind == sinkOpen {
		opts.writes = a.openWrites(name, n, vals, self != nil)
	}
	if kind == sinkEval {
		opts.analyse = func(code string) {
			sub := newDerived(&a.d.sh, "python", a.d.depth+1)
			analysePython(sub, code)
			c, sh := sub.result()
			a.d.code.merge(&c)
			mergeFlags(&a.d.sh, &sh)
			a.d.sh.Commands = append(a.d.sh.Commands, sh.Commands...)
		}
	}
	if kind == sinkProc && len(lists) > 0 && lists[0] == nil && len(vals) > 0 && !opts.shell && name != "pty.spawn" {
		// subprocess.run("prog") without shell=True runs the program of
		// that name; judged as the line it reads as all the same.
		opts.shell = false
	}
	a.d.call(name, kind, vals, lists, opts)
}

// pathOf is the path a pathlib.Path expression stands for: the argument of
// Path(p), or the expression itself.
func (a *pyAnalysis) pathOf(n *tsNode) *tsNode { return n }

// openWrites: the open mode writes (w, a, x, +; os.open's O_WRONLY,
// O_RDWR, O_CREAT, O_APPEND, O_TRUNC). A mode known only at run time
// counts as writing.
func (a *pyAnalysis) openWrites(name string, call *tsNode, vals []value, method bool) bool {
	at := 1
	if method {
		at = 1 // Path.open(mode): the path is vals[0], the mode vals[1]
	}
	var mode value
	if m := a.kwarg(call, "mode"); m != nil {
		mode = a.eval(m, 0)
	} else if m := a.kwarg(call, "flags"); m != nil {
		mode = a.eval(m, 0)
	} else if at < len(vals) {
		mode = vals[at]
	} else {
		return false // open(p): read
	}
	if name == "os.open" {
		return !mode.known || strings.Contains(mode.s, "WRONLY") ||
			strings.Contains(mode.s, "RDWR") || strings.Contains(mode.s, "CREAT") ||
			strings.Contains(mode.s, "APPEND") || strings.Contains(mode.s, "TRUNC")
	}
	return !mode.known || strings.ContainsAny(mode.s, "wax+")
}

// list is the items of a list or tuple literal, folded, or nil.
func (a *pyAnalysis) list(n *tsNode) []value {
	if n == nil {
		return nil
	}
	switch pyKind(n) {
	case "list", "tuple":
	case "identifier":
		return nil
	default:
		return nil
	}
	out := []value{}
	for i := uint(0); i < n.NamedChildCount() && i < 256; i++ {
		c := n.NamedChild(i)
		if pyKind(c) == "comment" {
			continue
		}
		if pyKind(c) == "list_splat" {
			out = append(out, unknownValue(a.text(c)))
			continue
		}
		out = append(out, a.eval(c, 0))
	}
	return out
}

// eval constant-folds an expression to a string: literals, f-strings,
// concatenation, % and .format with constants, os.path.join, the home
// directory in its spellings (as ~), constants bound earlier. Anything
// else is a run-time value.
func (a *pyAnalysis) eval(n *tsNode, nest int) value {
	if n == nil {
		return unknownValue("")
	}
	if nest > 32 {
		return unknownValue(a.text(n))
	}
	switch pyKind(n) {
	case "string":
		return a.str(n, nest)
	case "concatenated_string":
		var vs []value
		for i := uint(0); i < n.NamedChildCount(); i++ {
			vs = append(vs, a.eval(n.NamedChild(i), nest+1))
		}
		return concat(vs...)
	case "integer":
		t := strings.ReplaceAll(a.text(n), "_", "")
		if v, err := strconv.ParseInt(t, 0, 64); err == nil {
			return known(strconv.FormatInt(v, 10))
		}
		return known(t)
	case "identifier":
		name := a.name(n)
		if v, ok := a.consts[name]; ok {
			return v
		}
		return unknownValue(name)
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return a.eval(n.NamedChild(0), nest+1)
		}
	case "binary_operator":
		op := n.ChildByFieldId(pyGrammarOnce().fields["operator"])
		l, r := n.ChildByFieldId(pyGrammarOnce().fields["left"]), n.ChildByFieldId(pyGrammarOnce().fields["right"])
		switch a.text(op) {
		case "+":
			return concat(a.eval(l, nest+1), a.eval(r, nest+1))
		case "%":
			return a.percent(a.eval(l, nest+1), r, nest)
		case "/":
			if strings.HasPrefix(a.resolve(l), "pathlib.Path") || a.isPath(l) {
				return joinPath([]value{a.eval(l, nest+1), a.eval(r, nest+1)})
			}
		}
	case "attribute":
		switch a.resolveName(n) {
		case "signal.SIGKILL":
			return known("KILL")
		case "signal.SIGTERM":
			return known("TERM")
		}
		q := a.resolveName(n)
		if strings.HasPrefix(q, "signal.SIG") {
			return known(strings.TrimPrefix(q, "signal.SIG"))
		}
	case "subscript":
		// os.environ['HOME']
		if a.resolveName(n.ChildByFieldId(pyGrammarOnce().fields["value"])) == "os.environ" {
			if k := a.eval(n.ChildByFieldId(pyGrammarOnce().fields["subscript"]), nest+1); k.known && homeVar(k.s) {
				return known("~")
			}
		}
	case "call":
		return a.evalCall(n, nest)
	}
	return unknownValue(a.text(n))
}

func (a *pyAnalysis) isPath(n *tsNode) bool {
	return n != nil && pyKind(n) == "call" && strings.HasPrefix(a.resolve(n), "pathlib.Path")
}

func (a *pyAnalysis) evalCall(n *tsNode, nest int) value {
	fnNode := n.ChildByFieldId(pyGrammarOnce().fields["function"])
	fn := a.resolveName(fnNode)
	args := a.argNodes(n)
	arg := func(i int) value {
		if i < len(args) {
			return a.eval(args[i], nest+1)
		}
		return unknownValue("")
	}
	switch fn {
	case "os.path.expanduser", "str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
		"pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath", "pathlib.PurePosixPath", "os.fsencode", "os.fsdecode":
		if len(args) == 0 {
			return known(".")
		}
		return arg(0)
	case "os.path.join", "posixpath.join":
		var vs []value
		for i := range args {
			vs = append(vs, arg(i))
		}
		return joinPath(vs)
	case "os.getenv", "os.environ.get":
		if k := arg(0); k.known && homeVar(k.s) {
			return known("~")
		} else if k.known {
			return known("$" + k.s)
		}
	case "pathlib.Path.home", "os.path.expanduser.__call__":
		return known("~")
	case "os.getppid":
		return known("$PPID")
	case "os.getpid":
		return known("$$")
	case "os.getcwd", "pathlib.Path.cwd":
		return known(".")
	}
	if fnNode != nil && pyKind(fnNode) == "attribute" {
		obj := fnNode.ChildByFieldId(pyGrammarOnce().fields["object"])
		method := a.name(fnNode.ChildByFieldId(pyGrammarOnce().fields["attribute"]))
		switch method {
		case "format":
			return a.format(a.eval(obj, nest+1), n, nest)
		case "join":
			if recv := a.eval(obj, nest+1); recv.known && len(args) == 1 {
				items := a.list(args[0])
				if items != nil {
					out := value{known: true}
					for i, it := range items {
						if i > 0 {
							out.s += recv.s
						}
						out.s += it.s
						out.known = out.known && it.known
					}
					return out
				}
			}
		case "expanduser", "resolve", "absolute", "strip", "lower", "upper":
			if method == "lower" || method == "upper" || method == "strip" {
				v := a.eval(obj, nest+1)
				switch method {
				case "lower":
					v.s = strings.ToLower(v.s)
				case "upper":
					v.s = strings.ToUpper(v.s)
				default:
					v.s = strings.TrimSpace(v.s)
				}
				return v
			}
			return a.eval(obj, nest+1)
		case "joinpath":
			vs := []value{a.eval(obj, nest+1)}
			for i := range args {
				vs = append(vs, arg(i))
			}
			return joinPath(vs)
		case "home":
			if strings.HasPrefix(a.resolveName(obj), "pathlib.Path") {
				return known("~")
			}
		}
	}
	return unknownValue(a.text(n))
}

// percent folds "…%s…" % args.
func (a *pyAnalysis) percent(f value, r *tsNode, nest int) value {
	var args []value
	if items := a.list(r); items != nil && pyKind(r) == "tuple" {
		args = items
	} else {
		args = []value{a.eval(r, nest+1)}
	}
	if !f.known {
		return unknownValue(f.s)
	}
	var b strings.Builder
	out := value{known: true}
	k := 0
	s := f.s
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte("#0- +123456789.", s[j]) >= 0 {
			j++
		}
		if j < len(s) && s[j] == '%' {
			b.WriteByte('%')
			i = j
			continue
		}
		if j < len(s) && k < len(args) {
			b.WriteString(args[k].s)
			out.known = out.known && args[k].known
			k++
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	out.s = b.String()
	return out
}

// format folds "…{}…".format(args) with positional and keyword arguments.
func (a *pyAnalysis) format(f value, call *tsNode, nest int) value {
	if !f.known {
		return unknownValue(f.s)
	}
	args := a.argNodes(call)
	out := value{known: true}
	var b strings.Builder
	auto := 0
	s := f.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' && i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		if c == '}' && i+1 < len(s) && s[i+1] == '}' {
			b.WriteByte('}')
			i++
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s[i:])
			break
		}
		field := s[i+1 : i+end]
		field, _, _ = strings.Cut(field, ":")
		field, _, _ = strings.Cut(field, "!")
		var v value
		switch {
		case field == "":
			if auto < len(args) {
				v = a.eval(args[auto], nest+1)
			} else {
				v = unknownValue("arg")
			}
			auto++
		case field[0] >= '0' && field[0] <= '9':
			if n, err := strconv.Atoi(field); err == nil && n < len(args) {
				v = a.eval(args[n], nest+1)
			} else {
				v = unknownValue(field)
			}
		default:
			if kv := a.kwarg(call, field); kv != nil {
				v = a.eval(kv, nest+1)
			} else {
				v = unknownValue(field)
			}
		}
		b.WriteString(v.s)
		out.known = out.known && v.known
		i += end
	}
	out.s = b.String()
	return out
}

// str is a string literal's value: prefixes, escapes and f-string
// interpolations with constants resolved.
func (a *pyAnalysis) str(n *tsNode, nest int) value {
	raw := false
	out := value{known: true}
	var b strings.Builder
	for i := uint(0); i < n.ChildCount(); i++ {
		c := n.Child(i)
		switch pyKind(c) {
		case "string_start":
			prefix := strings.ToLower(strings.TrimRight(a.text(c), `"'`))
			raw = strings.Contains(prefix, "r")
		case "string_content":
			t := a.text(c)
			if !raw {
				t = pyUnescape(t)
			}
			b.WriteString(t)
		case "escape_sequence":
			t := a.text(c)
			if raw {
				b.WriteString(t)
			} else {
				b.WriteString(pyUnescape(t))
			}
		case "interpolation":
			v := a.eval(c.ChildByFieldId(pyGrammarOnce().fields["expression"]), nest+1)
			b.WriteString(v.s)
			out.known = out.known && v.known
		case "escape_interpolation":
			b.WriteString(a.text(c)[:1])
		}
	}
	out.s = b.String()
	return out
}

// pyUnescape resolves a Python string's backslash escapes.
func pyUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\n':
		case 'x':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteString(`\x`)
		case 'u', 'U':
			l := 4
			if e == 'U' {
				l = 8
			}
			if i+l < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+l], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += l
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			if '0' <= e && e <= '7' {
				j := i
				for j < len(s) && j < i+3 && '0' <= s[j] && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 16)
				b.WriteByte(byte(v))
				i = j - 1
				continue
			}
			b.WriteByte(e)
		}
	}
	return b.String()
}
