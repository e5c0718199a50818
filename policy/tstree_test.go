package policy

import (
	"context"
	"strings"
	"testing"

	ts "github.com/tree-sitter/go-tree-sitter"
)

// tsTreeSamples are Python programs whose trees hold what the walk asks
// about: fields, hidden and aliased nodes, comments, f-strings, errors,
// missing nodes and code that does not parse at all.
var tsTreeSamples = []string{
	"",
	"1+1",
	"import os as o, sys\nfrom shutil import rmtree as r, copy\no.system('rm -rf ~')",
	"__import__('os').system(f\"rm -rf {'~'}/x\" + '/y')  # a comment",
	"with open(os.environ['HOME'] + '/.ssh/authorized_keys', 'a') as f: f.write(k)",
	"def f(x, *a, **k):\n    return [y for y in x if y]\nclass C(B):\n    pass\n",
	"subprocess.run(['rm', '-rf', '/'], shell=False, **opts)",
	"lambda: (yield)\nasync def g():\n    await h()\n",
	"x = {'a': 1, **d}; y = (1,); z = a if b else c; del x[0]",
	"os.system('rm -rf /'",
	"if x:\n  os.system(\n",
	")))(((",
	"print('unterminated",
	"ｏｓ.system(\"rm -rf /\")",
	"s = b'\\x00\\n' r'\\d' u'é'\n'%s' % x\n'{}'.format(y)",
	"match x:\n    case [a, *rest]:\n        pass\n    case {'k': v}:\n        pass\n",
	"@dec\ndef f(): ...\nglobal g\nnonlocal n\nassert x, 'm'\nraise E from e\n",
	"try:\n  pass\nexcept* (A, B) as e:\n  pass\nfinally:\n  pass\n",
	"x: int = 1\nprint(*args, sep='')\na[1:2, ::3]\n",
}

// TestTSTreeAsBindings holds the tree copied out of C to the bindings'
// answers for every node: kind, span, error flag, children (named or
// not) and the child each field the walk reads names. The walk asks
// nothing else. (Not every field: where a grammar aliases a hidden rule
// to a visible node, as Python's match body, ts_node_child_by_field_id
// also finds the fields of that node's children, and the copy, as the
// tree cursor, does not. No field the walk reads is such a one, and
// this test would say so.)
func TestTSTreeAsBindings(t *testing.T) {
	srcs := append([]string{}, tsTreeSamples...)
	for _, c := range benchInputs(t) {
		switch {
		case codeLanguage(c.Program) == "python":
			srcs = append(srcs, c.Text)
		case c.Program == "bash":
			for _, cmd := range ParseShell(c.Text).Commands {
				if l, code, ok := codeArg(cmd); ok && l == "python" {
					srcs = append(srcs, code)
				}
			}
		}
	}
	srcs = append(srcs, strings.Join(srcs, "\n")) // one long program, errors and all
	nodes := 0
	for _, src := range srcs {
		nodes += sameTree(t, src)
	}
	if nodes < 5000 {
		t.Fatalf("the samples held only %d nodes", nodes)
	}
}

// sameTree parses src both ways, compares the trees and returns how many
// nodes it compared.
func sameTree(t *testing.T, src string) int {
	t.Helper()
	g := pyGrammarOnce()
	p := ts.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g.lang); err != nil {
		t.Fatal(err)
	}
	in := src
	if in == "" {
		in = "\n"
	}
	want := p.Parse([]byte(in), nil)
	if want == nil {
		t.Fatalf("%q: the bindings gave no tree", src)
	}
	defer want.Close()
	got := parseTS(g.raw, src)
	if got == nil {
		t.Fatalf("%q: no tree", src)
	}
	n := 0
	var same func(w *ts.Node, h *tsNode, path string)
	same = func(w *ts.Node, h *tsNode, path string) {
		if (w == nil) != (h == nil) {
			t.Fatalf("%q at %s: bindings %v, copy %v", src, path, w != nil, h != nil)
		}
		if w == nil {
			return
		}
		n++
		if w.KindId() != h.KindId() || w.StartByte() != h.StartByte() || w.EndByte() != h.EndByte() ||
			w.HasError() != h.HasError() || w.ChildCount() != h.ChildCount() || w.NamedChildCount() != h.NamedChildCount() {
			t.Fatalf("%q at %s: bindings %s %d-%d err=%v kids=%d named=%d; copy %d %d-%d err=%v kids=%d named=%d",
				src, path, w.Kind(), w.StartByte(), w.EndByte(), w.HasError(), w.ChildCount(), w.NamedChildCount(),
				h.KindId(), h.StartByte(), h.EndByte(), h.HasError(), h.ChildCount(), h.NamedChildCount())
		}
		for _, f := range g.fields {
			wc, hc := w.ChildByFieldId(f), h.ChildByFieldId(f)
			if (wc == nil) != (hc == nil) || wc != nil && (wc.StartByte() != hc.StartByte() || wc.EndByte() != hc.EndByte() || wc.KindId() != hc.KindId()) {
				t.Fatalf("%q at %s (%s): field %s differs: bindings %v, copy %v", src, path, w.Kind(), g.lang.FieldNameForId(f), wc, hc)
			}
		}
		for i := range w.NamedChildCount() {
			wc, hc := w.NamedChild(i), h.NamedChild(i)
			if wc.StartByte() != hc.StartByte() || wc.KindId() != hc.KindId() {
				t.Fatalf("%q at %s: named child %d differs", src, path, i)
			}
		}
		for i := range w.ChildCount() + 1 { // one past the end: both nil
			same(w.Child(i), h.Child(i), path+"/"+w.Kind())
		}
	}
	same(want.RootNode(), got.root(), "")
	return n
}

// FuzzTSTree holds the copied tree to the bindings' on any input.
func FuzzTSTree(f *testing.F) {
	for _, s := range tsTreeSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2048 {
			return // longer input only tests tree-sitter's own speed (some takes seconds)
		}
		sameTree(t, src)
	})
}

// TestPythonParseGivesUp: code whose parse would take seconds (tree-sitter's
// error recovery on this input took 12 s) is given up on, and judged as
// code that does not parse: a confirm, since it names a module that runs
// programs.
func TestPythonParseGivesUp(t *testing.T) {
	code := "import os\n" + strings.Repeat("x\x00y", 20000)
	d := newDerived(&Shell{}, "python", 0)
	analysePython(d, code)
	if d.code.ParseError != "the Python parser gave up on the code" {
		t.Fatalf("parse error %q", d.code.ParseError)
	}
	got, err := defaultEngine(t).Decide(context.Background(), Input{Action: "input", Program: "python3", Text: code})
	if err != nil || got.Action != "confirm" || got.Rule != "code.unparseable" {
		t.Fatalf("decided %s by %s (%v)", got.Action, got.Rule, err)
	}
}
