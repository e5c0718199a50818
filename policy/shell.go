package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"
	"mvdan.cc/sh/v3/syntax"
)

// Shell is what the policy sees of a shell line: every simple command it
// would run, with its real name and its arguments after quote removal, and
// flags for constructs that hide what runs. A flag is present in the input
// document only when true (absent reads as false in Rego), which keeps the
// document small and lets a rule guarded by a flag be skipped by OPA's
// index.
type Shell struct {
	Commands []Command `json:"commands"`
	// Pipes: the line has a pipeline.
	Pipes bool `json:"pipes,omitempty"`
	// PipeToInterpreter: a pipeline feeds a shell or an interpreter
	// (curl … | sh, … | python).
	PipeToInterpreter bool `json:"pipe_to_interpreter,omitempty"`
	// DecodeToInterpreter: a pipeline decodes a payload (base64 -d, xxd -r,
	// openssl … -d) and feeds it to an interpreter.
	DecodeToInterpreter bool `json:"decode_to_interpreter,omitempty"`
	// Substitutions: command or process substitution ($(…), `…`, <(…)).
	Substitutions bool `json:"substitutions,omitempty"`
	// ProcessSubstitution: <(…) or >(…).
	ProcessSubstitution bool `json:"process_substitution,omitempty"`
	// Eval: eval, or a shell's -c with a string, ran code built at run time.
	Eval bool `json:"eval,omitempty"`
	// Background: a command is sent to the background (&).
	Background bool `json:"background,omitempty"`
	// RecursiveFunctions: functions that call themselves (fork bombs).
	RecursiveFunctions []string `json:"recursive_functions"`
	// Normalized: the line held fullwidth, zero-width or $IFS tricks that
	// were undone before parsing.
	Normalized bool `json:"normalized,omitempty"`
	// ParseError is set when the line does not parse; Commands then holds
	// what a plain split of the line found. It is absent otherwise, so a
	// rule guarded by input.shell.parse_error is skipped by OPA's index.
	ParseError string `json:"parse_error,omitempty"`
	// Incomplete: the line is the start of a command that continues on the
	// next line (an open quote, for … without done). The shell runs nothing
	// yet; the gateway judges it again with its continuation.
	Incomplete bool `json:"incomplete,omitempty"`
	// Embedded: the commands came from a string a REPL would pass to a
	// shell (os.system, subprocess, child_process).
	Embedded bool `json:"embedded,omitempty"`
	// Names are the commands' names, sorted, each once: a rule body that
	// starts with "rm" in input.shell.names is skipped by OPA's rule index
	// for any line that runs no rm. Derived from Commands on every
	// decision.
	Names []string `json:"names"`
	// Listed names the lists of data.termgate.lists that hold one of the
	// commands' names ("<list>" in input.shell.listed), for the same
	// purpose. Derived from Commands and the bundle's data on every
	// decision.
	Listed []string `json:"listed"`
	// WordsListed names the lists that hold one of the commands' other
	// words: an argument, a redirection's operator or target, or an
	// assigned variable's name ("sensitive_read_paths" for cat
	// /etc/shadow, "write_redirects" for echo x > f). Derived like Listed.
	WordsListed []string `json:"words_listed"`
	// Dynamic: some command's name or argument is computed at run time
	// (one of Commands is Dynamic). Derived like Names.
	Dynamic bool `json:"dynamic,omitempty"`
}

// Command is one simple command.
type Command struct {
	Name      string     `json:"name"`              // base name: /bin/rm → rm
	Path      string     `json:"path,omitempty"`    // as written, when it held a slash
	Args      []string   `json:"args"`              // after quote removal
	Wrappers  []string   `json:"wrappers"`          // sudo, env, xargs, find -exec … that ran it
	Dynamic   bool       `json:"dynamic,omitempty"` // the name or an argument is computed at run time
	Redirects []Redirect `json:"redirects"`         // where its output goes
	Assigns   []string   `json:"assigns"`           // VAR=value prefixes, names only
	// Flags and Operands are derived from Args by the engine on every
	// decision, whatever the caller sent: the option letters of each
	// cluster (-rf → r, f), long options without their value
	// (--force=1 → --force), and the other arguments, everything after
	// "--" included.
	Flags    []string `json:"flags"`
	Operands []string `json:"operands"`
}

