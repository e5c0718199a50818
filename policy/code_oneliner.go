package policy

import (
	"strings"
)

// Perl, Ruby, awk and PHP one-liners are not parsed: no parser for them is
// at hand in Go. A small tokenizer reads their strings (quoted, q/qq/qx
// and %q/%Q/%x forms, backticks, here the command forms), names and
// punctuation, and the calls that hand a string to a shell or delete or
// write a file are judged on their literal arguments: system("…"),
// exec, backticks and qx, open with a pipe, IO.popen, awk's "cmd" |
// getline and print | "cmd", unlink, FileUtils.rm_rf. A string with
// interpolation keeps it as a run-time part ($x), so the shell rules see
// a run-time argument. A call whose argument is not a literal makes the
// command dynamic.

// olToken is one token of a one-liner.
type olToken struct {
	kind byte   // 'i' a name, 's' a string, 'c' a command string (backticks, qx), 'p' punctuation
	text string // a name, a string's value, the punctuation
	lit  bool   // a string with no interpolation
}

// olShell: functions whose first argument is a shell line (or, with more
// arguments, an argv).
var olShell = map[string]bool{
	"system": true, "exec": true, "Kernel.system": true, "Kernel.exec": true, "spawn": true, "Kernel.spawn": true,
	"Process.spawn": true, "IO.popen": true, "Open3.popen3": true, "Open3.popen2": true, "Open3.popen2e": true,
	"Open3.capture2": true, "Open3.capture2e": true, "Open3.capture3": true, "Open3.pipeline": true,
	"shell_exec": true, "passthru": true, "popen": true, "proc_open": true, "pcntl_exec": true,
	"readpipe": true, "POSIX::system": true,
}

// olDelete: functions that delete their arguments (-r for the trees).
var olDelete = map[string]string{
	"unlink": "rm", "File.delete": "rm", "File.unlink": "rm", "FileUtils.rm": "rm", "FileUtils.rm_f": "rm",
	"rmtree": "rm -r", "remove_tree": "rm -r", "File::Path::rmtree": "rm -r", "File::Path::remove_tree": "rm -r",
	"FileUtils.rm_rf": "rm -r", "FileUtils.rm_r": "rm -r", "FileUtils.remove_dir": "rm -r",
	"FileUtils.remove_entry": "rm -r", "FileUtils.rmtree": "rm -r", "rmdir": "rmdir", "Dir.rmdir": "rmdir",
	"Dir.delete": "rmdir", "FileUtils.rmdir": "rmdir",
}

// olWrite: functions that write their first argument.
var olWrite = map[string]bool{
	"File.write": true, "IO.write": true, "File.binwrite": true, "file_put_contents": true, "FileUtils.touch": true,
}

