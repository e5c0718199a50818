package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/redact"
	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// The audit stage: every event of the pipeline becomes one ECS record in
// the hash-chained log (package audit). Field choices, written down:
//
//   - event.kind is always "event"; event.category/type come from ECS's
//     allowed values: an input's decision is intrusion_detection with
//     allowed or denied; a session's start and end are session+process
//     with start or end; output is process/info; policy loads are
//     configuration; tool errors are api/error.
//   - the input goes in process.command_line, redacted; input typed with
//     the terminal's echo off is "[input suppressed: echo off]";
//   - rule.id is the deciding rule, rule.ruleset the bundle's source and
//     rule.version its revision: of the bundle that made this decision
//     (it travels with the decision, so a reload in between cannot
//     misattribute it); termgate.policy.hash is that bundle's sha256 and
//     termgate.policy.input the document it judged, redacted, for
//     `opa eval` (see policyInput); what ECS lacks is under termgate.*;
//   - @timestamp has six fractional digits and a record is at most
//     --audit-max-record bytes (package audit cuts long fields);
//   - records the syslog buffer could not hold are counted: an
//     audit-forward-dropped record (at most one a minute, and at stop),
//     a warning in the log, and session_info's stages say how many;
//   - gen_ai.tool.name and gen_ai.tool.call.id tie a tool call to its
//     decision, its write and its output (the call id is the gateway's own
//     correlation id); gen_ai.agent.name is the MCP client's name.

// callKey carries the correlation id of a tool call in its context.
type callKey struct{}

type callInfo struct{ id, tool string }

func withCall(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	tool := ""
	if req != nil && req.Params != nil {
		tool = req.Params.Name
	}
	return context.WithValue(ctx, callKey{}, callInfo{id: hex.EncodeToString(b), tool: tool})
}

// ecsAuditor is the Auditor: it turns events into ECS records.
type ecsAuditor struct {
	log      *audit.Log
	red      *redact.Engine
	policy   *policy.Engine // the bundle in force, and the input documents of redacted text
	fw       *audit.Syslog  // the syslog forwarder, or nil
	failOpen bool           // --audit-fail=continue
	logger   *slog.Logger
	user     string
	host     string
	version  string // read from the build info once: parsing it costs more than the rest of a record

	// taints finds a running session's Taint by its id (nil: none), so
	// that its records mask what its views mask.
	taints func(id string) *redact.Taint

	dropMu       sync.Mutex
	dropReported int64     // forwarded records dropped, as last reported
	dropAt       time.Time // when last reported
}

func newAuditor(cfg Config, red *redact.Engine, engine *policy.Engine, logger *slog.Logger, getenv func(string) string) (*ecsAuditor, error) {
	path, keyPath := cfg.AuditLog, cfg.AuditKey
	state := stateDir(getenv)
	if path == "" {
		path = filepath.Join(state, "audit.jsonl")
	}
	if keyPath == "" {
		keyPath = filepath.Join(state, "audit.key")
	}
	key, err := audit.LoadKey(keyPath, true)
	if err != nil {
		return nil, err
	}
	o := audit.Options{Path: path, Key: key, MaxSize: cfg.AuditMaxSize, SyncEvery: cfg.AuditSync, MaxRecord: cfg.AuditMaxRecord}
	var fw *audit.Syslog
	if cfg.AuditSyslog != "" {
		spool := cfg.AuditSyslogSpool
		if spool == "" {
			spool = filepath.Join(state, "syslog-buffer")
		}
		fw, err = audit.NewSyslog(audit.SyslogOptions{
			Target: cfg.AuditSyslog, BufferDir: spool, BufferSize: cfg.AuditSyslogBuffer,
			CAFile: cfg.AuditSyslogCA, CertFile: cfg.AuditSyslogCert, KeyFile: cfg.AuditSyslogKey,
		})
		if err != nil {
			return nil, err
		}
		o.Forward = fw
	}
	l, err := audit.Open(o)
	if err != nil {
		if fw != nil {
			fw.Close()
		}
		return nil, err
	}
	a := &ecsAuditor{log: l, red: red, policy: engine, fw: fw, failOpen: cfg.AuditFail == "continue", logger: logger, version: version()}
	if u, err := user.Current(); err == nil {
		a.user = u.Username
	}
	a.host, _ = os.Hostname()
	return a, nil
}