// deriveArgs fills c.Flags and c.Operands from c.Args.
func (c *Command) deriveArgs() {
	c.Flags, c.Operands = []string{}, []string{}
	defer func() { slices.Sort(c.Flags) }()
	for i, a := range c.Args {
		switch {
		case a == "--":
			c.Operands = append(c.Operands, c.Args[i+1:]...)
			return
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a, "=")
			c.Flags = addOnce(c.Flags, name)
		case len(a) > 1 && a[0] == '-':
			for j, r := range a[1:] {
				if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
					break // -i.bak: the rest is the option's value
				}
				c.Flags = addOnce(c.Flags, a[1+j:2+j])
			}
		case a == "-":
			// standard input: neither an option nor a path
		default:
			c.Operands = append(c.Operands, a)
		}
	}
}

// addOnce appends v to set unless it holds it already: the sets the engine
// derives are small, and kept as sorted lists.
func addOnce(set []string, v string) []string {
	if slices.Contains(set, v) {
		return set
	}
	return append(set, v)
}

// Redirect is one redirection of a command.
type Redirect struct {
	Op     string `json:"op"` // >, >>, <, <<, &>, …
	Target string `json:"target"`
}

// interpreters run code from their input or arguments.
var interpreterNames = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "fish": true, "ash": true, "busybox": true,
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "node": true, "nodejs": true,
	"php": true, "lua": true, "tclsh": true, "pwsh": true, "osascript": true, "deno": true, "bun": true,
}

func isInterpreter(name string) bool {
	if interpreterNames[name] {
		return true
	}
	if rest, ok := strings.CutPrefix(name, "python"); ok && strings.Trim(rest, "0123456789.") == "" {
		return true
	}
	return false
}

var shellNames = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true}

// IsShell reports whether a program name is a shell whose input is parsed.
func IsShell(name string) bool { return shellNames[name] }

const maxDepth = 4 // sh -c 'sh -c "…"' nesting followed before giving up (and flagging)

var ifsRe = regexp.MustCompile(`\$\{IFS\}|\$IFS\b`)

// normalize undoes the tricks that make a line read differently to a
// regex than to a shell: fullwidth forms (ｒｍ), zero-width characters, and
// $IFS used as a space.
func normalize(line string) (string, bool) {
	out := strings.Map(func(r rune) rune {
		switch r {
		case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad':
			return -1
		}
		return r
	}, line)
	out = norm.NFKC.String(out)
	out = ifsRe.ReplaceAllString(out, " ")
	return out, out != line
}

// ParseShell analyses a shell line.
func ParseShell(line string) Shell { return parseShell(line, nil) }

