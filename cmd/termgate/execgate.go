package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/audit"
	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// The exec gate, the gateway's second checkpoint: every program a
// session's processes start waits in the kernel (seccomp user
// notification, package sandbox) until the policy has judged it with
// action "exec", the argv as the kernel sees it, the resolved executable,
// the working directory, the programs above it, and the session's last
// judged line. sandbox owns the receive loop; this file is the judge.
//
//   - allow: the exec goes on, and is recorded (an ECS process start
//     event; allowed ones are written from a queue, off the exec's path);
//   - deny: it fails with EPERM, so the program prints its usual error; the
//     refusal is a security event (fsync'd before the answer) and the
//     result of the call in flight on the session says which program was
//     refused, by which rule and why, and that the rest may have run;
//   - confirm: the human is asked through the call in flight on that
//     session (an elicitation; the process simply waits); with no call in
//     flight, a client that cannot be asked in the middle of a call
//     (protocol 2026-07-28 forbids it; --confirm-mode=agent), a question
//     already open on the session, a decline or no answer in time: EPERM.
//
// --exec-gate=audit judges and records every exec and refuses none
// (termgate.exec.enforced: false on what enforce would have refused);
// --exec-gate=off loads no filter.

// execGate is the gateway's side of the exec gate.
type execGate struct {
	g        *gateway
	mode     string // enforce or audit
	programs *sandbox.ProgramIndex
	queue    *execQueue

	mu       sync.Mutex
	sessions map[string]*gateSession

	cache decisionCache
}

// gateSession is what the gate knows of a live session.
type gateSession struct {
	ref       GateRef
	home      string
	client    Client
	calls     []*gateCall // the calls in flight on the session, oldest first
	last      callInfo    // the last call on it: what a background exec is tied to
	line      string      // the last input judged for it
	confirmed bool        // a human confirmed line
	asking    bool        // a question about one of its execs is open
	sys       sysRefusals // calls seccomp refused with no call in flight, for the next one
}

// gateCall is a call in flight on a session: the channel a confirmation
// goes through, and the refusals its result reports.
type gateCall struct {
	ctx    context.Context
	req    *mcp.CallToolRequest
	info   callInfo
	client Client // the client of req, read once: each read decodes the request's _meta

	mu      sync.Mutex
	refused []execRefusal
	sys     sysRefusals // the calls seccomp refused (sysrefused.go)
}

// execRefusal is an exec the gate refused while a call was in flight.
type execRefusal struct {
	Program string   `json:"program" jsonschema:"the program refused (what its executable is)"`
	Argv    []string `json:"argv" jsonschema:"its arguments as the kernel saw them, redacted"`
	Rule    string   `json:"rule" jsonschema:"the rule that refused it"`
	Reason  string   `json:"reason" jsonschema:"why"`
	Pid     int      `json:"pid" jsonschema:"the process that tried to run it"`
}

func newExecGate(g *gateway, mode string) *execGate {
	if mode == "off" {
		return nil
	}
	dirs := append(sandbox.SystemProgramDirs(), strings.Split(g.getenv("PATH"), ":")...)
	x := &execGate{g: g, mode: mode, programs: sandbox.NewProgramIndex(dirs), sessions: map[string]*gateSession{}}
	x.queue = newExecQueue(func(ctx context.Context, ev AuditEvent) error { return g.stages.record(ctx, ev) })
	return x
}

// stop drains the queue of records; call it after every session ended.
func (x *execGate) stop() {
	if x != nil {
		x.queue.close()
	}
}

// forSession is the session.ExecGate of a session start (nil with the
// gate off): its judge looks the session up by id on every exec.
func (x *execGate) forSession() *session.ExecGate {
	if x == nil {
		return nil
	}
	return &session.ExecGate{
		Judge:      func(id string) sandbox.ExecJudge { return x.judge(func() gateState { return x.state(id) }) },
		Mode:       x.mode,
		BestEffort: x.g.cfg.Sandbox == "best-effort" || x.mode == "audit",
		Programs:   x.programs,
	}
}

// forExec is the session.ExecGate of one exec tool call: its line is the
// command, its call the exec call itself.
func (x *execGate) forExec(ctx context.Context, req *mcp.CallToolRequest, command, home string, confirmed, confined bool) (*session.ExecGate, *gateCall) {
	if x == nil {
		return nil, nil
	}
	call := &gateCall{ctx: ctx, req: req, info: callOf(ctx), client: clientOf(req)}
	gate := x.forSession()
	gate.Judge = func(id string) sandbox.ExecJudge {
		st := gateState{ref: GateRef{ID: id, Confined: confined}, home: home, client: call.client, call: call, last: call.info,
			line: command, confirmed: confirmed, session: &gateSession{}}
		return x.judge(func() gateState { return st })
	}
	return gate, call
}

