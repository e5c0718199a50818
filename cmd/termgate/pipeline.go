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

// The gate, by construction. Every tool that puts something into a
// terminal or starts a process runs through one function, Stages.Run:
//
//	1. decide   — the policy judges what will run (Decider)
//	2. confirm  — a "confirm" decision asks the human (Confirmer); the
//	              answer is a value (Confirmation), never an error
//	3. audit    — the decision is recorded before acting (Auditor); a
//	              record that cannot be written refuses the input
//	4. act      — the handler's Act, called only with an allowing decision
//	5. redact   — what the act returns passes the redactor (Redactor)
//	6. cap      — and is cut to the call's max_output (Acted.Cap)
//	7. audit    — the outcome is recorded
//
// A handler gives Run its GateInput and an Act; it never calls a stage
// itself, so none can be forgotten. Tools that put nothing into a terminal
// (session_read, session_info, …) show output through Stages.Show, which
// is steps 5 and 6.
//
// Checkpoints that cannot wait for a human — the line at Enter, and the
// exec and connect judges that the sandbox calls while a process waits —
// go through Stages.Check: decide, audit, and a typed verdict; a
// "confirm" is refused there (nothing can be asked while a process is
// held), with a reason that says how to ask. A new checkpoint:
//
//  1. adds its Action (ActionExec and ActionConnect are reserved) and the
//     fields the policy needs to GateInput (and to toPolicyInput and
//     policy/doc.go);
//  2. builds a GateInput for each event and calls Stages.Check (or, for a
//     tool call, Stages.Run); a non-nil error is a refusal whose text says
//     why, and the event must not proceed;
//  3. adds nothing else: the audit record, the fail-closed rules and the
//     refusal's shape come with the call.
//
// Fail closed, everywhere: the zero value of Stages refuses every input
// (no Decider is "policy.none", a deny); a policy error, a panic in it, or
// an action other than allow/deny/confirm is a deny; an audit write that
// fails refuses.

// Action is what the policy is asked about: input.action.
type Action string

// The actions. ActionExec is also the exec tool's; the exec gate's
// per-execve checks and the egress proxy's connections use ActionExec and
// ActionConnect through Stages.Check.
const (
	ActionStart   Action = "start"
	ActionInput   Action = "input"
	ActionKeys    Action = "keys"
	ActionExec    Action = "exec"
	ActionConnect Action = "connect"
	// ActionRead is never judged: it names a session_read for the
	// human's answer about a session's connections, which a read may
	// carry.
	ActionRead Action = "read"
)

// Verdict is a decision's action.
type Verdict string

// The verdicts.
const (
	Allow   Verdict = "allow"
	Deny    Verdict = "deny"
	Confirm Verdict = "confirm"
)

// AuditKind names the kind of an audit record.
type AuditKind string

// The kinds of audit record.
const (
	KindDecision        AuditKind = "decision"
	KindConfirmAsked    AuditKind = "confirmation_asked"
	KindConfirmAnswered AuditKind = "confirmation_answered"
	KindOutcome         AuditKind = "outcome"
	KindSessionStart    AuditKind = "session_start"
	KindSessionEnd      AuditKind = "session_end"
	KindToolError       AuditKind = "tool_error"
	KindServerStart     AuditKind = "server_start"
	KindServerStop      AuditKind = "server_stop"
	KindPolicyLoad      AuditKind = "policy_load"
	KindPolicyReload    AuditKind = "policy_reload"
	KindForwardDropped  AuditKind = "forward_dropped"
	KindNetwork         AuditKind = "network"
	KindExec            AuditKind = "exec" // a program the exec gate held (execgate.go)
)