// parseShell is ParseShell with a parser to reuse (nil: a new one).
func parseShell(line string, p *syntax.Parser) Shell {
	var sh Shell
	norm, changed := normalize(line)
	sh.Normalized = changed
	parseInto(&sh, norm, 0, p)
	if sh.Commands == nil {
		sh.Commands = []Command{}
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
	return sh
}

// ParseArgv analyses a command given as an argv (a session start): no
// shell parses it, but wrappers and sh -c strings are followed as usual.
func ParseArgv(argv []string) Shell {
	sh := Shell{}
	if len(argv) > 0 {
		sh.Commands = finish(Command{Name: argv[0], Args: append([]string{}, argv[1:]...)}, &sh, 0)
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
	return sh
}

// newParser returns the parser every line is parsed with.
func newParser() *syntax.Parser { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }

// parseInto parses line into sh with p, or with a new parser when p is nil
// (a line nested in sh -c: rare enough not to share one).
func parseInto(sh *Shell, line string, depth int, p *syntax.Parser) {
	if depth > maxDepth {
		sh.Eval = true
		return
	}
	if p == nil {
		p = newParser()
	}
	f, err := p.Parse(strings.NewReader(line), "")
	if err != nil {
		if syntax.IsIncomplete(err) && depth == 0 {
			sh.Incomplete = true
		} else if sh.ParseError == "" {
			sh.ParseError = err.Error()
		}
		// Still show the policy what the words are.
		fields := strings.Fields(line)
		if len(fields) > 0 {
			cmds := finish(Command{Name: fields[0], Args: fields[1:]}, sh, depth)
			sh.Commands = append(sh.Commands, cmds...)
		}
		return
	}
	w := walker{sh: sh, depth: depth, src: line}
	for _, st := range f.Stmts {
		w.stmt(st)
	}
}

type walker struct {
	sh    *Shell
	depth int
	src   string   // the line parsed, for the source text of run-time parts
	funcs []string // functions being declared, innermost last
}

func (w *walker) stmt(st *syntax.Stmt) {
	if st == nil {
		return
	}
	if st.Background {
		w.sh.Background = true
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(c, st.Redirs)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.sh.Pipes = true
			w.pipeline(c)
			return
		}
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.FuncDecl:
		name := ""
		if c.Name != nil {
			name = c.Name.Value
		}
		w.funcs = append(w.funcs, name)
		w.stmt(c.Body)
		w.funcs = w.funcs[:len(w.funcs)-1]
	default:
		// Blocks, subshells, if/for/while/case, arithmetic, tests:
		// walk everything inside for statements and substitutions.
		syntax.Walk(st.Cmd, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Stmt:
				if n != st {
					w.stmt(n)
					return false
				}
			case *syntax.CmdSubst, *syntax.ProcSubst:
				w.subst(n)
				return false
			}
			return true
		})
	}
	for _, r := range st.Redirs {
		w.words(r.Word)
	}
}

// pipeline walks a | b | c, flagging interpreters fed by the pipe.
func (w *walker) pipeline(c *syntax.BinaryCmd) {
	var stages []*syntax.Stmt
	var collect func(s *syntax.Stmt)
	collect = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			collect(b.X)
			collect(b.Y)
			return
		}
		stages = append(stages, s)
	}
	collect(c.X)
	collect(c.Y)
	decoded := false
	for i, s := range stages {
		before := len(w.sh.Commands)
		w.stmt(s)
		for _, cmd := range w.sh.Commands[before:] {
			if i > 0 && isInterpreter(cmd.Name) && !hasScriptArg(cmd) {
				w.sh.PipeToInterpreter = true
				if decoded {
					w.sh.DecodeToInterpreter = true
				}
			}
			if isDecoder(cmd) {
				decoded = true
			}
		}
	}
}

// hasScriptArg: `… | python3 script.py` reads its code from a file, not the pipe.
func hasScriptArg(c Command) bool {
	for _, a := range c.Args {
		if a == "-" || a == "-s" || a == "/dev/stdin" {
			return false
		}
		if a == "-c" || a == "-e" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			return true
		}
	}
	return false
}

func isDecoder(c Command) bool {
	has := func(flags ...string) bool {
		for _, a := range c.Args {
			for _, f := range flags {
				if a == f || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(f) == 2 && strings.ContainsRune(a[1:], rune(f[1])) && f[0] == '-' {
					return true
				}
			}
		}
		return false
	}
	switch c.Name {
	case "base64", "base32", "basenc":
		return has("-d", "--decode")
	case "xxd":
		return has("-r", "-revert")
	case "openssl":
		return has("-d", "-base64", "-a")
	case "uudecode", "gunzip", "zcat", "rev":
		return true
	case "tr":
		return true
	}
	return false
}

