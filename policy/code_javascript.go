package policy

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
	"golang.org/x/text/unicode/norm"
)

// JavaScript code is parsed with github.com/tdewolff/parse/v2/js (see the
// package doc for why) and walked for requires and imports, aliases and
// destructuring, and calls with their constant-folded arguments.

// jsSinks maps a resolved JavaScript function to what it does.
var jsSinks = map[string]sinkKind{
	"child_process.exec": sinkShell, "child_process.execSync": sinkShell,
	"child_process.spawn": sinkFileArgs, "child_process.spawnSync": sinkFileArgs,
	"child_process.execFile": sinkFileArgs, "child_process.execFileSync": sinkFileArgs,
	"child_process.fork": sinkFileArgs,
	"fs.rm":              sinkRm, "fs.rmSync": sinkRm, "fs.promises.rm": sinkRm,
	"fs.rmdir": sinkRmdir, "fs.rmdirSync": sinkRmdir, "fs.promises.rmdir": sinkRmdir,
	"fs.unlink": sinkRemove, "fs.unlinkSync": sinkRemove, "fs.promises.unlink": sinkRemove,
	"fs.writeFile": sinkWrite, "fs.writeFileSync": sinkWrite, "fs.promises.writeFile": sinkWrite,
	"fs.appendFile": sinkWrite, "fs.appendFileSync": sinkWrite, "fs.promises.appendFile": sinkWrite,
	"fs.createWriteStream": sinkWrite, "fs.truncate": sinkTruncate, "fs.truncateSync": sinkTruncate,
	"fs.promises.truncate": sinkTruncate,
	"fs.open":              sinkOpen, "fs.openSync": sinkOpen, "fs.promises.open": sinkOpen,
	"fs.copyFile": sinkCopy, "fs.copyFileSync": sinkCopy, "fs.promises.copyFile": sinkCopy,
	"fs.cp": sinkCopy, "fs.cpSync": sinkCopy, "fs.promises.cp": sinkCopy,
	"fs.rename": sinkMove, "fs.renameSync": sinkMove, "fs.promises.rename": sinkMove,
	"fs.symlink": sinkLink, "fs.symlinkSync": sinkLink, "fs.promises.symlink": sinkLink,
	"fs.link": sinkLink, "fs.linkSync": sinkLink,
	"fs.chmod": sinkChmod, "fs.chmodSync": sinkChmod, "fs.promises.chmod": sinkChmod,
	"fs.chown": sinkChown, "fs.chownSync": sinkChown, "fs.promises.chown": sinkChown,
	"process.kill": sinkKill,
	"eval":         sinkEval, "Function": sinkDynamic, "vm.runInThisContext": sinkDynamic, "vm.runInNewContext": sinkDynamic,
	"vm.runInContext": sinkDynamic, "vm.Script": sinkDynamic, "vm.compileFunction": sinkDynamic,
	"process.binding": sinkDynamic, "process._linkedBinding": sinkDynamic, "process.dlopen": sinkDynamic,
	"net.connect": sinkConnect, "net.createConnection": sinkConnect, "net.Socket.connect": sinkConnect,
	"tls.connect": sinkConnect, "net.Socket": sinkConnect, "dgram.createSocket": sinkConnect,
}

// jsMethods: methods known by their name alone, whatever the receiver (a
// name bound on an earlier line).
var jsMethods = map[string]string{
	"execSync": "child_process.execSync", "spawnSync": "child_process.spawnSync",
	"execFileSync": "child_process.execFileSync", "execFile": "child_process.execFile",
	"rmSync": "fs.rmSync", "rmdirSync": "fs.rmdirSync", "unlinkSync": "fs.unlinkSync",
	"writeFileSync": "fs.writeFileSync", "appendFileSync": "fs.appendFileSync",
	"createWriteStream": "fs.createWriteStream", "copyFileSync": "fs.copyFileSync",
	"renameSync": "fs.renameSync", "symlinkSync": "fs.symlinkSync", "chmodSync": "fs.chmodSync",
	"truncateSync": "fs.truncateSync", "cpSync": "fs.cpSync",
}

// jsVocabulary: see pyVocabulary.
var jsVocabulary = sync.OnceValue(func() map[string]bool {
	return vocabulary(jsSinks, jsMethods, map[string]bool{},
		"require", "import", "_load", "createRequire", "Reflect", "setTimeout", "setInterval", "setImmediate",
		"globalThis", "global", "window", "process", "pipe", "constructor", "mainModule", "ppid", "homedir", "env")
})

