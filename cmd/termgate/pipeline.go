package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/sandbox"
)

// The pipeline every input goes through before a byte reaches a terminal:
//
//	1. decide   — the policy judges what will run (Decider)
//	2. confirm  — a "confirm" decision asks the human (Confirmer)
//	3. audit    — the decision is recorded before acting (Auditor)
//	4. act      — the caller writes to the session
//	5. redact   — everything returned passes the redactor (Redactor)
//	6. audit    — the outcome is recorded
//
// Each stage is an interface so the policy engine, the confirmation flow,
// the redactor and the audit log plug in where they belong. A stage that is
// not configured is reported as such in every result ("policy: none"): it is
// never pretended. The one rule that holds with or without stages: an input
// the gate does not allow is not written, and a failing stage refuses.

// GateInput is what the policy sees of one input. Field names follow the
// policy input document in DESIGN.
type GateInput struct {
	Action  string       `json:"action"` // start | input | keys | exec | connect
	Text    string       `json:"text"`
	Program string       `json:"program,omitempty"`
	Session *GateRef     `json:"session,omitempty"`
	Start   *GateRef     `json:"start,omitempty"`
	Connect *GateConnect `json:"connect,omitempty"` // action connect: the destination
	Exec    *GateExec    `json:"exec,omitempty"`    // a program the kernel holds (execgate.go)
	Client  Client       `json:"client"`
	// Cwd is the current directory of the terminal's foreground program
	// when the input is judged (input.cwd): relative paths are resolved
	// against it.
	Cwd string `json:"cwd,omitempty"`
	// Secret marks input typed while the terminal's echo is off: it must
	// not be shown to the policy as text, logged or audited.
	Secret bool `json:"-"`
}

// GateRef names a session, or the session a start would create.
type GateRef struct {
	ID   string   `json:"id,omitempty"`
	Name string   `json:"name,omitempty"`
	Argv []string `json:"argv,omitempty"`
	Cwd  string   `json:"cwd,omitempty"` // a start's or exec's: the real directory, checked (checkCwd)
	Env  []string `json:"env,omitempty"` // names only, sorted
	// Profile is a session's sandbox profile; Confined that it (or, for a
	// start, what the gateway starts) runs confined: no capabilities,
	// no_new_privs, so sudo and su cannot work in it.
	Profile  string `json:"profile,omitempty"`
	Confined bool   `json:"confined,omitempty"`
	// EnvValues are the variables the agent set, NAME=value in the order
	// of Env. They bind a confirmation (its hash) and are shown to the
	// human who confirms; never to the policy or the audit log.
	EnvValues []string `json:"-"`
}

// GateExec is a program a session's process asked the kernel to run
// (action "exec"): policy.Exec, as the exec gate read it.
type GateExec struct {
	Argv          []string `json:"argv"`
	Path          string   `json:"path"`
	Cwd           string   `json:"cwd"`
	Parents       []string `json:"parents"`
	Line          string   `json:"line,omitempty"`
	LineConfirmed bool     `json:"line_confirmed,omitempty"`
	IdentifiedBy  string   `json:"identified_by,omitempty"`
	Home          string   `json:"-"` // the session's home: ~ in the commands the rules read
	Env           []string `json:"-"` // the exec's environment, read when a confirmed line has variables
}

// Client is the MCP client as it introduced itself.
type Client struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// Decision is the policy's verdict on one input.
type Decision struct {
	Action   string `json:"action" jsonschema:"allow, deny or confirm"`
	Rule     string `json:"rule,omitempty" jsonschema:"id of the rule that decided"`
	Reason   string `json:"reason,omitempty" jsonschema:"why"`
	Severity string `json:"severity,omitempty" jsonschema:"low, medium, high or critical"`
	Profile  string `json:"profile,omitempty" jsonschema:"sandbox profile chosen for a new session"`
	// Policy says which bundle decided and what it judged: for the audit
	// record, never sent to the agent.
	Policy *DecisionSource `json:"-"`
}

// DecisionSource is the provenance of a decision.
type DecisionSource struct {
	Source, Revision, Hash string
	// Input is the document the policy judged, as the engine built it.
	Input any
}

// refused is d turned into a deny for why, keeping its rule and provenance.
func (d Decision) refused(reason string) Decision {
	return Decision{Action: "deny", Rule: d.Rule, Reason: reason, Severity: d.Severity, Policy: d.Policy}
}