func analyseOneLiner(d *derived, lang, code string) {
	if len(code) > maxCode {
		code = code[:maxCode]
		d.code.ParseError = "the code is longer than the gateway analyses"
	}
	toks := olTokens(lang, code)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == 'c' {
			d.code.Calls = append(d.code.Calls, Call{Name: "`", Args: []string{t.text}, Dynamic: !t.lit})
			d.shellLine(value{t.text, t.lit})
			continue
		}
		if t.kind != 'i' {
			if lang == "awk" {
				olAwkPipes(d, toks, i)
			}
			continue
		}
		args, next := olArgs(toks, i+1)
		name := t.text
		switch {
		case olShell[name]:
			vals := olValues(args)
			d.code.Calls = append(d.code.Calls, olCall(name, vals))
			switch {
			case len(vals) == 0:
			case len(vals) == 1 || lang == "awk" || name == "IO.popen" && len(vals) == 2:
				d.shellLine(vals[0])
			default:
				d.argv(lang+":"+name, vals)
			}
		case name == "open" && lang == "perl":
			vals := olValues(args)
			d.code.Calls = append(d.code.Calls, olCall(name, vals))
			olPerlOpen(d, vals)
		case olDelete[name] != "":
			vals := olValues(args)
			d.code.Calls = append(d.code.Calls, olCall(name, vals))
			for _, v := range vals {
				kind := map[string]sinkKind{"rm": sinkRemove, "rm -r": sinkRmtree, "rmdir": sinkRmdir}[olDelete[name]]
				d.call(name, kind, []value{v}, nil, callOpts{})
				d.code.Calls = d.code.Calls[:len(d.code.Calls)-1]
			}
		case olWrite[name]:
			vals := olValues(args)
			d.code.Calls = append(d.code.Calls, olCall(name, vals))
			if len(vals) > 0 {
				d.call(name, sinkWrite, vals[:1], nil, callOpts{})
				d.code.Calls = d.code.Calls[:len(d.code.Calls)-1]
			}
		case name == "kill" || name == "Process.kill" || name == "posix_kill" || name == "posix.kill":
			vals := olValues(args)
			d.code.Calls = append(d.code.Calls, olCall(name, vals))
			if len(vals) >= 2 {
				sig, pids := vals[0], vals[1:]
				if name == "posix_kill" {
					sig, pids = vals[1], vals[:1]
				}
				for _, p := range pids {
					d.call(name, sinkKill, []value{p, sig}, nil, callOpts{})
					d.code.Calls = d.code.Calls[:len(d.code.Calls)-1]
				}
			}
		case name == "eval" || name == "instance_eval" || name == "class_eval" || name == "Kernel.eval" || name == "assert" ||
			name == "create_function" || name == "DynaLoader" || name == "Fiddle" || name == "FFI" || name == "syscall":
			d.dynamic(name)
		case name == "Socket" || name == "IO::Socket::INET" || name == "TCPSocket" || name == "TCPSocket.new" ||
			name == "TCPSocket.open" || name == "fsockopen" || name == "IO::Socket::INET.new" || name == "connect" ||
			name == "Socket.tcp" || name == "stream_socket_client":
			d.connects = true
		case name == "dup2" || name == "STDIN.reopen" || name == "$stdin.reopen" || name == "POSIX::dup2":
			d.hands = true
		}
		if lang == "perl" && (name == "open" || name == "STDIN" || name == "STDOUT") {
			// open(STDIN, ">&S"): a socket handed to the standard streams.
			for _, a := range args {
				if a.kind == 's' && strings.HasPrefix(strings.TrimSpace(a.text), ">&") || a.kind == 's' && strings.HasPrefix(strings.TrimSpace(a.text), "<&") {
					d.hands = true
				}
			}
		}
		_ = next
	}
	if d.connects && (strings.Contains(code, "/bin/sh") || strings.Contains(code, "/bin/bash") || strings.Contains(code, "sh -i")) {
		d.spawns, d.pipes = true, true
	}
}

func olCall(name string, vals []value) Call {
	c := Call{Name: name, Args: []string{}}
	for _, v := range vals {
		c.Args = append(c.Args, v.s)
		c.Dynamic = c.Dynamic || !v.known
	}
	return c
}

// olArgs are the tokens of a call's arguments: a parenthesised list, or
// (Perl, Ruby, awk without parentheses) the tokens up to the end of the
// statement.
func olArgs(toks []olToken, i int) ([]olToken, int) {
	if i >= len(toks) {
		return nil, i
	}
	if toks[i].kind == 'p' && toks[i].text == "(" {
		depth := 0
		for j := i; j < len(toks); j++ {
			if toks[j].kind != 'p' {
				continue
			}
			switch toks[j].text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
				if depth == 0 {
					return toks[i+1 : j], j + 1
				}
			}
		}
		return toks[i+1:], len(toks)
	}
	for j := i; j < len(toks); j++ {
		if toks[j].kind == 'p' && (toks[j].text == ";" || toks[j].text == "}" || toks[j].text == "|" || toks[j].text == ")") {
			return toks[i:j], j
		}
		if toks[j].kind == 'i' && (toks[j].text == "or" || toks[j].text == "and" || toks[j].text == "if" || toks[j].text == "unless") {
			return toks[i:j], j
		}
	}
	return toks[i:], len(toks)
}

// olValues are the comma-separated arguments as values: a string literal
// is known, anything else a run-time value.
func olValues(args []olToken) []value {
	var out []value
	var cur []olToken
	flush := func() {
		if len(cur) == 0 {
			return
		}
		var v value
		switch {
		case len(cur) == 1 && cur[0].kind == 's':
			v = value{cur[0].text, cur[0].lit}
		case len(cur) == 3 && cur[0].kind == 's' && cur[2].kind == 's' && (cur[1].text == "." || cur[1].text == "+"):
			v = value{cur[0].text + cur[2].text, cur[0].lit && cur[2].lit}
		case len(cur) >= 1 && cur[0].kind == 'p' && (cur[0].text == "[" || cur[0].text == "{"):
			// a list: its strings, as an argv
			for _, t := range cur {
				if t.kind == 's' {
					out = append(out, value{t.text, t.lit})
				}
			}
			cur = cur[:0]
			return
		default:
			var b strings.Builder
			for _, t := range cur {
				b.WriteString(t.text)
			}
			v = unknownValue(b.String())
		}
		out = append(out, v)
		cur = cur[:0]
	}
	depth := 0
	for _, t := range args {
		if t.kind == 'p' {
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			case ",", "=>":
				if depth == 0 {
					flush()
					continue
				}
			}
		}
		cur = append(cur, t)
	}
	flush()
	return out
}