// jsAnalysis walks one parsed JavaScript program.
type jsAnalysis struct {
	d       *derived
	aliases map[string]string
	consts  map[string]value
	nodes   int
}

// analyseJS analyses JavaScript code into d.
func analyseJS(d *derived, code string) {
	if len(code) > maxCode {
		code = code[:maxCode]
		d.code.ParseError = "the code is longer than the gateway analyses"
	}
	if !mentionsAny(code, jsVocabulary()) {
		// No name the analysis resolves a call to is in the code (see
		// analysePython); unfinished code is still told.
		if _, err := js.Parse(parse.NewInputString(code), js.Options{}); err != nil {
			if pe, ok := err.(*parse.Error); ok && (strings.Contains(pe.Message, "EOF") || strings.Contains(pe.Message, "unterminated template")) {
				d.code.Incomplete = true
			}
		}
		return
	}
	ast, err := js.Parse(parse.NewInputString(code), js.Options{})
	if err != nil {
		// Unfinished code runs nothing yet, and code that does not parse
		// nothing at all; both are judged on what can be seen all the same.
		if pe, ok := err.(*parse.Error); ok && (strings.Contains(pe.Message, "EOF") ||
			strings.Contains(pe.Message, "unterminated template")) {
			d.code.Incomplete = true
		} else if d.code.ParseError == "" {
			d.code.ParseError = "the JavaScript code does not parse: " + firstLine(err.Error())
		}
		d.code.Modules = append(d.code.Modules, identifiers(code)...)
		shellOut(&d.sh, code, d.depth+1)
		return
	}
	a := &jsAnalysis{d: d, aliases: map[string]string{}, consts: map[string]value{}}
	js.Walk(a, ast)
}

// isMethod: the callee is x.name.
func isMethod(callee js.IExpr, name string) bool {
	dot, ok := callee.(*js.DotExpr)
	return ok && dotName(dot.Y) == name
}