// opened registers a session that started.
func (x *execGate) opened(s *session.Session, home string, client Client, line string, confirmed bool) {
	if x == nil {
		return
	}
	ref := x.g.sessionRef(s, s.Status()) // its profile, and whether it is confined
	x.mu.Lock()
	defer x.mu.Unlock()
	gs := x.sessionLocked(s.ID())
	gs.ref = *ref
	gs.home, gs.client, gs.line, gs.confirmed = home, client, line, confirmed
}

// closed forgets a session that ended.
func (x *execGate) closed(id string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	delete(x.sessions, id)
	x.mu.Unlock()
}

func (x *execGate) sessionLocked(id string) *gateSession {
	gs := x.sessions[id]
	if gs == nil {
		gs = &gateSession{ref: GateRef{ID: id}}
		x.sessions[id] = gs
	}
	return gs
}

// judged records the input last judged (and allowed) for a session: the
// line an exec's judge is shown, and whether a human confirmed it.
func (x *execGate) judged(in GateInput, d Decision) {
	if x == nil || in.Action != "input" || in.Session == nil || in.Secret || d.Action != "allow" {
		return // keys are judged again as the line at Enter, which lands here
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if gs, ok := x.sessions[in.Session.ID]; ok {
		gs.line, gs.confirmed = in.Text, confirmedDecision(d)
	}
}

// begin registers a call in flight on a session; the context it returns
// carries it (ioResult reports its refusals). end unregisters it.
func (x *execGate) begin(ctx context.Context, id string, req *mcp.CallToolRequest) (context.Context, func()) {
	if x == nil {
		return ctx, func() {}
	}
	call := &gateCall{ctx: ctx, req: req, info: callOf(ctx), client: clientOf(req)}
	x.mu.Lock()
	gs := x.sessionLocked(id)
	gs.calls = append(gs.calls, call)
	gs.last = call.info
	x.mu.Unlock()
	return context.WithValue(ctx, gateCallKey{}, call), func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if gs, ok := x.sessions[id]; ok {
			for i, c := range gs.calls {
				if c == call {
					gs.calls = append(gs.calls[:i], gs.calls[i+1:]...)
					break
				}
			}
		}
	}
}

type gateCallKey struct{}

// refusalsOf returns the refusals of the call ctx carries.
func refusalsOf(ctx context.Context) []execRefusal {
	call, _ := ctx.Value(gateCallKey{}).(*gateCall)
	return call.refusals()
}

func (c *gateCall) refusals() []execRefusal {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]execRefusal(nil), c.refused...)
}

func (c *gateCall) refuse(r execRefusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.refused {
		// The same program refused again (a shell trying the next PATH
		// directory, or a loop): told once.
		if o.Program == r.Program && o.Rule == r.Rule && slices.Equal(o.Argv, r.Argv) {
			return
		}
	}
	if len(c.refused) < 32 {
		c.refused = append(c.refused, r)
	}
}

func callOf(ctx context.Context) callInfo {
	c, _ := ctx.Value(callKey{}).(callInfo)
	return c
}

// refusalText says what the gate refused during a call, for its result.
func refusalText(rs []execRefusal) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "[exec refused: %s (pid %d: %s) by %s: %s]\n", r.Program, r.Pid, strings.Join(r.Argv, " "), r.Rule, r.Reason)
	}
	b.WriteString("[the programs above were not run (EPERM); the rest of the command may have run]\n")
	return b.String()
}

// gateState is a session as one exec's judge sees it.
type gateState struct {
	ref       GateRef
	home      string
	client    Client
	call      *gateCall // the call in flight a confirmation goes through (the newest)
	calls     []*gateCall
	last      callInfo
	line      string
	confirmed bool
	session   *gateSession // for the open-question flag; nil for the exec tool
}