// Decider judges an input. An error, or an undefined result, must deny.
type Decider interface {
	Decide(ctx context.Context, in GateInput) (Decision, error)
	// Name describes the engine for results and logs (bundle revision).
	Name() string
}

// Confirmer asks a human about an input the policy wants confirmed. It
// reports true only for an explicit approval of exactly this input.
type Confirmer interface {
	Confirm(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) (bool, error)
}

// Redactor masks secrets in text that leaves the gateway.
type Redactor interface {
	Redact(text string) string
}

// Auditor records what happened. An error refuses the input.
type Auditor interface {
	Record(ctx context.Context, ev AuditEvent) error
}

// AuditEvent is one record handed to the Auditor.
type AuditEvent struct {
	// Kind: decision | confirmation_asked | confirmation_answered |
	// outcome | session_start | session_end | tool_error | server_start |
	// server_stop | policy_load | policy_reload | network.
	Kind     string
	Input    GateInput
	Decision Decision
	Outcome  string
	Approved bool                // confirmation_answered
	Output   *OutputSummary      // outcome
	Session  *SessionFacts       // session_start, session_end
	Network  *sandbox.Connection // network: one connection through the egress proxy
	Err      string              // tool_error, a failed policy_reload (redacted)
	Fields   map[string]any      // extra ECS or termgate.* fields, dotted
}

// OutputSummary describes what an input produced.
type OutputSummary struct {
	Bytes, Lines, Redactions int
	Completion               string
	ExitCode                 *int
	Refused                  []string // what the sandbox refused meanwhile
}

// withRefusals adds what the sandbox refused to a summary.
func withRefusals(s *OutputSummary, rs []Refusal) *OutputSummary {
	for _, r := range rs {
		s.Refused = append(s.Refused, r.String())
	}
	return s
}

// SessionFacts describe a session starting or ending.
type SessionFacts struct {
	ID, Name, Program, Cwd, Mode string
	Argv                         []string
	Pid                          int
	ExitCode                     *int
	Signal                       string
	Duration                     time.Duration
	BytesIn, BytesOut            int64
	Recording                    string
	Sandbox                      string
	SandboxStatus                sandbox.Status
}

// Stages are the pluggable parts of the pipeline; nil stages are absent.
type Stages struct {
	Decider   Decider
	Confirmer Confirmer
	Redactor  Redactor
	Auditor   Auditor
	// Judged, when set, hears every input allowed on a session (the exec
	// gate keeps the last as the line an exec is judged with).
	Judged func(GateInput, Decision)
	// ExecGate is the exec gate's mode (enforce, audit, off), for describe.
	ExecGate string
	// Log receives what the agent is not told: the stack of a policy
	// decision that panicked. Nil discards it.
	Log *slog.Logger
}

// ErrRefused is wrapped by every refusal of the gate.
var ErrRefused = errors.New("refused")

// A refusal is the gate saying no to one input. Its text is what the agent
// reads; its decision goes into the result's structured content, so that
// a refused call still says which rule refused it, why, and how severe.
// A refusal's text says which kind it is, in so many words:
//
//   - "denied by RULE: reason" — the policy denied the input;
//   - "not confirmed: ..." — the policy asked a human first, and the human
//     declined, did not answer in time, or could not be asked;
//   - "the audit log could not record this input" — the gateway itself
//     refused, failing closed (rule audit.unavailable);
//   - at Enter, "the line at Enter, ..." with one of the above.
//
// Every refusal ends by saying that nothing was sent (or ran).
type refusal struct {
	d       Decision
	in      GateInput
	message string
}

func (r *refusal) Error() string { return "refused: " + r.message }
func (r *refusal) Unwrap() error { return ErrRefused }

// auditRefusal is the refusal when the audit log cannot record an input.
func auditRefusal(in GateInput, err error, tail string) *refusal {
	return &refusal{
		d:       Decision{Action: "deny", Rule: "audit.unavailable", Reason: "the audit log could not record this input", Severity: "high"},
		in:      in,
		message: fmt.Sprintf("the audit log could not record this input (%v); %s", err, tail),
	}
}

// noPolicy is the decision when no policy engine is configured: the input is
// allowed, and every result says so.
const noPolicyRule = "policy.none"

