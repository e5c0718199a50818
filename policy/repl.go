package policy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// prepareProgram fills what the engine derives for text typed into a
// program that is not a shell: the code a REPL runs, the SQL a database
// client runs, the shell lines an interactive program's escapes run (vim's
// :!, less's !, gdb's shell, IPython's !). What none of these knows is
// scanned for strings handed to a shell, as before. Every line found is
// parsed with the bundle's shell data, from the program's directory cwd.
func (in *Input) prepareProgram(p *syntax.Parser, data *shellData, cwd string) {
	if data == nil {
		data = defaultShellData()
	}
	within := &Shell{data: data, cwd: cwd} // where the program's commands run
	prog := in.Program
	if line, piped, ok := shellEscape(prog, in.Text); ok {
		sh := parseShell(line, p, data, cwd)
		sh.Embedded = true
		if piped {
			pipedInto(&sh, sh.Commands)
		}
		in.Shell = &sh
		in.adoptCode()
		return
	}
	if lang := codeLanguage(prog); lang != "" || prog == "gdb" && strings.HasPrefix(strings.TrimSpace(in.Text), "python") {
		code := in.Text
		if prog == "gdb" {
			lang = "python"
			code = strings.TrimPrefix(strings.TrimSpace(code), "python")
			code = strings.TrimPrefix(code, "-interactive")
		}
		if lang == "javascript" && (prog == "node" || prog == "nodejs") {
			if runs, ok := nodeMeta(code); ok {
				c := Code{Languages: []string{lang}}
				if runs != "" {
					c.DynamicCalls = []string{runs}
				}
				c.finish()
				in.Code = &c
				return
			}
		}
		c, sh := analyseCodeIn(within, lang, code, 1)
		in.Code = &c
		if len(sh.Commands) > 0 || sh.ParseError != "" || sh.Eval {
			in.Shell = &sh
		}
		return
	}
	if d := sqlDialect(prog); d != "" {
		q, sh := parseSQL(within, d, in.Text)
		in.SQL = &q
		if sh != nil {
			in.Shell = sh
		}
		return
	}
	if sh, ok := parseShellOut(in.Text, data, cwd); ok {
		in.Shell = &sh
	}
}

// nodeMeta reads a node REPL's dot command: .load FILE runs code the
// line does not show (runs says so: a dynamic call), the others run
// nothing the line does not show (.editor's code is judged line by line as
// it is typed). ok is false for a line that is JavaScript.
func nodeMeta(line string) (runs string, ok bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, ".") || len(t) < 2 || !('a' <= t[1] && t[1] <= 'z') {
		return "", false
	}
	cmd, _, _ := strings.Cut(t, " ")
	switch cmd {
	case ".load", ".import":
		return clip(t), true
	case ".editor", ".break", ".clear", ".exit", ".help", ".save":
		return "", true
	}
	return "", false
}

// shellEscape finds the shell line that a line typed into an interactive
// program runs through its shell escape: vim and ex (:!cmd, :r !cmd,
// :w !cmd, :{range}!cmd, :terminal cmd), less, more, most and man (!cmd,
// |mcmd), ftp, sftp and ed (!cmd, r !cmd, w !cmd, e !cmd), gdb (shell
// cmd, !cmd, pipe … | cmd), IPython (!cmd, !!cmd, %system cmd, %sx cmd,
// %%bash cells).
func shellEscape(prog, text string) (line string, piped, ok bool) {
	line, ok = shellEscapeLine(prog, text)
	if !ok {
		return "", false, false
	}
	// What the program writes is fed to the command: vim's :w !cmd and
	// :{range}!cmd, less's |m cmd, ed's w !cmd, gdb's pipe.
	t := strings.TrimLeft(text, " \t:")
	switch {
	case strings.HasPrefix(t, "|"), hasWord(t, "pipe"):
		piped = true
	case strings.Contains(t, "w !") || strings.Contains(t, "w!") || strings.Contains(t, "write !"):
		piped = true
	case strings.Contains(t, "!") && strings.IndexByte(t, '!') > 0 && strings.IndexAny(t[:strings.IndexByte(t, '!')], "%$,.0123456789") >= 0:
		piped = true // a range filtered through the command
	}
	return line, piped, true
}