func (x *execGate) state(id string) gateState {
	x.mu.Lock()
	defer x.mu.Unlock()
	gs := x.sessions[id]
	if gs == nil {
		gs = &gateSession{ref: GateRef{ID: id}} // not (or no longer) registered: nothing to remember
	}
	st := gateState{ref: gs.ref, home: gs.home, client: gs.client, last: gs.last, line: gs.line, confirmed: gs.confirmed,
		calls: append([]*gateCall(nil), gs.calls...), session: gs}
	if n := len(gs.calls); n > 0 {
		st.call = gs.calls[n-1]
	}
	return st
}

// judge is a launch's ExecJudge: it runs on the launch's supervisor
// goroutines, two execs of a launch at a time at most. A panic while an
// exec is judged (or a human asked about it) refuses that exec, goes to
// the server's log with its stack and to the audit log as a tool error,
// and the supervisor goes on: nothing on this path may take the gateway
// down.
func (x *execGate) judge(state func() gateState) sandbox.ExecJudge {
	judge := x.judgeExec(state)
	return func(ctx context.Context, r *sandbox.ExecRequest) (v sandbox.ExecVerdict) {
		defer func() {
			if p := recover(); p != nil {
				v = sandbox.ExecVerdict{}
				x.panicked(ctx, "the exec gate", p, r)
			}
		}()
		v = judge(ctx, r)
		if ask := v.Ask; ask != nil {
			v.Ask = func(ctx context.Context) (allow bool) {
				defer func() {
					if p := recover(); p != nil {
						allow = false
						x.panicked(ctx, "the exec gate's question", p, r)
					}
				}()
				return ask(ctx)
			}
		}
		return v
	}
}

// panicked tells the gateway of a panic while r was judged. Telling it
// writes the audit log, where the panic may have come from: a second
// panic there is dropped, not let take the gateway down.
func (x *execGate) panicked(ctx context.Context, where string, p any, r *sandbox.ExecRequest) {
	defer func() { _ = recover() }()
	x.g.panicked(ctx, where, p, GateInput{Action: "exec", Program: r.Program})
}

func (x *execGate) judgeExec(state func() gateState) sandbox.ExecJudge {
	return func(ctx context.Context, r *sandbox.ExecRequest) sandbox.ExecVerdict {
		x.g.testPanicPoint("exec gate")
		st := state()
		if r.Refusal != nil {
			// Not an exec: a call the profile refused, already answered.
			x.sysRefused(st, r.Refusal)
			return sandbox.ExecVerdict{}
		}
		gin := GateInput{
			Action: "exec", Program: r.Program, Client: st.client,
			Session: &GateRef{ID: st.ref.ID, Name: st.ref.Name, Argv: st.ref.Argv, Cwd: st.ref.Cwd, Profile: st.ref.Profile, Confined: st.ref.Confined},
			Exec: &GateExec{Argv: r.Argv, Path: r.Executable, Cwd: r.Cwd, Parents: r.Parents, Line: st.line,
				LineConfirmed: st.confirmed, IdentifiedBy: r.IdentifiedBy, Home: st.home},
		}
		gin.Text = policy.QuoteArgv(r.Argv)
		if st.confirmed && strings.Contains(st.line, "$") && r.Environ != nil {
			// What the confirmed line's variables were when it ran.
			gin.Exec.Env = r.Environ()
		}
		if st.call != nil {
			gin.Client = st.call.client
		}
		var d Decision
		switch {
		case r.Launcher:
			// The launcher's own exec of the session's program: the
			// program the start decision judged, as the gateway made it
			// (with the gateway's rc file and options).
			d = Decision{Action: "allow", Rule: "exec.session_program", Reason: "the session's own program, judged at its start", Severity: "low"}
		case r.Unreadable != nil:
			d = Decision{Action: "deny", Rule: "exec.unreadable", Reason: "the exec could not be read whole, so it cannot be judged: " + r.Unreadable.Error(), Severity: "high"}
		case x.queue.failed() != nil:
			d = Decision{Action: "deny", Rule: "audit.failed", Reason: "the audit log could not record an exec (" + x.queue.failed().Error() + "); no more execs run", Severity: "high"}
		default:
			d = x.decide(ctx, gin)
		}
		rec := execRecord{gin: gin, d: d, r: r, st: st, at: time.Now()}
		switch {
		case d.Action == "allow":
			x.allowed(rec)
			return sandbox.ExecVerdict{Allow: true}
		case x.mode == "audit":
			rec.unenforced = true
			x.allowed(rec)
			return sandbox.ExecVerdict{Allow: true}
		case d.Action == "confirm":
			if why := x.cannotAsk(st); why != "" {
				rec.d = d.refused(d.Reason + " (needs a human's confirmation: " + why + ")")
				x.refuse(rec)
				return sandbox.ExecVerdict{}
			}
			return sandbox.ExecVerdict{Ask: func(ctx context.Context) bool { return x.ask(ctx, rec) }}
		default:
			x.refuse(rec)
			return sandbox.ExecVerdict{}
		}
	}
}