// gate runs stages 1–3 for one input and returns the decision. A non-nil
// error means nothing may be written; its text says why and that nothing
// was sent.
func (p *Stages) gate(ctx context.Context, req *mcp.CallToolRequest, in GateInput) (Decision, error) {
	d := Decision{Action: "allow", Rule: noPolicyRule, Reason: "no policy engine is configured in this build"}
	if p.Decider != nil {
		d = p.decide(ctx, in)
	}
	return p.settle(ctx, req, in, d)
}

// settle runs stages 2–3 for a decision the policy made: a confirm asks
// the human, and the outcome is recorded.
func (p *Stages) settle(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) (Decision, error) {
	const nothingSent = "nothing was sent"
	notConfirmed := "" // why a confirmation did not happen
	asked := d.Reason  // the policy's reason for asking
	switch d.Action {
	case "allow":
	case "confirm":
		if p.Confirmer == nil {
			notConfirmed = "no human can be asked (no confirmation channel is available)"
			d = d.refused(d.Reason + " (needs a human's confirmation, and no confirmation channel is available)")
			break
		}
		answering := req != nil && req.Params != nil && req.Params.RequestState != ""
		if p.Auditor != nil && !answering {
			if aerr := p.Auditor.Record(ctx, AuditEvent{Kind: "confirmation_asked", Input: in, Decision: d}); aerr != nil {
				return d, auditRefusal(in, aerr, nothingSent)
			}
		}
		ok, err := p.Confirmer.Confirm(ctx, req, in, d)
		var need *errNeedInput
		if errors.As(err, &need) {
			return d, err
		}
		if p.Auditor != nil {
			how := "approved by the human"
			if err != nil {
				how = err.Error()
			} else if !ok {
				how = "declined by the human"
			}
			if aerr := p.Auditor.Record(ctx, AuditEvent{Kind: "confirmation_answered", Input: in, Decision: d, Approved: ok && err == nil, Outcome: how}); aerr != nil {
				return d, auditRefusal(in, aerr, nothingSent)
			}
		}
		if err != nil || !ok {
			notConfirmed = "the human declined"
			if err != nil {
				notConfirmed = err.Error()
			}
			d = d.refused(d.Reason + " (not confirmed: " + notConfirmed + ")")
			break
		}
		d.Action = "allow"
		if by, ok := p.Confirmer.(interface{ confirmedBy(GateInput) string }); ok {
			d.Reason += " (confirmed by " + by.confirmedBy(in) + ")"
		} else {
			d.Reason += " (confirmed)"
		}
	}
	if p.Auditor != nil {
		if err := p.Auditor.Record(ctx, AuditEvent{Kind: "decision", Input: in, Decision: d}); err != nil {
			return d, auditRefusal(in, err, nothingSent)
		}
	}
	if d.Action == "allow" {
		if p.Judged != nil {
			p.Judged(in, d)
		}
		return d, nil
	}
	if notConfirmed != "" {
		return d, &refusal{d: d, in: in, message: fmt.Sprintf("not confirmed: %s. Rule %s asks a human before this runs: %s; %s",
			notConfirmed, d.Rule, asked, nothingSent)}
	}
	return d, &refusal{d: d, in: in, message: fmt.Sprintf("denied by %s: %s; %s", d.Rule, d.Reason, nothingSent)}
}

// decide asks the policy, failing closed: an error, or an action other
// than allow, deny or confirm, is a deny.
func (p *Stages) decide(ctx context.Context, in GateInput) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked(ctx, in, r)
			d = Decision{Action: "deny", Rule: "policy.error", Reason: "the policy could not decide (an internal error, in the server log)", Severity: "high"}
		}
	}()
	d, err := p.Decider.Decide(ctx, in)
	switch {
	case err != nil:
		// The whole error goes to the server log (a panic the engine
		// recovered carries its stack); the agent gets its first line.
		if p.Log != nil {
			p.Log.Error("policy: the engine could not decide", "err", err)
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return Decision{Action: "deny", Rule: "policy.error", Reason: "the policy could not decide: " + msg, Severity: "high", Policy: d.Policy}
	case d.Action != "allow" && d.Action != "deny" && d.Action != "confirm":
		return Decision{Action: "deny", Rule: "policy.undefined", Reason: fmt.Sprintf("the policy returned %q, which is not allow, deny or confirm", d.Action), Severity: "high", Policy: d.Policy}
	}
	return d
}

