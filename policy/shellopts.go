package policy

import (
	"regexp"
	"strings"
)

// dynamicRun is the name of a command a program runs whose text is only
// known at run time (sed's e, awk's system(var)): shell.dynamic_command
// asks about it as about any command computed at run time.
const dynamicRun = "$(computed at run time)"

// programOptions reads what c's own options and scripts make it do beyond
// its name: the files it writes (curl -o F, sort -o F, find -fprint F,
// sed's w F), returned as redirections ">" to them, and the command lines
// it runs (tar --checkpoint-action=exec=…, ssh -o ProxyCommand=…, git -c
// alias.x=!…, sed's e, awk's system("…"), vim -c '!…', make --eval's
// $(shell …)), parsed and returned as commands run by c. followed: unwrap
// already handed c's arguments on (a runner's command, sh -c's line, the
// code of python3 -c), so they are not scanned for literals here too.
func programOptions(c Command, sh *Shell, depth int, followed bool) (writes []Redirect, runs []Command) {
	d := sh.rt()
	if specs := d.writeOptions[c.Name]; len(specs) > 0 {
		for _, v := range optionValues(c.Args, specs) {
			t := v.value
			if v.spec.dir {
				t = strings.TrimSuffix(t, "/") + "/*"
			}
			writes = append(writes, Redirect{Op: ">", Target: t})
		}
	}
	run := func(line string) { runs = append(runs, runLine(sh, line, depth, c.Name)...) }
	dynamic := func() {
		runs = append(runs, Command{Name: dynamicRun, Dynamic: true, Args: []string{}, Wrappers: []string{c.Name},
			Redirects: []Redirect{}, Assigns: []string{}, Cwd: sh.cwd})
	}
	if specs := d.commandOptions[c.Name]; len(specs) > 0 {
		for _, v := range optionValues(c.Args, specs) {
			run(strings.TrimLeft(v.value, "!"))
		}
	}
	// The code python, node, perl, ruby, php and awk get as an argument is
	// the code analysis's (unwrap hands it over): not scanned again here.
	_, _, analysed := codeArg(c)
	if !d.literalSkip[c.Name] && !analysed && !followed {
		for _, a := range c.Args {
			for _, l := range callLiterals(a) {
				run(l)
			}
		}
	}
	switch c.Name {
	case "sed", "gsed":
		for _, script := range sedScripts(c.Args) {
			files, cmds, dyn := sedEffects(script)
			for _, f := range files {
				writes = append(writes, Redirect{Op: ">", Target: f})
			}
			for _, l := range cmds {
				run(l)
			}
			if dyn {
				dynamic()
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		if prog, ok := awkProgram(c.Args); ok && !analysed {
			lits, dyn := awkCommands(prog)
			for _, l := range lits {
				run(l)
			}
			if dyn {
				dynamic()
			}
		}
	case "vi", "vim", "nvim", "ex", "view", "vimdiff", "rvim", "gvim":
		for i, a := range c.Args {
			var v string
			switch {
			case strings.HasPrefix(a, "+"):
				v = a[1:]
			case (a == "-c" || a == "--cmd") && i+1 < len(c.Args):
				v = c.Args[i+1]
			default:
				continue
			}
			if l, ok := vimShellEscape(v); ok {
				run(l)
			}
		}
	case "less", "more":
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "+"); ok {
				if l, ok := vimShellEscape(v); ok {
					run(l)
				}
			}
		}
	case "git":
		for i, a := range c.Args {
			if a != "config" {
				continue
			}
			for j := i + 1; j+1 < len(c.Args); j++ {
				if isGitCommandKey(c.Args[j]) {
					run(strings.TrimLeft(c.Args[j+1], "!"))
				}
			}
			break
		}
	case "make", "gmake":
		for _, v := range optionValues(c.Args, []optSpec{{name: "--eval"}, {name: "-E"}}) {
			for _, m := range makeShellRe.FindAllStringSubmatch(v.value, -1) {
				run(m[1])
			}
		}
	}
	return writes, runs
}

