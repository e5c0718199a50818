package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// TestDocumentsShareNothingMutable: a document built with the bundle's
// shared terms is the document built without them, for every input of
// the corpus; and documents built and evaluated side by side, on two
// goroutines in opposite orders, are still the fresh documents after
// the evaluation, decide as one input decided alone does, and leave the
// shared terms as they were (run with -race: the terms are read by both).
func TestDocumentsShareNothingMutable(t *testing.T) {
	e := defaultEngine(t)
	b := e.Bundle()
	ctx := context.Background()
	inputs := benchInputs(t)
	inputs = append(inputs,
		Input{Action: "connect", Session: &Session{ID: "s-2", Argv: []string{"bash"}, Profile: "default"},
			Connect: &Connect{Host: "0xa9fea9fe", Port: 80, Program: "curl", Via: "connect", Address: "169.254.169.254", AddressClass: "link_local"}},
		Input{Action: "start", Start: &Start{Argv: []string{"env", "A=1", "sh"}, Cwd: "/w", Env: []string{"A"}}, Client: Client{Name: "c", Version: "1"}},
		Input{Action: "input", Text: "cat ~/.ssh/id_rsa > /tmp/x; ls -la /etc", Program: "bash", Gateway: &Gateway{Paths: []string{"/var/log/termgate"}, Home: "/home/dev"}},
	)
	if evalScale > 1 { // built with the race detector
		inputs = inputs[:len(inputs)/8] // the detector makes a whole pass too slow
	}
	built := make([]Input, len(inputs))
	fresh := make([]ast.Value, len(inputs))
	alone := make([]Decision, len(inputs))
	for i, in := range inputs {
		built[i] = e.Build(in)
		fresh[i] = built[i].value()
		if got := built[i].document(b.terms); got.Compare(fresh[i]) != 0 {
			t.Fatalf("%q: with shared terms\n got %v\nwant %v", in.Text, got, fresh[i])
		}
		d, err := e.Decide(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = d
	}
	shared := map[string][2]ast.Value{}
	for s, term := range b.terms {
		shared[s] = [2]ast.Value{term.str.Value, term.single.Value}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := range 2 {
		wg.Go(func() {
			for k := range inputs {
				i := k
				if g == 1 {
					i = len(inputs) - 1 - k
				}
				doc := built[i].document(b.terms)
				rs, err := b.query.Eval(ctx, rego.EvalParsedInput(doc))
				if err != nil || len(rs) == 0 {
					errs <- err
					return
				}
				d, err := toDecision(rs[0].Expressions[0].Value)
				switch {
				case err != nil:
					errs <- err
					return
				case d.Action != alone[i].Action || d.Rule != alone[i].Rule || d.Reason != alone[i].Reason:
					t.Errorf("%q: side by side %s %s, alone %s %s", inputs[i].Text, d.Action, d.Rule, alone[i].Action, alone[i].Rule)
				case doc.Compare(fresh[i]) != 0:
					t.Errorf("%q: the document changed in the evaluation:\n got %v\nwant %v", inputs[i].Text, doc, fresh[i])
				}
				if d, err := e.Decide(ctx, inputs[i]); err != nil || d.Action != alone[i].Action || d.Rule != alone[i].Rule {
					t.Errorf("%q: decided side by side %s %s (%v), alone %s %s", inputs[i].Text, d.Action, d.Rule, err, alone[i].Action, alone[i].Rule)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s, term := range b.terms {
		if term.str.Value != shared[s][0] || term.str.Value.Compare(ast.String(s)) != 0 ||
			term.single.Value != shared[s][1] || term.single.Value.Compare(ast.NewArray(ast.StringTerm(s))) != 0 {
			t.Fatalf("the shared terms of %q are now %v, %v", s, term.str, term.single)
		}
	}
	for i, ft := range factTerms {
		var want fields
		want.add("protected", boolean(i&2 != 0))
		want.add("sensitive", boolean(i&1 != 0))
		want.add("leaves", boolean(i&4 != 0))
		if ft.Value.Compare(ast.NewObject(want.kv[:want.n]...)) != 0 {
			t.Fatalf("path fact %d is now %v", i, ft)
		}
	}
}

// TestToDecisionReadsOPAValues: a decision read from OPA's value is the
// decision read from the same value as Go maps, errors included.
func TestToDecisionReadsOPAValues(t *testing.T) {
	for _, text := range []string{
		`{"action": "allow", "rule": "r", "reason": "why", "severity": "low", "profile": "strict"}`,
		`{"action": "confirm", "reason": "no rule"}`,
		`{"action": "deny", "rule": 3, "reason": ["x"], "severity": null, "profile": {"a": 1}, "extra": "e"}`,
		`{"action": "maybe", "rule": "r"}`,
		`{"action": 1}`,
		`{}`,
		`"allow"`, `["allow"]`, `1`, `true`, `null`, `{"allow"}`,
	} {
		term := ast.MustParseTerm(text)
		g, err := ast.JSON(term.Value)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := toDecision(g)
		got, gerr := toDecision(term.Value)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: from OPA's value %+v (%v), from Go's %+v (%v)", text, got, gerr, want, werr)
		}
		if text == `"allow"` && (werr == nil || !strings.Contains(werr.Error(), "string, not an object")) {
			t.Errorf("%s: err %v", text, werr)
		}
	}
}