// judgeLine is the gate at Enter: the line the terminal shows is judged
// before the Enter goes through. A line that needs a human's confirmation
// is refused here (the keys that typed it cannot be replayed after the
// human answers); sending the whole line with session_send asks the human.
func (p *Stages) judgeLine(ctx context.Context, in GateInput) error {
	if p.Decider == nil {
		return nil
	}
	const cleared = "the typed line was cleared and nothing ran"
	d := p.decide(ctx, in)
	asked := d.Action == "confirm"
	if asked {
		d = d.refused(d.Reason + " (needs a human's confirmation: send the whole line with session_send to ask)")
	}
	if p.Auditor != nil {
		if err := p.Auditor.Record(ctx, AuditEvent{Kind: "decision", Input: in, Decision: d}); err != nil {
			return auditRefusal(in, err, cleared)
		}
	}
	switch {
	case d.Action == "allow":
		if p.Judged != nil {
			p.Judged(in, d)
		}
		return nil
	case asked:
		return &refusal{d: d, in: in, message: fmt.Sprintf("not confirmed: the line at Enter, %q, needs a human's confirmation (rule %s), which cannot be asked at Enter: send the whole line with session_send to ask; %s", in.Text, d.Rule, cleared)}
	}
	return &refusal{d: d, in: in, message: fmt.Sprintf("the line at Enter, %q, was denied by %s: %s; %s", in.Text, d.Rule, d.Reason, cleared)}
}

// panicked logs a policy decision that panicked, with its stack, and
// records it as a tool_error; the decision is then a deny.
func (p *Stages) panicked(ctx context.Context, in GateInput, r any) {
	id := incidentID()
	value := p.redact(fmt.Sprint(r))
	if p.Log != nil {
		p.Log.Error("recovered from a panic in the policy decision; the input is denied", "incident", id, "panic", value, "stack", string(debug.Stack()))
	}
	in.Text = "" // the decision record that follows holds the input
	if err := p.record(ctx, AuditEvent{Kind: "tool_error", Input: in, Err: fmt.Sprintf("internal error (panic) in the policy decision, incident %s: %s", id, value)}); err != nil && p.Log != nil {
		p.Log.Error("audit: recording a recovered panic", "incident", id, "err", err)
	}
}

// redact runs stage 5 on text leaving the gateway.
func (p *Stages) redact(s string) string {
	if p.Redactor == nil || s == "" {
		return s
	}
	return p.Redactor.Redact(s)
}

// outcome runs stage 6.
func (p *Stages) outcome(ctx context.Context, in GateInput, d Decision, summary string, out *OutputSummary) error {
	if p.Auditor == nil {
		return nil
	}
	return p.Auditor.Record(ctx, AuditEvent{Kind: "outcome", Input: in, Decision: d, Outcome: summary, Output: out})
}

// record writes an event that is not an input's (session start and end,
// tool errors, the server's own); a nil Auditor records nothing.
func (p *Stages) record(ctx context.Context, ev AuditEvent) error {
	if p.Auditor == nil {
		return nil
	}
	return p.Auditor.Record(ctx, ev)
}

// summarize describes output for the audit log.
func summarize(text, completion string, exit *int) *OutputSummary {
	return &OutputSummary{
		Bytes: len(text), Lines: strings.Count(text, "\n") + btoi(text != "" && !strings.HasSuffix(text, "\n")),
		Redactions: strings.Count(text, "[REDACTED:"), Completion: completion, ExitCode: exit,
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// describe says which stages are in force, for session_info and the policy
// resource.
func (p *Stages) describe() map[string]string {
	name := func(ok bool, s string) string {
		if ok {
			return s
		}
		return "none"
	}
	policy := "none"
	if p.Decider != nil {
		policy = p.Decider.Name()
	}
	return map[string]string{
		"policy":       policy,
		"confirmation": name(p.Confirmer != nil, "on"),
		"redaction":    name(p.Redactor != nil, "on"),
		"audit":        auditText(p.Auditor),
		"exec_gate":    name(p.ExecGate != "", p.ExecGate),
	}
}

// auditText says what the audit stage is doing (with a syslog
// forwarder: what it sent, holds and dropped).
func auditText(a Auditor) string {
	if a == nil {
		return "none"
	}
	if d, ok := a.(interface{ Describe() string }); ok {
		return d.Describe()
	}
	return "on"
}

// keysText is how a key press is shown to the policy.
func keysText(keys []string) string { return strings.Join(keys, " ") }
