package policy

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// /etc/shadow, "write_redirects" for echo x > f), or a file the line
	// writes (WriteTargets: "raw_device_prefixes" for dd of=/dev/sda).
	// Derived like Listed.
	WordsListed []string `json:"words_listed"`
	// ListCommands holds, for each list of Listed, the indexes in Commands
	// of the commands whose name the list holds, in order; NameCommands,
	// for each of Names, the indexes of the commands of that name. A rule
	// about one list's or one name's commands iterates them (some i in
	// input.shell.list_commands.delete_commands) rather than every command
	// of the line, each asked whether the list holds it. Derived like
	// Listed.
	ListCommands map[string][]int `json:"list_commands"`
	NameCommands map[string][]int `json:"name_commands"`
	// Dynamic: some command's name or argument is computed at run time
	// (one of Commands is Dynamic). Derived like Names.
	Dynamic bool `json:"dynamic,omitempty"`
	// Hosts are the hosts the line's commands name, each in one canonical
	// spelling: the host of every URL in an argument, the bare host
	// arguments of network clients (data.termgate.lists.network_clients),
	// and /dev/tcp/HOST/… redirections. An IP address reads as dotted
	// decimal (2852039166, 0xa9fea9fe, 0251.0376.0251.0376 and
	// ::ffff:169.254.169.254 are all 169.254.169.254), an IPv6 address in
	// its compressed form, a name in lower case without a final dot.
	// Derived by the engine; the lists that hold one are in WordsListed.
	Hosts []string `json:"hosts,omitempty"`
	// GatewayRefs are the paths the line's commands name (operands,
	// NAME=value and --opt=value arguments, redirections), resolved against
	// their working directory, that are or lie under one of the gateway's
	// own paths (input.gateway.paths). Derived by the engine.
	GatewayRefs []string `json:"gateway_refs,omitempty"`
	// PathFacts says, for each operand of the commands (as written and
	// resolved) and each redirection's target and path, whether the
	// rules' protected and sensitive_path hold for it (see pathIndex).
	// Derived by the engine; absent when the bundle has no
	// protected_paths or sensitive_write_globs lists.
	PathFacts map[string]PathFact `json:"path_facts,omitempty"`
	// reaches maps a path of the line to what it reaches through symbolic
	// links, where that differs (derivePaths); its facts hold for the
	// path too.
	reaches map[string][]string
	// leaves holds the paths of the line that reach, through symbolic
	// links, a place outside their command's working directory where
	// their words do not (derivePaths).
	leaves map[string]bool
	// readDisk is true when deriving the paths looked at the file system
	// (links on the disk): the same document may be decided otherwise
	// once the files change.
	readDisk bool
	// WriteTargets are the files the commands write, as the bundle's
	// write_target rules find them (see Bundle.writeTargets). Derived by
	// the engine.
	WriteTargets []string `json:"write_targets"`
	// Modes are the modes the commands set, each [command name, mode], as
	// the bundle's line_mode rules find them (see lineModes). Derived by
	// the engine.
	Modes [][2]string `json:"modes"`

	data *shellData // the runners and options the analysis follows
	cwd  string     // the directory the next command runs in; "" unknown
	// parser parsed the line being walked, and parses the lines nested
	// in it: a parse is done with its parser before the walk starts. Nil
	// outside parseInto.
	parser *syntax.Parser
	// code gathers what the code the line hands to interpreters does
	// (python3 -c, node -e, a here-document fed to python3): the engine
	// makes it the input's code document.
	code *Code
	// sql gathers the SQL the line hands to database clients (psql -c,
	// mysql -e, sqlite3 DB SQL, a here-document fed to psql).
	sql *SQL
	// readings left is how many more second readings of a runner's
	// command (by position, beside the one after its separator) the line
	// may take, shared with the lines nested in it: readings within
	// readings multiply, so past maxReadings the line is not followed.
	readingsLeft *int
}

const maxReadings = 16

// notFollowed records that part of the line was not followed, as a parse
// error: the policy asks about a line it cannot judge (input.unparseable).
func (sh *Shell) notFollowed(why string) {
	if sh.ParseError == "" {
		sh.ParseError = why
	}
}

// readings is the line's allowance of second readings, made on first use
// and shared with the lines nested in it.
func (sh *Shell) readings() *int {
	if sh.readingsLeft == nil {
		n := maxReadings
		sh.readingsLeft = &n
	}
	return sh.readingsLeft
}

// takeReading counts one second reading against the line's allowance.
func (sh *Shell) takeReading() bool {
	left := sh.readings()
	if *left == 0 {
		return false
	}
	*left--
	return true
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
	// Cwd is the directory the command runs in when it is known: the
	// foreground program's (input.cwd), then what each cd of the line
	// before it made it ("~" for the home directory). Paths are the
	// operands resolved against it, lexically (.. and . removed), a path
	// under the home directory written ~/…; an operand that cannot be
	// resolved (relative, with no Cwd known; computed at run time) is
	// itself; one that climbs out of ~ (~/../../proc) is resolved through
	// the home directory when the gateway says which it is; dd's of=FILE
	// is of= and FILE resolved. A resolved path that is a symbolic link written with a
	// trailing slash (rm -rf link/) is the link's target, which is what
	// the program acts on. Derived by the engine.
	Cwd   string   `json:"cwd,omitempty"`
	Paths []string `json:"paths"`
	// Credentials are the words of the command that name a credential
	// file (credentials.go), a list (possibly empty) on every command of
	// a line that holds a credential word (input.shell.words_listed holds
	// credential_substrings), absent on the others (omitzero: an empty
	// list stays). Derived by the engine.
	Credentials []string `json:"credentials,omitzero"`
	// Listed names the lists of data.termgate.lists that hold the
	// command's name: "copy_commands" in c.listed is one lookup in a list
	// of a few names, where c.name in cfg.copy_commands compared the name
	// with every entry, for every command of every rule that asks.
	// Derived by the engine on every decision, like Flags.
	Listed []string `json:"listed"`
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
	// Path is the target resolved as a command's paths are, when that
	// differs from Target. Derived by the engine.
	Path string `json:"path,omitempty"`
}

// fill gives a shell's lists that are nil (null in a document a caller
// sent) their empty value, so that every rule reads a list where it
// expects one: count(null) is an error in Rego, not a zero.
func (sh *Shell) fill() {
	if sh.Commands == nil {
		sh.Commands = []Command{}
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
	for i := range sh.Commands {
		c := &sh.Commands[i]
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
	}
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

// maxWrappers bounds the runners one command is followed through
// (sudo nice timeout 5 CMD is three).
const maxWrappers = 32

// fold is how the analysis compares names and paths: Unicode
// compatibility forms folded (NFKC: ｒｍ is rm, ／ is /) and zero-width and
// soft-hyphen characters removed. It is applied to the words a command
// gets, never to the line before it is parsed: bash reads ＃, ＂ and ＼ as
// plain letters, not as a comment, a quote or an escape, and so must the
// analysis.
func fold(s string) (string, bool) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s, false
	}
	out := strings.Map(func(r rune) rune {
		switch r {
		case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad':
			return -1
		}
		return r
	}, s)
	out = norm.NFKC.String(out)
	return out, out != s
}