// cannotAsk says why no human can be asked about an exec now ("": one
// can), and, when one can, marks the question open on the session.
func (x *execGate) cannotAsk(st gateState) string {
	c := st.call
	switch {
	case c == nil:
		return "no call is in flight on the session to ask through"
	case c.ctx.Err() != nil:
		return "the call in flight ended"
	case x.g.stages.Confirmer == nil:
		return "no confirmation channel is available"
	case x.g.confirmer != nil && x.g.confirmer.agentMode:
		return "--confirm-mode=agent cannot confirm a program while it waits"
	case c.req == nil || c.req.Session == nil:
		return "no client to ask"
	case c.req.ProtocolVersion() >= "2026-07-28":
		return "this client's protocol (" + c.req.ProtocolVersion() + ") does not let the gateway ask in the middle of a call; run the command as its own input so the gateway asks first"
	}
	if caps := c.req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return "the client cannot ask a human (no elicitation support)"
	}
	if st.session != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		if st.session.asking {
			return "another program of the session is waiting for the human"
		}
		st.session.asking = true
	}
	return ""
}

// ask asks the human about an exec through the call in flight, while the
// process waits; it runs on a goroutine of the supervisor's. ctx ends
// with the launch; the call's end or the confirmation's expiry end the
// question too.
func (x *execGate) ask(ctx context.Context, rec execRecord) bool {
	defer func() {
		if s := rec.st.session; s != nil {
			x.mu.Lock()
			s.asking = false
			x.mu.Unlock()
		}
	}()
	call := rec.st.call
	ctx, cancel := context.WithTimeout(ctx, x.g.cfg.ConfirmTTL)
	defer cancel()
	stop := context.AfterFunc(call.ctx, cancel)
	defer stop()
	actx := withCallInfo(context.Background(), call.info)
	if err := x.g.stages.record(actx, AuditEvent{Kind: "confirmation_asked", Input: rec.gin, Decision: rec.d}); err != nil {
		rec.d = rec.d.refused(rec.d.Reason + " (the audit log could not record the question: " + err.Error() + ")")
		x.refuse(rec)
		return false
	}
	q := x.g.confirmer.question(rec.gin, rec.d)
	q.Message = fmt.Sprintf("termgate: a program the session runs waits for you (run by %s).\n\n", x.g.stages.redact(strings.Join(rec.r.Parents, " > "))) +
		strings.TrimPrefix(q.Message, "termgate: the agent wants to run this, and the policy asks you first.\n\n")
	resp, err := call.req.Session.Elicit(ctx, q)
	ok := false
	if err == nil {
		ok = approved(resp).Answer == Approved
	} else if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s, or the call ended", x.g.cfg.ConfirmTTL)
	}
	how := "approved by the human"
	switch {
	case err != nil:
		how = err.Error()
	case !ok:
		how = "declined by the human"
	}
	if aerr := x.g.stages.record(actx, AuditEvent{Kind: "confirmation_answered", Input: rec.gin, Decision: rec.d, Approved: ok && err == nil, Outcome: how}); aerr != nil {
		ok, how = false, "the audit log could not record the answer: "+aerr.Error()
	}
	if !ok || err != nil {
		rec.d = rec.d.refused(rec.d.Reason + " (not confirmed: " + how + ")")
		x.refuse(rec)
		return false
	}
	rec.d.Action, rec.d.Reason = "allow", rec.d.Reason+" (confirmed by the human)"
	rec.confirmed = true
	x.allowed(rec)
	return true
}

// execRecord is one judged exec on its way to the audit log.
type execRecord struct {
	gin        GateInput
	d          Decision
	r          *sandbox.ExecRequest
	st         gateState
	at         time.Time
	unenforced bool // --exec-gate=audit let through what it would refuse
	confirmed  bool
}

// allowed records an exec that runs: from the queue (a security event
// when a human confirmed it, or audit mode let through a refusal).
func (x *execGate) allowed(rec execRecord) {
	ctx, ev := x.event(rec)
	if rec.confirmed || rec.unenforced {
		if err := x.g.stages.record(ctx, ev); err != nil {
			x.queue.fail(err)
		}
		return
	}
	x.queue.add(ctx, ev)
}

