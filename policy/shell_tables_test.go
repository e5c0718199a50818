package policy

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestParserTestTables runs every input of mvdan.cc/sh's own parser test
// tables through the engine: the inputs of fileTest (syntax/filetests_test.go,
// the parser's and printer's table, one input per spelling of each syntax
// tree, in every shell dialect) and of errCase (syntax/parser_test.go, the
// inputs the parser must reject). Each is judged in every form the gateway
// may receive it (forms): every one must come back as a decision (a parse error is a
// decision too), with no error and no panic; and every command name and
// redirection of each line that parses must reach the policy input.
func TestParserTestTables(t *testing.T) {
	dir := shModuleDir(t)
	inputs := tableInputs(t, filepath.Join(dir, "syntax", "filetests_test.go"), "fileTest")
	errInputs := tableInputs(t, filepath.Join(dir, "syntax", "parser_test.go"), "errCase")
	if len(inputs) < 500 || len(errInputs) < 200 {
		t.Fatalf("only %d fileTest and %d errCase inputs found in %s: the tables moved", len(inputs), len(errInputs), dir)
	}
	rc := reachCheck{e: defaultEngine(t)}
	parsed, panics, errs, misses := 0, 0, 0, 0
	report := func(err error) {
		if errs+misses < 10 {
			t.Error(err)
		}
	}
	for _, in := range append(inputs, errInputs...) {
		if err := rc.decideAll(in); err != nil {
			errs++
			if errors.Is(err, errPanic) {
				panics++
			}
			report(err)
		}
		if err := rc.reaches(in); err != nil {
			misses++
			report(err)
		}
		if sh := ParseShell(in); sh.ParseError == "" && !sh.Incomplete {
			parsed++
		}
	}
	t.Logf("%d inputs (%d fileTest, %d errCase) judged %d ways each; %d parse as bash", len(inputs)+len(errInputs), len(inputs), len(errInputs), len(forms("")), parsed)
	if errs+misses > 0 {
		t.Errorf("%d inputs made the engine fail (%d of them panicked), %d lost a command or a redirection", errs, panics, misses)
	}
}

// shModuleDir is the source directory of mvdan.cc/sh/v3 in the module
// cache; the test is skipped, saying why, when it cannot be found.
func shModuleDir(t *testing.T) string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}", "mvdan.cc/sh/v3").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("the source of mvdan.cc/sh/v3 is not in the module cache (go list -m: %v): its parser tables cannot be read", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "syntax", "filetests_test.go")); err != nil {
		t.Skipf("mvdan.cc/sh/v3's parser tables are not in %s: %v", dir, err)
	}
	return dir
}

// tableInputs returns the input strings of a table in a Go test file: the
// first argument of every call to fn, a string or a []string literal
// (constant concatenations included).
func tableInputs(t *testing.T, file, fn string) []string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	skipped := 0
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != fn {
			return true
		}
		elems := []ast.Expr{call.Args[0]}
		if cl, ok := call.Args[0].(*ast.CompositeLit); ok {
			elems = cl.Elts
		}
		for _, e := range elems {
			if s, ok := constString(e); ok {
				out = append(out, s)
			} else {
				skipped++
			}
		}
		return true
	})
	if skipped > 0 {
		t.Errorf("%s: %d inputs of %s are not constant strings", file, skipped, fn)
	}
	return out
}

func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok1 := constString(e.X)
		y, ok2 := constString(e.Y)
		return x + y, ok1 && ok2
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}
