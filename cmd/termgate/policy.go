package main

import (
	"context"

	"github.com/termgate/termgate/policy"
)

// engineDecider adapts the policy engine to the pipeline's Decider seam.
type engineDecider struct{ e *policy.Engine }

func (d engineDecider) Name() string { return d.e.Name() }

func (d engineDecider) Decide(ctx context.Context, in GateInput) (Decision, error) {
	pin := toPolicyInput(in)
	pd, err := d.e.Decide(ctx, pin)
	out := Decision{Action: Verdict(pd.Action), Rule: pd.Rule, Reason: pd.Reason, Severity: pd.Severity, Profile: pd.Profile}
	if b := pd.Bundle; b != nil {
		out.Policy = &DecisionSource{Source: b.Source, Revision: b.Revision, Hash: b.Hash}
		if pd.Input != nil {
			out.Policy.Input = pd.Input
		}
	}
	return out, err
}

// toPolicyInput is what the policy is shown of an input.
func toPolicyInput(in GateInput) policy.Input {
	pin := policy.Input{
		Action:  string(in.Action),
		Text:    in.Text,
		Program: in.Program,
		Secret:  in.Secret,
		Client:  policy.Client{Name: in.Client.Name, Version: in.Client.Version},
	}
	if in.Secret {
		pin.Text = "" // secret input is never shown to the policy as text
	}
	if in.Session != nil {
		profile := in.Session.Profile
		if profile == "" {
			profile = "default"
		}
		pin.Session = &policy.Session{ID: in.Session.ID, Name: in.Session.Name, Argv: in.Session.Argv, Cwd: in.Session.Cwd, Profile: profile}
	}
	if in.Start != nil {
		env := in.Start.Env
		if env == nil {
			env = []string{}
		}
		pin.Start = &policy.Start{Argv: in.Start.Argv, Cwd: in.Start.Cwd, Env: env}
	}
	if t := in.Terminal; t != nil {
		pin.Terminal = &policy.Terminal{ReadsLines: t.ReadsLines, Judged: t.Judged, Echo: t.Echo, Ahead: t.Ahead, Readers: t.Readers}
	}
	return pin
}