// stateDir is $XDG_STATE_HOME/termgate, or ~/.local/state/termgate.
func stateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "termgate")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "state", "termgate")
}

// Record implements [Auditor].
func (a *ecsAuditor) Record(ctx context.Context, ev AuditEvent) error {
	r, security := a.build(ctx, ev)
	err := a.log.Write(r, security)
	if err != nil && a.failOpen {
		a.logger.Error("audit write failed; going on unrecorded (--audit-fail=continue)", "err", err)
		return nil
	}
	if err == nil && ev.Kind != KindForwardDropped {
		a.reportDrops(false)
	}
	return err
}

// reportDrops records and logs forwarded records the syslog buffer could
// not hold, when there are new ones: at most once a minute, or now.
func (a *ecsAuditor) reportDrops(now bool) {
	if a.fw == nil {
		return
	}
	n := a.fw.Dropped()
	a.dropMu.Lock()
	if n == a.dropReported || !now && time.Since(a.dropAt) < time.Minute {
		a.dropMu.Unlock()
		return
	}
	since := n - a.dropReported
	a.dropReported, a.dropAt = n, time.Now()
	a.dropMu.Unlock()
	st := a.fw.Stats()
	a.logger.Warn("audit records were not forwarded: the syslog buffer was full", "dropped", since, "dropped_total", n,
		"target", st.Target, "pending", st.Pending, "last_error", st.LastError)
	_ = a.Record(context.Background(), AuditEvent{Kind: KindForwardDropped, Fields: map[string]any{
		"termgate.forward.target": st.Target, "termgate.forward.dropped": since, "termgate.forward.dropped_total": n,
		"termgate.forward.pending": st.Pending, "termgate.forward.sent": st.Sent,
	}})
}

// Describe says what the audit stage is doing, for session_info.
func (a *ecsAuditor) Describe() string {
	if a.fw == nil {
		return "on"
	}
	st := a.fw.Stats()
	s := fmt.Sprintf("on; syslog %s: %d sent, %d pending, %d dropped", st.Target, st.Sent, st.Pending, st.Dropped)
	if !st.Connected && st.LastError != "" {
		s += " (not connected: " + a.red.Redact(st.LastError) + ")"
	}
	return s
}

// redactor returns how a record about in is redacted: with the rules, and
// with the Taint of its session while the session runs.
func (a *ecsAuditor) redactor(in GateInput) func(string) string {
	if a.taints != nil && in.Session != nil {
		if t := a.taints(in.Session.ID); t != nil {
			return func(s string) string { return a.red.RedactWith(s, t) }
		}
	}
	return a.red.Redact
}

func (a *ecsAuditor) close() error {
	a.reportDrops(true)
	return a.log.Close()
}

var severityNumber = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