// refuse records a refused exec (a security event, synced before the
// process gets its EPERM) and tells the calls in flight on the session.
func (x *execGate) refuse(rec execRecord) {
	ctx, ev := x.event(rec)
	if err := x.g.stages.record(ctx, ev); err != nil {
		x.g.log.Error("audit: recording a refused exec", "session", rec.st.ref.ID, "err", err)
	}
	argv := make([]string, len(rec.r.Argv))
	for i, a := range rec.r.Argv {
		argv[i] = x.g.stages.redact(a)
	}
	ref := execRefusal{Program: rec.r.Program, Argv: argv, Rule: rec.d.Rule, Reason: x.g.stages.redact(rec.d.Reason), Pid: rec.r.Pid}
	for _, c := range rec.st.calls {
		c.refuse(ref)
	}
	if c := rec.st.call; c != nil && len(rec.st.calls) == 0 {
		c.refuse(ref) // the exec tool's own call
	}
	x.g.log.Info("exec refused", "session", rec.st.ref.ID, "program", rec.r.Program, "rule", rec.d.Rule, "pid", rec.r.Pid)
}

// event is the audit event of an exec, and the context that ties it to
// the call that caused it (the call in flight, else the session's last).
func (x *execGate) event(rec execRecord) (context.Context, AuditEvent) {
	info := rec.st.last
	if rec.st.call != nil {
		info = rec.st.call.info
	}
	fields := map[string]any{
		"@timestamp":                  rec.at.UTC().Format(audit.TimeFormat),
		"process.pid":                 rec.r.Pid,
		"termgate.exec.mode":          x.mode,
		"termgate.exec.syscall":       rec.r.Syscall,
		"termgate.exec.identified_by": rec.r.IdentifiedBy,
	}
	if rec.r.PPid > 0 {
		fields["process.parent.pid"] = rec.r.PPid
	}
	if len(rec.r.Parents) > 0 {
		fields["termgate.exec.parents"] = rec.r.Parents
	}
	if rec.unenforced {
		fields["termgate.exec.enforced"] = false
		fields["termgate.exec.would_refuse"] = true
	}
	return withCallInfo(context.Background(), info), AuditEvent{Kind: "exec", Input: rec.gin, Decision: rec.d, Fields: fields}
}

func withCallInfo(ctx context.Context, c callInfo) context.Context {
	if c.id == "" {
		return ctx
	}
	return context.WithValue(ctx, callKey{}, c)
}

// execQueue writes the records of allowed execs off their path: a build
// runs thousands, and each waits in the kernel only for its decision.
// A record that cannot be written makes every later exec refused.
type execQueue struct {
	rec  func(context.Context, AuditEvent) error
	ch   chan queuedEvent
	done chan struct{}
	err  atomic.Pointer[error]

	mu     sync.RWMutex // held (read) while a record goes in, so close never closes ch under a send
	closed bool
}

type queuedEvent struct {
	ctx context.Context
	ev  AuditEvent
}

func newExecQueue(rec func(context.Context, AuditEvent) error) *execQueue {
	q := &execQueue{rec: rec, ch: make(chan queuedEvent, 1024), done: make(chan struct{})}
	go q.loop()
	return q
}

func (q *execQueue) loop() {
	defer close(q.done)
	for e := range q.ch {
		if err := q.rec(e.ctx, e.ev); err != nil {
			q.fail(err)
		}
	}
}

// add queues a record; when the queue is full the exec waits for room.
// After close, it writes the record itself.
func (q *execQueue) add(ctx context.Context, ev AuditEvent) {
	q.mu.RLock()
	if !q.closed {
		q.ch <- queuedEvent{ctx, ev}
		q.mu.RUnlock()
		return
	}
	q.mu.RUnlock()
	if err := q.rec(ctx, ev); err != nil {
		q.fail(err)
	}
}

func (q *execQueue) fail(err error) { q.err.CompareAndSwap(nil, &err) }

func (q *execQueue) failed() error {
	if p := q.err.Load(); p != nil {
		return *p
	}
	return nil
}

// close writes what is queued and stops; it is idempotent.
func (q *execQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}

