package policy

import (
	"slices"
	"strings"
)

// SQL typed into psql, mysql/mariadb and sqlite3 (or handed to them with
// -c, -e, an argument or a here-document) is split into statements by a
// tokenizer that knows each dialect's quoting (standard and E'' strings,
// "" and `` identifiers, $tag$ dollar quoting, --, # and nested /* */
// comments), and each statement is classified on its tokens: the verb,
// the object, a WHERE at the statement's own level, and the classes the
// policy judges. The clients' own commands (psql's backslash commands,
// sqlite3's dot commands, mysql's system, pager and tee) are read too:
// the shell lines they run are judged as shell lines, the files they write
// as writes. The package doc says why this is a tokenizer and not one of
// the SQL parsers Go has.

// SQL is what the policy sees of SQL.
type SQL struct {
	Dialect    string      `json:"dialect"` // postgres, mysql, sqlite, or sql for other clients
	Statements []Statement `json:"statements"`
	// Classes are the statements' classes, sorted, each once: "<class>" in
	// input.sql.classes guards the rules. Derived by the engine.
	Classes []string `json:"classes"`
	// Incomplete: the last statement is not terminated; the client runs
	// nothing of it yet.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Statement is one SQL statement or client command.
type Statement struct {
	Text    string   `json:"text"`             // the statement, comments and extra blanks removed, at most 200 bytes
	Verb    string   `json:"verb"`             // DROP, DELETE, \!, .shell …, upper-case for SQL
	Object  string   `json:"object,omitempty"` // TABLE, DATABASE, ROLE … after CREATE/DROP/ALTER/TRUNCATE
	Where   bool     `json:"where,omitempty"`  // a WHERE at the statement's own level
	Classes []string `json:"classes"`          // what it does that a rule judges
}

// derive fills q.Classes from the statements.
func (q *SQL) derive() {
	q.fill()
	q.Classes = []string{}
	for _, s := range q.Statements {
		for _, c := range s.Classes {
			q.Classes = addOnce(q.Classes, c)
		}
	}
	slices.Sort(q.Classes)
}

func (q *SQL) fill() {
	if q.Statements == nil {
		q.Statements = []Statement{}
	}
	q.Statements = slices.Clone(q.Statements)
	for i := range q.Statements {
		if q.Statements[i].Classes == nil {
			q.Statements[i].Classes = []string{}
		}
	}
}

// sqlDialect is the dialect of a database client.
func sqlDialect(program string) string {
	switch program {
	case "psql", "pgcli", "cockroach", "yb-ysqlsh":
		return "postgres"
	case "mysql", "mariadb", "mycli":
		return "mysql"
	case "sqlite3", "sqlite", "duckdb", "litecli":
		return "sqlite"
	case "clickhouse-client", "sqlcmd":
		return "sql"
	}
	return ""
}

// sqlArgs is the SQL a client's arguments carry: psql -c/--command,
// mysql -e/--execute, sqlite3 DB SQL….
func sqlArgs(c Command) []string {
	var out []string
	args := c.Args
	switch sqlDialect(c.Name) {
	case "postgres":
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case (a == "-c" || a == "--command") && i+1 < len(args):
				out = append(out, args[i+1])
				i++
			case strings.HasPrefix(a, "--command="):
				out = append(out, strings.TrimPrefix(a, "--command="))
			case strings.HasPrefix(a, "-c") && len(a) > 2:
				out = append(out, a[2:])
			}
		}
	case "mysql":
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case (a == "-e" || a == "--execute") && i+1 < len(args):
				out = append(out, args[i+1])
				i++
			case strings.HasPrefix(a, "--execute="):
				out = append(out, strings.TrimPrefix(a, "--execute="))
			case strings.HasPrefix(a, "-e") && len(a) > 2:
				out = append(out, a[2:])
			}
		}
	case "sqlite":
		// sqlite3 [OPTIONS] FILENAME [SQL…]; -cmd COMMAND runs too.
		seenDB := false
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-cmd" && i+1 < len(args):
				out = append(out, args[i+1])
				i++
			case strings.HasPrefix(a, "-") && !seenDB:
				switch a {
				case "-separator", "-nullvalue", "-newline", "-vfs", "-init", "-maxsize", "-mmap", "-pagecache", "-lookaside", "-heap":
					i++
				}
			case !seenDB:
				seenDB = true
			default:
				out = append(out, a)
			}
		}
	case "sql":
		for i := 0; i < len(args); i++ {
			if (args[i] == "-q" || args[i] == "-Q" || args[i] == "--query") && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		}
	}
	return out
}