func (w *walker) subst(n syntax.Node) {
	w.sh.Substitutions = true
	var stmts []*syntax.Stmt
	switch n := n.(type) {
	case *syntax.CmdSubst:
		stmts = n.Stmts
	case *syntax.ProcSubst:
		w.sh.ProcessSubstitution = true
		stmts = n.Stmts
	}
	for _, s := range stmts {
		w.stmt(s)
	}
}

// words walks a word for substitutions inside it.
func (w *walker) words(words ...*syntax.Word) {
	for _, word := range words {
		if word == nil {
			continue
		}
		syntax.Walk(word, func(n syntax.Node) bool {
			switch n.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst:
				w.subst(n)
				return false
			}
			return true
		})
	}
}

func (w *walker) call(c *syntax.CallExpr, redirs []*syntax.Redirect) {
	cmd := Command{}
	for _, a := range c.Assigns {
		if a.Name != nil {
			cmd.Assigns = append(cmd.Assigns, a.Name.Value)
		}
		if a.Value != nil {
			w.words(a.Value)
		}
	}
	for i, word := range c.Args {
		w.words(word)
		v, static := w.wordValue(word)
		if !static {
			cmd.Dynamic = true
		}
		if i == 0 {
			cmd.Name = v
		} else {
			cmd.Args = append(cmd.Args, v)
		}
	}
	for _, r := range redirs {
		target, _ := w.wordValue(r.Word)
		if r.Hdoc != nil {
			target = "<<heredoc>>"
		}
		cmd.Redirects = append(cmd.Redirects, Redirect{Op: r.Op.String(), Target: target})
	}
	if cmd.Name == "" && len(c.Args) == 0 {
		return // a bare assignment
	}
	for _, f := range w.funcs {
		if f != "" && cmd.Name == f {
			w.sh.RecursiveFunctions = append(w.sh.RecursiveFunctions, f)
		}
	}
	cmds := finish(cmd, w.sh, w.depth)
	w.sh.Commands = append(w.sh.Commands, cmds...)
}

// codeStringUnescape undoes the escapes of a string literal in REPL code.
var codeStringUnescape = strings.NewReplacer(`\"`, `"`, `\'`, `'`, `\\`, `\`, `\n`, "\n", `\t`, "\t")

// dquoteUnescape removes the backslashes a double-quoted literal keeps.
var dquoteUnescape = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`")

// wordValue returns a word's value after quote removal, and whether it is
// fully known before run time. Parts computed at run time keep their
// source text.
func (w *walker) wordValue(word *syntax.Word) (string, bool) {
	if word == nil {
		return "", true
	}
	var b strings.Builder
	static := true
	var part func(p syntax.WordPart)
	part = func(p syntax.WordPart) {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(dquoteUnescape.Replace(l.Value))
					continue
				}
				part(q)
			}
		default:
			static = false
			b.WriteString(w.source(p))
		}
	}
	for _, p := range word.Parts {
		part(p)
	}
	return b.String(), static
}

// source is a node's text in the line parsed; a command substitution in
// backquotes reads as $(…), as the shell runs it.
func (w *walker) source(n syntax.Node) string {
	start, end := n.Pos().Offset(), n.End().Offset()
	if start > end || end > uint(len(w.src)) {
		return ""
	}
	text := w.src[start:end]
	if cs, ok := n.(*syntax.CmdSubst); ok && cs.Backquotes && len(text) >= 2 {
		return "$(" + text[1:len(text)-1] + ")"
	}
	return text
}