// olPerlOpen judges Perl's open: a pipe open runs a command ("|cmd",
// "cmd|", "-|", "|-"), a write open (">f", ">>f", "+<f", '>' then f)
// writes the file.
func olPerlOpen(d *derived, vals []value) {
	if len(vals) < 2 {
		return
	}
	mode := vals[1]
	rest := vals[2:]
	m := strings.TrimSpace(mode.s)
	switch {
	case len(rest) > 0 && (m == "-|" || m == "|-"):
		if len(rest) == 1 {
			d.shellLine(rest[0])
		} else {
			d.argv("perl:open", rest)
		}
	case strings.HasPrefix(m, "|"):
		d.shellLine(value{strings.TrimPrefix(m, "|"), mode.known})
	case strings.HasSuffix(m, "|"):
		d.shellLine(value{strings.TrimSuffix(m, "|"), mode.known})
	case len(rest) > 0 && (m == ">" || m == ">>" || m == "+<" || m == "+>" || strings.HasPrefix(m, ">:") || strings.HasPrefix(m, ">>:")):
		d.call("open", sinkWrite, rest[:1], nil, callOpts{})
		d.code.Calls = d.code.Calls[:len(d.code.Calls)-1]
	case strings.HasPrefix(m, ">") || strings.HasPrefix(m, "+<"):
		p := strings.TrimSpace(strings.TrimLeft(m, ">+<"))
		if strings.HasPrefix(p, "&") {
			d.hands = true
			return
		}
		d.call("open", sinkWrite, []value{{p, mode.known}}, nil, callOpts{})
		d.code.Calls = d.code.Calls[:len(d.code.Calls)-1]
	}
}

// olAwkPipes judges awk's pipes and redirections around token i: "cmd" |
// getline, print … | "cmd", print … > "file".
func olAwkPipes(d *derived, toks []olToken, i int) {
	t := toks[i]
	if t.kind != 'p' {
		return
	}
	switch t.text {
	case "|":
		if i+1 < len(toks) && toks[i+1].kind == 'i' && toks[i+1].text == "getline" && i > 0 {
			prev := toks[i-1]
			d.code.Calls = append(d.code.Calls, Call{Name: "getline", Args: []string{prev.text}, Dynamic: prev.kind != 's' || !prev.lit})
			if prev.kind == 's' {
				d.shellLine(value{prev.text, prev.lit})
			} else {
				d.code.DynamicShell = true
			}
			return
		}
		if i+1 < len(toks) {
			next := toks[i+1]
			d.code.Calls = append(d.code.Calls, Call{Name: "print |", Args: []string{next.text}, Dynamic: next.kind != 's' || !next.lit})
			if next.kind == 's' {
				before := len(d.sh.Commands)
				d.shellLine(value{next.text, next.lit})
				pipedInto(&d.sh, d.sh.Commands[before:])
			} else {
				d.code.DynamicShell = true
			}
		}
	case ">", ">>":
		if i+1 < len(toks) && toks[i+1].kind == 's' {
			d.call("print >", sinkWrite, []value{{toks[i+1].text, toks[i+1].lit}}, nil, callOpts{})
		}
	}
}