// normalize folds REPL code before its shell-outs are looked for.
func normalize(code string) (string, bool) { return fold(code) }

// ParseShell analyses a shell line with the default bundle's data.
func ParseShell(line string) Shell { return parseShell(line, nil, nil, "") }

// parseShell is ParseShell with a parser to reuse (nil: a new one), the
// bundle's shell data (nil: the default bundle's), and the directory the
// line starts in ("" unknown).
func parseShell(line string, p *syntax.Parser, data *shellData, cwd string) Shell {
	var sh Shell
	parseShellInto(&sh, line, p, data, cwd)
	return sh
}

// parseShellInto is parseShell into *sh, which it overwrites: the
// analysis works on the Shell in place, so one the caller keeps is one
// allocation rather than a copy of another.
func parseShellInto(sh *Shell, line string, p *syntax.Parser, data *shellData, cwd string) {
	if data == nil {
		data = defaultShellData()
	}
	*sh = Shell{data: data, cwd: cwd}
	parseInto(sh, line, 0, p)
	if sh.Commands == nil {
		sh.Commands = []Command{}
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
}

// sub is an empty analysis for a line nested in sh's (sh -c, eval, a
// here-document), with sh's data and directory.
func (sh *Shell) sub() Shell {
	return Shell{data: sh.data, cwd: sh.cwd, readingsLeft: sh.readings()}
}

// ParseArgv analyses a command given as an argv (a session start): no
// shell parses it, but wrappers and sh -c strings are followed as usual.
func ParseArgv(argv []string) Shell { return parseArgv(argv, nil, "") }

func parseArgv(argv []string, data *shellData, cwd string) Shell {
	if data == nil {
		data = defaultShellData()
	}
	sh := Shell{data: data, cwd: cwd}
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

// parseInto parses line into sh with p, or with a new parser when p is nil.
func parseInto(sh *Shell, line string, depth int, p *syntax.Parser) {
	if depth > maxDepth {
		sh.Eval = true
		sh.notFollowed("lines nested deeper than the gateway follows")
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
	outer := sh.parser
	sh.parser = p
	w := walker{sh: sh, depth: depth, src: line}
	w.stmts(f.Stmts)
	sh.parser = outer
}

// walker turns a parsed line into the policy's commands. It visits every
// node kind of mvdan.cc/sh's syntax package itself, and checks every
// pointer and interface it follows for nil: syntax.Walk panics on a nil
// node, and a valid parse holds many (a statement with no command, a for
// loop with no list, an empty arithmetic expression). So no statement,
// word, redirection or substitution of a line is left out. A node kind
// the walker does not know (one a newer parser adds) makes the line
// unparseable, and the policy asks rather than judge what it cannot see.
type walker struct {
	sh    *Shell
	depth int
	src   string   // the line parsed, for the source text of run-time parts
	funcs []string // functions being declared, innermost last
}

func (w *walker) stmts(list []*syntax.Stmt) {
	for _, st := range list {
		w.stmt(st)
	}
}

// stmt walks one statement. Redirections belong to the simple command they
// follow. Those of a statement with no simple command (a redirect-only
// statement such as `> f` or `x=$(< f)`, or a block, subshell, loop or if
// with redirections) go on a command of their own with an empty name.
func (w *walker) stmt(st *syntax.Stmt) {
	if st == nil {
		return
	}
	if st.Background {
		w.sh.Background = true
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if c != nil {
			w.call(c.Assigns, c.Args, st.Redirs)
			return
		}
	case *syntax.DeclClause:
		if c != nil {
			w.decl(c, st.Redirs)
			return
		}
	case nil:
	default:
		before := len(w.sh.Commands)
		w.command(st.Cmd)
		// { bash; } <<< 'code': what a compound command runs reads its
		// here-documents too.
		w.fed(w.sh.Commands[before:], st.Redirs)
	}
	if len(st.Redirs) > 0 {
		w.call(nil, nil, st.Redirs)
	}
}

// stmtCall is the simple command a statement runs, if it is one.
func stmtCall(st *syntax.Stmt) (*syntax.CallExpr, bool) {
	if st == nil {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	return call, ok && call != nil
}

// litWord is a word of one literal part.
func litWord(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}
}

// command walks a command other than a simple one or a declaration.
func (w *walker) command(cmd syntax.Command) {
	switch c := cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		if c != nil {
			w.call(c.Assigns, c.Args, nil)
		}
	case *syntax.DeclClause:
		if c != nil {
			w.decl(c, nil)
		}
	case *syntax.BinaryCmd:
		switch {
		case c == nil:
		case c.Op == syntax.Pipe || c.Op == syntax.PipeAll:
			w.sh.Pipes = true
			w.pipeline(c)
		default:
			w.stmt(c.X)
			w.stmt(c.Y)
		}
	case *syntax.Block:
		if c != nil {
			w.stmts(c.Stmts)
		}
	case *syntax.Subshell:
		if c != nil {
			defer w.keepCwd()()
			w.stmts(c.Stmts)
		}
	case *syntax.IfClause:
		if c != nil {
			w.stmts(c.Cond)
			w.stmts(c.Then)
			if c.Else != nil {
				w.command(c.Else)
			}
		}
	case *syntax.WhileClause:
		if c != nil {
			w.stmts(c.Cond)
			w.stmts(c.Do)
		}
	case *syntax.ForClause:
		if c != nil {
			w.loop(c.Loop)
			w.stmts(c.Do)
		}
	case *syntax.CaseClause:
		if c != nil {
			w.word(c.Word)
			for _, it := range c.Items {
				if it != nil {
					w.words(it.Patterns)
					w.stmts(it.Stmts)
				}
			}
		}
	case *syntax.FuncDecl:
		if c != nil {
			name := ""
			if c.Name != nil {
				name = c.Name.Value
			} else if len(c.Names) > 0 && c.Names[0] != nil {
				name = c.Names[0].Value
			}
			w.funcs = append(w.funcs, name)
			w.stmt(c.Body)
			w.funcs = w.funcs[:len(w.funcs)-1]
		}
	case *syntax.ArithmCmd:
		if c != nil {
			w.arithm(c.X)
		}
	case *syntax.TestClause:
		if c != nil {
			w.test(c.X)
		}
	case *syntax.LetClause:
		if c != nil {
			for _, x := range c.Exprs {
				w.arithm(x)
			}
		}
	case *syntax.TimeClause:
		if c == nil {
			break
		}
		w.stmt(c.Stmt)
		// time -o FILE CMD…: bash's keyword runs a command named -o,
		// but where time is not a keyword (dash, a POSIX sh) the time
		// program runs, and runs CMD. Both readings are judged.
		if call, ok := stmtCall(c.Stmt); ok && len(call.Args) > 0 && strings.HasPrefix(call.Args[0].Lit(), "-") {
			words := []*syntax.Word{litWord("time")}
			if c.PosixFormat {
				words = append(words, litWord("-p"))
			}
			w.call(call.Assigns, append(words, call.Args...), c.Stmt.Redirs)
		}
	case *syntax.CoprocClause:
		if c != nil {
			w.word(c.Name)
			w.stmt(c.Stmt)
		}
	case *syntax.TestDecl:
		if c != nil {
			w.word(c.Description)
			w.stmt(c.Body)
		}
	default:
		w.unknown(cmd)
	}
}

func (w *walker) loop(l syntax.Loop) {
	switch l := l.(type) {
	case nil:
	case *syntax.WordIter:
		if l != nil {
			w.words(l.Items)
		}
	case *syntax.CStyleLoop:
		if l != nil {
			w.arithm(l.Init)
			w.arithm(l.Cond)
			w.arithm(l.Post)
		}
	default:
		w.unknown(l)
	}
}

// keepCwd saves the shell's directory and returns what restores it: a cd
// in a subshell, a substitution or a pipeline stage stays there.
func (w *walker) keepCwd() func() {
	saved := w.sh.cwd
	return func() { w.sh.cwd = saved }
}

// unknown marks a line holding a node kind the walker does not know.
func (w *walker) unknown(n syntax.Node) {
	if w.sh.ParseError == "" {
		w.sh.ParseError = fmt.Sprintf("shell syntax the gateway does not know (%T)", n)
	}
}

func (w *walker) words(list []*syntax.Word) {
	for _, word := range list {
		w.word(word)
	}
}

// word walks a word for the substitutions inside it: the commands they run
// are commands of the line.
func (w *walker) word(word *syntax.Word) {
	if word == nil {
		return
	}
	for _, p := range word.Parts {
		w.part(p)
	}
}

func (w *walker) part(p syntax.WordPart) {
	switch p := p.(type) {
	case nil, *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob:
	case *syntax.DblQuoted:
		if p != nil {
			for _, q := range p.Parts {
				w.part(q)
			}
		}
	case *syntax.ParamExp:
		if p == nil {
			return
		}
		w.part(p.NestedParam)
		w.arithm(p.Index)
		if p.Slice != nil {
			w.arithm(p.Slice.Offset)
			w.arithm(p.Slice.Length)
		}
		if p.Repl != nil {
			w.word(p.Repl.Orig)
			w.word(p.Repl.With)
		}
		if p.Exp != nil {
			w.word(p.Exp.Word)
		}
	case *syntax.CmdSubst:
		if p != nil {
			w.sh.Substitutions = true
			restore := w.keepCwd()
			w.stmts(p.Stmts)
			restore()
		}
	case *syntax.ProcSubst:
		if p != nil {
			w.sh.Substitutions = true
			w.sh.ProcessSubstitution = true
			restore := w.keepCwd()
			w.stmts(p.Stmts)
			restore()
		}
	case *syntax.ArithmExp:
		if p != nil {
			w.arithm(p.X)
		}
	case *syntax.BraceExp:
		if p != nil {
			w.words(p.Elems)
		}
	default:
		w.unknown(p)
	}
}

func (w *walker) arithm(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.Word:
		w.word(x)
	case *syntax.BinaryArithm:
		if x != nil {
			w.arithm(x.X)
			w.arithm(x.Y)
		}
	case *syntax.UnaryArithm:
		if x != nil {
			w.arithm(x.X)
		}
	case *syntax.ParenArithm:
		if x != nil {
			w.arithm(x.X)
		}
	case *syntax.FlagsArithm:
		if x != nil {
			w.arithm(x.X)
		}
	default:
		w.unknown(x)
	}
}

func (w *walker) test(x syntax.TestExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.Word:
		w.word(x)
	case *syntax.BinaryTest:
		if x != nil {
			w.test(x.X)
			w.test(x.Y)
		}
	case *syntax.UnaryTest:
		if x != nil {
			w.test(x.X)
		}
	case *syntax.ParenTest:
		if x != nil {
			w.test(x.X)
		}
	default:
		w.unknown(x)
	}
}