// gitCommandKeyRe are the git configuration keys whose value is a command
// line git runs (an alias only when it starts with !).
var gitCommandKeyRe = regexp.MustCompile(`(?i)^(core\.(sshcommand|pager|editor|fsmonitor|askpass)|sequence\.editor|diff\.external|credential\.helper|alias\..+|pager\..+|.+\.textconv|filter\..+\.(clean|smudge|process)|gpg\.program|merge\..+\.driver|diff\..+\.command)$`)

func isGitCommandKey(k string) bool { return gitCommandKeyRe.MatchString(k) }

var makeShellRe = regexp.MustCompile(`\$[({]shell\s+([^)}]*)[)}]`)

// vimShellEscape reads an ex command (-c, --cmd, +): :!LINE and
// :call system("LINE") run LINE.
func vimShellEscape(v string) (string, bool) {
	v = strings.TrimLeft(v, ": \t")
	if rest, ok := strings.CutPrefix(v, "!"); ok {
		return rest, true
	}
	for _, cmd := range []string{"terminal ", "term ", "sh ", "shell "} {
		if rest, ok := strings.CutPrefix(v, cmd); ok {
			return rest, true
		}
	}
	if m := vimSetShellRe.FindStringSubmatch(v); m != nil {
		return strings.ReplaceAll(m[1], `\ `, " "), true
	}
	if m := callSystemRe.FindStringSubmatch(v); m != nil {
		return m[1] + m[2], true
	}
	return "", false
}

var vimSetShellRe = regexp.MustCompile(`set\s+shell=((?:[^|\\]|\\.)*)\|`)

var callSystemRe = regexp.MustCompile(`(?:system|systemlist|execute)\s*\(\s*(?:"([^"]*)"|'([^']*)')`)

// sedScripts are sed's scripts: the values of -e/--expression, or else
// its first operand (a script file, -f, is not read).
func sedScripts(args []string) []string {
	var out []string
	for _, v := range optionValues(args, []optSpec{{name: "-e"}, {name: "--expression"}}) {
		out = append(out, v.value)
	}
	if len(out) > 0 {
		return out
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return []string{args[i+1]}
			}
			return nil
		case a == "-f" || a == "--file" || a == "-l" || a == "--line-length":
			if a == "-f" || a == "--file" {
				return nil
			}
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			return []string{a}
		}
	}
	return nil
}

// sedEffects reads a sed script for the files it writes (w FILE, W FILE,
// s///w FILE) and the commands it runs (e COMMAND); dyn when it runs a
// command it builds (e alone, s///e).
func sedEffects(script string) (files, cmds []string, dyn bool) {
	i, n := 0, len(script)
	restOfLine := func() string {
		j := strings.IndexByte(script[i:], '\n')
		if j < 0 {
			j = n - i
		}
		s := script[i : i+j]
		i += j
		return strings.TrimSpace(s)
	}
	for i < n {
		c := script[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!':
			i++
		case c >= '0' && c <= '9' || c == '$' || c == ',' || c == '~' || c == '+':
			i++
		case c == '/' || c == '\\':
			// an address /re/ (or \cREc)
			delim := byte('/')
			if c == '\\' && i+1 < n {
				i++
				delim = script[i]
			}
			i++
			for i < n && script[i] != delim {
				if script[i] == '\\' {
					i++
				}
				i++
			}
			i++
			for i < n && (script[i] == 'I' || script[i] == 'M') {
				i++
			}
		case c == 's' || c == 'y':
			i++
			if i >= n {
				return
			}
			delim := script[i]
			i++
			for part := 0; part < 2 && i < n; part++ {
				for i < n && script[i] != delim {
					if script[i] == '\\' {
						i++
					}
					i++
				}
				i++
			}
			if c == 'y' {
				continue
			}
			for i < n && !strings.ContainsRune(";\n}", rune(script[i])) {
				switch script[i] {
				case 'e':
					dyn = true
				case 'w', 'W':
					i++
					if f := restOfLine(); f != "" {
						files = append(files, f)
					}
					continue
				}
				i++
			}
		case c == 'w' || c == 'W':
			i++
			if f := restOfLine(); f != "" {
				files = append(files, f)
			}
		case c == 'e':
			i++
			if l := restOfLine(); l != "" {
				cmds = append(cmds, l)
			} else {
				dyn = true
			}
		case c == 'a' || c == 'i' || c == 'c' || c == 'r' || c == 'R' || c == 'b' || c == 't' || c == 'T' || c == ':' || c == '#' || c == 'q' || c == 'Q' || c == 'l' || c == 'L' || c == 'v':
			// text, a file read, a label, a comment: to the end of the line
			restOfLine()
		default:
			i++
		}
	}
	return files, cmds, dyn
}