// unescape removes the backslashes of an unquoted literal (r\m → rm).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// finish resolves a command's real name and unwraps the commands that run
// other commands, returning the wrapper and what it runs.
func finish(c Command, sh *Shell, depth int) []Command {
	c.Path = ""
	if strings.Contains(c.Name, "/") {
		c.Path = c.Name
		c.Name = path.Base(c.Name)
	}
	if c.Args == nil {
		c.Args = []string{}
	}
	if c.Wrappers == nil {
		c.Wrappers = []string{}
	}
	if c.Redirects == nil {
		c.Redirects = []Redirect{}
	}
	if c.Assigns == nil {
		c.Assigns = []string{}
	}
	out := []Command{c}
	inner, ok, nested := unwrap(c, sh, depth)
	out = append(out, nested...)
	if ok && inner.Name != "" {
		inner.Wrappers = append(append([]string{}, c.Wrappers...), c.Name)
		inner.Dynamic = inner.Dynamic || c.Dynamic
		out = append(out, finish(inner, sh, depth)...)
	}
	return out
}

// wrapperOpts lists, per wrapper, the options that take a value.
var wrapperOpts = map[string]string{
	"sudo":     "-u -g -h -p -C -D -R -T -U -r -t --user --group --host --prompt --chdir",
	"doas":     "-u -C",
	"env":      "-u -C -S --unset --chdir --split-string",
	"nice":     "-n --adjustment",
	"nohup":    "",
	"timeout":  "-k -s --kill-after --signal",
	"stdbuf":   "-i -o -e --input --output --error",
	"ionice":   "-c -n -p -t --class --classdata",
	"taskset":  "",
	"setsid":   "",
	"time":     "-f -o --format --output",
	"command":  "",
	"exec":     "-a",
	"xargs":    "-a -d -E -e -I -i -L -l -n -P -s --arg-file --delimiter --eof --replace --max-lines --max-args --max-procs --max-chars",
	"chroot":   "--userspec --groups",
	"flock":    "-w -E --timeout --conflict-exit-code",
	"unshare":  "",
	"watch":    "-n -d --interval",
	"script":   "-c --command -O -I -B -T",
	"builtin":  "",
	"strace":   "-e -o -p -s -u",
	"ltrace":   "-e -o -p -s -u",
	"unbuffer": "",
	"firejail": "",
	"runuser":  "-u -g -G --user --group",
}

// unwrap returns the command a wrapper runs (ok), and the commands of a
// string it hands to a shell (sh -c, eval), which are parsed here.
func unwrap(c Command, sh *Shell, depth int) (Command, bool, []Command) {
	args := c.Args
	switch c.Name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash":
		for i, a := range args {
			if a == "-c" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				if i+1 < len(args) {
					sh.Eval = true
					sub := Shell{}
					parseInto(&sub, args[i+1], depth+1, nil)
					mergeFlags(sh, &sub)
					return Command{}, false, sub.Commands
				}
				return Command{}, false, nil
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
		}
		return Command{}, false, nil
	case "eval":
		sh.Eval = true
		sub := Shell{}
		parseInto(&sub, strings.Join(args, " "), depth+1, nil)
		mergeFlags(sh, &sub)
		return Command{}, false, sub.Commands
	case "find":
		inner, ok := unwrapFind(c)
		return inner, ok, nil
	case "busybox":
		if len(args) > 0 {
			return Command{Name: args[0], Args: args[1:], Dynamic: c.Dynamic}, true, nil
		}
		return Command{}, false, nil
	}
	opts, isWrapper := wrapperOpts[c.Name]
	if !isWrapper {
		return Command{}, false, nil
	}
	takesValue := map[string]bool{}
	for _, o := range strings.Fields(opts) {
		takesValue[o] = true
	}
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if c.Name == "env" && strings.Contains(a, "=") && !strings.HasPrefix(a, "-") {
			i++
			continue
		}
		if c.Name == "env" && (a == "-S" || a == "--split-string") && i+1 < len(args) {
			f := strings.Fields(args[i+1])
			rest := append(f, args[i+2:]...)
			if len(rest) == 0 {
				return Command{}, false, nil
			}
			return Command{Name: rest[0], Args: rest[1:], Dynamic: c.Dynamic}, true, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		if name, _, hasEq := strings.Cut(a, "="); hasEq && takesValue[name] {
			i++
			continue
		}
		if takesValue[a] {
			i += 2
			continue
		}
		i++
	}
	switch c.Name {
	case "timeout":
		i++ // the duration
	case "taskset", "chroot", "flock":
		i++ // the mask, the new root, the lock file
	}
	if i >= len(args) {
		return Command{}, false, nil
	}
	return Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic}, true, nil
}