func (a *ecsAuditor) build(ctx context.Context, ev AuditEvent) (audit.Record, bool) {
	red := a.redactor(ev.Input)
	r := audit.Record{}
	r.Set("event.kind", "event").Set("event.provider", "termgate").Set("event.dataset", "termgate.audit").
		Set("event.module", "termgate").Set("observer.product", "termgate").Set("observer.vendor", "termgate").
		Set("observer.version", a.version)
	if a.host != "" {
		r.Set("host.name", a.host)
	}
	if a.user != "" {
		r.Set("user.name", a.user)
	}
	if c, ok := ctx.Value(callKey{}).(callInfo); ok {
		r.Set("gen_ai.tool.call.id", c.id)
		if c.tool != "" {
			r.Set("gen_ai.tool.name", c.tool)
		}
	}
	in := ev.Input
	if in.Client.Name != "" {
		r.Set("gen_ai.agent.name", in.Client.Name)
	}
	ref := in.Session
	if ref == nil {
		ref = in.Start
	}
	if ref != nil {
		if ref.ID != "" {
			r.Set("termgate.session.id", ref.ID)
		}
		if ref.Name != "" {
			r.Set("termgate.session.name", ref.Name)
		}
		if ref.Cwd != "" {
			r.Set("process.working_directory", red(ref.Cwd))
		}
	}
	if in.Program != "" {
		r.Set("process.name", in.Program)
	}
	if in.EchoOff {
		r.Set("termgate.input.echo_off", true)
	}
	if in.Secret {
		r.Set("termgate.input.secret", true)
	}
	// The agent's own input is recorded masked as the session's views
	// are (its Taint: a secret found in its output and typed back is
	// masked too). A one-off secret is in the Taint only once the gate
	// allowed it and it was typed, so a refused "secret" masks nothing.
	// A secret input is never recorded; a keyed hash stands for it.
	text := red(in.Text)
	if in.Secret {
		text = "[input suppressed: secret]"
		if in.SecretMark != "" {
			text = in.SecretMark
		}
	}
	inForce := a.policy.Bundle()
	source, revision, hash := inForce.Source, inForce.Revision, inForce.Hash
	setRule := func(d Decision) {
		if p := d.Policy; p != nil {
			source, revision, hash = p.Source, p.Revision, p.Hash
		}
		r.Set("rule.id", d.Rule).Set("rule.ruleset", source).Set("rule.version", revision).Set("termgate.policy.hash", hash)
		r.Set("termgate.decision.action", d.Action).Set("termgate.decision.rule", d.Rule)
		if d.Severity != "" {
			r.Set("termgate.decision.severity", d.Severity).Set("event.severity", severityNumber[d.Severity])
		}
		if d.Reason != "" {
			r.Set("event.reason", red(d.Reason))
		}
		if d.Profile != "" {
			r.Set("termgate.decision.profile", d.Profile)
		}
	}
	// judged records what was typed, the policy's document and its rule;
	// the text is masked when the document showed a secret it hid.
	judged := func(d Decision) {
		if a.setPolicyInput(r, in, d) {
			text = hiddenSecretText
		}
		setInput(r, in, text)
		setRule(d)
	}
	security := false
	msg := ""
	switch ev.Kind {
	case KindDecision:
		allowed := ev.Decision.Action == Allow
		r.Set("event.category", []string{"intrusion_detection"}).Set("event.type", []string{map[bool]string{true: "allowed", false: "denied"}[allowed]}).
			Set("event.action", inputAction(in.Action)).Set("event.outcome", map[bool]string{true: "success", false: "failure"}[allowed])
		judged(ev.Decision)
		security = !allowed || strings.Contains(ev.Decision.Reason, "(confirmed") || in.Action == ActionStart
		msg = fmt.Sprintf("%s %s by %s", map[bool]string{true: "allowed", false: "denied"}[allowed], inputAction(in.Action), ev.Decision.Rule)
	case KindConfirmAsked:
		r.Set("event.category", []string{"intrusion_detection"}).Set("event.type", []string{"info"}).
			Set("event.action", "confirmation-requested").Set("event.outcome", "unknown")
		judged(ev.Decision)
		r.Set("termgate.confirmation.via", "mcp-elicitation")
		security, msg = true, "asked the human to confirm: "+ev.Decision.Rule
	case KindConfirmAnswered:
		r.Set("event.category", []string{"intrusion_detection"}).Set("event.type", []string{map[bool]string{true: "allowed", false: "denied"}[ev.Approved]}).
			Set("event.action", "confirmation-answered").Set("event.outcome", map[bool]string{true: "success", false: "failure"}[ev.Approved])
		judged(ev.Decision)
		by, via := ev.By, ev.Via
		if by == "" {
			by = "human (MCP client)"
		}
		if via == "" {
			via = "mcp-elicitation"
		}
		r.Set("termgate.confirmation.approved", ev.Approved).Set("termgate.confirmation.answered_by", by).
			Set("termgate.confirmation.via", via).Set("termgate.confirmation.detail", red(ev.Outcome))
		security, msg = true, "confirmation "+map[bool]string{true: "approved", false: "not given"}[ev.Approved]+": "+red(ev.Outcome)
	case KindOutcome:
		r.Set("event.category", []string{"process"}).Set("event.type", []string{"info"}).
			Set("event.action", "terminal-output").Set("event.outcome", "success")
		setRule(ev.Decision)
		if o := ev.Output; o != nil {
			r.Set("termgate.output.bytes", o.Bytes).Set("termgate.output.lines", o.Lines).
				Set("termgate.output.redactions", o.Redactions).Set("termgate.output.completion", o.Completion)
			if o.ExitCode != nil {
				r.Set("process.exit_code", *o.ExitCode)
			}
			if len(o.Refused) > 0 {
				r.Set("termgate.sandbox.refused", o.Refused)
			}
		}
		msg = red(ev.Outcome)
	case KindSessionStart, KindSessionEnd:
		start := ev.Kind == KindSessionStart
		r.Set("event.category", []string{"session", "process"}).Set("event.type", []string{map[bool]string{true: "start", false: "end"}[start]}).
			Set("event.action", strings.ReplaceAll(string(ev.Kind), "_", "-")).Set("event.outcome", "success")
		if f := ev.Session; f != nil {
			r.Set("termgate.session.id", f.ID).Set("termgate.session.mode", f.Mode).Set("process.pid", f.Pid).
				Set("process.interactive", f.Mode == "pty").Set("termgate.sandbox.status", f.Sandbox)
			st := f.SandboxStatus
			if st.Profile != "" {
				r.Set("termgate.sandbox.profile", st.Profile).Set("termgate.sandbox.landlock_abi", st.LandlockABI).
					Set("termgate.sandbox.seccomp", st.Seccomp).Set("termgate.sandbox.cgroup", st.Cgroup)
				if st.Network != "" {
					r.Set("termgate.sandbox.network", st.Network)
				}
				if st.MemoryLimit > 0 {
					r.Set("termgate.sandbox.memory_limit", st.MemoryLimit)
				}
				r.Set("termgate.sandbox.private_shm", st.PrivateShm)
			}
			if len(st.NotEnforced) > 0 {
				r.Set("termgate.sandbox.not_enforced", st.NotEnforced)
			}
			r.Set("termgate.sandbox.exec_gate", orOff(st.ExecGate))
			if f.Name != "" {
				r.Set("termgate.session.name", f.Name)
			}
			if f.Program != "" {
				r.Set("process.name", f.Program)
			}
			if len(f.Argv) > 0 {
				args := make([]string, len(f.Argv))
				for i, s := range f.Argv {
					args[i] = red(s)
				}
				r.Set("process.args", args).Set("process.args_count", len(args)).Set("process.executable", args[0])
			}
			if f.Cwd != "" {
				r.Set("process.working_directory", red(f.Cwd))
			}
			if f.Recording != "" {
				r.Set("termgate.recording.path", f.Recording)
			}
			if !start {
				if f.ExitCode != nil {
					r.Set("process.exit_code", *f.ExitCode)
				}
				if f.Signal != "" {
					r.Set("termgate.session.signal", f.Signal)
				}
				r.Set("event.duration", f.Duration.Nanoseconds()).Set("termgate.session.bytes_in", f.BytesIn).
					Set("termgate.session.bytes_out", f.BytesOut)
			}
			msg = fmt.Sprintf("session %s %s", f.ID, map[bool]string{true: "started", false: "ended"}[start])
		}
		security = true
	case KindNetwork:
		if c := ev.Network; c != nil {
			security = a.network(r, c)
			msg = "connection to " + c.Destination.String()
			switch {
			case c.Refused:
				msg += " refused by " + c.Rule
			case c.Err != "":
				msg += " failed: " + red(c.Err)
			default:
				msg += fmt.Sprintf(" closed: %d bytes out, %d in", c.Sent, c.Received)
			}
		}
	case KindToolError:
		r.Set("event.category", []string{"api"}).Set("event.type", []string{"error"}).
			Set("event.action", "tool-error").Set("event.outcome", "failure").Set("error.message", red(ev.Err))
		msg = red(ev.Err)
	case KindServerStart, KindServerStop:
		start := ev.Kind == KindServerStart
		r.Set("event.category", []string{"process"}).Set("event.type", []string{map[bool]string{true: "start", false: "end"}[start]}).
			Set("event.action", map[bool]string{true: "gateway-start", false: "gateway-stop"}[start]).Set("event.outcome", "success").
			Set("process.pid", os.Getpid()).Set("process.name", "termgate")
		security, msg = true, "termgate "+map[bool]string{true: "started", false: "stopped"}[start]
	case KindPolicyLoad, KindPolicyReload:
		ok := ev.Err == ""
		r.Set("event.category", []string{"configuration"}).Set("event.type", []string{map[bool]string{true: "info", false: "change"}[ev.Kind == KindPolicyLoad]}).
			Set("event.action", strings.ReplaceAll(string(ev.Kind), "_", "-")).Set("event.outcome", map[bool]string{true: "success", false: "failure"}[ok]).
			Set("rule.ruleset", source).Set("rule.version", revision).Set("termgate.policy.hash", hash)
		for k, v := range bundleFields(inForce) {
			r.Set(k, v)
		}
		if !ok {
			r.Set("error.message", red(ev.Err))
		}
		security, msg = true, strings.ReplaceAll(string(ev.Kind), "_", " ")
		if !ok {
			msg += " rejected; the last good bundle stays in force: " + red(ev.Err)
		}
	case KindExec:
		security, msg = a.execRecord(r, ev, text, setRule) // execaudit.go
	case KindForwardDropped:
		r.Set("event.category", []string{"configuration"}).Set("event.type", []string{"info"}).
			Set("event.action", "audit-forward-dropped").Set("event.outcome", "failure")
		security, msg = true, "audit records were not forwarded: the syslog buffer was full"
	}
	for k, v := range ev.Fields {
		r.Set(k, v)
	}
	if msg != "" {
		r.Set("message", msg)
	}
	return r, security
}