// dotName is the name after a dot: the parser gives it as a literal
// (by value or pointer) or a variable.
func dotName(y js.IExpr) string {
	switch y := y.(type) {
	case js.LiteralExpr:
		return string(y.Data)
	case *js.LiteralExpr:
		return string(y.Data)
	case *js.Var:
		return string(y.Name())
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Enter is js.IVisitor's: it looks at every node once.
func (a *jsAnalysis) Enter(n js.INode) js.IVisitor {
	a.nodes++
	if a.nodes > maxNodes {
		return nil
	}
	switch n := n.(type) {
	case *js.ImportStmt:
		mod := jsModule(unquote(n.Module))
		a.module(mod)
		if n.Default != nil {
			a.aliases[string(n.Default)] = mod
		}
		for _, al := range n.List {
			switch {
			case bytes.Equal(al.Name, []byte("*")):
				a.aliases[string(al.Binding)] = mod
			case al.Name != nil:
				a.aliases[string(al.Binding)] = mod + "." + string(al.Name)
			default:
				a.aliases[string(al.Binding)] = mod + "." + string(al.Binding)
			}
		}
	case *js.VarDecl:
		for _, el := range n.List {
			a.bind(el.Binding, el.Default)
		}
	case *js.BinaryExpr:
		if n.Op == js.EqToken {
			if v, ok := n.X.(*js.Var); ok {
				a.bind(v, n.Y)
			}
		}
	case *js.CallExpr:
		a.call(n.X, n.Args.List, false)
	case *js.NewExpr:
		var args []js.Arg
		if n.Args != nil {
			args = n.Args.List
		}
		a.call(n.X, args, true)
	case *js.TemplateExpr:
		if n.Tag != nil {
			// A tagged template calls its tag with the template.
			a.call(n.Tag, []js.Arg{{Value: &js.TemplateExpr{List: n.List, Tail: n.Tail}}}, false)
		}
	case *js.IndexExpr:
		if q := a.resolve(n.X); q != "" && !a.eval(n.Y, 0).known {
			switch q {
			case "child_process", "fs", "process", "globalThis", "global", "window", "os", "vm", "fs.promises":
				a.d.dynamic(jsText(n))
			}
		}
	case *js.Var:
		switch string(n.Name()) {
		case "__proto__", "constructor":
		}
	}
	return a
}

// Exit is js.IVisitor's.
func (a *jsAnalysis) Exit(js.INode) {}

func (a *jsAnalysis) module(mod string) {
	if mod != "" {
		a.d.code.Modules = append(a.d.code.Modules, mod)
	}
}

// jsModule is a module's canonical name: node:fs → fs, fs/promises →
// fs.promises.
func jsModule(m string) string {
	m = strings.TrimPrefix(m, "node:")
	return strings.ReplaceAll(m, "/", ".")
}

// bind records what a declaration or assignment binds: an alias of a
// module or function (const cp = require('child_process'), const
// {execSync: x} = …), or a constant.
func (a *jsAnalysis) bind(b js.IBinding, init js.IExpr) {
	if init == nil {
		return
	}
	q := a.resolve(init)
	switch b := b.(type) {
	case *js.Var:
		name := string(b.Name())
		if q != "" {
			a.aliases[name] = q
			return
		}
		if v := a.eval(init, 0); v.known {
			a.consts[name] = v
		}
	case *js.BindingObject:
		if q == "" {
			return
		}
		for _, it := range b.List {
			key := ""
			if it.Key != nil && !it.Key.IsComputed() {
				key = string(it.Key.Literal.Data)
			} else if it.Key != nil {
				if v := a.eval(it.Key.Computed, 0); v.known {
					key = v.s
				} else {
					a.d.dynamic("destructuring of " + q + " by a computed key")
				}
			}
			if v, ok := it.Value.Binding.(*js.Var); ok {
				if key == "" {
					key = string(v.Name())
				}
				a.aliases[string(v.Name())] = q + "." + key
			}
		}
	}
}

// resolve is the qualified name an expression names: a variable's alias,
// a member chain, require('m'), import('m'), or "".
func (a *jsAnalysis) resolve(e js.IExpr) string {
	switch e := e.(type) {
	case *js.Var:
		name := string(e.Name())
		if !isASCII(name) {
			name = norm.NFKC.String(name)
		}
		if q, ok := a.aliases[name]; ok {
			return q
		}
		return name
	case *js.DotExpr:
		x := a.resolve(e.X)
		if x == "" {
			return ""
		}
		if y := dotName(e.Y); y != "" {
			return x + "." + y
		}
	case *js.IndexExpr:
		x := a.resolve(e.X)
		if v := a.eval(e.Y, 0); x != "" && v.known {
			return x + "." + v.s
		}
	case *js.GroupExpr:
		return a.resolve(e.X)
	case *js.CommaExpr:
		if len(e.List) > 0 {
			return a.resolve(e.List[len(e.List)-1])
		}
	case *js.UnaryExpr:
		if e.Op == js.AwaitToken {
			return a.resolve(e.X)
		}
	case *js.CallExpr:
		fn := a.resolve(e.X)
		last := fn[strings.LastIndexByte(fn, '.')+1:]
		switch {
		case last == "require" || last == "_load" || fn == "import" || last == "createRequire":
			if len(e.Args.List) > 0 {
				if v := a.eval(e.Args.List[0].Value, 0); v.known {
					m := jsModule(v.s)
					a.module(m)
					return m
				}
			}
		case fn == "Reflect.get" && len(e.Args.List) >= 2:
			x := a.resolve(e.Args.List[0].Value)
			if v := a.eval(e.Args.List[1].Value, 0); x != "" && v.known {
				return x + "." + v.s
			}
		}
	}
	return ""
}

// call judges one call (or new).
func (a *jsAnalysis) call(callee js.IExpr, args []js.Arg, isNew bool) {
	name := a.resolve(callee)
	last := name[strings.LastIndexByte(name, '.')+1:]
	switch {
	case last == "require" || name == "import" || last == "_load":
		if len(args) > 0 && !a.eval(args[0].Value, 0).known {
			a.d.dynamic(jsText(callee) + "(" + jsText(args[0].Value) + ")")
		}
		return
	case name == "setTimeout" || name == "setInterval" || name == "setImmediate":
		if len(args) > 0 {
			if v := a.eval(args[0].Value, 0); isStringLike(args[0].Value) {
				a.d.call(name, sinkEval, []value{v}, nil, callOpts{analyse: a.analyser()})
			}
		}
		return
	case last == "pipe":
		a.d.pipes = true
	case last == "constructor" || isMethod(callee, "constructor"):
		// x.constructor.constructor(s) is Function(s): code from a string.
		a.d.dynamic(jsText(callee))
		return
	}
	kind, ok := jsSinks[name]
	if !ok {
		if dot, isDot := callee.(*js.DotExpr); isDot {
			if q, found := jsMethods[dotName(dot.Y)]; found {
				name, kind, ok = q, jsSinks[q], true
			}
		}
	}
	if !ok {
		return
	}
	var vals []value
	var lists [][]value
	opts := callOpts{}
	for _, arg := range args {
		if arg.Rest {
			vals = append(vals, unknownValue(jsText(arg.Value)))
			lists = append(lists, nil)
			continue
		}
		l := a.list(arg.Value)
		if l != nil {
			vals = append(vals, joinValues(l))
		} else {
			vals = append(vals, a.eval(arg.Value, 0))
		}
		lists = append(lists, l)
		if o, isObj := arg.Value.(*js.ObjectExpr); isObj {
			a.options(o, &opts)
		}
	}
	switch kind {
	case sinkFileArgs:
		// spawn(file, args, {shell: true}) runs file and args as one line.
		if opts.shell && len(vals) > 0 {
			line := []value{vals[0]}
			if len(lists) > 1 && lists[1] != nil {
				line = append(line, lists[1]...)
			}
			a.d.call(name, sinkShell, []value{joinValues(line)}, nil, opts)
			return
		}
		if name == "child_process.fork" && len(vals) > 0 {
			a.d.call(name, sinkArgs, append([]value{known("node")}, vals[0]), nil, opts)
			return
		}
	case sinkOpen:
		opts.writes = len(vals) > 1 && (!vals[1].known || strings.ContainsAny(vals[1].s, "wa+") ||
			strings.Contains(vals[1].s, "O_WRONLY") || strings.Contains(vals[1].s, "O_RDWR"))
	case sinkEval:
		opts.analyse = a.analyser()
	case sinkConnect:
		a.d.connects = true
	}
	if isNew && kind != sinkDynamic && kind != sinkConnect {
		return
	}
	a.d.call(name, kind, vals, lists, opts)
}

func isStringLike(e js.IExpr) bool {
	switch e := e.(type) {
	case *js.LiteralExpr:
		return e.TokenType == js.StringToken
	case *js.TemplateExpr, *js.BinaryExpr, *js.Var:
		return true
	}
	return false
}

func joinValues(vs []value) value {
	out := value{known: true}
	for i, v := range vs {
		if i > 0 {
			out.s += " "
		}
		out.s += v.s
		out.known = out.known && v.known
	}
	return out
}

// analyser analyses JavaScript handed to eval as a constant.
func (a *jsAnalysis) analyser() func(string) {
	return func(code string) {
		sub := newDerived(&a.d.sh, "javascript", a.d.depth+1)
		analyseJS(sub, code)
		c, sh := sub.result()
		a.d.code.merge(&c)
		mergeFlags(&a.d.sh, &sh)
		a.d.sh.Commands = append(a.d.sh.Commands, sh.Commands...)
	}
}

// options reads an options object: {shell: true}, {recursive: true},
// {stdio: [socket, …]}.
func (a *jsAnalysis) options(o *js.ObjectExpr, opts *callOpts) {
	for _, p := range o.List {
		if p.Name == nil || p.Name.IsComputed() {
			continue
		}
		key := string(p.Name.Literal.Data)
		truthy := false
		if lit, ok := p.Value.(*js.LiteralExpr); ok {
			truthy = lit.TokenType == js.TrueToken || lit.TokenType == js.StringToken && len(lit.Data) > 2
		} else if p.Value != nil {
			truthy = true
		}
		switch key {
		case "shell":
			opts.shell = truthy
		case "recursive":
			opts.recursive = truthy
		case "stdio":
			if _, isArr := p.Value.(*js.ArrayExpr); isArr || truthy {
				if t := jsText(p.Value); !strings.Contains(t, "inherit") && !strings.Contains(t, "pipe") && !strings.Contains(t, "ignore") {
					opts.socketStreams = true
				}
			}
		}
	}
}

// list is an array literal's items, folded, or nil.
func (a *jsAnalysis) list(e js.IExpr) []value {
	arr, ok := e.(*js.ArrayExpr)
	if !ok {
		return nil
	}
	out := []value{}
	for _, el := range arr.List {
		if el.Value == nil {
			continue
		}
		if el.Spread {
			out = append(out, unknownValue(jsText(el.Value)))
			continue
		}
		out = append(out, a.eval(el.Value, 0))
	}
	return out
}

// eval constant-folds an expression to a string: literals, template
// literals, +, path.join, the home directory (os.homedir(),
// process.env.HOME) as ~, constants bound earlier.
func (a *jsAnalysis) eval(e js.IExpr, nest int) value {
	if e == nil || nest > 32 {
		return unknownValue("")
	}
	switch e := e.(type) {
	case *js.LiteralExpr:
		switch e.TokenType {
		case js.StringToken:
			return known(jsUnescape(unquote(e.Data)))
		case js.DecimalToken, js.OctalToken, js.HexadecimalToken, js.BinaryToken, js.IntegerToken:
			t := strings.ReplaceAll(string(e.Data), "_", "")
			if v, err := strconv.ParseInt(t, 0, 64); err == nil {
				return known(strconv.FormatInt(v, 10))
			}
			return known(t)
		case js.TrueToken:
			return known("true")
		}
	case *js.TemplateExpr:
		if e.Tag != nil {
			break
		}
		out := value{known: true}
		var b strings.Builder
		for _, p := range e.List {
			b.WriteString(jsUnescape(templateText(p.Value)))
			v := a.eval(p.Expr, nest+1)
			b.WriteString(v.s)
			out.known = out.known && v.known
		}
		b.WriteString(jsUnescape(templateText(e.Tail)))
		out.s = b.String()
		return out
	case *js.Var:
		if v, ok := a.consts[string(e.Name())]; ok {
			return v
		}
	case *js.GroupExpr:
		return a.eval(e.X, nest+1)
	case *js.BinaryExpr:
		if e.Op == js.AddToken {
			return concat(a.eval(e.X, nest+1), a.eval(e.Y, nest+1))
		}
	case *js.DotExpr:
		switch a.resolve(e) {
		case "process.env.HOME", "process.env.USERPROFILE":
			return known("~")
		case "process.ppid":
			return known("$PPID")
		case "process.pid":
			return known("$$")
		case "fs.constants.O_WRONLY", "fs.constants.O_RDWR":
			return unknownValue("O_WRONLY")
		}
	case *js.IndexExpr:
		if a.resolve(e.X) == "process.env" {
			if k := a.eval(e.Y, nest+1); k.known && homeVar(k.s) {
				return known("~")
			}
		}
	case *js.CallExpr:
		fn := a.resolve(e.X)
		switch fn {
		case "os.homedir":
			return known("~")
		case "process.cwd":
			return known(".")
		case "path.join", "path.resolve", "path.posix.join":
			var vs []value
			for _, arg := range e.Args.List {
				vs = append(vs, a.eval(arg.Value, nest+1))
			}
			return joinPath(vs)
		case "String", "path.normalize":
			if len(e.Args.List) > 0 {
				return a.eval(e.Args.List[0].Value, nest+1)
			}
		}
		if dot, ok := e.X.(*js.DotExpr); ok {
			if dotName(dot.Y) == "join" {
				if items := a.list(dot.X); items != nil && len(e.Args.List) > 0 {
					sep := a.eval(e.Args.List[0].Value, nest+1)
					out := value{known: sep.known}
					for i, it := range items {
						if i > 0 {
							out.s += sep.s
						}
						out.s += it.s
						out.known = out.known && it.known
					}
					return out
				}
			}
		}
	}
	return unknownValue(jsText(e))
}

// templateText is a template part's literal text without its delimiters
// (` … ${ and } … `).
func templateText(b []byte) string {
	s := string(b)
	s = strings.TrimPrefix(s, "`")
	s = strings.TrimPrefix(s, "}")
	s = strings.TrimSuffix(s, "${")
	s = strings.TrimSuffix(s, "`")
	return s
}

func unquote(b []byte) string {
	if len(b) >= 2 && (b[0] == '"' || b[0] == '\'') && b[len(b)-1] == b[0] {
		return string(b[1 : len(b)-1])
	}
	return string(b)
}

// jsUnescape resolves a JavaScript string's escapes.
func jsUnescape(s string) string {
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
			b.WriteByte('x')
		case 'u':
			if i+1 < len(s) && s[i+1] == '{' {
				if end := strings.IndexByte(s[i:], '}'); end > 0 {
					if v, err := strconv.ParseUint(s[i+2:i+end], 16, 32); err == nil {
						b.WriteRune(rune(v))
						i += end
						continue
					}
				}
			}
			if i+4 < len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

// jsText is an expression's source, as the parser prints it, bounded.
func jsText(n js.INode) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	n.JS(&b)
	s := b.String()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
