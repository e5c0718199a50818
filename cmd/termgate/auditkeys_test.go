package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/termgate/termgate/policy"
)

// TestPolicyInputRedactsKeys: a token the shell decodes ($'\x67hp_…')
// passes the text's redaction, so the record keeps the decision's own
// document; the line's words are then keys of shell.path_facts, and the
// record must mask them there too, not only in args and operands.
func TestPolicyInputRedactsKeys(t *testing.T) {
	g, aud := judgeGateway(t, "enforce")
	token := fakeToken()
	in := GateInput{Action: "input", Program: "bash", Text: `cat $'\x67` + token[1:] + `'`, Cwd: "/home/u"}
	d, err := g.stages.Decider.Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if pin, ok := d.Policy.Input.(*policy.Input); !ok || pin.Shell == nil || len(pin.Shell.PathFacts) == 0 {
		t.Fatalf("the decision carries no path facts: %T", d.Policy.Input)
	}
	v, redacted := aud.policyInput(in, d)
	// The text keeps the token as typed, escaped: what the redactor makes
	// of shell escapes in a line is not this test's subject.
	delete(v.(map[string]any), "text")
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !redacted || strings.Contains(string(raw), token[4:]) {
		t.Fatalf("redacted %v; the recorded document holds the token: %s", redacted, strings.ReplaceAll(string(raw), token[4:], "<TOKEN>"))
	}
	facts, _ := v.(map[string]any)["shell"].(map[string]any)["path_facts"].(map[string]any)
	if len(facts) == 0 {
		t.Fatalf("no path facts recorded: %s", strings.ReplaceAll(string(raw), token[4:], "<TOKEN>"))
	}
	for k := range facts {
		if !strings.Contains(k, "[REDACTED:github-pat:") {
			t.Errorf("a path fact's key is not masked: %q", strings.ReplaceAll(k, token[4:], "<TOKEN>"))
		}
	}
}

// TestRedactStringsKeys: keys are redacted, and two keys that redact to
// one keep one value, the same whatever the map's order.
func TestRedactStringsKeys(t *testing.T) {
	red := func(s string) string { return strings.ReplaceAll(s, "secret", "[X]") }
	for range 20 {
		v := map[string]any{"a secret": map[string]any{"b": "secret"}, "a [X]": "kept", "plain": []any{"secret", map[string]any{"secret": 1}}}
		if !redactStrings(v, red) {
			t.Fatal("nothing changed")
		}
		raw, _ := json.Marshal(v)
		if strings.Contains(string(raw), "secret") || string(raw) != `{"a [X]":{"b":"[X]"},"plain":["[X]",{"[X]":1}]}` {
			t.Fatalf("got %s", raw)
		}
	}
}
