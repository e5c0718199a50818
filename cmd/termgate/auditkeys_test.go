package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/termgate/termgate/policy"
)

// TestPolicyInputRedactsKeys: a token the shell decodes ($'\x67hp_…')
// passes the text's redaction, so the record keeps the decision's own
// document; the line's words are then keys of shell.path_facts, and the
// record must mask them there too, not only in args and operands; and
// the text, which hides the token, is not recorded as typed.
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
	v, redacted, hidden := aud.policyInput(in, d)
	if !hidden || v.(map[string]any)["text"] != hiddenSecretText {
		t.Errorf("the text that hides the token is not masked (hidden %v)", hidden)
	}
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

// TestHiddenSecretMasksTheText: a line whose text hides a token the
// shell decodes (an escape, a quote inside it) is recorded masked, in
// process.command_line and in the policy's document alike; a line with
// no secret is recorded as typed.
func TestHiddenSecretMasksTheText(t *testing.T) {
	g, aud := judgeGateway(t, "enforce")
	token := fakeToken()
	for _, text := range []string{`cat $'\x67` + token[1:] + `'`, `cat gh'p_'` + token[4:], `echo "gh"p_` + token[4:]} {
		in := GateInput{Action: "input", Program: "bash", Text: text, Cwd: "/home/u"}
		d, err := g.stages.Decider.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := aud.build(context.Background(), AuditEvent{Kind: KindDecision, Input: in, Decision: d})
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), token[4:]) {
			t.Errorf("the record holds the token: %s", strings.ReplaceAll(string(raw), token[4:], "<TOKEN>"))
		}
		if cl, _ := r.Get("process.command_line"); cl != hiddenSecretText {
			t.Errorf("process.command_line is %q", strings.ReplaceAll(fmt.Sprint(cl), token[4:], "<TOKEN>"))
		}
	}
	in := GateInput{Action: "input", Program: "bash", Text: "cat notes.txt", Cwd: "/home/u"}
	d, err := g.stages.Decider.Decide(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := aud.build(context.Background(), AuditEvent{Kind: KindDecision, Input: in, Decision: d})
	if cl, _ := r.Get("process.command_line"); cl != "cat notes.txt" {
		t.Errorf("a plain line is recorded as %q", cl)
	}
}