// shellEscapeLine is shellEscape's line.
func shellEscapeLine(prog, text string) (string, bool) {
	t := strings.TrimLeft(text, " \t")
	switch prog {
	case "vim", "vi", "nvim", "view", "vimdiff", "ex", "gvim", "rvim", "evim":
		return vimEscape(t, prog == "ex")
	case "less", "more", "most", "man", "pg", "sensible-pager", "pager":
		switch {
		case strings.HasPrefix(t, "!"):
			return t[1:], true
		case strings.HasPrefix(t, "|") && len(t) > 2:
			// |m cmd: pipe to cmd up to mark m
			return t[2:], true
		case strings.HasPrefix(t, ":!"):
			return t[2:], true
		}
	case "ftp", "sftp", "lftp", "ed", "red", "tftp", "telnet", "mail", "mailx", "ncftp", "cdb", "pdb", "smbclient":
		if strings.HasPrefix(t, "!") {
			return t[1:], true
		}
		if prog == "ed" || prog == "red" {
			return edEscape(t)
		}
	case "gdb", "lldb", "cgdb":
		switch {
		case strings.HasPrefix(t, "!"):
			return t[1:], true
		case hasWord(t, "shell"), hasWord(t, "platform shell"):
			_, rest, _ := strings.Cut(t, "shell")
			return rest, true
		case hasWord(t, "pipe") || strings.HasPrefix(t, "|"):
			if i := strings.LastIndex(t, "|"); i > 0 {
				return t[i+1:], true
			}
		case hasWord(t, "call") || hasWord(t, "print") || hasWord(t, "p"):
			if i := strings.Index(t, "system("); i >= 0 {
				if v, _, ok := sqlQuoted(strings.TrimLeft(t[i+len("system("):], " "), '"', true); ok {
					return v, true
				}
			}
		}
	}
	if codeLanguage(prog) == "python" {
		switch {
		case strings.HasPrefix(t, "!!"):
			return t[2:], true
		case strings.HasPrefix(t, "!"):
			return t[1:], true
		case hasWord(t, "%system"), hasWord(t, "%sx"), hasWord(t, "%sc"):
			_, rest, _ := strings.Cut(t, " ")
			return rest, true
		case hasWord(t, "%%bash"), hasWord(t, "%%sh"), hasWord(t, "%%script"):
			first, rest, _ := strings.Cut(t, "\n")
			if hasWord(first, "%%script") {
				f := strings.Fields(first)
				if len(f) > 1 && !IsShell(baseOf(f[1])) {
					return "", false
				}
			}
			return rest, true
		}
		// x = !cmd: IPython runs cmd and binds its output.
		if i := strings.Index(t, "= !"); i > 0 && isIdent(strings.TrimSpace(t[:i])) {
			return t[i+3:], true
		}
	}
	return "", false
}

func baseOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !olIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// hasWord: t starts with the word w (followed by a blank or its end).
func hasWord(t, w string) bool {
	return t == w || strings.HasPrefix(t, w+" ") || strings.HasPrefix(t, w+"\t") || strings.HasPrefix(t, w+"\n")
}

