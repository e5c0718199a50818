package policy

import (
	"context"
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// reachCheck holds what the tests assert of every line they analyse.
type reachCheck struct {
	e *Engine
}

// forms are the inputs the gateway may receive line as: typed into bash,
// run with exec, a session's argv (sh -c, and the line's words as an
// argv), a string python code hands to os.system, and node input.
func forms(line string) []Input {
	return []Input{
		{Action: "input", Program: "bash", Text: line},
		{Action: "exec", Program: "bash", Text: line},
		{Action: "start", Program: "sh", Text: line, Start: &Start{Argv: []string{"sh", "-c", line}, Cwd: "/work", Env: []string{}}},
		{Action: "start", Program: "x", Text: line, Start: &Start{Argv: strings.Fields(line), Cwd: "/work", Env: []string{}}},
		{Action: "input", Program: "python3", Text: "import os; os.system(" + pyQuote(line) + ")"},
		{Action: "input", Program: "node", Text: line},
	}
}

// decideAll judges line in every form: each must come back as a decision,
// never an error or a panic.
func (rc reachCheck) decideAll(line string) error {
	ctx := context.Background()
	for _, in := range forms(line) {
		d, err := rc.e.Decide(ctx, in)
		if err != nil {
			return fmt.Errorf("%s %q (%s): %w", in.Action, in.Text, in.Program, err)
		}
		switch d.Action {
		case "allow", "deny", "confirm":
		default:
			return fmt.Errorf("%s %q (%s): decision %+v", in.Action, in.Text, in.Program, d)
		}
	}
	return nil
}

// reaches checks that every command name and every redirection of line,
// as syntax.Walk finds them in the line's own syntax tree, reaches the
// policy input the engine builds for it (and the same when the line is
// the string of sh -c in a session's argv). A line that does not parse is
// not checked here: the policy then gets a parse error.
func (rc reachCheck) reaches(line string) error {
	f, err := newParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return nil
	}
	want := walkIndependently(f)
	b := rc.e.Bundle()
	typed := Input{Action: "input", Program: "bash", Text: line}
	typed.prepare(nil, nil)
	b.derive(&typed, true)
	if typed.Shell == nil { // an empty line is not analysed
		if line != "" {
			return fmt.Errorf("typed %q: no shell analysis", line)
		}
		return nil
	}
	if msg := want.missingFrom(typed.Shell); msg != "" {
		return fmt.Errorf("typed %q: %s", line, msg)
	}
	if strings.HasPrefix(typed.Shell.ParseError, "shell syntax the gateway does not know") {
		return fmt.Errorf("typed %q: %s", line, typed.Shell.ParseError)
	}
	start := Input{Action: "start", Start: &Start{Argv: []string{"sh", "-c", line}}}
	start.prepare(nil, nil)
	b.derive(&start, true)
	if start.Shell.ParseError == "" { // sh -c lines are parsed at depth 1: an incomplete one is an error there
		if msg := want.missingFrom(start.Shell); msg != "" {
			return fmt.Errorf("argv sh -c %q: %s", line, msg)
		}
	}
	return nil
}

// found is what an independent walk of a syntax tree finds.
type found struct {
	names     []string    // command names written as plain words
	sites     int         // simple commands, declarations, and statements whose redirections belong to no simple command
	redirects [][2]string // op, target ("" when the target is not a plain word)
}

func walkIndependently(f *syntax.File) found {
	var fd found
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			switch n.Cmd.(type) {
			case *syntax.CallExpr, *syntax.DeclClause:
			default:
				if len(n.Redirs) > 0 {
					fd.sites++
				}
			}
		case *syntax.CallExpr:
			fd.sites++
			if len(n.Args) > 0 {
				if name, ok := plainWord(n.Args[0]); ok && !strings.ContainsAny(name, "{}") {
					name, _ = fold(name) // names are compared folded
					if strings.Contains(name, "/") {
						name = path.Base(name)
					}
					fd.names = append(fd.names, name)
				}
			}
		case *syntax.DeclClause:
			fd.sites++
			fd.names = append(fd.names, n.Variant.Value)
		case *syntax.Redirect:
			op := n.Op.String()
			target, plain := plainWord(n.Word)
			switch {
			case n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc:
				target = "<<heredoc>>"
			case !plain:
				target = ""
			case n.Op == syntax.DplOut && strings.Trim(strings.TrimSuffix(target, "-"), "0123456789") != "":
				op = "&>" // >& file is &> file
			}
			fd.redirects = append(fd.redirects, [2]string{op, target})
		}
		return true
	})
	return fd
}

// plainWord is a word's value when it is written with plain characters
// and single quotes only.
func plainWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, `\`) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// missingFrom says what of fd the shell lacks, or "".
func (fd found) missingFrom(sh *Shell) string {
	for _, n := range fd.names {
		if !contains(sh.Names, n) {
			return fmt.Sprintf("command %q is not in names %q", n, sh.Names)
		}
	}
	if len(sh.Commands) < fd.sites {
		return fmt.Sprintf("%d commands for %d statements", len(sh.Commands), fd.sites)
	}
	have := map[[2]string]int{}
	ops := map[string]int{}
	for _, c := range sh.Commands {
		for _, r := range c.Redirects {
			have[[2]string{r.Op, r.Target}]++
			ops[r.Op]++
		}
	}
	for _, r := range fd.redirects { // plain targets first, then the others by operator
		if r[1] == "" {
			continue
		}
		if have[r] == 0 {
			return fmt.Sprintf("redirection %s %q is not in the commands' redirects", r[0], r[1])
		}
		have[r]--
		ops[r[0]]--
	}
	for _, r := range fd.redirects {
		if r[1] != "" {
			continue
		}
		if ops[r[0]] <= 0 {
			return fmt.Sprintf("a redirection %s is not in the commands' redirects", r[0])
		}
		ops[r[0]]--
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
