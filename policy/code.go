package policy

import (
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Code is what the policy sees of code typed into a REPL or handed to an
// interpreter (python3 -c, node -e, a here-document fed to python3): the
// calls it makes, resolved through imports and aliases, and what they do.
// What the calls do to the system also reaches input.shell as the shell
// commands they amount to (shutil.rmtree(p) is rm -r p, open(p, 'w') a
// redirection to p, os.system(s) the line s), so one rule set judges a
// delete or a write however it was spelt. A flag is present only when
// true.
type Code struct {
	// Languages are the languages of the code analysed, sorted, each once.
	Languages []string `json:"languages"`
	// Calls are the calls the code makes that matter to the policy (shell,
	// process, file, signal, network and dynamic-code functions), with
	// their constant-folded string arguments.
	Calls []Call `json:"calls"`
	// Names are the calls' names, sorted, each once ("os.system").
	Names []string `json:"names"`
	// Modules are the modules the code imports or names, sorted, each once.
	Modules []string `json:"modules"`
	// ShellCommands are the command strings handed to a shell.
	ShellCommands []string `json:"shell_commands"`
	// Writes and Deletes are the files the code writes or deletes.
	Writes  []string `json:"writes"`
	Deletes []string `json:"deletes"`
	// DynamicCalls describe calls resolved only at run time: getattr(os,
	// name), eval(s), require(name), ctypes.
	DynamicCalls []string `json:"dynamic_calls"`
	// Dynamic: DynamicCalls is not empty.
	Dynamic bool `json:"dynamic,omitempty"`
	// DynamicShell: a shell or process call whose command is built at run
	// time (os.system(cmd)).
	DynamicShell bool `json:"dynamic_shell,omitempty"`
	// ReverseShell: the code connects a socket and hands a shell or its
	// standard streams to it.
	ReverseShell bool `json:"reverse_shell,omitempty"`
	// ParseError is set when the code does not parse (and is not merely
	// unfinished); the facts above are then what could still be found.
	ParseError string `json:"parse_error,omitempty"`
	// Incomplete: the code is unfinished (an open block or bracket); the
	// interpreter runs nothing yet.
	Incomplete bool `json:"incomplete,omitempty"`
	// Hosts are the hosts the code names, sorted, each once, in the
	// canonical spelling of shell.hosts: the host of every URL in its text,
	// and every string literal that is an IP address (in any spelling) or
	// a dotted host name. Present only when there is one.
	Hosts []string `json:"hosts,omitempty"`
	// Listed names the lists of data.termgate.lists that hold a call's name
	// or a module ("<list>" in input.code.listed). Derived by the engine on
	// every decision.
	Listed []string `json:"listed"`
}

// Call is one call code makes.
type Call struct {
	Name string   `json:"name"` // resolved: "os.system", "child_process.execSync", "open"
	Args []string `json:"args"` // constant-folded; a part known only at run time reads $name
	// Dynamic: an argument is known only at run time.
	Dynamic bool `json:"dynamic,omitempty"`
}

// fill gives a code document's nil lists their empty value (see Shell.fill).
func (c *Code) fill() {
	for _, l := range []*[]string{&c.Languages, &c.Names, &c.Modules, &c.ShellCommands, &c.Writes, &c.Deletes, &c.DynamicCalls, &c.Listed} {
		if *l == nil {
			*l = []string{}
		}
	}
	if c.Calls == nil {
		c.Calls = []Call{}
	}
	for i := range c.Calls {
		if c.Calls[i].Args == nil {
			c.Calls[i].Args = []string{}
		}
	}
}

// finishCode sorts the sets and derives Names and Dynamic.
func (c *Code) finish() {
	c.Names = c.Names[:0]
	for _, call := range c.Calls {
		c.Names = addOnce(c.Names, call.Name)
	}
	c.Dynamic = len(c.DynamicCalls) > 0
	for _, l := range []*[]string{&c.Languages, &c.Names, &c.Modules, &c.Hosts} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	c.fill()
}

// merge adds what src found to c.
func (c *Code) merge(src *Code) {
	c.Languages = append(c.Languages, src.Languages...)
	c.Calls = append(c.Calls, src.Calls...)
	c.Modules = append(c.Modules, src.Modules...)
	c.ShellCommands = append(c.ShellCommands, src.ShellCommands...)
	c.Writes = append(c.Writes, src.Writes...)
	c.Deletes = append(c.Deletes, src.Deletes...)
	c.DynamicCalls = append(c.DynamicCalls, src.DynamicCalls...)
	c.DynamicShell = c.DynamicShell || src.DynamicShell
	c.ReverseShell = c.ReverseShell || src.ReverseShell
	c.Incomplete = c.Incomplete || src.Incomplete
	c.Hosts = append(c.Hosts, src.Hosts...)
	if c.ParseError == "" {
		c.ParseError = src.ParseError
	}
}

// maxCode bounds the code analysed: longer code is analysed up to the
// bound and flagged as not parsed whole.
const maxCode = 64 << 10

// codeSink is what a call does, for the calls the analysers know. Both
// languages map their functions to these kinds.
type sinkKind int

const (
	sinkNone     sinkKind = iota
	sinkShell             // arg 0 is a shell line: os.system, execSync
	sinkProc              // arg 0 a shell line when a string, an argv when a list (subprocess.run)
	sinkExecv             // arg 0 the program, arg 1 the argv list (os.execv, spawn(file, args))
	sinkExecl             // arg 0 the program, the rest the argv (os.execl)
	sinkSpawnl            // arg 0 a mode, arg 1 the program, the rest the argv (os.spawnl)
	sinkSpawnv            // arg 0 a mode, arg 1 the program, arg 2 the argv (os.spawnv)
	sinkArgs              // the arguments are the argv (asyncio.create_subprocess_exec)
	sinkFileArgs          // arg 0 the program, arg 1 its arguments (spawn(file, args))
	sinkRemove            // rm arg 0
	sinkRmdir             // rmdir arg 0
	sinkRmtree            // rm -r arg 0
	sinkRm                // rm arg 0, -r when an option says recursive (fs.rmSync)
	sinkWrite             // writes arg 0 (fs.writeFileSync, Path.write_text)
	sinkOpen              // writes arg 0 when the mode (arg 1) writes
	sinkCopy              // cp arg 0 arg 1
	sinkMove              // mv arg 0 arg 1
	sinkLink              // ln -s arg 0 arg 1
	sinkChmod             // chmod arg 1 (octal) arg 0
	sinkChown             // chown arg 0
	sinkTruncate          // truncate arg 0
	sinkKill              // kill -arg 1 arg 0
	sinkKillpg            // kill -arg 1 -arg 0
	sinkDynamic           // code or a function chosen at run time (eval, ctypes)
	sinkEval              // code in arg 0: analysed when constant, dynamic otherwise
	sinkConnect           // opens a network connection (for reverse shells)
	sinkDup               // dup2: hands a descriptor over (for reverse shells)
)

// derived collects what an analyser finds: the code facts, the shell
// commands they amount to, and the flags for the shell document.
type derived struct {
	code  Code
	sh    Shell // the commands found; Embedded
	depth int
	lang  string
	// For reverse shells: the code connects a socket (connects), and hands
	// a descriptor or a process's streams over (hands: dup2, stdin=
	// s.fileno(), a spawned process's streams piped to a socket).
	connects, hands, spawns, pipes bool
}

// newDerived starts an analysis of code that runs where the shell within
// runs (nil: nowhere known).
func newDerived(within *Shell, lang string, depth int) *derived {
	sh := Shell{Embedded: true}
	if within != nil {
		sh.data, sh.cwd = within.data, within.cwd
	}
	return &derived{code: Code{Languages: []string{lang}}, sh: sh, depth: depth, lang: lang}
}

// value is a constant-folded expression: its text, and whether all of it
// is known before the code runs. A part known only at run time reads as a
// shell parameter ($name), so the shell rules see it as run-time too.
type value struct {
	s     string
	known bool
}

func known(s string) value { return value{s, true} }

// unknownValue is the stand-in for an expression known only at run time:
// $ and an identifier made of its source, so a shell line built with it
// has a run-time part where the expression stood.
func unknownValue(src string) value {
	var b strings.Builder
	b.WriteString("$")
	for _, r := range src {
		switch {
		case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9':
			b.WriteRune(r)
		case b.Len() > 1 && b.Len() < 40:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.TrimRight(b.String(), "_")
	if s == "$" || '0' <= s[1] && s[1] <= '9' {
		s = "$_" + s[1:]
	}
	return value{s, false}
}

func concat(vs ...value) value {
	out := value{known: true}
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.s)
		out.known = out.known && v.known
	}
	out.s = b.String()
	return out
}

// joinPath joins path parts as os.path.join and path.join do: an absolute
// part starts over.
func joinPath(vs []value) value {
	out := value{known: true}
	for i, v := range vs {
		out.known = out.known && v.known
		switch {
		case i == 0 || strings.HasPrefix(v.s, "/"):
			out.s = v.s
		case strings.HasSuffix(out.s, "/") || out.s == "":
			out.s += v.s
		default:
			out.s += "/" + v.s
		}
	}
	return out
}

// homeVars are environment variables that name the home directory.
func homeVar(name string) bool { return name == "HOME" || name == "USERPROFILE" }

// call records a call and what it does.
func (d *derived) call(name string, kind sinkKind, args []value, argv [][]value, opts callOpts) {
	c := Call{Name: name, Args: make([]string, 0, len(args))}
	for _, a := range args {
		c.Args = append(c.Args, a.s)
		c.Dynamic = c.Dynamic || !a.known
	}
	d.code.Calls = append(d.code.Calls, c)
	arg := func(i int) (value, bool) {
		if i < len(args) {
			return args[i], true
		}
		return value{}, false
	}
	origin := d.lang + ":" + name
	cmd := func(name string, a ...value) {
		cm := Command{Name: name, Wrappers: []string{origin}}
		for _, v := range a {
			cm.Args = append(cm.Args, v.s)
			cm.Dynamic = cm.Dynamic || !v.known
		}
		d.sh.Commands = append(d.sh.Commands, finish(cm, &d.sh, d.depth)...)
	}
	write := func(p value) {
		d.code.Writes = append(d.code.Writes, p.s)
		d.sh.Commands = append(d.sh.Commands, Command{Wrappers: []string{origin}, Dynamic: !p.known,
			Args: []string{}, Assigns: []string{}, Redirects: []Redirect{{Op: ">", Target: p.s}}})
	}
	switch kind {
	case sinkShell:
		if a, ok := arg(0); ok {
			d.shellLine(a)
		}
	case sinkProc:
		switch {
		case len(argv) > 0 && argv[0] != nil && !opts.shell:
			d.argv(origin, argv[0])
		case len(argv) > 0 && argv[0] != nil:
			// shell=True with a list: the first item is the line, the rest
			// its positional parameters.
			if len(argv[0]) > 0 {
				d.shellLine(argv[0][0])
			}
		default:
			if a, ok := arg(0); ok {
				d.shellLine(a)
			}
		}
	case sinkExecv, sinkSpawnv:
		at := 1
		if kind == sinkSpawnv {
			at = 2
		}
		if len(argv) > at && argv[at] != nil {
			d.argv(origin, replaceArg0(argv[at], args, at-1))
		} else if a, ok := arg(at - 1); ok {
			d.argv(origin, []value{a, unknownValue("args")})
		}
	case sinkFileArgs:
		if a, ok := arg(0); ok {
			rest := []value{}
			if len(argv) > 1 && argv[1] != nil {
				rest = argv[1]
			}
			d.argv(origin, append([]value{a}, rest...))
		}
	case sinkExecl, sinkSpawnl, sinkArgs:
		from := map[sinkKind]int{sinkExecl: 1, sinkSpawnl: 2, sinkArgs: 0}[kind]
		if kind != sinkArgs {
			if p, ok := arg(from - 1); ok && from < len(args) {
				d.argv(origin, append([]value{p}, args[from+1:]...))
			} else if ok {
				d.argv(origin, []value{p})
			}
		} else if len(args) > 0 {
			d.argv(origin, args)
		}
	case sinkRemove, sinkRmdir, sinkRmtree, sinkRm:
		if p, ok := arg(0); ok {
			d.code.Deletes = append(d.code.Deletes, p.s)
			switch {
			case kind == sinkRmdir && !opts.recursive:
				cmd("rmdir", p)
			case kind == sinkRmtree || opts.recursive:
				cmd("rm", known("-r"), known("--"), p)
			default:
				cmd("rm", known("--"), p)
			}
		}
	case sinkWrite, sinkTruncate:
		if p, ok := arg(0); ok {
			write(p)
		}
	case sinkOpen:
		if p, ok := arg(0); ok && opts.writes {
			write(p)
		}
	case sinkCopy, sinkMove, sinkLink:
		src, ok1 := arg(0)
		dst, ok2 := arg(1)
		if ok1 && ok2 {
			d.code.Writes = append(d.code.Writes, dst.s)
			switch kind {
			case sinkCopy:
				cmd("cp", known("-r"), known("--"), src, dst)
			case sinkMove:
				cmd("mv", known("--"), src, dst)
			default:
				cmd("ln", known("-s"), known("--"), src, dst)
			}
		}
	case sinkChmod:
		p, ok1 := arg(0)
		m, ok2 := arg(1)
		if ok1 && ok2 {
			if n, err := strconv.ParseInt(m.s, 0, 32); err == nil && m.known {
				m = known(strconv.FormatInt(n, 8))
			}
			cmd("chmod", m, p)
		}
	case sinkChown:
		if p, ok := arg(0); ok {
			cmd("chown", unknownValue("owner"), p)
		}
	case sinkKill, sinkKillpg:
		if pid, ok := arg(0); ok {
			if kind == sinkKillpg {
				pid = concat(known("-"), pid)
			}
			sig := known("-TERM")
			if s, ok := arg(1); ok {
				sig = concat(known("-"), value{strings.TrimPrefix(s.s, "signal."), s.known})
			}
			cmd("kill", sig, pid)
		}
	case sinkDynamic:
		d.dynamic(name)
	case sinkEval:
		if a, ok := arg(0); ok && a.known && opts.analyse != nil && d.depth < maxDepth {
			opts.analyse(a.s)
		} else {
			d.dynamic(name)
		}
	case sinkConnect:
		d.connects = true
	case sinkDup:
		d.hands = true
	}
	switch kind {
	case sinkShell, sinkProc, sinkExecv, sinkExecl, sinkSpawnl, sinkSpawnv, sinkArgs, sinkFileArgs:
		d.hands = d.hands || opts.socketStreams
		d.spawns = true
	}
}

// replaceArg0 is an exec's argv with the program put first: os.execv(path,
// argv) runs path, whatever argv[0] says.
func replaceArg0(argv, args []value, at int) []value {
	if at >= len(args) {
		return argv
	}
	out := append([]value{args[at]}, argv...)
	if len(argv) > 0 {
		out = append([]value{args[at]}, argv[1:]...)
	}
	return out
}

// callOpts are what a call's keyword arguments or options say.
type callOpts struct {
	shell         bool // shell=True, {shell: true}
	recursive     bool // {recursive: true}
	writes        bool // the open mode writes
	socketStreams bool // stdin/stdout given a socket's descriptor
	analyse       func(code string)
}

// shellLine parses a command string handed to a shell as a shell line.
func (d *derived) shellLine(v value) {
	if !v.known && strings.Trim(v.s, "$_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "" {
		d.code.DynamicShell = true
		return
	}
	if !v.known {
		d.code.DynamicShell = true
	}
	d.code.ShellCommands = append(d.code.ShellCommands, v.s)
	sub := d.sh.sub()
	parseNested(&d.sh, &sub, v.s, d.depth+1)
	mergeFlags(&d.sh, &sub)
	d.sh.Commands = append(d.sh.Commands, sub.Commands...)
	if sub.code != nil {
		d.code.merge(sub.code)
	}
}

// argv adds the command an argument list runs.
func (d *derived) argv(origin string, argv []value) {
	if len(argv) == 0 {
		return
	}
	if !argv[0].known {
		d.code.DynamicShell = true
	}
	c := Command{Name: argv[0].s, Wrappers: []string{origin}, Dynamic: !argv[0].known}
	for _, a := range argv[1:] {
		c.Args = append(c.Args, a.s)
		c.Dynamic = c.Dynamic || !a.known
	}
	d.code.ShellCommands = append(d.code.ShellCommands, joinArgv(argv))
	d.sh.Commands = append(d.sh.Commands, finish(c, &d.sh, d.depth)...)
}

func joinArgv(argv []value) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = a.s
	}
	return strings.Join(parts, " ")
}