// vimEscape reads an ex command line: :!cmd, :r !cmd, :w !cmd,
// :{range}!cmd, :silent !cmd, :terminal cmd, :call system('cmd').
func vimEscape(t string, ex bool) (string, bool) {
	if strings.HasPrefix(t, ":") {
		t = strings.TrimLeft(t, ": \t")
	} else if !ex {
		// Normal mode: !!cmd and !{motion}cmd filter lines through cmd.
		if strings.HasPrefix(t, "!!") {
			return t[2:], true
		}
		return "", false
	}
	// A range: %, ., $, numbers, marks, ',' and ';'.
	i := 0
	for i < len(t) && strings.IndexByte("%.$,;'0123456789+-<>abcdefghijklmnopqrstuvwxyz", t[i]) >= 0 && !isVimCommandAt(t, i) {
		i++
	}
	t = strings.TrimLeft(t[i:], " \t")
	for _, mod := range []string{"silent!", "silent", "sil!", "sil", "exe", "execute", "noautocmd", "keepalt", "unsilent"} {
		if hasWord(t, mod) {
			t = strings.TrimLeft(t[len(mod):], " \t")
			if mod == "exe" || mod == "execute" {
				// :execute "!cmd": the string is the command line
				if len(t) > 1 && (t[0] == '"' || t[0] == '\'') {
					if v, _, ok := sqlQuoted(t, t[0], t[0] == '"'); ok {
						t = strings.TrimLeft(v, ": ")
					}
				}
			}
		}
	}
	switch {
	case strings.HasPrefix(t, "!"):
		return strings.TrimPrefix(t[1:], "!"), true
	case hasVimCmd(t, "r", "read"), hasVimCmd(t, "w", "write"), hasVimCmd(t, "e", "edit"), hasVimCmd(t, "new", "new"),
		hasVimCmd(t, "sp", "split"), hasVimCmd(t, "vs", "vsplit"):
		if j := strings.Index(t, "!"); j >= 0 {
			return t[j+1:], true
		}
	case hasVimCmd(t, "ter", "terminal"):
		_, rest, _ := strings.Cut(t, " ")
		return rest, true
	case hasVimCmd(t, "sh", "shell"):
		return "", false
	case hasVimCmd(t, "cal", "call"), hasVimCmd(t, "ec", "echo"), hasVimCmd(t, "let", "let"):
		for _, fn := range []string{"system(", "systemlist(", "job_start(", "jobstart(", "term_start("} {
			if j := strings.Index(t, fn); j >= 0 {
				rest := strings.TrimLeft(t[j+len(fn):], " ")
				if rest != "" && (rest[0] == '\'' || rest[0] == '"') {
					if v, _, ok := sqlQuoted(rest, rest[0], rest[0] == '"'); ok {
						return v, true
					}
				}
			}
		}
	case hasVimCmd(t, "py", "python"), hasVimCmd(t, "py3", "python3"), hasVimCmd(t, "pyx", "pythonx"):
		_, rest, _ := strings.Cut(t, " ")
		if c, _ := analyseCode("python", rest, 1); len(c.ShellCommands) > 0 {
			return strings.Join(c.ShellCommands, "\n"), true
		}
	}
	return "", false
}

func isVimCommandAt(t string, i int) bool {
	// A letter that starts a command name ends the range (r, w, e …);
	// a mark is 'x.
	if i > 0 && t[i-1] == '\'' {
		return false
	}
	c := t[i]
	return 'a' <= c && c <= 'z'
}

// hasVimCmd: t starts with the ex command abbreviated short or spelt up
// to long (r, re, rea, read), followed by a blank, !, or the end.
func hasVimCmd(t, short, long string) bool {
	j := 0
	for j < len(t) && 'a' <= t[j] && t[j] <= 'z' {
		j++
	}
	name := t[:j]
	if len(name) < len(short) || !strings.HasPrefix(long, name) || !strings.HasPrefix(name, short) {
		return false
	}
	return j == len(t) || t[j] == ' ' || t[j] == '!' || t[j] == '\t'
}

// edEscape reads ed's r !cmd, w !cmd, e !cmd, with an address before.
func edEscape(t string) (string, bool) {
	i := 0
	for i < len(t) && strings.IndexByte("0123456789,;.$'+-", t[i]) >= 0 {
		i++
	}
	t = t[i:]
	if len(t) > 1 && strings.IndexByte("rweEW", t[0]) >= 0 {
		rest := strings.TrimLeft(t[1:], " ")
		if strings.HasPrefix(rest, "!") {
			return rest[1:], true
		}
	}
	return "", false
}
