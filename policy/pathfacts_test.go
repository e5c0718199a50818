package policy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// pathWords are words made to take each branch of protected_by_list and
// sensitive_by_glob: trailing slashes and dots, /* and /., $HOME and
// ${HOME}, globs of every shape in the list, a glob's literal at either
// end, look-alikes that must not match, text that is not UTF-8.
var pathWords = []string{
	"/", "//", "/.", "/./", "/..", "/usr", "/usr/", "/usr//", "/usr/.", "/usr/*", "/usr/./", "usr", "/usr/local/bin",
	"~", "~/", "~/*", "$HOME", "$HOME/", "${HOME}", "${HOME}/*", "$HOMEX", ".", "..", "./", "*", "/*", "/**",
	"~/.ssh/id_rsa", "$HOME/.ssh/authorized_keys", "${HOME}/.bashrc", "/root/.ssh/x", "a/b/.ssh/c", ".ssh/x",
	"~/.bashrc.bak", "/etc/passwd", "/etcetera", "/var/spool/cron/crontabs/root", ".git/hooks/pre-commit",
	"repo/.git/hooks/x", ".git/config", "x/.git/config", "policies/a.rego", "/etc/termgate/policies/x.rego",
	"audit-1.jsonl", "/var/log/termgate/audit.jsonl", ".mcp.json", "a/.mcp.json", ".claude/settings.json",
	"$HOME\xff/.ssh/x", "${HOME}\xe2\x82/.bashrc", "/usr\xff", "\xff", "", "-rf", "--delete", "build/",
}

// pathRulesQuery evaluates the rules' own protected_by_list and
// sensitive_by_glob over input.words.
func pathRulesQuery(t testing.TB, e *Engine) rego.PreparedEvalQuery {
	return bundleQuery(t, e, `p := {w | some w in input.words; data.termgate.protected_by_list(w)}; s := {w | some w in input.words; data.termgate.sensitive_by_glob(w)}`)
}

// samePathFacts fails t when the engine's facts for words differ from
// what the rules compute.
func samePathFacts(t testing.TB, pi *pathIndex, q rego.PreparedEvalQuery, words []string) {
	t.Helper()
	terms := make([]*ast.Term, len(words))
	for i, w := range words {
		terms[i] = ast.StringTerm(w)
	}
	rs, err := q.Eval(context.Background(), rego.EvalParsedInput(ast.NewObject([2]*ast.Term{ast.StringTerm("words"), ast.ArrayTerm(terms...)})))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%q: %v %v", words, rs, err)
	}
	holds := func(name, w string) bool {
		set, _ := rs[0].Bindings[name].([]any)
		return slices.Contains(set, any(w))
	}
	for _, w := range words {
		if got, want := pi.isProtected(w), holds("p", w); got != want {
			t.Errorf("%q: the engine says protected %v, the rules %v", w, got, want)
		}
		if got, want := pi.isSensitive(w), holds("s", w); got != want {
			t.Errorf("%q: the engine says sensitive %v, the rules %v", w, got, want)
		}
	}
}

// TestPathFactsAsRulesDo checks the engine's path facts against the
// rules' own definitions, for every word the engine classifies in the
// decision corpus and for the words above; and that some of each kind
// are found, so the comparison proves something.
func TestPathFactsAsRulesDo(t *testing.T) {
	e := defaultEngine(t)
	pi := e.Bundle().paths
	if pi == nil || pi.literals == nil {
		t.Fatal("the default bundle has no path index, or no literal for a sensitive glob")
	}
	q := pathRulesQuery(t, e)
	words := slices.Clone(pathWords)
	protected, sensitive := 0, 0
	for _, in := range benchInputs(t) {
		built := e.Build(in)
		if built.Shell == nil {
			continue
		}
		for w, f := range built.Shell.PathFacts {
			words = append(words, w)
			if f.Protected {
				protected++
			}
			if f.Sensitive {
				sensitive++
			}
		}
	}
	samePathFacts(t, pi, q, words)
	if protected < 40 || sensitive < 40 {
		t.Errorf("the corpus has %d protected and %d sensitive words: the comparison proves little", protected, sensitive)
	}
}

