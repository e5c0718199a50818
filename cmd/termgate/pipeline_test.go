package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pipeline's rules, with stand-in stages: what each stage's answer
// makes of a call, in microseconds.

type fakeDecider struct {
	d     Decision
	err   error
	panic bool
}

func (f fakeDecider) Name() string { return "fake" }
func (f fakeDecider) Decide(context.Context, GateInput) (Decision, error) {
	if f.panic {
		panic("the engine broke")
	}
	return f.d, f.err
}

type fakeAuditor struct {
	events []AuditEvent
	fail   error
}

func (a *fakeAuditor) Record(_ context.Context, ev AuditEvent) error {
	if a.fail != nil {
		return a.fail
	}
	a.events = append(a.events, ev)
	return nil
}

type fakeConfirmer struct{ c Confirmation }

func (f fakeConfirmer) Confirm(context.Context, *mcp.CallToolRequest, GateInput, Decision) Confirmation {
	return f.c
}

// runStages runs one input through p with an act that records that it ran.
func runStages(p *Stages, acted Acted) (Outcome, bool, error) {
	ran := false
	o, err := p.Run(context.Background(), nil, GateInput{Action: ActionInput, Text: "ls", Program: "bash"}, func(context.Context, Decision) (Acted, error) {
		ran = true
		return acted, nil
	})
	return o, ran, err
}

func TestPipelineFailsClosed(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Stages
		rule string
	}{
		{"the zero value", &Stages{}, noPolicyRule},
		{"an engine error", &Stages{Decider: fakeDecider{err: errors.New("boom")}}, "policy.error"},
		{"a panic in the engine", &Stages{Decider: fakeDecider{panic: true}}, "policy.error"},
		{"an action that is no verdict", &Stages{Decider: fakeDecider{d: Decision{Action: "maybe", Rule: "odd"}}}, "policy.undefined"},
		{"an empty action", &Stages{Decider: fakeDecider{d: Decision{Rule: "odd"}}}, "policy.undefined"},
		{"a confirm with nobody to ask", &Stages{Decider: fakeDecider{d: Decision{Action: Confirm, Rule: "ask"}}}, "ask"},
		{"a declined confirm", &Stages{Decider: fakeDecider{d: Decision{Action: Confirm, Rule: "ask"}}, Confirmer: fakeConfirmer{Confirmation{Answer: Declined, Detail: "the human chose \"decline\""}}}, "ask"},
		{"an allow the audit log cannot record", &Stages{Decider: fakeDecider{d: Decision{Action: Allow, Rule: "ok"}}, Auditor: &fakeAuditor{fail: errors.New("disk full")}}, "audit.unavailable"},
	} {
		o, ran, err := runStages(c.p, Acted{Output: "x"})
		var ref *refusal
		if ran || !errors.As(err, &ref) || ref.d.Action != Deny || ref.d.Rule != c.rule || !strings.Contains(err.Error(), "nothing was sent") {
			t.Errorf("%s: ran %v, outcome %+v, err %v; want a %s refusal", c.name, ran, o.Decision, err, c.rule)
		}
	}
}

func TestPipelineRunsEveryStage(t *testing.T) {
	a := &fakeAuditor{}
	red := redactorFunc(func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") })
	p := &Stages{Decider: fakeDecider{d: Decision{Action: Allow, Rule: "ok"}}, Auditor: a, Redactor: red}
	refused := []Refusal{{Access: "connect", Destination: "example.org:443", Rule: "net.x", Reason: "no"}}
	o, ran, err := runStages(p, Acted{
		Output: "pw hunter2 and more", Completion: "prompt", Refused: refused,
		Cap: func(s string) (string, bool, *readCall) { return s[:10], true, nil },
	})
	if err != nil || !ran {
		t.Fatalf("ran %v err %v", ran, err)
	}
	if o.Output != "pw [REDACT" || !o.Truncated {
		t.Fatalf("output %q truncated %v: redacted, then capped", o.Output, o.Truncated)
	}
	if len(a.events) != 2 || a.events[0].Kind != KindDecision || a.events[1].Kind != KindOutcome {
		t.Fatalf("audit %+v", a.events)
	}
	if out := a.events[1].Output; out == nil || len(out.Refused) != 1 || strings.Contains(fmt.Sprint(out), "hunter2") {
		t.Fatalf("outcome record %+v", out)
	}
}

// TestPipelineKeepsTheTokenForTheAgent: in --confirm-mode=agent the
// token is in the refusal the agent reads, and nowhere else: not in the
// decision, its reason, or any audit record.
func TestPipelineKeepsTheTokenForTheAgent(t *testing.T) {
	const token = "tok-4f7a-unique"
	a := &fakeAuditor{}
	p := &Stages{Decider: fakeDecider{d: Decision{Action: Confirm, Rule: "ask", Reason: "asks"}}, Auditor: a,
		Confirmer: fakeConfirmer{Confirmation{Answer: TokenIssued, Token: token, Via: "agent-token"}}}
	o, ran, err := runStages(p, Acted{})
	var ref *refusal
	if ran || !errors.As(err, &ref) || !strings.Contains(ref.hint, token) {
		t.Fatalf("ran %v err %v", ran, err)
	}
	if strings.Contains(err.Error(), token) || strings.Contains(fmt.Sprintf("%+v", o.Decision), token) || strings.Contains(ref.d.Reason, token) {
		t.Fatalf("the token is in the decision or its message: %v %+v", err, o.Decision)
	}
	for _, ev := range a.events {
		if strings.Contains(fmt.Sprintf("%+v", ev), token) {
			t.Fatalf("the token is in an audit record: %+v", ev)
		}
		if ev.Kind == KindConfirmAnswered {
			t.Fatalf("an issued token was recorded as an answer: %+v", ev)
		}
	}
}

// TestPipelineAsksWithoutActing: a confirmation pending with the client,
// or a question about what the act's sandbox refused, is the call's
// result; nothing runs for the first, and no outcome is recorded for
// either.
func TestPipelineAsksWithoutActing(t *testing.T) {
	ask := &mcp.CallToolResult{RequestState: "state"}
	a := &fakeAuditor{}
	p := &Stages{Decider: fakeDecider{d: Decision{Action: Confirm, Rule: "ask"}}, Auditor: a,
		Confirmer: fakeConfirmer{Confirmation{Answer: Pending, Result: ask}}}
	o, ran, err := runStages(p, Acted{})
	if ran || err != nil || o.Pending != ask {
		t.Fatalf("pending confirm: ran %v err %v pending %v", ran, err, o.Pending)
	}
	p = &Stages{Decider: fakeDecider{d: Decision{Action: Allow, Rule: "ok"}}, Auditor: a}
	a.events = nil
	o, ran, err = runStages(p, Acted{Ask: ask})
	if !ran || err != nil || o.Pending != ask {
		t.Fatalf("a question after the act: ran %v err %v pending %v", ran, err, o.Pending)
	}
	for _, ev := range a.events {
		if ev.Kind == KindOutcome {
			t.Fatalf("an outcome was recorded for a call that asks: %+v", a.events)
		}
	}
}

type redactorFunc func(string) string

func (f redactorFunc) Redact(s string) string { return f(s) }