// assign walks an assignment's index and value (a=$(…), a[$(…)]=1,
// a=($(…))) and adds its name to cmd.Assigns.
func (w *walker) assign(a *syntax.Assign, cmd *Command) {
	if a == nil {
		return
	}
	if a.Name != nil {
		cmd.Assigns = append(cmd.Assigns, a.Name.Value)
	}
	w.arithm(a.Index)
	w.word(a.Value)
	if a.Name != nil && a.Value != nil && w.sh.rt().commandEnv[a.Name.Value] {
		v, _ := w.wordValue(a.Value)
		w.commandLine(strings.TrimLeft(v, "| "), "$"+a.Name.Value) // LESSOPEN='|cmd %s'

	}
	if a.Array != nil {
		for _, e := range a.Array.Elems {
			if e != nil {
				w.arithm(e.Index)
				w.word(e.Value)
			}
		}
	}
}

// call adds a simple command: its assignments, its words and its
// redirections. With no words it is a command with an empty name: a bare
// assignment (x=1), an assignment with a redirection (x=1 > f), or a
// redirect-only statement (> f, < f, <<<x).
func (w *walker) call(assigns []*syntax.Assign, args []*syntax.Word, redirs []*syntax.Redirect) {
	cmd := Command{}
	for _, a := range assigns {
		w.assign(a, &cmd)
	}
	var words []string
	if len(args) > 0 {
		words = make([]string, 0, len(args)) // a word makes one field, but for braces and $IFS
	}
	for i, word := range args {
		w.word(word)
		var static bool
		words, static = w.appendFields(words, word)
		if !static || i == 0 && globbed(word) {
			cmd.Dynamic = true // a name the shell expands to a file's is computed too
		}
	}
	if len(words) > 0 {
		cmd.Name, cmd.Args = words[0], words[1:]
	}
	w.emit(cmd, redirs)
}

// globbed: an unquoted part of word holds a pattern character, which the
// shell expands to the names of files (/usr/bin/su*o runs sudo).
func globbed(word *syntax.Word) bool {
	if len(word.Parts) == 1 {
		if l, ok := word.Parts[0].(*syntax.Lit); ok && l != nil && l.Value == "[" {
			return false // the test command
		}
	}
	for _, p := range word.Parts {
		if l, ok := p.(*syntax.Lit); ok && l != nil && strings.ContainsAny(unescapedGlob(l.Value), "*?[") {
			return true
		}
	}
	return false
}