// embedSQL classifies SQL a shell line hands to a database client, adds it
// to sh's SQL, and returns the commands the client's own commands run.
func embedSQL(sh *Shell, dialect, text string) []Command {
	q, sub := parseSQL(sh, dialect, text)
	if sh.sql == nil {
		sh.sql = &SQL{Dialect: dialect}
	}
	sh.sql.Statements = append(sh.sql.Statements, q.Statements...)
	sh.sql.derive()
	if sub == nil {
		return nil
	}
	mergeFlags(sh, sub)
	sh.Embedded = true
	return sub.Commands
}

// maxStatements bounds the statements of one input that are classified.
const maxStatements = 256

// ParseSQL splits and classifies SQL typed into a client of the dialect.
// The shell commands the client's own commands run are returned as a
// shell document (nil when there are none).
func ParseSQL(dialect, text string) (SQL, *Shell) { return parseSQL(nil, dialect, text) }

// parseSQL is ParseSQL for a client that runs where the shell within runs
// (nil: nowhere known): its commands' lines are parsed with within's
// bundle data and directory.
func parseSQL(within *Shell, dialect, text string) (SQL, *Shell) {
	q := SQL{Dialect: dialect}
	var sh *Shell
	if len(text) > maxCode {
		text = text[:maxCode]
	}
	sc := sqlScanner{dialect: dialect, src: text}
	for len(q.Statements) < maxStatements {
		st, meta, ok := sc.next()
		if !ok {
			break
		}
		if meta != "" {
			s, cmds, lines := classifyMeta(dialect, meta)
			q.Statements = append(q.Statements, s)
			if len(cmds) > 0 || len(lines) > 0 {
				if sh == nil {
					sh = &Shell{Embedded: true}
					if within != nil {
						sh.data, sh.cwd = within.data, within.cwd
					}
				}
				for _, c := range cmds {
					c.Cwd = sh.cwd // the client's files are where it runs
					sh.Commands = append(sh.Commands, c)
				}
				for _, l := range lines {
					sub := sh.sub()
					parseNested(sh, &sub, l.line, 1)
					mergeFlags(sh, &sub)
					sh.Commands = append(sh.Commands, sub.Commands...)
					if l.piped {
						pipedInto(sh, sub.Commands)
					}
				}
			}
			continue
		}
		if len(st.toks) == 0 {
			continue
		}
		q.Statements = append(q.Statements, classifySQL(st))
	}
	q.Incomplete = sc.incomplete
	q.derive()
	if sh != nil {
		sh.fill()
	}
	return q, sh
}

// sqlToken is a token of SQL: a word (upper-cased), a string's value, or
// punctuation.
type sqlToken struct {
	kind byte // 'w' word, 's' string, 'p' punctuation, 'i' quoted identifier
	text string
}

type sqlStatement struct {
	toks []sqlToken
	text string
}

type sqlScanner struct {
	dialect     string
	execComment int // mysql /*! … */ comments open
	src         string
	pos         int
	incomplete  bool
}