// GateInput is what the policy sees of one input. Field names follow the
// policy input document in DESIGN.
type GateInput struct {
	Action  Action   `json:"action"`
	Text    string   `json:"text"`
	Program string   `json:"program,omitempty"`
	Session *GateRef `json:"session,omitempty"`
	Start   *GateRef `json:"start,omitempty"`
	// Connect is action connect's destination.
	Connect *GateConnect `json:"connect,omitempty"`
	// Exec is a program the kernel holds (action exec, execgate.go).
	Exec   *GateExec `json:"exec,omitempty"`
	Client Client    `json:"client"`
	// Cwd is the current directory of the terminal's foreground program
	// when the input is judged (input.cwd): relative paths are resolved
	// against it.
	Cwd string `json:"cwd,omitempty"`
	// Terminal is what the gateway knows of the terminal the input goes
	// to (session inputs in a PTY): whether the foreground program reads
	// lines, and whether termgate can read the line it runs.
	Terminal *GateTerminal `json:"terminal,omitempty"`
	// Secret marks input sent as secret or secret_ref: it must not be
	// shown to the policy as text, logged or audited. Only those are
	// secret: text typed while the terminal's echo is off is judged and
	// audited as any other (EchoOff says so).
	Secret bool `json:"-"`
	// SecretMark stands for a secret input's value in the audit log: a
	// keyed hash ([REDACTED:secret:xxxx]) that correlates, never reveals.
	SecretMark string `json:"-"`
	// EchoOff says the terminal read with echo off when the input was
	// typed (a password prompt, stty -echo).
	EchoOff bool `json:"-"`
}

// GateTerminal is input.terminal.
type GateTerminal struct {
	// ReadsLines: the foreground program reads a line at a time
	// (canonical mode, or a line editor termgate knows).
	ReadsLines bool `json:"reads_lines"`
	// Judged: termgate knows the program (a shell or a REPL family) and
	// judges the line it runs at each Enter.
	Judged bool `json:"judged"`
	// Echo is false while the terminal reads with echo off.
	Echo bool `json:"echo"`
	// Ahead: the input is typed while an earlier command still runs, so
	// whatever reads next gets it; it is judged for the foreground program
	// and for the session's own (Readers).
	Ahead bool `json:"ahead,omitempty"`
	// Readers are the programs that may read the input.
	Readers []string `json:"readers,omitempty"`
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
	Action   Verdict `json:"action" jsonschema:"allow, deny or confirm"`
	Rule     string  `json:"rule,omitempty" jsonschema:"id of the rule that decided"`
	Reason   string  `json:"reason,omitempty" jsonschema:"why"`
	Severity string  `json:"severity,omitempty" jsonschema:"low, medium, high or critical"`
	Profile  string  `json:"profile,omitempty" jsonschema:"sandbox profile chosen for a new session"`
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
	return Decision{Action: Deny, Rule: d.Rule, Reason: reason, Severity: d.Severity, Policy: d.Policy}
}

// Decider judges an input. An error, or an undefined result, must deny.
type Decider interface {
	Decide(ctx context.Context, in GateInput) (Decision, error)
	// Name describes the engine for results and logs (bundle revision).
	Name() string
}

// Answer is how a confirmation ended.
type Answer int

// The answers. Only Approved lets an input run.
const (
	Declined    Answer = iota // declined, cancelled, expired, changed, replayed, or nobody to ask
	Approved                  // an explicit approval of exactly this input
	Pending                   // the client will ask the human and call again (input request)
	TokenIssued               // --confirm-mode=agent: the agent got a one-time token to redeem
)

// Confirmation is a Confirmer's answer about one input.
type Confirmation struct {
	Answer Answer
	// By says who approved ("the human", "the agent, with a written
	// justification"); Detail why it was not approved. Both are recorded
	// and may be shown; neither ever holds a token.
	By, Detail string
	// Via is the channel: mcp-elicitation, input-request, agent-token.
	Via string
	// Result is the input-required result to return (Pending).
	Result *mcp.CallToolResult
	// Token is the one-time token (TokenIssued): it goes into the agent's
	// result only, never into a decision, a log or the audit log.
	Token string
}