func inputAction(a Action) string {
	switch a {
	case ActionInput:
		return "terminal-input"
	case ActionKeys:
		return "terminal-keys"
	case ActionExec:
		return "exec-command"
	case ActionStart:
		return "session-start-request"
	case ActionConnect:
		return "network-connect"
	}
	return string(a)
}

// setInput puts what was typed where ECS and SIEM rules look for it; a
// connect's destination where ECS puts one.
func setInput(r audit.Record, in GateInput, text string) {
	switch {
	case in.Connect != nil:
		setDestination(r, in.Connect.Host, in.Connect.Address, in.Connect.Port)
		r.Set("network.transport", "tcp").Set("termgate.connect.via", in.Connect.Via)
		if in.Connect.AddressClass != "" {
			r.Set("termgate.connect.address_class", in.Connect.AddressClass)
		}
	case in.Action == ActionKeys:
		r.Set("termgate.keys", text)
	default:
		r.Set("process.command_line", text)
	}
}

// setDestination sets destination.* for a host as the program asked for
// it (destination.address; destination.domain when it is a name) and the
// address it reached (destination.ip).
func setDestination(r audit.Record, host, address string, port int) {
	r.Set("destination.port", port).Set("destination.address", host)
	if _, isAddr := sandbox.AddressLiteral(host); !isAddr {
		r.Set("destination.domain", host)
	}
	if address != "" {
		r.Set("destination.ip", address)
	}
}

