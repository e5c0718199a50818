package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// codeSeeds are the corpus's inputs typed into programs of a language, and
// the code its one-liners carry.
func codeSeeds(f *testing.F, lang string, extra ...string) {
	for _, c := range loadCodeCorpus(f) {
		switch {
		case codeLanguage(c.program) == lang || lang == "sql" && sqlDialect(c.program) != "":
			f.Add(c.text)
		case c.program == "bash":
			sh := ParseShell(c.text)
			for _, cmd := range sh.Commands {
				if l, code, ok := codeArg(cmd); ok && l == lang {
					f.Add(code)
				}
			}
		}
	}
	for _, s := range extra {
		f.Add(s)
	}
}

// decideCode judges code in every form the gateway meets it: typed into
// the programs, and handed to the interpreter by a shell line. Each must
// come back a decision: never an error, never a panic.
func decideCode(t *testing.T, e *Engine, ins []Input) {
	t.Helper()
	for _, in := range ins {
		d, err := e.Decide(context.Background(), in)
		if err != nil {
			t.Fatalf("%s %q: %v", in.Program, in.Text, err)
		}
		if d.Action != "allow" && d.Action != "deny" && d.Action != "confirm" {
			t.Fatalf("%s %q: decision %+v", in.Program, in.Text, d)
		}
	}
}

// fuzzEngine is the default engine with a timeout for a fuzzing machine:
// the targets look for panics and errors of the analysis, and a loaded
// machine running instrumented code can take a second over a decision.
func fuzzEngine(f *testing.F) *Engine {
	e := defaultEngine(f)
	e.timeout = time.Minute
	return e
}

// shQuote quotes s as one shell word.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkCode asserts what every analysis must give: lists, never nil, and
// every call's arguments.
func checkCode(t *testing.T, c Code, sh Shell) {
	t.Helper()
	if c.Calls == nil || c.Names == nil || c.Modules == nil || c.ShellCommands == nil || c.DynamicCalls == nil || sh.Commands == nil {
		t.Fatalf("nil lists: %+v %+v", c, sh)
	}
	for _, call := range c.Calls {
		if call.Args == nil {
			t.Fatalf("a call with nil arguments: %+v", call)
		}
	}
	if !slices.IsSorted(c.Names) || !slices.IsSorted(c.Modules) {
		t.Fatalf("unsorted sets: %+v", c)
	}
}

// FuzzPythonAnalysis: no Python code panics the analysis or makes the
// engine fail, typed into a REPL, handed to python3 -c, or fed to it by a
// here-document.
func FuzzPythonAnalysis(f *testing.F) {
	codeSeeds(f, "python", "def f(:", `f"{x!r:>{w}}"`, "'''", "\\", "lambda: (yield)", "x = [*a, *b]",
		"match p:\n  case {'k': [1, *r]}: pass", "@d\nclass C(B, metaclass=M): ...", "print(*a, sep='')", "\x00", "os.system(\"\\x72m -rf /\")")
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, code string) {
		c, sh := analyseCode("python", code, 1)
		checkCode(t, c, sh)
		decideCode(t, e, []Input{
			{Action: "input", Program: "python3", Text: code},
			{Action: "input", Program: "bash", Text: "python3 -c " + shQuote(code)},
			{Action: "input", Program: "bash", Text: "python3 <<'EOF'\n" + code + "\nEOF"},
		})
	})
}

// FuzzJavaScriptAnalysis: the same for JavaScript, typed into node or
// handed to node -e.
func FuzzJavaScriptAnalysis(f *testing.F) {
	codeSeeds(f, "javascript", "`${`${a}`}`", "a?.[b]?.(c)", "/re/g.exec(s)", "class A { static { x() } }", "x => ({...y})",
		"label: { break label }", "import('fs').then(m => m.rmSync('/'))", "new Function('return process')()", "\x00")
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, code string) {
		c, sh := analyseCode("javascript", code, 1)
		checkCode(t, c, sh)
		decideCode(t, e, []Input{
			{Action: "input", Program: "node", Text: code},
			{Action: "input", Program: "bash", Text: "node -e " + shQuote(code)},
		})
	})
}

// FuzzOneLinerAnalysis: the same for the Perl, Ruby, awk and PHP
// tokenizer.
func FuzzOneLinerAnalysis(f *testing.F) {
	for _, l := range []string{"perl", "ruby", "awk", "php"} {
		codeSeeds(f, l)
	}
	for _, s := range []string{"qx", "q{", "%x(", `"#{`, `"${`, "`", `open(F, "-|", @a)`, `system @ARGV`, "print > \"f\"", `"a" | getline x`} {
		f.Add(s)
	}
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, code string) {
		for _, l := range []string{"perl", "ruby", "awk", "php"} {
			c, sh := analyseCode(l, code, 1)
			checkCode(t, c, sh)
		}
		decideCode(t, e, []Input{
			{Action: "input", Program: "bash", Text: "perl -e " + shQuote(code)},
			{Action: "input", Program: "bash", Text: "ruby -e " + shQuote(code)},
			{Action: "input", Program: "bash", Text: "awk " + shQuote(code)},
			{Action: "input", Program: "perl", Text: code},
		})
	})
}

// FuzzSQLAnalysis: no SQL panics the splitter and classifier or makes the
// engine fail, in any client; and a statement ended by ";" is classified
// the same whatever follows it.
func FuzzSQLAnalysis(f *testing.F) {
	codeSeeds(f, "sql", "$$", "$a$ $b$", "/* /* */", "'", `E'\''`, "\\", ".", "/*!", "\\copy x to program", ".once")
	e := fuzzEngine(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, d := range []string{"postgres", "mysql", "sqlite", "sql"} {
			q, _ := ParseSQL(d, text)
			if q.Statements == nil || q.Classes == nil || len(q.Statements) > maxStatements {
				t.Fatalf("%s %q: %+v", d, text, q)
			}
			q, _ = ParseSQL(d, "DROP TABLE x;"+text)
			if !slices.Contains(q.Classes, "drop") {
				t.Fatalf("%s: DROP TABLE x; followed by %q lost its class: %+v", d, text, q)
			}
		}
		decideCode(t, e, []Input{
			{Action: "input", Program: "psql", Text: text},
			{Action: "input", Program: "mysql", Text: text},
			{Action: "input", Program: "sqlite3", Text: text},
			{Action: "input", Program: "bash", Text: "psql -c " + shQuote(text)},
		})
	})
}