// decideOrAllow is the policy's decision on an exec (failing closed), or
// an allow when no policy engine is configured (every result says so).
func (p *Stages) decideOrAllow(ctx context.Context, in GateInput) Decision {
	if p.Decider == nil {
		return Decision{Action: "allow", Rule: noPolicyRule, Reason: "no policy engine is configured in this build"}
	}
	return p.decide(ctx, in)
}

// gateText is the exec gate's part of the status of a launch that is not
// confined (--sandbox=off): a confined one's status says it already.
func gateText(st sandbox.Status) string {
	s := ""
	if st.ExecGate != "" {
		s = "; exec gate " + st.ExecGate
	}
	if len(st.NotEnforced) > 0 {
		s += "; NOT enforced: " + strings.Join(st.NotEnforced, "; ")
	}
	return s
}

// execSandboxText is the exec tool's confinement, for its result.
func execSandboxText(sb *sandbox.Spec, st sandbox.Status) string {
	if sb == nil {
		return sandboxStatusOf(nil, st) + gateText(st)
	}
	return sandboxStatusOf(sb, st)
}

// confirmedDecision: a human (or, with --confirm-mode=agent, the agent)
// confirmed the input d allowed.
func confirmedDecision(d Decision) bool { return strings.Contains(d.Reason, "(confirmed") }

// envValue is NAME's value in env ("" when unset).
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// decide is the policy's decision on an exec. A build runs the same
// programs with the same arguments again and again: a decision is kept
// for the exact input document it was made on (every field the policy
// sees, and the environment a confirmed line's variables were expanded
// from), under the bundle that made it, and reused until the bundle
// changes. An error is never kept.
func (x *execGate) decide(ctx context.Context, in GateInput) Decision {
	if x.g.policy == nil {
		return x.g.stages.decideOrAllow(ctx, in)
	}
	b := x.g.policy.Bundle()
	key := execKey(in)
	if d, ok := x.cache.get(b, key); ok {
		return d
	}
	d := x.g.stages.decideOrAllow(ctx, in)
	if !strings.HasPrefix(d.Rule, "policy.") && !readsLinks(in) && !readFiles(d) {
		x.cache.put(b, key, d)
	}
	return d
}

// readFiles reports whether the engine looked at the file system to make
// d (a delete's or a write's path through a symbolic link): a link can be
// pointed elsewhere between two execs of the same argv, so such a
// decision is never kept.
func readFiles(d Decision) bool {
	if d.Policy == nil {
		return false
	}
	in, ok := d.Policy.Input.(*policy.Input)
	return ok && in.ReadFiles()
}

// readsLinks reports whether the decision on in may depend on the file
// system, not on the document alone: the analysis resolves an operand
// written with a trailing slash that is a symbolic link to the link's
// target (rm -rf link/ removes what link points to), and a link can be
// pointed elsewhere between two execs of the same argv. Such a decision
// is never kept.
func readsLinks(in GateInput) bool {
	if in.Exec == nil {
		return true
	}
	for _, a := range in.Exec.Argv {
		for i := strings.IndexByte(a, '/'); i >= 0; {
			if i+1 == len(a) || strings.IndexByte(" \t\n'\"`;&|()<>", a[i+1]) >= 0 {
				return true
			}
			j := strings.IndexByte(a[i+1:], '/')
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return false
}

// execKey is the identity of an exec's input document.
func execKey(in GateInput) string {
	var b strings.Builder
	w := func(ss ...string) {
		for _, s := range ss {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	w(in.Program, in.Text, in.Client.Name, in.Client.Version)
	if r := in.Session; r != nil {
		w(r.ID, r.Name, r.Cwd)
		w(r.Argv...)
	}
	if e := in.Exec; e != nil {
		w(e.Path, e.Cwd, e.Line, fmt.Sprint(e.LineConfirmed), e.IdentifiedBy, e.Home)
		w(e.Argv...)
		w(e.Parents...)
		w(e.Env...)
	}
	return b.String()
}

// decisionCache holds recent exec decisions of one bundle.
type decisionCache struct {
	mu     sync.Mutex
	bundle *policy.Bundle
	m      map[string]Decision
}

const maxCachedDecisions = 1024

func (c *decisionCache) get(b *policy.Bundle, key string) (Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bundle != b {
		return Decision{}, false
	}
	d, ok := c.m[key]
	return d, ok
}

func (c *decisionCache) put(b *policy.Bundle, key string, d Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bundle != b || len(c.m) >= maxCachedDecisions {
		c.bundle, c.m = b, make(map[string]Decision, 64)
	}
	c.m[key] = d
}