// network fills a network record: one connection through the egress
// proxy. It is not a security event (synced at once): the decision that
// refused or allowed a destination was, and a program that retries a
// refused one in a loop must not turn each attempt into a sync.
func (a *ecsAuditor) network(r audit.Record, c *sandbox.Connection) bool {
	outcome, typ := "success", []string{"connection", "end"}
	switch {
	case c.Refused:
		outcome, typ = "failure", []string{"connection", "denied"}
	case c.Err != "":
		outcome, typ = "failure", []string{"connection", "error"}
	}
	r.Set("event.category", []string{"network"}).Set("event.type", typ).Set("event.action", "egress-connection").
		Set("event.outcome", outcome).Set("event.duration", c.Duration.Nanoseconds()).
		Set("network.transport", "tcp").Set("network.direction", "egress").Set("termgate.connect.via", c.Via)
	switch c.Via {
	case "http":
		r.Set("network.protocol", "http")
	case "socks5":
		r.Set("network.protocol", "socks")
	}
	if c.Host != "" {
		setDestination(r, c.Host, c.Address, c.Port)
	}
	if c.AddressClass != "" {
		r.Set("termgate.connect.address_class", c.AddressClass)
	}
	r.Set("source.bytes", c.Sent).Set("destination.bytes", c.Received).Set("network.bytes", c.Sent+c.Received)
	if c.Program != "" {
		r.Set("process.name", c.Program)
	}
	if c.Pid > 0 {
		r.Set("process.pid", c.Pid)
	}
	if c.Session != "" {
		r.Set("termgate.session.id", c.Session)
	}
	if c.Profile != "" {
		r.Set("termgate.sandbox.profile", c.Profile)
	}
	if c.Rule != "" {
		r.Set("rule.id", c.Rule).Set("termgate.decision.rule", c.Rule).
			Set("termgate.decision.action", map[bool]string{true: "allow", false: "deny"}[!c.Refused])
	}
	if c.Reason != "" {
		r.Set("event.reason", a.red.Redact(c.Reason))
	}
	if c.Err != "" {
		r.Set("error.message", a.red.Redact(c.Err))
	}
	return false
}