// TestPathFactsDecideAsRulesDo: a line's decision is the same with the
// facts the engine derives and without them (the rules computing every
// answer), over the corpus.
func TestPathFactsDecideAsRulesDo(t *testing.T) {
	e := defaultEngine(t)
	b := e.Bundle()
	ctx := context.Background()
	for _, in := range benchInputs(t) {
		built := e.Build(in)
		if built.Shell == nil || len(built.Shell.PathFacts) == 0 {
			continue
		}
		if len(built.Shell.reaches) > 0 {
			// What a path reaches through symbolic links is the engine's
			// alone to tell: the rules judge such a line by its words.
			continue
		}
		decide := func(in Input) Decision {
			rs, err := b.query.Eval(ctx, rego.EvalParsedInput(in.value()))
			if err != nil || len(rs) == 0 {
				t.Fatalf("%q: %v", in.Text, err)
			}
			d, err := toDecision(rs[0].Expressions[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		with := decide(built)
		sh := *built.Shell
		sh.PathFacts = nil
		bare := built
		bare.Shell = &sh
		if without := decide(bare); with != without {
			t.Errorf("%q: with the facts %+v, without %+v", in.Text, with, without)
		}
	}
}

// FuzzPathFacts compares the engine's path facts with the rules' own on
// any word.
func FuzzPathFacts(f *testing.F) {
	for _, w := range pathWords {
		f.Add(w)
	}
	e := defaultEngine(f)
	pi := e.Bundle().paths
	q := pathRulesQuery(f, e)
	f.Fuzz(func(t *testing.T, w string) {
		if len(w) > 256 || strings.ContainsRune(w, 0) {
			return
		}
		samePathFacts(t, pi, q, []string{w, "$HOME" + w, "~/" + w, w + "/*", w + "/."})
	})
}

// TestPathFactsAreTheEngines: facts a caller sends are replaced by the
// engine's own, so a document cannot call / unprotected.
func TestPathFactsAreTheEngines(t *testing.T) {
	e := defaultEngine(t)
	in := Input{Action: "input", Program: "bash", Text: "rm -rf /", Shell: &Shell{
		Commands:  []Command{{Name: "rm", Args: []string{"-rf", "/"}}},
		PathFacts: map[string]PathFact{"/": {}},
	}}
	d, err := e.Decide(context.Background(), in)
	if err != nil || d.Action != "deny" || d.Rule != "fs.rm_protected" {
		t.Fatalf("a forged fact: %+v %v", d, err)
	}
	if f := d.Input.Shell.PathFacts["/"]; !f.Protected {
		t.Errorf("the engine's fact for / is %+v", f)
	}
}

// TestGlobLiteral: the run a glob's matches must hold, and none where a
// part of the glob is not required or is not read.
func TestGlobLiteral(t *testing.T) {
	for g, want := range map[string]string{
		"**/.ssh/**": "/.ssh/", "~/.bashrc": "~/.bashrc", "**/policies/*.rego": "/policies/", "/var/spool/cron/**": "/var/spool/cron/",
		"**": "", "*": "", "x{abc,d}": "", "{a,b}": "", "a,b": "", "[ab]cde": "", `a\*bcd`: "", "?": "",
	} {
		if got := globLiteral(g); got != want {
			t.Errorf("globLiteral(%q) = %q, want %q", g, got, want)
		}
	}
	// A bundle whose globs hold an alternation gets no prefilter, and
	// its alternation still matches.
	pi := newPathIndex(map[string]any{"termgate": map[string]any{"lists": map[string]any{
		"protected_paths": []any{"/"}, "sensitive_write_globs": []any{"x{abcdef,d}/**", "/etc/**"},
	}}})
	if pi == nil || pi.literals != nil || !pi.isSensitive("xd/f") || pi.isSensitive("xe/f") {
		t.Fatalf("an alternation in a glob: %+v", pi)
	}
}