// unwrapFind returns the command find -exec runs, with {} replaced by the
// paths find starts from: `find / -exec rm -rf {} ;` removes under /.
func unwrapFind(c Command) (Command, bool) {
	var roots []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	for i, a := range c.Args {
		switch a {
		case "-exec", "-execdir", "-ok", "-okdir":
			var inner []string
			for _, b := range c.Args[i+1:] {
				if b == ";" || b == "+" {
					break
				}
				if b == "{}" {
					inner = append(inner, roots...)
					continue
				}
				inner = append(inner, b)
			}
			if len(inner) > 0 {
				return Command{Name: inner[0], Args: inner[1:], Dynamic: c.Dynamic}, true
			}
		}
	}
	return Command{}, false
}

func mergeFlags(dst, src *Shell) {
	dst.Pipes = dst.Pipes || src.Pipes
	dst.PipeToInterpreter = dst.PipeToInterpreter || src.PipeToInterpreter
	dst.DecodeToInterpreter = dst.DecodeToInterpreter || src.DecodeToInterpreter
	dst.Substitutions = dst.Substitutions || src.Substitutions
	dst.ProcessSubstitution = dst.ProcessSubstitution || src.ProcessSubstitution
	dst.Eval = dst.Eval || src.Eval
	dst.Background = dst.Background || src.Background
	dst.RecursiveFunctions = append(dst.RecursiveFunctions, src.RecursiveFunctions...)
	if dst.ParseError == "" {
		dst.ParseError = src.ParseError
	}
}

// ---- code typed into a REPL that shells out ----

// shellOutRe finds calls that hand a string to a shell, in Python and
// JavaScript: os.system("…"), os.popen, subprocess.*(…, shell=True or a
// string), commands.getoutput, pty.spawn, child_process exec/execSync/spawn.
var shellOutRe = regexp.MustCompile(`(?s)\b(os\.system|os\.popen|os\.exec\w*|os\.spawn\w*|subprocess\.\w+|commands\.getoutput|commands\.getstatusoutput|pty\.spawn|execSync|exec|spawnSync|spawn|execFileSync|execFile|system|popen)\s*\(\s*(\[[^\]]*\]|r?"(?:[^"\\]|\\.)*"|r?'(?:[^'\\]|\\.)*'|` + "`[^`]*`" + `)`)

var strLitRe = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|` + "`([^`]*)`")

// ParseShellOut finds shell commands that code typed into a REPL passes to
// a shell, and analyses them as shell lines. ok is false when the code has
// no such call.
func ParseShellOut(code string) (Shell, bool) {
	norm, changed := normalize(code)
	matches := shellOutRe.FindAllStringSubmatch(norm, -1)
	if len(matches) == 0 {
		return Shell{}, false
	}
	sh := Shell{Embedded: true, Normalized: changed}
	for _, m := range matches {
		arg := m[2]
		var line string
		if strings.HasPrefix(arg, "[") {
			// An argv list: join its string literals.
			var parts []string
			for _, lit := range strLitRe.FindAllStringSubmatch(arg, -1) {
				parts = append(parts, lit[1]+lit[2]+lit[3])
			}
			line = strings.Join(parts, " ")
		} else if lit := strLitRe.FindStringSubmatch(arg); lit != nil {
			line = lit[1] + lit[2] + lit[3]
		}
		line = codeStringUnescape.Replace(line)
		if strings.TrimSpace(line) == "" {
			continue
		}
		parseInto(&sh, line, 1, nil)
	}
	if sh.Commands == nil {
		sh.Commands = []Command{}
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
	return sh, true
}