// next returns the next statement, or the next client command (meta).
func (sc *sqlScanner) next() (st sqlStatement, meta string, ok bool) {
	s := sc.src
	// Skip blanks and separators between statements.
	for sc.pos < len(s) && (s[sc.pos] == ' ' || s[sc.pos] == '\t' || s[sc.pos] == '\n' || s[sc.pos] == '\r' || s[sc.pos] == ';') {
		sc.pos++
	}
	if sc.pos >= len(s) {
		return st, "", false
	}
	// A client command at the start of a statement.
	if m, n := sc.meta(s[sc.pos:]); n > 0 {
		sc.pos += n
		return st, m, true
	}
	start := sc.pos
	var text strings.Builder
	for sc.pos < len(s) {
		c := s[sc.pos]
		switch {
		case c == ';':
			sc.pos++
			st.text = text.String()
			return st, "", true
		case c == '\\' && sc.dialect == "postgres":
			// A backslash command ends the statement's text on this line
			// (SELECT 1 \g |cmd): the statement runs, then the command.
			st.text = text.String()
			return st, "", true
		case c == '-' && strings.HasPrefix(s[sc.pos:], "--") || c == '#' && sc.dialect == "mysql":
			for sc.pos < len(s) && s[sc.pos] != '\n' {
				sc.pos++
			}
			text.WriteByte(' ')
		case c == '/' && strings.HasPrefix(s[sc.pos:], "/*!") && sc.dialect == "mysql":
			// An executable comment: mysql runs what it holds.
			sc.pos += 3
			for sc.pos < len(s) && '0' <= s[sc.pos] && s[sc.pos] <= '9' {
				sc.pos++
			}
			sc.execComment++
			text.WriteByte(' ')
		case c == '*' && strings.HasPrefix(s[sc.pos:], "*/") && sc.execComment > 0:
			sc.execComment--
			sc.pos += 2
			text.WriteByte(' ')
		case c == '/' && strings.HasPrefix(s[sc.pos:], "/*"):
			depth := 1
			sc.pos += 2
			for sc.pos < len(s) && depth > 0 {
				switch {
				case strings.HasPrefix(s[sc.pos:], "*/"):
					depth--
					sc.pos += 2
				case sc.dialect == "postgres" && strings.HasPrefix(s[sc.pos:], "/*"):
					depth++
					sc.pos += 2
				default:
					sc.pos++
				}
			}
			if depth > 0 {
				sc.incomplete = true
			}
			text.WriteByte(' ')
		case c == '\'' || c == '"' || c == '`' && sc.dialect == "mysql":
			v, n, closed := sqlQuoted(s[sc.pos:], c, sc.dialect == "mysql" || sc.pos > 0 && (s[sc.pos-1] == 'E' || s[sc.pos-1] == 'e') && sc.dialect == "postgres")
			if !closed {
				sc.incomplete = true
			}
			kind := byte('s')
			if c != '\'' && !(c == '"' && sc.dialect == "mysql") {
				kind = 'i'
			}
			// E'…': the E is the previous word token; drop it.
			if n := len(st.toks); n > 0 && st.toks[n-1].kind == 'w' && (st.toks[n-1].text == "E" || st.toks[n-1].text == "N") && c == '\'' {
				st.toks = st.toks[:n-1]
			}
			st.toks = append(st.toks, sqlToken{kind, v})
			text.WriteString(s[sc.pos : sc.pos+n])
			sc.pos += n
		case c == '$' && sc.dialect == "postgres":
			if tag, ok := dollarTag(s[sc.pos:]); ok {
				end := strings.Index(s[sc.pos+len(tag):], tag)
				if end < 0 {
					sc.incomplete = true
					st.toks = append(st.toks, sqlToken{'s', s[sc.pos+len(tag):]})
					text.WriteString(s[sc.pos:])
					sc.pos = len(s)
					continue
				}
				body := s[sc.pos+len(tag) : sc.pos+len(tag)+end]
				st.toks = append(st.toks, sqlToken{'s', body})
				text.WriteString(s[sc.pos : sc.pos+len(tag)+end+len(tag)])
				sc.pos += len(tag) + end + len(tag)
				continue
			}
			text.WriteByte(c)
			st.toks = append(st.toks, sqlToken{'p', "$"})
			sc.pos++
		case isWordByte(c):
			j := sc.pos
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			st.toks = append(st.toks, sqlToken{'w', strings.ToUpper(s[sc.pos:j])})
			text.WriteString(s[sc.pos:j])
			sc.pos = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			text.WriteByte(' ')
			for sc.pos < len(s) && (s[sc.pos] == ' ' || s[sc.pos] == '\t' || s[sc.pos] == '\n' || s[sc.pos] == '\r') {
				sc.pos++
			}
		default:
			st.toks = append(st.toks, sqlToken{'p', string(c)})
			text.WriteByte(c)
			sc.pos++
		}
		if len(st.toks) > 4096 {
			break
		}
	}
	st.text = text.String()
	if strings.TrimSpace(st.text) != "" && sc.pos >= len(s) {
		// psql and mysql wait for the ";"; sqlite3 too. The statement is
		// judged anyway: a terminator may follow on the next line.
		sc.incomplete = sc.incomplete || sc.dialect != "sql"
	}
	_ = start
	return st, "", true
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80
}

// dollarTag is the $tag$ that opens a dollar-quoted string at s.
func dollarTag(s string) (string, bool) {
	for i := 1; i < len(s) && i < 64; i++ {
		c := s[i]
		switch {
		case c == '$':
			return s[:i+1], true
		case !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 1 && '0' <= c && c <= '9'):
			return "", false
		}
	}
	return "", false
}

// sqlQuoted reads a quoted string or identifier opened by q at s[0]: its
// value, the bytes it spans, and whether it closed. A doubled quote is one
// quote; with backslashes, a backslash escapes.
func sqlQuoted(s string, q byte, backslashes bool) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && backslashes && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == q && i+1 < len(s) && s[i+1] == q:
			b.WriteByte(q)
			i++
		case c == q:
			return b.String(), i + 1, true
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(s), false
}