// recordingTap records a session as an asciicast: output as the screen
// gets it (redacted at the source), input through its own redacting
// stream, and nothing typed while the terminal's echo is off.
//
// What the program wrote is recorded as it went out: halves of a secret
// that the program put side by side with cursor moves are each in it, in
// clear, when neither is a secret alone. So the recording is served
// redacted event by event with the session's Taint (which holds every
// piece of 8 bytes or more of what a view of the session found), and
// rewritten so when it is closed.
type recordingTap struct {
	rec   *audit.Recording
	input *redact.Stream
	red   *redact.Engine
	mu    sync.Mutex
	taint *redact.Taint // the session's; nil once the recording is closed
}

func newRecordingTap(dir, id string, spec session.Spec, red *redact.Engine) (*recordingTap, error) {
	taint := spec.Taint
	if taint == nil {
		taint = redact.NewTaint(redact.TaintLimits{})
	}
	env := map[string]string{"TERM": "xterm-256color"}
	if sh := os.Getenv("SHELL"); sh != "" {
		env["SHELL"] = sh
	}
	args := make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		args[i] = red.Redact(a)
	}
	rec, err := audit.NewRecording(filepath.Join(dir, id+".cast"), audit.Header{
		Width: spec.Cols, Height: spec.Rows, Command: strings.Join(args, " "), Title: "termgate session " + id, Env: env,
	})
	if err != nil {
		return nil, err
	}
	t := &recordingTap{rec: rec, red: red, taint: taint}
	// Input shares the session's Taint: a found or held secret typed back
	// is masked in it too.
	t.input = red.NewStreamWith(rec.Input, redact.StreamOptions{Taint: taint})
	return t, nil
}

func (t *recordingTap) Output(b []byte) { t.rec.Output(b) }

// Repair masks output already recorded that the session's stream found to
// be the head of a secret (session.Repairer).
func (t *recordingTap) Repair(start, end int64) { t.rec.Repair(start, end) }

func (t *recordingTap) Input(b []byte, echoOff bool) {
	if echoOff {
		return
	}
	_, _ = t.input.Write(b)
}

func (t *recordingTap) Resize(rows, cols int) { t.rec.Resize(cols, rows) }

func (t *recordingTap) close() error {
	t.input.Close()
	err := t.rec.Close()
	t.mu.Lock()
	taint := t.taint
	t.taint = nil // it goes with the session
	t.mu.Unlock()
	if err != nil || taint == nil {
		return err
	}
	return rewriteCast(t.rec.Path(), func(s string) string { return t.red.RedactWith(s, taint) })
}

// rewriteCast redacts every event of an asciicast file with red, in a
// file of its own renamed over it.
func rewriteCast(path string, red func(string) string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("redacting the recording: %w", err)
	}
	out, changed := redactCast(b, red)
	if !changed {
		return nil
	}
	tmp := path + ".redacting"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return fmt.Errorf("redacting the recording: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("redacting the recording: %w", err)
	}
	return nil
}

// redactCast redacts the data of every output and input event of an
// asciicast with red, and reports whether it changed any. The header and
// lines that are not events stay as they are.
func redactCast(b []byte, red func(string) string) ([]byte, bool) {
	var out bytes.Buffer
	out.Grow(len(b))
	changed := false
	for i, line := range bytes.SplitAfter(b, []byte("\n")) {
		body := bytes.TrimRight(line, " \n")
		var ev []json.RawMessage
		var data string
		if i == 0 || json.Unmarshal(body, &ev) != nil || len(ev) != 3 || json.Unmarshal(ev[2], &data) != nil ||
			(string(ev[1]) != `"o"` && string(ev[1]) != `"i"`) {
			out.Write(line)
			continue
		}
		masked := red(data)
		if masked == data {
			out.Write(line)
			continue
		}
		changed = true
		enc, err := json.Marshal(masked)
		if err != nil {
			out.Write(line)
			continue
		}
		out.WriteByte('[')
		out.Write(ev[0])
		out.WriteByte(',')
		out.Write(ev[1])
		out.WriteByte(',')
		out.Write(enc)
		out.WriteString("]\n")
	}
	return out.Bytes(), changed
}