// olTokens splits a one-liner into names, strings and punctuation.
func olTokens(lang, s string) []olToken {
	var out []olToken
	for i := 0; i < len(s) && len(out) < 4096; {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' && lang != "php" && !(lang == "ruby" && i+1 < len(s) && s[i+1] == '{'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			text, lit, n := olString(lang, s[i:], c, c)
			out = append(out, olToken{kind: 's', text: text, lit: lit})
			i += n
		case c == '`':
			text, lit, n := olString(lang, s[i:], '`', '`')
			out = append(out, olToken{kind: 'c', text: text, lit: lit})
			i += n
		case (lang == "perl" && (strings.HasPrefix(s[i:], "qx") || strings.HasPrefix(s[i:], "qq") || strings.HasPrefix(s[i:], "q"))) ||
			(lang == "ruby" && c == '%' && i+1 < len(s) && strings.IndexByte("xqQw", s[i+1]) >= 0 && i+2 < len(s) && olOpener(s[i+2])):
			start := i + 1
			kind := byte('s')
			interp := false
			if lang == "perl" {
				switch {
				case strings.HasPrefix(s[i:], "qx"):
					kind, start, interp = 'c', i+2, true
				case strings.HasPrefix(s[i:], "qq"):
					start, interp = i+2, true
				default:
					start = i + 1
				}
			} else {
				switch s[i+1] {
				case 'x':
					kind, interp = 'c', true
				case 'Q':
					interp = true
				}
				start = i + 2
			}
			if start >= len(s) || !olOpener(s[start]) || lang == "perl" && start > i && olIdentChar(s[start]) {
				// not a quote-like operator: a name such as "quit"
				j := i
				for j < len(s) && olIdentChar(s[j]) {
					j++
				}
				out = append(out, olToken{kind: 'i', text: s[i:j]})
				i = j
				continue
			}
			open := s[start]
			text, lit, n := olString(lang, s[start:], open, olCloser(open))
			if !interp {
				lit = true
			}
			out = append(out, olToken{kind: kind, text: text, lit: lit})
			i = start + n
		case olIdentChar(c) || c == '$' && i+1 < len(s) && s[i+1] == 's':
			j := i
			for j < len(s) && (olIdentChar(s[j]) || (s[j] == ':' && j+1 < len(s) && s[j+1] == ':') || s[j] == '.' && j+1 < len(s) && olIdentChar(s[j+1]) && lang == "ruby" || s[j] == '$' && j == i) {
				if s[j] == ':' {
					j++
				}
				j++
			}
			if j == i {
				j = i + 1
			}
			out = append(out, olToken{kind: 'i', text: s[i:j]})
			i = j
		case lang == "awk" && c == '/' && awkRegexAt(out):
			// A regular expression (/a|b/), not a division: its | is no pipe.
			n := awkRegexLen(s[i:])
			out = append(out, olToken{kind: 'r', text: s[i : i+n]})
			i += n
		case strings.HasPrefix(s[i:], "=>") || strings.HasPrefix(s[i:], ">>") || strings.HasPrefix(s[i:], "->") || strings.HasPrefix(s[i:], "::") ||
			strings.HasPrefix(s[i:], "||") || strings.HasPrefix(s[i:], "&&"):
			out = append(out, olToken{kind: 'p', text: s[i : i+2]})
			i += 2
		default:
			out = append(out, olToken{kind: 'p', text: s[i : i+1]})
			i++
		}
	}
	return out
}

// awkRegexAt: a / after the tokens so far opens a regular expression,
// since an operand may start there (the program's start, or after an
// operator, an opening bracket, a comma or a statement's end); after an
// operand it divides.
func awkRegexAt(before []olToken) bool {
	if len(before) == 0 {
		return true
	}
	t := before[len(before)-1]
	if t.kind != 'p' {
		return false
	}
	switch t.text {
	case ")", "]":
		return false
	}
	return true
}

// awkRegexLen is the length of the regular expression at s[0] == '/', up
// to its closing / (escapes and bracket expressions skipped), or to the
// end of the line when it does not close.
func awkRegexLen(s string) int {
	inClass := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			return i + 1
		case c == '\n':
			return i
		}
	}
	return len(s)
}

func olIdentChar(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func olOpener(c byte) bool { return strings.IndexByte("({[</|!#~^'\"", c) >= 0 }

func olCloser(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '{':
		return '}'
	case '[':
		return ']'
	case '<':
		return '>'
	}
	return c
}

// olString reads a string that opens with open at s[0] and closes with
// close: its value (escapes resolved; an interpolation kept as a run-time
// part), whether it holds no interpolation, and the bytes it spans.
func olString(lang, s string, open, close byte) (string, bool, int) {
	var b strings.Builder
	lit := true
	interp := open != '\'' && !(lang == "awk" && open == '`')
	depth := 1
	i := 1
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if open == '\'' {
				if s[i] != '\'' && s[i] != '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(s[i])
				continue
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case c == open && open != close:
			depth++
			b.WriteByte(c)
		case c == close:
			depth--
			if depth == 0 {
				return b.String(), lit, i + 1
			}
			b.WriteByte(c)
		case interp && lang == "ruby" && c == '#' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}') + 2 // the } that closes #{
			if end < 2 {
				end = len(s) - i
			}
			b.WriteString(unknownValue(s[i+2 : i+end]).s)
			lit = false
			i += end
		case interp && (lang == "perl" || lang == "php") && (c == '$' || c == '@') && i+1 < len(s) && (olIdentChar(s[i+1]) || s[i+1] == '{'):
			j := i + 1
			for j < len(s) && (olIdentChar(s[j]) || s[j] == '{' || s[j] == '}') && s[j] != close {
				j++
			}
			b.WriteString("$" + strings.Trim(s[i+1:j], "{}"))
			lit = false
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), lit, i
}