// Confirmer asks a human about an input the policy wants confirmed.
type Confirmer interface {
	Confirm(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) Confirmation
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
	Kind     AuditKind
	Input    GateInput
	Decision Decision
	Outcome  string
	Approved bool                // confirmation_answered
	By       string              // confirmation_answered: "human (MCP client)" or "agent"
	Via      string              // confirmation_*: the channel
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

// Stages are the pluggable parts of the pipeline. Its zero value refuses
// every input: without a Decider nothing is allowed.
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
// Every refusal ends by saying what was sent: nothing, or what was
// cancelled. Its hint (a one-time token in agent mode) is shown to the
// agent only: it is not part of Error, which logs and tool_error records
// may quote.
type refusal struct {
	d       Decision
	in      GateInput
	message string
	hint    string
}

func (r *refusal) Error() string { return "refused: " + r.message }
func (r *refusal) Unwrap() error { return ErrRefused }

// auditRefusal is the refusal when the audit log cannot record an input.
func auditRefusal(in GateInput, err error, tail string) *refusal {
	return &refusal{
		d:       Decision{Action: Deny, Rule: "audit.unavailable", Reason: "the audit log could not record this input", Severity: "high"},
		in:      in,
		message: fmt.Sprintf("the audit log could not record this input (%v); %s", err, tail),
	}
}

// noPolicyRule is the rule of the deny when no policy engine is
// configured: the zero value of Stages refuses.
const noPolicyRule = "policy.none"

const nothingSent = "nothing was sent"

// Acted is what a call's Act did.
type Acted struct {
	// Output is the text the act produced, not yet redacted or capped.
	Output string
	// Cap cuts the redacted output to the call's max_output: the text,
	// whether it was cut, and the call that pages what was cut. Nil: the
	// output is returned whole.
	Cap func(redacted string) (string, bool, *readCall)
	// Completion and ExitCode describe the act for the outcome record;
	// Summary is its message (default: the completion and the size).
	Completion string
	ExitCode   *int
	Summary    string
	// Refused is what the sandbox refused while the act ran (connections
	// the egress proxy refused), RefusedN how many more: the outcome
	// record lists them, and the handler shows them.
	Refused  []Refusal
	RefusedN int
	// Redact, when set, is how the output is redacted (a session's views
	// with the session's Taint); nil: the Redactor.
	Redact func(string) string
	// Ask, when set, replaces the call's result: it asks the human about
	// what the sandbox refused, and an approval runs the call again. No
	// outcome is recorded; the questions were.
	Ask *mcp.CallToolResult
}

// Act does a call's work once the gate allowed it, with the decision.
type Act func(ctx context.Context, d Decision) (Acted, error)

// Outcome is what Run hands back to a handler.
type Outcome struct {
	Decision  Decision
	Acted     Acted
	Output    string // redacted and capped
	Truncated bool
	Rest      *readCall
	// Pending, when set, is the result to return as it is: the client
	// asks the human, then calls again with the answer.
	Pending *mcp.CallToolResult
}

// Run is the pipeline every input goes through: decide, confirm, audit the
// decision, act, redact, cap, audit the outcome. act runs only when the
// decision allows. A non-nil error means the call failed; a refusal
// (errors.As *refusal) says that nothing was sent, or what was cancelled.
func (p *Stages) Run(ctx context.Context, req *mcp.CallToolRequest, in GateInput, act Act) (Outcome, error) {
	d, pending, err := p.gate(ctx, req, in)
	if pending != nil {
		return Outcome{Decision: d, Pending: pending}, nil
	}
	if err != nil {
		return Outcome{Decision: d}, err
	}
	if act == nil {
		return Outcome{Decision: d}, errors.New("internal error: an input with nothing to do")
	}
	a, err := act(ctx, d)
	if err != nil {
		return Outcome{Decision: d}, err
	}
	if a.Ask != nil {
		return Outcome{Decision: d, Acted: a, Pending: a.Ask}, nil
	}
	out := p.Show(a)
	out.Decision = d
	summary := a.Summary
	if summary == "" {
		summary = fmt.Sprintf("%s: %d characters of output", a.Completion, len(out.Output))
	}
	if err := p.outcome(ctx, in, d, summary, withRefusals(summarize(out.Output, a.Completion, a.ExitCode), a.Refused)); err != nil {
		return out, fmt.Errorf("the audit log could not record the outcome: %w", err)
	}
	return out, nil
}

// Show redacts and caps output that leaves the gateway without an input
// (session_read): stages 5 and 6.
func (p *Stages) Show(a Acted) Outcome {
	red := p.redact
	if a.Redact != nil && p.Redactor != nil {
		red = a.Redact
	}
	out := Outcome{Acted: a, Output: red(a.Output)}
	if a.Cap != nil {
		out.Output, out.Truncated, out.Rest = a.Cap(out.Output)
	}
	return out
}

// gate runs stages 1–3 for one input and returns the decision; pending is
// the result to return while a human is asked. A non-nil error means
// nothing may be written; its text says why and that nothing was sent.
func (p *Stages) gate(ctx context.Context, req *mcp.CallToolRequest, in GateInput) (Decision, *mcp.CallToolResult, error) {
	return p.settle(ctx, req, in, p.decide(ctx, in))
}

// settle runs stages 2–3 for a decision the policy made: a confirm asks
// the human, and the decision is recorded. The egress judge, which
// decides first to see whether it may ask at all, comes in here.
func (p *Stages) settle(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) (Decision, *mcp.CallToolResult, error) {
	notConfirmed := "" // why a confirmation did not happen
	asked := d.Reason  // the policy's reason for asking
	hint := ""         // for the agent only
	if d.Action == Confirm {
		var c Confirmation
		switch {
		case p.Confirmer == nil:
			c = Confirmation{Detail: "no human can be asked (no confirmation channel is available)"}
		default:
			answering := req != nil && req.Params != nil && req.Params.RequestState != ""
			if p.Auditor != nil && !answering {
				if aerr := p.Auditor.Record(ctx, AuditEvent{Kind: KindConfirmAsked, Input: in, Decision: d, Via: "mcp"}); aerr != nil {
					return d, nil, auditRefusal(in, aerr, nothingSent)
				}
			}
			c = p.Confirmer.Confirm(ctx, req, in, d)
		}
		switch c.Answer {
		case Pending:
			if c.Result == nil {
				c = Confirmation{Detail: "the confirmation could not be asked"}
				break
			}
			return d, c.Result, nil
		case TokenIssued:
			// Not an answer: the agent may redeem the token, and the
			// confirm tool records that answer. The token itself goes to
			// the agent's result only.
			c.Detail = "a one-time token was issued to the agent (--confirm-mode=agent)"
			hint = fmt.Sprintf(" To go on: call the confirm tool with token %q and a written justification, then send the same input again.", c.Token)
		default:
			if p.Auditor != nil {
				how := "approved by " + c.By
				if c.Answer != Approved {
					how = c.Detail
				}
				by := "human (MCP client)"
				if strings.HasPrefix(c.By, "the agent") {
					by = "agent"
				}
				if aerr := p.Auditor.Record(ctx, AuditEvent{Kind: KindConfirmAnswered, Input: in, Decision: d, Approved: c.Answer == Approved, Outcome: how, By: by, Via: c.Via}); aerr != nil {
					return d, nil, auditRefusal(in, aerr, nothingSent)
				}
			}
		}
		if c.Answer == Approved {
			d.Action = Allow
			if c.By == "" {
				c.By = "the human"
			}
			d.Reason += " (confirmed by " + c.By + ")"
		} else {
			notConfirmed = c.Detail
			if notConfirmed == "" {
				notConfirmed = "the human declined"
			}
			d = d.refused(d.Reason + " (not confirmed: " + notConfirmed + ")")
		}
	}
	if p.Auditor != nil {
		if err := p.Auditor.Record(ctx, AuditEvent{Kind: KindDecision, Input: in, Decision: d}); err != nil {
			return d, nil, auditRefusal(in, err, nothingSent)
		}
	}
	if d.Action == Allow {
		if p.Judged != nil {
			p.Judged(in, d)
		}
		return d, nil, nil
	}
	if notConfirmed != "" {
		return d, nil, &refusal{d: d, in: in, hint: hint, message: fmt.Sprintf("not confirmed: %s. Rule %s asks a human before this runs: %s; %s",
			notConfirmed, d.Rule, asked, nothingSent)}
	}
	return d, nil, &refusal{d: d, in: in, message: fmt.Sprintf("denied by %s: %s; %s", d.Rule, d.Reason, nothingSent)}
}

// decide asks the policy about an input, and, when it is typed ahead of a
// command that still runs (terminal.ahead), about it as each program that
// may read it would: the most severe decision wins.
func (p *Stages) decide(ctx context.Context, in GateInput) Decision {
	d := p.decideOne(ctx, in)
	if t := in.Terminal; t != nil && t.Ahead {
		for _, r := range t.Readers {
			if r == in.Program || r == "" {
				continue
			}
			alt := in
			alt.Program = r
			if d2 := p.decideOne(ctx, alt); severity(d2) > severity(d) {
				d = d2
				d.Reason += fmt.Sprintf(" (typed while a command runs, it may be read by %s next, and was judged as %s would run it)", r, r)
			}
		}
	}
	return d
}

// severity orders decisions: deny over confirm over allow.
func severity(d Decision) int {
	switch d.Action {
	case Allow:
		return 0
	case Confirm:
		return 1
	}
	return 2
}

// decideOne asks the policy, failing closed: no engine, an error, a panic,
// or an action other than allow, deny or confirm, is a deny.
func (p *Stages) decideOne(ctx context.Context, in GateInput) (d Decision) {
	if p == nil || p.Decider == nil {
		return Decision{Action: Deny, Rule: noPolicyRule, Reason: "no policy engine is configured, so nothing is allowed", Severity: "high"}
	}
	defer func() {
		if r := recover(); r != nil {
			p.panicked(ctx, in, r)
			d = Decision{Action: Deny, Rule: "policy.error", Reason: "the policy could not decide (an internal error, in the server log)", Severity: "high"}
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
		return Decision{Action: Deny, Rule: "policy.error", Reason: "the policy could not decide: " + msg, Severity: "high", Policy: d.Policy}
	case d.Action != Allow && d.Action != Deny && d.Action != Confirm:
		return Decision{Action: Deny, Rule: "policy.undefined", Reason: fmt.Sprintf("the policy returned %q, which is not allow, deny or confirm", d.Action), Severity: "high", Policy: d.Policy}
	}
	return d
}

// Check is a checkpoint that cannot ask a human: the line at Enter, and
// the exec and connect judges, which hold a process while they decide. It
// decides, audits the decision, and returns nil only for an allow; a
// "confirm" is refused with a reason that says how to ask (howToAsk). done
// says what the refusal leaves behind ("the typed line was cleared and
// nothing ran").
func (p *Stages) Check(ctx context.Context, in GateInput, howToAsk, done string) error {
	d := p.decide(ctx, in)
	asked := d.Action == Confirm
	if asked {
		d = d.refused(d.Reason + " (needs a human's confirmation: " + howToAsk + ")")
	}
	if p.Auditor != nil {
		if err := p.Auditor.Record(ctx, AuditEvent{Kind: KindDecision, Input: in, Decision: d}); err != nil {
			return auditRefusal(in, err, done)
		}
	}
	what := "the input"
	if in.Action == ActionInput {
		what = fmt.Sprintf("the line at Enter, %q,", in.Text)
	}
	switch {
	case d.Action == Allow:
		if p.Judged != nil {
			p.Judged(in, d)
		}
		return nil
	case asked:
		return &refusal{d: d, in: in, message: fmt.Sprintf("not confirmed: %s needs a human's confirmation (rule %s), which cannot be asked here: %s; %s", what, d.Rule, howToAsk, done)}
	}
	return &refusal{d: d, in: in, message: fmt.Sprintf("%s was denied by %s: %s; %s", what, d.Rule, d.Reason, done)}
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
	if err := p.record(ctx, AuditEvent{Kind: KindToolError, Input: in, Err: fmt.Sprintf("internal error (panic) in the policy decision, incident %s: %s", id, value)}); err != nil && p.Log != nil {
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

// outcome runs stage 7.
func (p *Stages) outcome(ctx context.Context, in GateInput, d Decision, summary string, out *OutputSummary) error {
	if p.Auditor == nil {
		return nil
	}
	return p.Auditor.Record(ctx, AuditEvent{Kind: KindOutcome, Input: in, Decision: d, Outcome: summary, Output: out})
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
	policy := "none (every input is refused)"
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