// sessionFacts describes a session for its start and end records.
func (g *gateway) sessionFacts(s *session.Session, recording string) *SessionFacts {
	st := s.Status()
	f := &SessionFacts{
		ID: st.ID, Name: st.Name, Program: st.Program, Cwd: st.Dir, Mode: string(st.Mode), Argv: st.Argv,
		Pid: st.Pid, ExitCode: st.ExitCode, Signal: st.Signal, Duration: time.Since(st.Started),
		BytesIn: st.BytesIn, BytesOut: st.BytesOut, Recording: recording,
		Sandbox: g.sandboxText(s), SandboxStatus: s.Sandbox(),
	}
	return f
}

// setPolicyInput records the policy's document and reports whether it
// showed a secret the text hid (see policyInput).
func (a *ecsAuditor) setPolicyInput(r audit.Record, in GateInput, d Decision) (hidden bool) {
	doc, redacted, hidden := a.policyInput(in, d)
	if doc != nil {
		r.Set("termgate.policy.input", doc)
		if redacted {
			r.Set("termgate.policy.input_redacted", true)
		}
	}
	return hidden
}

// hiddenSecretText stands for a line whose text hides a secret the
// shell decodes: the redactor reads the text as typed ($'\x67hp_…',
// gh'p_'…), and only the parsed words showed the secret.
const hiddenSecretText = "[input masked: the parsed line holds a secret its text hides]"

// policyInput is the document the policy judged, as a decision record
// carries it (termgate.policy.input): redacted, and still a document
// `opa eval` replays. redacted reports that redaction changed it;
// hidden, that the document's own strings held a secret the text's
// redaction did not remove, so the text hides one in a form the redactor
// does not read, and must not be recorded as typed either.
//
// When redaction leaves the input's text, argv and cwd as they were, it
// is the decision's own document. When redaction masked something there,
// the engine builds the document again from the redacted input, so the
// record holds no secret the text's redaction removed (an argument alone
// may not look like a secret without the words around it) and a replay
// judges the command as it was logged: the better the redactor keeps the
// command and its separators around a mask, the closer that replay is to
// the decision. Either way every string of the document then passes the
// redactor once more: a secret can hide in a form the text does not show
// ($'\x67hp_…' is unquoted in the arguments).
func (a *ecsAuditor) policyInput(in GateInput, d Decision) (doc any, redacted, hidden bool) {
	if d.Policy == nil || d.Policy.Input == nil || a.policy == nil {
		return nil, false, false
	}
	pdoc := d.Policy.Input
	red := a.redactor(in)
	masked := in
	masked.Text = red(in.Text)
	redactRef := func(g *GateRef) *GateRef {
		if g == nil {
			return nil
		}
		c := *g
		c.Cwd = red(g.Cwd)
		if g.Argv != nil { // nil stays nil: a connect's session has none
			c.Argv = make([]string, len(g.Argv))
			for i, s := range g.Argv {
				c.Argv[i] = red(s)
			}
		}
		return &c
	}
	masked.Session, masked.Start = redactRef(in.Session), redactRef(in.Start)
	orig, redd := toPolicyInput(in), toPolicyInput(masked)
	changed := !reflect.DeepEqual(orig, redd)
	if changed {
		built := a.policy.Build(redd)
		pdoc = &built
	}
	v, err := decodedDoc(pdoc)
	if err != nil {
		return nil, false, false
	}
	hidden = redactStrings(v, red)
	if hidden {
		if m, ok := v.(map[string]any); ok {
			m["text"] = hiddenSecretText
		}
	}
	return v, changed || hidden, hidden
}

// decodedDoc is a policy document as generic JSON (maps, slices,
// strings, json.Number), for a record to carry and a walk to read.
func decodedDoc(doc any) (any, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// redactStrings redacts every string in a decoded JSON value, object
// keys included, in place, and reports whether one changed.
func redactStrings(v any, red func(string) string) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		// Keys too: some objects are keyed by the line's own words
		// (shell.path_facts). In order, so two keys that redact to one
		// keep the same value every time.
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e := x[k]
			if s, ok := e.(string); ok {
				if r := red(s); r != s {
					e, changed = r, true
				}
			} else {
				changed = redactStrings(e, red) || changed
			}
			if rk := red(k); rk != k {
				delete(x, k)
				k, changed = rk, true
			}
			x[k] = e
		}
	case []any:
		for i, e := range x {
			if s, ok := e.(string); ok {
				if r := red(s); r != s {
					x[i], changed = r, true
				}
				continue
			}
			changed = redactStrings(e, red) || changed
		}
	}
	return changed
}