// meta reports a client command at the start of s: its text and length.
func (sc *sqlScanner) meta(s string) (string, int) {
	line, _, _ := strings.Cut(s, "\n")
	switch sc.dialect {
	case "postgres":
		if strings.HasPrefix(line, `\`) {
			// \\ separates commands on one line.
			if i := strings.Index(line[1:], `\\`); i >= 0 {
				return line[:i+1], i + 3
			}
			return line, len(line)
		}
	case "sqlite":
		if strings.HasPrefix(line, ".") {
			return line, len(line)
		}
	case "mysql":
		if strings.HasPrefix(line, `\`) {
			return line, len(line)
		}
		w := strings.ToLower(firstWord(line))
		switch w {
		case "system", "pager", "tee", "source", "nopager", "notee", "edit", "connect", "use", "delimiter", "charset", "warnings", "nowarning", "rehash", "status", "help", "exit", "quit", "clear", "print", "prompt", "go", "ego":
			if w == "use" || w == "connect" {
				return strings.TrimSuffix(line, ";"), len(line)
			}
			return line, len(line)
		}
	}
	return "", 0
}

func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t")
	if i := strings.IndexAny(s, " \t;"); i >= 0 {
		return s[:i]
	}
	return s
}

// classifyMeta classifies a client command: the shell lines it runs, and
// the files it writes as commands with a redirection.
func classifyMeta(dialect, m string) (Statement, []Command, []metaLine) {
	st := Statement{Text: clip(m), Classes: []string{}}
	var cmds []Command
	var lines []metaLine
	origin := dialect + ":" + firstWord(m)
	write := func(target string) {
		target = strings.Trim(strings.TrimSpace(target), `'"`)
		if target == "" {
			return
		}
		st.Classes = addOnce(st.Classes, "client_write")
		cmds = append(cmds, Command{Wrappers: []string{origin}, Args: []string{}, Assigns: []string{},
			Redirects: []Redirect{{Op: ">", Target: target}}})
	}
	shell := func(line string) {
		line = strings.TrimSpace(line)
		st.Classes = addOnce(st.Classes, "client_shell")
		if line != "" {
			lines = append(lines, metaLine{line: line})
		}
	}
	// pipeOrFile: "|cmd" runs cmd with the output on its input, anything
	// else is a file written.
	pipeOrFile := func(arg string) {
		arg = strings.TrimSpace(arg)
		unq := strings.Trim(arg, `'"`)
		if strings.HasPrefix(unq, "|") {
			shell(strings.TrimPrefix(unq, "|"))
			if len(lines) > 0 {
				lines[len(lines)-1].piped = true
			}
		} else if arg != "" {
			write(arg)
		}
	}
	cmd, arg := splitMeta(m)
	st.Verb = cmd
	switch dialect {
	case "postgres":
		switch cmd {
		case `\!`:
			shell(arg)
		case `\o`, `\out`, `\g`, `\gx`, `\w`, `\write`:
			pipeOrFile(arg)
		case `\copy`:
			up := asciiUpper(arg) // byte for byte: its offsets are arg's
			if i := strings.Index(up, " PROGRAM "); i >= 0 {
				rest := strings.TrimSpace(arg[i+len(" PROGRAM "):])
				if rest == "" {
					st.Classes = addOnce(st.Classes, "copy_program")
					break
				}
				if v, _, ok := sqlQuoted(rest, rest[0], false); ok && (rest[0] == '\'' || rest[0] == '"') {
					shell(v)
				} else {
					shell(rest)
				}
				st.Classes = addOnce(st.Classes, "copy_program")
			} else if i := strings.Index(up, " TO "); i >= 0 {
				rest := strings.TrimSpace(arg[i+len(" TO "):])
				if f := firstWord(rest); !strings.EqualFold(f, "STDOUT") && !strings.EqualFold(f, "PSTDOUT") {
					write(f)
				}
			}
		case `\gexec`:
			st.Classes = addOnce(st.Classes, "dynamic_sql")
		case `\setenv`:
			st.Classes = addOnce(st.Classes, "client_env")
		case `\e`, `\edit`, `\ef`, `\ev`:
			st.Classes = addOnce(st.Classes, "editor")
		}
	case "sqlite":
		switch cmd {
		case ".shell", ".system":
			shell(arg)
		case ".once", ".output":
			for _, f := range strings.Fields(arg) {
				if !strings.HasPrefix(f, "-") {
					pipeOrFile(arg[strings.Index(arg, f):])
					break
				}
			}
		case ".save", ".backup", ".dump":
			if f := lastField(arg); f != "" && cmd != ".dump" {
				write(f)
			}
		case ".import", ".read":
			if f := strings.Trim(firstField(arg), `'"`); strings.HasPrefix(f, "|") {
				shell(strings.Trim(strings.TrimSpace(arg), `'"`)[1:])
			}
		case ".load":
			st.Classes = addOnce(st.Classes, "load_extension")
		case ".open":
			// opens another database file: a read or a new file
		}
	case "mysql":
		lower := strings.ToLower(cmd)
		switch {
		case lower == "system" || cmd == `\!`:
			shell(arg)
		case lower == "pager" || cmd == `\P`:
			if strings.TrimSpace(arg) != "" {
				shell(arg)
				lines[len(lines)-1].piped = true
			}
		case lower == "tee" || cmd == `\T`:
			write(arg)
		case lower == "edit" || cmd == `\e`:
			st.Classes = addOnce(st.Classes, "editor")
		}
	}
	return st, cmds, lines
}

// asciiUpper upper-cases the ASCII letters of s only, so that an offset in
// the result is the same offset in s (strings.ToUpper turns an invalid
// byte into three).
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// metaLine is a shell line a client command runs; piped: with the
// client's output on its standard input.
type metaLine struct {
	line  string
	piped bool
}

// splitMeta splits a client command into its name and its argument text.
func splitMeta(m string) (string, string) {
	m = strings.TrimSpace(m)
	if strings.HasPrefix(m, `\!`) {
		return `\!`, m[2:]
	}
	i := strings.IndexAny(m, " \t")
	if i < 0 {
		return strings.TrimSuffix(m, ";"), ""
	}
	return m[:i], strings.TrimSuffix(strings.TrimSpace(m[i:]), ";")
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// sqlServerFiles are functions that read or write the server's files, or
// run programs there.
var sqlServerFiles = map[string]bool{
	"PG_READ_FILE": true, "PG_READ_BINARY_FILE": true, "PG_LS_DIR": true, "PG_STAT_FILE": true,
	"LO_IMPORT": true, "LO_EXPORT": true, "LOAD_FILE": true, "PG_FILE_WRITE": true, "PG_LS_LOGDIR": true,
	"PG_LS_WALDIR": true, "PG_LS_TMPDIR": true, "PG_LS_ARCHIVE_STATUSDIR": true,
	"LOAD_EXTENSION": true, "READFILE": true, "WRITEFILE": true, "EDIT": true, "FILEIO_WRITE": true,
}

var sqlShellFunctions = map[string]bool{"XP_CMDSHELL": true, "SYS_EXEC": true, "SYS_EVAL": true, "SP_OACREATE": true}

// classifySQL classifies one statement on its tokens.
func classifySQL(st sqlStatement) Statement {
	toks := st.toks
	out := Statement{Text: clip(st.text), Classes: []string{}}
	class := func(c string) { out.Classes = addOnce(out.Classes, c) }
	word := func(i int) string {
		if i < len(toks) && toks[i].kind == 'w' {
			return toks[i].text
		}
		return ""
	}
	// The verb: the first word, after a WITH … AS (…) prefix the verb that
	// follows the CTEs (WITH d AS (DELETE …) SELECT: the DELETE is judged
	// as a statement of its own too).
	i := 0
	out.Verb = word(0)
	if out.Verb == "WITH" || out.Verb == "EXPLAIN" && word(1) == "ANALYZE" {
		depth := 0
		for j := 1; j < len(toks); j++ {
			t := toks[j]
			if t.kind == 'p' && t.text == "(" {
				depth++
				// a CTE's body: judge its own statement
				if k := closeParen(toks, j); k > j+1 {
					inner := classifySQL(sqlStatement{toks: toks[j+1 : k]})
					for _, c := range inner.Classes {
						class(c)
					}
				}
			}
			if t.kind == 'p' && t.text == ")" {
				depth--
			}
			if depth == 0 && t.kind == 'w' && (t.text == "SELECT" || t.text == "DELETE" || t.text == "UPDATE" || t.text == "INSERT" || t.text == "MERGE") {
				i = j
				out.Verb = t.text
				break
			}
		}
	}
	// Words at the statement's own level (outside parentheses), from the verb.
	var level []string
	depth := 0
	for _, t := range toks[i:] {
		switch {
		case t.kind == 'p' && t.text == "(":
			depth++
		case t.kind == 'p' && t.text == ")":
			depth--
		case depth == 0 && t.kind == 'w':
			level = append(level, t.text)
		}
	}
	has := func(words ...string) bool {
		for k := 0; k+len(words) <= len(level); k++ {
			if slices.Equal(level[k:k+len(words)], words) {
				return true
			}
		}
		return false
	}
	after := func(k int) string {
		if k < len(level) {
			return level[k]
		}
		return ""
	}
	out.Where = has("WHERE")
	switch out.Verb {
	case "DROP":
		obj := after(1)
		if obj == "TEMPORARY" || obj == "TEMP" {
			obj = after(2)
		}
		out.Object = obj
		switch obj {
		case "DATABASE", "SCHEMA":
			class("drop_database")
		default:
			class("drop")
		}
	case "TRUNCATE":
		out.Object = "TABLE"
		class("truncate")
	case "DELETE":
		if !out.Where && !has("LIMIT") {
			class("delete_all")
		}
	case "UPDATE":
		if !out.Where && !has("LIMIT") {
			class("update_all")
		}
	case "GRANT":
		if has("TO", "PUBLIC") || has("PUBLIC") {
			class("grant_public")
		}
		if has("ALL") || has("SUPER") || has("FILE") || has("WITH", "GRANT", "OPTION") || has("WITH", "ADMIN", "OPTION") {
			class("grant_all")
		}
	case "ALTER", "CREATE":
		out.Object = after(1)
		if out.Object == "OR" && after(2) == "REPLACE" {
			out.Object = after(3)
		}
		if (out.Object == "ROLE" || out.Object == "USER" || out.Object == "GROUP") &&
			(has("SUPERUSER") || has("CREATEROLE") || has("BYPASSRLS") || has("REPLICATION")) {
			class("superuser")
		}
		if out.Verb == "ALTER" && out.Object == "SYSTEM" {
			class("alter_system")
		}
		if out.Object == "FUNCTION" || out.Object == "PROCEDURE" || out.Object == "TRIGGER" || out.Object == "EXTENSION" {
			for _, t := range toks {
				if t.kind == 'w' && (strings.HasSuffix(t.text, "U") && strings.HasPrefix(t.text, "PL") || t.text == "C" || t.text == "PLPYTHON3U" ||
					t.text == "ADMINPACK" || t.text == "FILE_FDW" || t.text == "DBLINK") {
					class("untrusted_code")
				}
			}
		}
		if out.Object == "DATABASE" && out.Verb == "ALTER" && has("RENAME") {
			class("drop")
		}
	case "COPY":
		if has("PROGRAM") {
			class("copy_program")
		} else if has("TO") || has("FROM") {
			for k, w := range level {
				if (w == "TO" || w == "FROM") && after(k+1) != "STDOUT" && after(k+1) != "STDIN" {
					class("copy_file")
				}
			}
			for _, t := range toks {
				if t.kind == 's' {
					class("copy_file")
					break
				}
			}
		}
	case "LOAD":
		if has("DATA") || has("XML") {
			class("load_data")
		} else if has("EXTENSION") || len(level) > 1 {
			class("load_extension")
		}
	case "ATTACH":
		class("attach")
	case "DETACH":
	case "PRAGMA":
		if has("WRITABLE_SCHEMA") {
			class("drop")
		}
	case "VACUUM":
		if has("INTO") {
			class("copy_file")
		}
	case "SET":
		if has("GLOBAL") && (has("GENERAL_LOG_FILE") || has("SLOW_QUERY_LOG_FILE")) {
			class("copy_file")
		}
	case "SHUTDOWN":
		class("shutdown")
	}
	if has("INTO", "OUTFILE") || has("INTO", "DUMPFILE") {
		class("outfile")
	}
	for k, t := range toks {
		if t.kind == 'w' && k+1 < len(toks) && toks[k+1].kind == 'p' && toks[k+1].text == "(" {
			switch {
			case sqlServerFiles[t.text]:
				class("server_file")
			case sqlShellFunctions[t.text]:
				class("server_shell")
			}
		}
		if t.kind == 'w' && (t.text == "XP_CMDSHELL") {
			class("server_shell")
		}
	}
	return out
}

// closeParen is the index of the ")" that closes the "(" at i.
func closeParen(toks []sqlToken, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		if toks[j].kind != 'p' {
			continue
		}
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}