// awkProgram is awk's program text: its first operand, unless -f names a
// file (not read here); gawk's -e/--source values count too.
func awkProgram(args []string) (string, bool) {
	var srcs []string
	for _, v := range optionValues(args, []optSpec{{name: "-e"}, {name: "--source"}}) {
		srcs = append(srcs, v.value)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || a == "--file":
			return strings.Join(srcs, "\n"), len(srcs) > 0
		case a == "-v" || a == "-F" || a == "-e" || a == "--source" || a == "--assign" || a == "--field-separator":
			i++
		case a == "--":
			if i+1 < len(args) && len(srcs) == 0 {
				return args[i+1], true
			}
			return strings.Join(srcs, "\n"), len(srcs) > 0
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			if len(srcs) == 0 {
				return a, true
			}
			return strings.Join(srcs, "\n"), true
		}
	}
	return strings.Join(srcs, "\n"), len(srcs) > 0
}

var (
	awkLiteralRe = regexp.MustCompile(`(?:system\s*\(\s*|\|&?\s*)"((?:[^"\\]|\\.)*)"|"((?:[^"\\]|\\.)*)"\s*\|&?\s*getline`)
	awkSystemRe  = regexp.MustCompile(`system\s*\(\s*[^"\s)]|[A-Za-z_)]\s*\|&?\s*getline`)
	awkPipeRe    = regexp.MustCompile(`(?:^|[^|])\|&?\s*([A-Za-z_(][A-Za-z_]*)`)
)

// awkCommands finds the command lines an awk program runs (system("…"),
// print … | "…", "…" | getline), and whether it runs one it builds.
func awkCommands(prog string) (lits []string, dyn bool) {
	for _, m := range awkLiteralRe.FindAllStringSubmatch(prog, -1) {
		lits = append(lits, codeStringUnescape.Replace(m[1]+m[2]))
	}
	dyn = awkSystemRe.MatchString(prog)
	for _, m := range awkPipeRe.FindAllStringSubmatch(prog, -1) {
		if m[1] != "getline" {
			dyn = true // print … | cmd: a command held in a variable
		}
	}
	return lits, dyn
}

// callLiteralRe finds the string literal code hands to a shell, in the
// spellings one-liners of many languages use: system("…"), os.execute('…'),
// callCommand "…", run(`…`), (shell-command "…"), spawn …;, execute(…)
// (fzf's bindings), \write18{…} (TeX). The literal is judged as the
// shell line it is; what code builds at run time is not seen here.
var callLiteralRe = regexp.MustCompile("(?i)(?:\\b(?:system|popen|exec|execute|shell_exec|passthru|spawn|callcommand|runcommand|run-shell-command|shell-command|async-shell-command|term|os\\.execute|io\\.popen|process\\.run|run|pcntl_exec|proc_open|exec[lv]p?e?|spawn[lv]p?e?|check_output|check_call|call|getoutput|getstatusoutput|esyscmd|syscmd)\\s*\\(?\\s*)(?:\"((?:[^\"\\\\]|\\\\.)*)\"|'((?:[^'\\\\]|\\\\.)*)'|`([^`]*)`)|\\bexecute(?:-silent)?\\(([^)]*)\\)|\\\\write18\\{([^}]*)\\}|\\bspawn\\s+([^;'\"]+)")

// callLiterals returns the command lines callLiteralRe finds in an
// argument; arguments that cannot hold one are not scanned.
func callLiterals(a string) []string {
	if !strings.ContainsAny(a, "(\"'`{") && !strings.Contains(a, "spawn") {
		return nil
	}
	var out []string
	for _, m := range callLiteralRe.FindAllStringSubmatch(a, 8) {
		out = append(out, codeStringUnescape.Replace(strings.Join(m[1:], "")))
	}
	return out
}