// unescapedGlob drops the characters a backslash escapes: r\* is no
// pattern.
func unescapedGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decl adds a declaration (declare, local, export, readonly, typeset,
// nameref) as a command of that name: its assignments' names in Assigns,
// its options and bare names in Args.
func (w *walker) decl(d *syntax.DeclClause, redirs []*syntax.Redirect) {
	cmd := Command{Name: "declare"}
	if d.Variant != nil {
		cmd.Name = d.Variant.Value
	}
	for _, a := range d.Args {
		switch {
		case a == nil:
		case a.Naked && a.Value != nil:
			w.word(a.Value)
			v, static := w.wordValue(a.Value)
			cmd.Dynamic = cmd.Dynamic || !static
			cmd.Args = append(cmd.Args, v)
		case a.Naked:
			if a.Name != nil {
				cmd.Args = append(cmd.Args, a.Name.Value)
			}
			w.arithm(a.Index)
		default:
			w.assign(a, &cmd)
		}
	}
	w.emit(cmd, redirs)
}

// emit adds cmd, with redirs, and what it runs.
func (w *walker) emit(cmd Command, redirs []*syntax.Redirect) {
	cmd.Redirects = w.redirects(redirs)
	for _, f := range w.funcs {
		if f != "" && cmd.Name == f {
			w.sh.RecursiveFunctions = append(w.sh.RecursiveFunctions, f)
		}
	}
	cmds := finish(cmd, w.sh, w.depth)
	if len(w.sh.Commands) == 0 {
		w.sh.Commands = cmds // finish's own slice: nothing else holds it
	} else {
		w.sh.Commands = append(w.sh.Commands, cmds...)
	}
	w.fed(cmds, redirs)
}

// redirects walks a statement's redirections and returns them as the
// policy sees them: the operator and the target's value. A here-document's
// target is "<<heredoc>>"; `>& file` (a target that is not a descriptor)
// is recorded as `&> file`, which is what bash does with it.
func (w *walker) redirects(rs []*syntax.Redirect) []Redirect {
	var out []Redirect
	for _, r := range rs {
		if r == nil {
			continue
		}
		w.word(r.Word)
		w.word(r.Hdoc)
		target, _ := w.wordValue(r.Word)
		op := r.Op.String()
		switch {
		case r.Hdoc != nil || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc:
			target = "<<heredoc>>"
		case r.Op == syntax.DplOut && !isDescriptor(target):
			op = syntax.RdrAll.String()
		}
		out = append(out, Redirect{Op: op, Target: target})
	}
	return out
}

// isDescriptor: the target of >& that names a file descriptor (2>&1, >&-,
// >&3-) rather than a file.
func isDescriptor(t string) bool {
	t = strings.TrimSuffix(t, "-")
	return strings.Trim(t, "0123456789") == ""
}

// fed judges the here-documents and here-strings that redirs feed to the
// standard input of cmds: fed to a shell or an interpreter that reads its
// code there, they are code, as a pipe into it would be (bash <<< 'rm -rf
// ~', python3 <<EOF). The line is flagged pipe_to_interpreter, and the
// body is judged as a shell line (for a shell) or as code that may shell
// out (for another interpreter) when the program takes no code argument.
func (w *walker) fed(cmds []Command, redirs []*syntax.Redirect) {
	var bodies []string
	for _, r := range redirs {
		if r == nil || r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.WordHdoc:
			v, _ := w.wordValue(r.Word)
			bodies = append(bodies, v)
		case syntax.Hdoc, syntax.DashHdoc:
			bodies = append(bodies, w.hdocBody(r))
		}
	}
	if len(bodies) == 0 {
		return
	}
	for _, c := range cmds {
		if d := sqlDialect(c.Name); d != "" && len(sqlArgs(c)) == 0 {
			for _, b := range bodies {
				w.sh.Commands = append(w.sh.Commands, embedSQL(w.sh, d, b)...)
			}
		}
		shell, ok := w.sh.codeReader(c)
		if !ok {
			continue
		}
		w.sh.PipeToInterpreter = true
		if hasCodeArg(c) {
			continue
		}
		for _, b := range bodies {
			sub := w.sh.sub()
			switch lang := codeLanguage(c.Name); {
			case shell:
				parseInto(&sub, b, w.depth+1, w.sh.parser)
			case lang != "":
				sub.Commands = embed(&sub, lang, b, w.depth+1)
			default:
				shellOut(&sub, b, w.depth+1)
			}
			mergeFlags(w.sh, &sub)
			w.sh.Commands = append(w.sh.Commands, sub.Commands...)
		}
	}
}