func (d *derived) dynamic(what string) {
	d.code.DynamicCalls = append(d.code.DynamicCalls, what)
}

// result is the analysis as the input's code and shell documents.
func (d *derived) result() (Code, Shell) {
	if d.connects && (d.hands || d.spawns && d.pipes) {
		d.code.ReverseShell = true
	}
	d.code.finish()
	d.sh.fill()
	return d.code, d.sh
}

// pipedInto judges line as a command that reads what a program writes
// (awk's print | "cmd", psql's \o |cmd, vim's :w !cmd): fed to a shell or
// an interpreter, that is a pipe into it.
func pipedInto(sh *Shell, cmds []Command) {
	for _, c := range cmds {
		if _, reads := sh.codeReader(c); reads {
			sh.PipeToInterpreter = true
		}
	}
}

// vocabulary is the set of names that calls in the tables are made of: the
// parts of every qualified name, and extra names.
func vocabulary(sinks map[string]sinkKind, methods map[string]string, modules map[string]bool, extra ...string) map[string]bool {
	v := map[string]bool{}
	add := func(q string) {
		for _, p := range strings.Split(q, ".") {
			v[p] = true
		}
	}
	for k := range sinks {
		add(k)
	}
	for k, q := range methods {
		add(k)
		add(q)
	}
	for k := range modules {
		add(k)
	}
	for _, e := range extra {
		add(e)
	}
	return v
}

// mentionsAny reports whether code holds a name of vocab as a word (Python
// and JavaScript fold identifiers with NFKC: so does identifiers).
func mentionsAny(code string, vocab map[string]bool) bool {
	start := -1
	ascii := true
	for i := 0; i <= len(code); i++ {
		var c byte
		if i < len(code) {
			c = code[i]
		}
		word := i < len(code) && (c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80)
		switch {
		case word && start < 0:
			start, ascii = i, c < 0x80
		case word:
			ascii = ascii && c < 0x80
		case start >= 0:
			w := code[start:i]
			if !ascii {
				w = norm.NFKC.String(w)
			}
			if vocab[w] {
				return true
			}
			if !ascii {
				// a folded word may hold several names (ｏｓ．system)
				for _, f := range strings.FieldsFunc(w, func(r rune) bool { return r == '.' }) {
					if vocab[f] {
						return true
					}
				}
			}
			start = -1
		}
	}
	return false
}