// hdocUnescape removes the backslashes an unquoted here-document keeps.
var hdocUnescape = strings.NewReplacer(`\$`, `$`, "\\`", "`", `\\`, `\`, "\\\n", "")

// hdocBody is the text a here-document feeds: literal when its delimiter
// is quoted, with escapes removed and run-time parts as written otherwise.
func (w *walker) hdocBody(r *syntax.Redirect) string {
	if r.Hdoc == nil {
		return ""
	}
	quoted := false
	if r.Word != nil {
		for _, p := range r.Word.Parts {
			switch p := p.(type) {
			case *syntax.SglQuoted, *syntax.DblQuoted:
				quoted = true
			case *syntax.Lit:
				quoted = quoted || p != nil && strings.Contains(p.Value, `\`)
			}
		}
	}
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		switch p := p.(type) {
		case nil:
		case *syntax.Lit:
			if p == nil {
				continue
			}
			if quoted {
				b.WriteString(p.Value)
			} else {
				b.WriteString(hdocUnescape.Replace(p.Value))
			}
		default:
			b.WriteString(w.source(p))
		}
	}
	return b.String()
}

// readsCode reports whether c reads code from its standard input (ok), and
// whether that code is shell (shell): a shell or an interpreter with no
// script argument, or source/. of /dev/stdin.
func readsCode(c Command) (shell, ok bool) {
	switch {
	case isInterpreter(c.Name) && !hasScriptArg(c):
		return IsShell(c.Name), true
	case (c.Name == "source" || c.Name == ".") && len(c.Args) > 0 && isStdinPath(c.Args[0]):
		return true, true
	}
	return false, false
}

// codeReader is readsCode, and the runners that read the commands they
// run from their standard input (at, batch), and make reading its
// makefile there (make -f -): whatever feeds c's standard input, a pipe, a
// here-document or a program's output (awk's print | "cmd", vim's :w
// !cmd), is code to them.
func (sh *Shell) codeReader(c Command) (shell, ok bool) {
	if shell, ok := readsCode(c); ok {
		return shell, ok
	}
	if sh.rt().runners[c.Name].stdin {
		return true, true
	}
	if c.Name == "make" || c.Name == "gmake" {
		for i, a := range c.Args {
			if (a == "-f" || a == "--file" || a == "--makefile") && i+1 < len(c.Args) && (c.Args[i+1] == "-" || isStdinPath(c.Args[i+1])) {
				return false, true
			}
		}
	}
	return false, false
}

func isStdinPath(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// hasCodeArg: the program's code is an argument (sh -c '…', python3 -c,
// node -e), so what its standard input holds is data.
func hasCodeArg(c Command) bool {
	for _, a := range c.Args {
		switch {
		case a == "-c" || a == "-e" || a == "--command" || a == "--eval":
			return true
		case IsShell(c.Name) && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c"):
			return true
		case !strings.HasPrefix(a, "-"):
			return false
		}
	}
	return false
}

// pipeline walks a | b | c, flagging interpreters fed by the pipe.
func (w *walker) pipeline(c *syntax.BinaryCmd) {
	var stages []*syntax.Stmt
	var collect func(s *syntax.Stmt)
	collect = func(s *syntax.Stmt) {
		if s == nil {
			return
		}
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && b != nil && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
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
		restore := w.keepCwd() // each stage runs in a subshell of its own
		w.stmt(s)
		restore()
		for _, cmd := range w.sh.Commands[before:] {
			if _, reads := w.sh.codeReader(cmd); i > 0 && reads {
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
	if len(word.Parts) == 1 {
		if l, ok := word.Parts[0].(*syntax.Lit); ok && l != nil {
			return unescape(l.Value), true
		}
	}
	var b strings.Builder
	static := true
	for _, p := range word.Parts {
		switch p := p.(type) {
		case nil:
		case *syntax.Lit:
			if p != nil {
				b.WriteString(unescape(p.Value))
			}
		case *syntax.SglQuoted:
			if p != nil && p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else if p != nil {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if p == nil {
				continue
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					if l != nil {
						b.WriteString(dquoteUnescape.Replace(l.Value))
					}
					continue
				}
				static = false
				b.WriteString(w.source(q))
			}
		default:
			static = false
			b.WriteString(w.source(p))
		}
	}
	return b.String(), static
}

// source is a node's text in the line parsed; a command substitution in
// backquotes reads as $(…), as the shell runs it.
func (w *walker) source(n syntax.Node) string {
	if n == nil {
		return ""
	}
	if p, ok := n.(*syntax.ParamExp); ok && (p == nil || p.Short && p.Index == nil && p.Param == nil) {
		return "$" // zsh's $ with a nested parameter only: End would follow the nil name
	}
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
	if n, folded := fold(c.Name); folded {
		c.Name, sh.Normalized = n, true
	}
	if c.Cwd == "" {
		c.Cwd = sh.cwd
	}
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
	// What the command runs is read from its arguments as the program gets
	// them; what the policy compares is folded.
	inner, ok, nested := unwrap(c, sh, depth)
	writes, runs := programOptions(c, sh, depth, ok || len(nested) > 0)
	nested = append(nested, runs...)
	shown := c
	for i, a := range c.Args {
		if f, folded := fold(a); folded {
			if i == 0 || &shown.Args[0] == &c.Args[0] {
				shown.Args = slices.Clone(c.Args)
			}
			shown.Args[i], sh.Normalized = f, true
		}
	}
	if len(writes) > 0 {
		shown.Redirects = append(slices.Clip(c.Redirects), writes...)
	}
	out := append([]Command{shown}, nested...)
	switch {
	case !ok || inner.Name == "":
	case len(c.Wrappers) >= maxWrappers:
		// timeout 1 timeout 1 … two thousand times: each command would
		// carry every wrapper before it, and the document grow with
		// their square. Past the bound the line is not followed.
		sh.Eval = true
		sh.notFollowed("runners within runners beyond what the gateway follows")
	default:
		out = append(out, finish(runBy(inner, c), sh, depth)...)
	}
	switch {
	case !inShell(c):
	case c.Name == "cd":
		sh.cwd = chdir(sh.cwd, c)
	case c.Name == "pushd" || c.Name == "popd":
		sh.cwd = sh.dirStack(c)
	case c.Name == "source" || c.Name == ".":
		sh.cwd = "" // wherever the file's lines go
	}
	return out
}

// runBy is inner as c runs it: wrapped by c and c's wrappers, in c's
// directory, computed at run time when c is.
func runBy(inner, c Command) Command {
	inner.Wrappers = append(slices.Clone(c.Wrappers), c.Name)
	inner.Dynamic = inner.Dynamic || c.Dynamic
	inner.Cwd = c.Cwd
	return inner
}

// dirStack is the directory pushd or popd leaves the shell in, as far as
// the line tells: pushd DIR goes to DIR, as cd does; what comes off the
// stack (popd, pushd alone, pushd -, a rotation +N/-N, -n) is unknown, for
// the stack may hold what earlier lines, a subshell, a failed pushd, dirs
// -c or DIRSTACK made of it.
func (sh *Shell) dirStack(c Command) string {
	if c.Name == "popd" {
		return ""
	}
	for _, a := range c.Args {
		if a == "-n" || a == "-" || strings.HasPrefix(a, "+") || len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			return ""
		}
	}
	if !slices.ContainsFunc(c.Args, func(a string) bool { return a == "--" || !strings.HasPrefix(a, "-") }) {
		return "" // pushd alone swaps the two on top
	}
	return chdir(sh.cwd, c)
}

// inShell: the command runs in the shell itself, so a cd moves it: no
// wrapper, or only the builtins that run a builtin (command cd, builtin
// cd). A program that runs cd (setpriv cd /x, time -o f cd /x, nohup cd)
// starts one that cannot move the shell.
func inShell(c Command) bool {
	for _, w := range c.Wrappers {
		if w != "command" && w != "builtin" {
			return false
		}
	}
	return true
}

// chdir is the directory cd (or pushd) leaves the shell in, as far as the
// line tells: "~" for the home directory, ~/../.. for one above it, ""
// when unknown (cd -, a directory computed at run time, a relative one
// from an unknown place).
func chdir(cwd string, c Command) string {
	if c.Dynamic {
		return ""
	}
	var dir string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		dir = a
		break
	}
	switch dir {
	case "", "~", "$HOME", "${HOME}":
		return "~"
	case "-":
		return ""
	}
	if r := resolvePath(cwd, dir); r != "" {
		return r
	}
	// A directory that climbs out of ~ (cd ~/../.., cd ../.. from ~/p)
	// stays written from ~, cleaned as far as it goes (~/../..): the
	// paths relative to it resolve through the home directory the
	// gateway gives (beyondHome), and stay unresolved without one.
	if rest, ok := underHome(cwd, dir); ok {
		return "~/" + path.Clean(rest)
	}
	return ""
}

// resolvePath resolves p against the directory cwd lexically: an
// absolute path cleaned, ~/… and $HOME/… as ~/…, a relative path joined
// to cwd ("" when cwd is unknown, or when .. leaves ~ upwards).
func resolvePath(cwd, p string) string {
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	}
	if rest, ok := underHome(cwd, p); ok {
		return homeJoin(rest)
	}
	if strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") || cwd == "" {
		return "" // ~user, a variable, or relative to an unknown place
	}
	return path.Join(cwd, p)
}

// underHome is p written relative to ~, not cleaned, when p names a path
// under ~ as written (~, ~/…, $HOME/…, ${HOME}/…) or is relative and cwd
// is ~ or under it: ("", true) for ~ itself; false for any other path.
func underHome(cwd, p string) (string, bool) {
	for _, home := range []string{"~", "$HOME", "${HOME}"} {
		if p == home {
			return "", true
		}
		if rest, ok := strings.CutPrefix(p, home+"/"); ok {
			return rest, true
		}
	}
	switch {
	case p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$"):
		return "", false
	case cwd == "~":
		return p, true
	}
	if rest, ok := strings.CutPrefix(cwd, "~/"); ok {
		return rest + "/" + p, true
	}
	return "", false
}

// homeJoin is ~/rest cleaned, or "" when rest climbs out of ~.
func homeJoin(rest string) string {
	if r := path.Clean(rest); r == ".." || strings.HasPrefix(r, "../") {
		return ""
	}
	c := path.Clean("/" + rest)
	if c == "/" {
		return "~"
	}
	return "~" + c
}

// parseNested parses into sub a line that a command of sh hands to a
// shell (sh -c, eval), as the shell will: its bytes as they are.
func parseNested(sh, sub *Shell, line string, depth int) {
	parseInto(sub, line, depth, sh.parser)
}

// rt is the shell data the analysis follows: the bundle's, or the
// default bundle's for a Shell made without one.
func (sh *Shell) rt() *shellData {
	if sh.data == nil {
		sh.data = defaultShellData()
	}
	return sh.data
}

// runLine parses line, which a program of sh runs as a shell line (an
// option's value, a variable's, a runner's words), and returns its
// commands, each marked as run by via.
func runLine(sh *Shell, line string, depth int, via string) []Command {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	sub := sh.sub()
	parseNested(sh, &sub, line, depth+1)
	return adopt(sh, &sub, via)
}

// adopt merges what sub, a line some program of sh runs, found into sh,
// and returns its commands, each marked as run by via.
func adopt(sh, sub *Shell, via string) []Command {
	mergeFlags(sh, sub)
	for i := range sub.Commands {
		sub.Commands[i].Wrappers = append([]string{via}, sub.Commands[i].Wrappers...)
	}
	return sub.Commands
}

// wordLines returns the commands of each of args read as a shell line:
// a runner that takes one string as a shell command and several words as
// a program and its arguments (tmux new 'a b'; tmux new a b, whose
// program unwrap reads too; a terminal's -e), or each word as a command
// (hyperfine 'a' 'b'). strict readings are the program's own: one that
// does not parse is asked about, as any line that does not parse. The
// others only look for a command among words another program gets
// (tmux splitw -l 10 'CMD', its -l read as taking no value): a word that
// does not parse is read line by line, and what does not parse then is
// left to the program's own reading. Each reading is one of the line's
// allowance: past it, the line is asked about as one not followed.
func wordLines(sh *Shell, args []string, depth int, via string, strict bool) []Command {
	var out []Command
	for _, l := range args {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if depth >= maxDepth || !sh.takeReading() {
			sh.Eval = true
			sh.notFollowed("runners within runners beyond what the gateway follows")
			break
		}
		if strict {
			out = append(out, runLine(sh, l, depth, via)...)
		} else {
			out = append(out, lenientLine(sh, l, depth, via)...)
		}
	}
	return out
}

// lenientLine is runLine for a word that may not be a shell line at all:
// what does not parse is left out, line by line, and sets no parse error.
func lenientLine(sh *Shell, line string, depth int, via string) []Command {
	sub := sh.sub()
	parseNested(sh, &sub, line, depth+1)
	if sub.ParseError != "" {
		if !strings.Contains(line, "\n") {
			return nil
		}
		var out []Command
		for _, l := range strings.Split(line, "\n") {
			out = append(out, lenientLine(sh, l, depth, via)...)
		}
		return out
	}
	return adopt(sh, &sub, via)
}

// screenCommand reads screen -X CMD, a command sent to a running
// screen: stuff types its text into the window (stuff 'rm -rf ~^M', the
// ^M and \n a typed Enter), exec and screen run a program there. Each is
// judged as the lines it amounts to; ok is false for any other screen.
func screenCommand(args []string, sh *Shell, depth int) ([]Command, bool) {
	k := slices.Index(args, "-X")
	if k < 0 || k+2 >= len(args) {
		return nil, false
	}
	switch cmd, rest := args[k+1], args[k+2:]; cmd {
	case "stuff":
		text := strings.Join(rest, " ")
		for _, enter := range []string{"^M", "^J", `\n`, `\r`, `\015`, `\012`} {
			text = strings.ReplaceAll(text, enter, "\n")
		}
		return runLine(sh, text, depth, "screen"), true
	case "exec", "screen":
		if len(rest) == 1 {
			return runLine(sh, rest[0], depth, "screen"), true
		}
		return finish(Command{Name: rest[0], Args: rest[1:], Wrappers: []string{"screen"}}, sh, depth), true
	}
	return nil, false
}

// tmuxSendKeys reads tmux send-keys (send): the keys it types into a
// pane, each argument after the next with nothing between them, a key
// name (Enter, Space, Tab, BSpace, C-u…) as what it types or erases
// (none with -l), each argument a byte in hex with -H. The text is judged
// as the lines it types; a key that recalls a line nobody judged (Up,
// C-p, C-r) makes the line one that is asked about. ok is false for any
// other tmux command.
func tmuxSendKeys(args []string, sh *Shell, depth int) ([]Command, bool) {
	i := skipOptions(args, 0, map[string]int{"-L": 1, "-S": 1, "-f": 1, "-T": 1})
	if i >= len(args) || args[i] != "send-keys" && args[i] != "send" {
		return nil, false
	}
	literal, hex := false, false
	i++
	for i < len(args) && strings.HasPrefix(args[i], "-") && len(args[i]) > 1 {
		a := args[i]
		i++
		if a == "--" {
			break
		}
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'l':
				literal = true
			case 'H':
				hex = true
			case 't', 'N':
				if k == len(a)-1 {
					i++ // the value is the next argument
				}
				k = len(a)
			}
		}
	}
	// The typed text; an erase shortens it in place (a copy per BSpace
	// would make a line of many of them quadratic).
	var b []byte
	escaped := false // an editing key came since the last Enter
	for _, k := range args[min(i, len(args)):] {
		switch {
		case hex:
			if v, err := strconv.ParseUint(strings.TrimPrefix(k, "0x"), 16, 8); err == nil {
				b = append(b, byte(v))
			}
		case literal:
			b = append(b, k...)
		case k == "Enter" || k == "C-m" || k == "C-j" || k == "KPEnter":
			b = append(b, '\n')
		case k == "Space":
			b = append(b, ' ')
		case k == "Tab" || k == "C-i":
			b = append(b, '\t')
		case k == "BSpace" || k == "C-h":
			if _, n := utf8.DecodeLastRune(b); n > 0 && b[len(b)-1] != '\n' {
				b = b[:len(b)-n]
			}
		case k == "C-u" || k == "C-c":
			b = b[:bytes.LastIndexByte(b, '\n')+1]
		case k == "Up" || k == "C-p" || k == "C-r" || k == "Down" || k == "C-n":
			sh.Eval = true
			sh.notFollowed("tmux send-keys recalls a line from the pane's history")
		case k == "Escape" || editKey(k):
			// A key that moves the cursor or edits the line (Home, C-a,
			// Left, M-b, Escape b …): what follows is typed elsewhere
			// than the end, and the line is not the text in order.
			escaped = true
		default:
			if escaped {
				sh.Eval = true
				sh.notFollowed("tmux send-keys edits the line with keys that move the cursor")
			}
			b = append(b, k...)
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			escaped = false
		}
	}
	return runLine(sh, string(b), depth, "tmux"), true
}

// editKey reports whether k is a tmux key name that moves the cursor or
// edits the line rather than typing text: the arrows left and right,
// Home, End, the deletes, and every Ctrl or Meta key send-keys does not
// read as text (C-a, C-e, C-k, C-w, C-y, M-b…).
func editKey(k string) bool {
	switch k {
	case "Left", "Right", "Home", "End", "DC", "IC", "PPage", "NPage", "PageUp", "PageDown", "BTab":
		return true
	}
	return len(k) > 2 && (strings.HasPrefix(k, "C-") || strings.HasPrefix(k, "M-") || strings.HasPrefix(k, "S-"))
}

// commandLine adds the commands of a line some program runs (a variable's
// value such as GIT_PAGER) to the walker's shell.
func (w *walker) commandLine(line, via string) {
	w.sh.Commands = append(w.sh.Commands, runLine(w.sh, line, w.depth, via)...)
}

// unwrap returns the command a wrapper runs (ok), and the commands of a
// string it hands to a shell (sh -c, eval), which are parsed here. The
// runners (data.termgate.runners) are followed as their data says; sh,
// eval, env, busybox and find, whose syntax no such data describes, here.
func unwrap(c Command, sh *Shell, depth int) (Command, bool, []Command) {
	args := c.Args
	if lang, code, ok := codeArg(c); ok {
		return Command{}, false, embed(sh, lang, code, depth+1)
	}
	if d := sqlDialect(c.Name); d != "" {
		var nested []Command
		for _, q := range sqlArgs(c) {
			nested = append(nested, embedSQL(sh, d, q)...)
		}
		return Command{}, false, nested
	}
	switch c.Name {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash":
		for i, a := range args {
			if a == "-c" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				if i+1 < len(args) {
					// Code built at run time: bash -c "$(curl …)".
					sh.Eval = sh.Eval || c.Dynamic
					sub := sh.sub()
					parseNested(sh, &sub, args[i+1], depth+1)
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
		sh.Eval = sh.Eval || c.Dynamic
		sub := sh.sub()
		parseNested(sh, &sub, strings.Join(args, " "), depth+1)
		mergeFlags(sh, &sub)
		if inShell(c) {
			sh.cwd = sub.cwd // eval cd /: the shell itself moves
		}
		return Command{}, false, sub.Commands
	case "find":
		return unwrapFind(c)
	case "busybox", "toybox":
		if len(args) > 0 {
			return Command{Name: args[0], Args: args[1:], Dynamic: c.Dynamic}, true, nil
		}
		return Command{}, false, nil
	case "env":
		return unwrapEnv(c, sh, depth)
	case "screen":
		if nested, ok := screenCommand(c.Args, sh, depth); ok {
			return Command{}, false, nested
		}
	case "tmux":
		if nested, ok := tmuxSendKeys(c.Args, sh, depth); ok {
			return Command{}, false, nested
		}
	case "capsh":
		return unwrapCapsh(c)
	case "runcon":
		return unwrapRuncon(c)
	}
	r, isRunner := sh.rt().runners[c.Name]
	if !isRunner {
		return Command{}, false, nil
	}
	i := skipOptions(args, 0, r.options)
	if len(r.subcommands) > 0 {
		switch {
		case i < len(args) && slices.Contains(r.subcommands, args[i]):
			i = skipOptions(args, i+1, r.options)
		case !r.optionalSub:
			return Command{}, false, nil
		}
	}
	if slices.ContainsFunc(args[:i], func(a string) bool {
		o, _, _ := strings.Cut(a, "=")
		return slices.Contains(r.shell, o)
	}) {
		// run0 --via-shell -- -c CMD: a shell gets the rest.
		return Command{Name: "sh", Args: args[i:], Dynamic: c.Dynamic}, true, nil
	}
	i += r.skip
	var nested []Command
	if j := slices.IndexFunc(args, func(a string) bool { return slices.Contains(r.separators, a) }); j >= 0 && j+1 != i {
		// The command follows the separator; the reading by position
		// (aws-vault exec PROFILE rm -rf -- ~) is judged too.
		switch {
		case i >= len(args) || r.line || i == j:
		case depth >= maxDepth || !sh.takeReading():
			// Readings within readings multiply: past the nesting and
			// the number the analysis follows, the line is not followed,
			// and is asked about as one that cannot be judged.
			sh.Eval = true
			sh.notFollowed("runners within runners beyond what the gateway follows")
		default:
			nested = finish(runBy(Command{Name: args[i], Args: args[i+1:]}, c), sh, depth+1)
		}
		i = j + 1
	}
	if i >= len(args) {
		return Command{}, false, nested
	}
	if r.line {
		return Command{}, false, append(nested, runLine(sh, strings.Join(args[i:], " "), depth, c.Name)...)
	}
	if r.lines {
		return Command{}, false, append(nested, wordLines(sh, args[i:], depth, c.Name, true)...)
	}
	if r.each {
		if i == len(args)-1 {
			// One string: a shell command.
			return Command{}, false, append(nested, wordLines(sh, args[i:], depth, c.Name, true)...)
		}
		// Several: a program and its arguments, and any word that reads
		// as a command.
		nested = append(nested, wordLines(sh, args[i:], depth, c.Name, false)...)
		return Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic}, true, nested
	}
	return Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic}, true, nested
}

// skipOptions returns the index of the first argument from i on that is
// not an option (or the one after "--"), at most len(args): an option
// whose values the line leaves out (sudo -u) ends the arguments.
// takesValue names the options whose values are the next arguments, and
// how many (the first may follow "=" instead).
func skipOptions(args []string, i int, takesValue map[string]int) int {
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return i + 1
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i
		}
		i = afterOption(args, i, takesValue)
	}
	return min(i, len(args))
}

// afterOption is the index after the option at i and its values. A word
// of one dash and several letters not named itself is a cluster of
// one-letter options, as getopt reads it (-vu USER, -uUSER): the first
// letter that takes a value takes the rest of the word, or the next
// arguments when it ends the word. An option whose value is optional
// (takesValue -1: xargs -i, --replace=R) takes only a joined one.
func afterOption(args []string, i int, takesValue map[string]int) int {
	a := args[i]
	if name, _, hasEq := strings.Cut(a, "="); hasEq && takesValue[name] != 0 {
		return i + max(takesValue[name], 1)
	}
	if n := takesValue[a]; n != 0 || strings.HasPrefix(a, "--") {
		return i + 1 + max(n, 0)
	}
	for k := 1; k < len(a); k++ {
		switch n := takesValue["-"+a[k:k+1]]; {
		case n < 0: // an optional value, only ever joined (xargs -0i)
			return i + 1
		case n > 0 && k == len(a)-1:
			return i + 1 + n
		case n > 0:
			return i + n
		}
	}
	return i + 1
}

// unwrapCapsh follows capsh [--OPTION=VALUE]… -- ARGS: capsh runs its
// shell (bash, or --shell=PATH) with the arguments after "--" or "-+"
// (capsh --drop=cap_sys_admin -- -c 'rm -rf ~'), and itself again with
// those after "==" or "=+". Without one of them it runs nothing.
func unwrapCapsh(c Command) (Command, bool, []Command) {
	shell := "bash"
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shell="); ok {
			shell = v
		}
		switch a {
		case "--", "-+":
			return Command{Name: shell, Args: c.Args[i+1:], Dynamic: c.Dynamic}, true, nil
		case "==", "=+":
			// capsh runs itself again with the rest: read on, as the new
			// capsh would, from its defaults.
			shell = "bash"
		}
	}
	return Command{}, false, nil
}

var (
	runconOpts = map[string]int{"-u": 1, "-r": 1, "-t": 1, "-l": 1, "--user": 1, "--role": 1, "--type": 1, "--range": 1}
	runconLong = []string{"--user", "--role", "--type", "--range", "--compute", "--help", "--version"}
)

// unwrapRuncon follows runcon CONTEXT CMD… and runcon [-c] [-u USER] [-r
// ROLE] [-t TYPE] [-l RANGE] CMD…: the context is there when no option
// is given. Long options may be abbreviated (--ty), as getopt reads them.
func unwrapRuncon(c Command) (Command, bool, []Command) {
	args := slices.Clone(c.Args)
	for j := 0; j < len(args); j = afterOption(args, j, runconOpts) {
		a := args[j]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		if name, val, eq := strings.Cut(a, "="); strings.HasPrefix(a, "--") {
			var full []string
			for _, o := range runconLong {
				if strings.HasPrefix(o, name) {
					full = append(full, o)
				}
			}
			if len(full) == 1 {
				args[j] = full[0]
				if eq {
					args[j] += "=" + val
				}
			}
		}
	}
	i := skipOptions(args, 0, runconOpts)
	if !slices.ContainsFunc(args[:i], func(a string) bool { return a != "--" }) {
		i++
	}
	if i >= len(args) {
		return Command{}, false, nil
	}
	return Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic}, true, nil
}

var envOpts = map[string]bool{"-u": true, "-C": true, "--unset": true, "--chdir": true}

// unwrapEnv follows env [-i] [-u NAME] [NAME=value]… CMD, and env -S
// "CMD ARGS", judging the values of the variables that run commands.
func unwrapEnv(c Command, sh *Shell, depth int) (Command, bool, []Command) {
	args := c.Args
	var nested []Command
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			i++
		case (a == "-S" || a == "--split-string") && i+1 < len(args):
			rest := append(strings.Fields(args[i+1]), args[i+2:]...)
			if len(rest) == 0 {
				return Command{}, false, nested
			}
			return Command{Name: rest[0], Args: rest[1:], Dynamic: c.Dynamic}, true, nested
		case strings.HasPrefix(a, "-") && a != "-":
			if name, _, hasEq := strings.Cut(a, "="); hasEq && envOpts[name] || !envOpts[a] {
				i++
			} else {
				i += 2
			}
			continue
		case strings.Contains(a, "="):
			name, value, _ := strings.Cut(a, "=")
			if sh.rt().commandEnv[name] {
				nested = append(nested, runLine(sh, strings.TrimLeft(value, "| "), depth, "$"+name)...)
			}
			i++
			continue
		}
		break
	}
	if i >= len(args) {
		return Command{}, false, nested
	}
	return Command{Name: args[i], Args: args[i+1:], Dynamic: c.Dynamic}, true, nested
}

// findNarrowing are find's tests that choose some files only: with one,
// -delete or -exec rm removes what matched, not the whole tree.
var findNarrowing = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true,
	"-regex": true, "-iregex": true, "-newer": true, "-mtime": true, "-mmin": true, "-atime": true, "-amin": true,
	"-ctime": true, "-cmin": true, "-size": true, "-empty": true, "-user": true, "-group": true, "-perm": true,
	"-inum": true, "-samefile": true, "-links": true, "-lname": true, "-ilname": true, "-uid": true, "-gid": true,
	"-nouser": true, "-nogroup": true, "-newermt": true, "-used": true,
}

// unwrapFind returns what find runs: the command of -exec, -execdir, -ok
// or -okdir, with {} replaced by the paths find starts from (find / -exec
// rm -rf {} \; removes under /; an rm it runs is an rm -r, since find
// walks the whole tree), and for -delete an rm -r of them. When a
// test narrows what find matches (-name '*.o', -mtime +7), {} is a path
// under each start (START/{}), which no rule takes for the start itself.
func unwrapFind(c Command) (Command, bool, []Command) {
	var roots []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
			break
		}
		roots = append(roots, a)
	}
	narrow := false
	for i, a := range c.Args {
		if findNarrowing[a] && !(i+1 < len(c.Args) && c.Args[i+1] == "*") {
			narrow = true
		}
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	matched := roots
	if narrow {
		matched = make([]string, len(roots))
		for i, r := range roots {
			matched[i] = strings.TrimSuffix(r, "/") + "/{}"
		}
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
					inner = append(inner, matched...)
					continue
				}
				inner = append(inner, b)
			}
			if len(inner) > 0 {
				args := inner[1:]
				if path.Base(inner[0]) == "rm" && !slices.Contains(args, "-r") {
					// find removes file by file, but the whole tree.
					args = append([]string{"-r"}, args...)
				}
				return Command{Name: inner[0], Args: args, Dynamic: c.Dynamic}, true, nil
			}
		case "-delete":
			return Command{Name: "rm", Args: append([]string{"-r"}, matched...), Dynamic: c.Dynamic}, true, nil
		}
	}
	return Command{}, false, nil
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
	if src.sql != nil {
		if dst.sql == nil {
			dst.sql = &SQL{Dialect: src.sql.Dialect}
		}
		dst.sql.Statements = append(dst.sql.Statements, src.sql.Statements...)
		dst.sql.derive()
	}
	if src.code != nil {
		if dst.code == nil {
			dst.code = &Code{}
		}
		dst.code.merge(src.code)
		dst.code.finish()
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
func ParseShellOut(code string) (Shell, bool) { return parseShellOut(code, nil, "") }

// parseShellOut is ParseShellOut with the bundle's shell data (nil: the
// default bundle's) and the directory the program runs in ("" unknown).
func parseShellOut(code string, data *shellData, cwd string) (Shell, bool) {
	if data == nil {
		data = defaultShellData()
	}
	sh := Shell{Embedded: true, data: data, cwd: cwd}
	if !shellOut(&sh, code, 1) {
		return Shell{}, false
	}
	if sh.Commands == nil {
		sh.Commands = []Command{}
	}
	if sh.RecursiveFunctions == nil {
		sh.RecursiveFunctions = []string{}
	}
	return sh, true
}

// shellOut parses into sh, at depth, the shell lines code hands to a
// shell. It reports whether the code has such a call.
func shellOut(sh *Shell, code string, depth int) bool {
	norm, changed := normalize(code)
	matches := shellOutRe.FindAllStringSubmatch(norm, -1)
	if len(matches) == 0 {
		return false
	}
	sh.Normalized = sh.Normalized || changed
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
		parseInto(sh, line, depth, sh.parser)
	}
	return true
}
