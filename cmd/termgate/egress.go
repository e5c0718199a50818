package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/sandbox"
	"github.com/termgate/termgate/session"
)

// The egress stage: the gateway's side of the sandbox's egress proxy.
// Every new destination of a proxy session (host, port, program, session)
// is a policy decision, action "connect":
//
//   - allow and deny are the policy's; confirm asks the human through the
//     call in flight on the session (the session_send, session_keys,
//     session_read, session_start or exec whose command is connecting),
//     bound to the destination as any confirmation is. A client that
//     takes server requests during a call (before protocol 2026-07-28)
//     gets an elicitation while the connection waits. A client that is
//     asked only through a call's result (input requests) cannot hold a
//     connection open: the connection is refused at once, the call's
//     result asks the human about every destination it refused so, and
//     the client's retry with the answer records it for the session and
//     runs the call again (a declined one is not run again). With no call
//     in flight (a background job) the connection is refused and the
//     next call's result says so; --confirm-mode=agent gives the agent a
//     token for the confirm tool, and the next attempt after it is
//     redeemed passes.
//   - decisions are cached per session and destination (host, port,
//     program, and the address when it was judged) for the session's
//     life, keyed by the bundle's hash too, so a reload judges again. A
//     human's answer is cached; a refusal for want of a human is not.
//   - every decision that is not a cache hit is a decision record; every
//     connection is a network record when it ends (or is refused):
//     destination, bytes each way, duration, the decision. When the audit
//     log fails, cached destinations are refused too until a record is
//     written again.
//   - what the proxy refused during a call is in that call's result
//     (sandbox_refused: destination, access, program, profile, rule,
//     reason) and its outcome record.

// GateConnect is a destination as the policy sees it (input.connect).
type GateConnect struct {
	Host         string `json:"host"`
	Port         int    `json:"port"`
	Program      string `json:"program"`
	Via          string `json:"via"`
	Address      string `json:"address,omitempty"`
	AddressClass string `json:"address_class,omitempty"`
	Resolved     bool   `json:"resolved,omitempty"`
	Profile      string `json:"-"` // the session's, for input.session.profile
}

// Refusal is one thing the sandbox refused during a call.
type Refusal struct {
	Access      string `json:"access" jsonschema:"what was refused: connect, file (any access: nothing grants it) or write (the file is granted read-only)"`
	Destination string `json:"destination,omitempty" jsonschema:"host:port as the program asked for it"`
	Path        string `json:"path,omitempty" jsonschema:"the file refused: named by Landlock's audit record, or by a program's permission error and checked against the profile"`
	Syscall     string `json:"syscall,omitempty" jsonschema:"the system call the profile refused, with the argument that decided it: socket(AF_INET SOCK_DGRAM), ioctl(TIOCSTI), ptrace"`
	Address     string `json:"address,omitempty" jsonschema:"the address it resolved to, when that was what was refused"`
	Program     string `json:"program,omitempty" jsonschema:"the program that asked"`
	Profile     string `json:"profile" jsonschema:"the session's sandbox profile"`
	Rule        string `json:"rule" jsonschema:"the rule that refused it"`
	Reason      string `json:"reason" jsonschema:"why"`
	Source      string `json:"source,omitempty" jsonschema:"how it is known: seccomp (a system call the profile refused, named as it happened), landlock (the kernel's own audit record of the denial), output (read from the program's own error); none for the egress proxy's refusals"`
	Count       int    `json:"count,omitempty" jsonschema:"how many times it was refused during the call, when more than once"`
	Pid         int    `json:"pid,omitempty" jsonschema:"the process that asked (the first, when refused more than once)"`
	// hint is for the agent's result text only (a one-time token in
	// --confirm-mode=agent): never in String, the audit log or the JSON.
	hint string
}

func (r Refusal) String() string {
	s := r.Access + " " + r.Destination + r.Path + r.Syscall
	if r.Address != "" {
		s += " (" + r.Address + ")"
	}
	if r.Program != "" {
		s += " by " + r.Program
	}
	if r.Count > 1 {
		s += fmt.Sprintf(" (%d times)", r.Count)
	}
	if r.Source != "" {
		s += " [" + r.Source + "]"
	}
	return fmt.Sprintf("%s, profile %s: %s: %s", s, r.Profile, r.Rule, r.Reason)
}

// maxRefusals is how many refusals one call's result lists; the rest are
// counted.
const maxRefusals = 20

// egressGate is the egress stage of one gateway.
type egressGate struct {
	g        *gateway
	proxy    *sandbox.Egress
	auditBad atomic.Bool          // the last network record could not be written
	asks     map[string]egressAsk // by nonce: destinations a call's result asked about
	// noHuman, when set, is why no human can be asked (termgate sandbox
	// run); notify is told of each refusal as it happens.
	noHuman string
	notify  func(Refusal)

	mu        sync.Mutex
	states    map[*sandbox.EgressSession]*egressState
	bySession map[string]*sandbox.EgressSession // MCP session id → its proxy
}

// egressState is the stage's memory of one proxy session.
type egressState struct {
	askMu   sync.Mutex // one question to the human at a time, per session
	client  Client
	calls   []*egressCall // in flight, newest last
	pending []Refusal     // refused with no call in flight, for the next one
	dropped int
	cache   map[egressKey]sandbox.Verdict
	// hints are the agent's one-time tokens (--confirm-mode=agent) by
	// destination, until the refusal that shows them is reported.
	hints map[string]string
}

// liveLocked is call if it has not returned, else the call in flight
// now, or nil: the proxy read call under the lock and let it go since,
// and what it adds to a call that returned would never be told. With
// eg.mu held.
func (st *egressState) liveLocked(call *egressCall) *egressCall {
	if call == nil || !call.ended {
		return call
	}
	if n := len(st.calls); n > 0 {
		return st.calls[n-1]
	}
	return nil
}

type egressKey struct {
	bundle, host, program, address string
	port                           int
}

// egressCall is a call in flight on a session.
type egressCall struct {
	ctx     context.Context
	req     *mcp.CallToolRequest
	refused []Refusal
	dropped int
	ask     []egressQuestion // to ask the human in the call's result
	asked   int              // questions put to the human during the call
	// asksTaken: the call's result took its questions (askResult); ended:
	// the call returned. The proxy's goroutines hold a call past both
	// (they read it under the lock, then judge or report), and check
	// these, under the lock, before they add to it.
	asksTaken, ended bool
}

// egressQuestion is a destination refused for a human to decide.
type egressQuestion struct {
	in  GateInput
	dec Decision
	key egressKey
}

// egressAsk is what a call's result asked, until the retry answers.
type egressAsk struct {
	questions []egressQuestion
	expires   time.Time
}

// maxAsk is how many destinations one result asks about.
const maxAsk = 8

type egressCallKey struct{}

func newEgressGate(g *gateway, hosts map[string][]netip.Addr) (*egressGate, error) {
	eg := &egressGate{g: g, states: map[*sandbox.EgressSession]*egressState{}, bySession: map[string]*sandbox.EgressSession{}, asks: map[string]egressAsk{}}
	p, err := sandbox.NewEgress(sandbox.EgressOptions{Judge: eg.judge, Report: eg.report, Hosts: hosts,
		Panicked: func(es *sandbox.EgressSession, v any) {
			g.panicked(context.Background(), "the egress proxy", v, GateInput{Session: &GateRef{ID: es.Name()}})
		}})
	if err != nil {
		return nil, err
	}
	eg.proxy = p
	return eg, nil
}

// newSession makes the proxy of one launch.
func (eg *egressGate) newSession() *sandbox.EgressSession {
	es := eg.proxy.NewSession()
	eg.mu.Lock()
	eg.states[es] = &egressState{cache: map[egressKey]sandbox.Verdict{}}
	eg.mu.Unlock()
	return es
}

// started names the MCP session a proxy serves.
func (eg *egressGate) started(id string, es *sandbox.EgressSession) {
	if eg == nil || es == nil {
		return
	}
	eg.mu.Lock()
	eg.bySession[id] = es
	eg.mu.Unlock()
}

// end closes a launch's proxy and forgets it.
func (eg *egressGate) end(es *sandbox.EgressSession) {
	if eg == nil || es == nil {
		return
	}
	es.Close()
	eg.mu.Lock()
	delete(eg.states, es)
	for id, s := range eg.bySession {
		if s == es {
			delete(eg.bySession, id)
		}
	}
	eg.mu.Unlock()
}

// close ends every proxy.
func (eg *egressGate) close() {
	if eg != nil {
		eg.proxy.Close()
	}
}

// call marks a call in flight on the session sessionID (a name or an id
// the manager resolved), or on es when it is given: the proxy asks the
// human through it, and what it refuses in the meantime is the call's.
// done ends it.
func (eg *egressGate) call(ctx context.Context, req *mcp.CallToolRequest, sessionID string, es *sandbox.EgressSession) (context.Context, func()) {
	if eg == nil {
		return ctx, func() {}
	}
	eg.mu.Lock()
	defer eg.mu.Unlock()
	if es == nil {
		es = eg.bySession[sessionID]
	}
	st := eg.states[es]
	if st == nil {
		return ctx, func() {}
	}
	c := &egressCall{ctx: ctx, req: req}
	if cl := clientOf(req); cl.Name != "" {
		st.client = cl
	}
	// What was refused while no call was in flight is told to this one.
	c.refused, c.dropped, st.pending, st.dropped = st.pending, st.dropped, nil, 0
	st.calls = append(st.calls, c)
	return context.WithValue(ctx, egressCallKey{}, c), func() {
		eg.mu.Lock()
		defer eg.mu.Unlock()
		c.ended = true
		for i, x := range st.calls {
			if x == c {
				st.calls = append(st.calls[:i], st.calls[i+1:]...)
				break
			}
		}
		// Refused after the call took its list: the next call hears of it.
		st.pending = append(st.pending, c.refused...)
		st.dropped += c.dropped
		if n := len(st.pending); n > maxRefusals {
			st.dropped += n - maxRefusals
			st.pending = st.pending[n-maxRefusals:]
		}
	}
}

// refused takes what the sandbox refused during the call in ctx so far.
func (eg *egressGate) refused(ctx context.Context) ([]Refusal, int) {
	c, _ := ctx.Value(egressCallKey{}).(*egressCall)
	if eg == nil || c == nil {
		return nil, 0
	}
	eg.mu.Lock()
	defer eg.mu.Unlock()
	r, n := c.refused, c.dropped
	c.refused, c.dropped = nil, 0
	return r, n
}

// current is the newest call in flight on es, its state, and the
// session's client as it is now: a call sets the client (eg.call) while
// the proxy's goroutines judge and report, so it is read here, under the
// lock, and never from the state afterwards.
func (eg *egressGate) current(es *sandbox.EgressSession) (*egressState, *egressCall, Client) {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	st := eg.states[es]
	if st == nil {
		return nil, nil, Client{}
	}
	if len(st.calls) == 0 {
		return st, nil, st.client
	}
	return st, st.calls[len(st.calls)-1], st.client
}

// judge is the proxy's judge.
func (eg *egressGate) judge(ctx context.Context, es *sandbox.EgressSession, d sandbox.Destination) sandbox.Verdict {
	st, call, client := eg.current(es)
	if st == nil {
		return sandbox.Verdict{Rule: "sandbox.egress_unknown", Reason: "the gateway does not know this session"}
	}
	bundle := ""
	if eg.g.policy != nil {
		bundle = eg.g.policy.Bundle().Hash
	}
	key := egressKey{bundle: bundle, host: d.Host, program: d.Program, address: d.Address, port: d.Port}
	eg.mu.Lock()
	v, hit := st.cache[key]
	eg.mu.Unlock()
	if hit {
		if v.Allow && eg.auditBad.Load() {
			return sandbox.Verdict{Rule: "audit.unavailable", Reason: "the audit log could not record the last connection; nothing more goes out until it can"}
		}
		return v
	}
	gin := GateInput{
		Action: ActionConnect, Text: d.String(), Program: d.Program, Client: client,
		Session: &GateRef{ID: d.Session},
		Connect: &GateConnect{Host: d.Host, Port: d.Port, Program: d.Program, Via: d.Via, Address: d.Address, AddressClass: d.AddressClass, Resolved: d.Resolved, Profile: d.Profile},
	}
	actx, req := ctx, (*mcp.CallToolRequest)(nil)
	if call != nil {
		// The call's context (its correlation id, its client), ended
		// also when the session's proxy closes: a question to the human
		// is abandoned with its session.
		var cancel context.CancelFunc
		actx, cancel = context.WithCancel(call.ctx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		req = call.req
	}
	p := eg.g.stages
	dec := p.decide(actx, gin) // no engine, an error or a panic: a deny
	policyAction := dec.Action
	cacheable := dec.Action != Confirm && dec.Rule != "policy.error" && dec.Rule != "policy.undefined"
	var err error
	switch {
	case dec.Action == Confirm && call == nil:
		why := "no call is in flight on this session to ask through: run the command again in a call"
		if eg.noHuman != "" {
			why = eg.noHuman
		}
		dec = dec.refused(dec.Reason + " (needs a human's confirmation, and " + why + ")")
		if p.Auditor != nil {
			err = p.Auditor.Record(actx, AuditEvent{Kind: KindDecision, Input: gin, Decision: dec})
		}
	case dec.Action == Confirm && asksByResult(call.req) && p.Confirmer != nil && eg.g.confirmer != nil:
		eg.mu.Lock()
		open := !call.asksTaken && !call.ended
		asked := open && len(call.ask) < maxAsk
		if asked {
			call.ask = append(call.ask, egressQuestion{in: gin, dec: dec, key: key})
		}
		eg.mu.Unlock()
		why := "this call's result asks the human; an approval runs the call again"
		switch {
		case !open:
			why = "the call it came during has made its result, so nobody is asked: run the command again"
		case !asked:
			why = "this call's result asks about the first " + fmt.Sprint(maxAsk) + " only"
		}
		dec = dec.refused(dec.Reason + " (needs a human's confirmation: " + why + ")")
		if p.Auditor != nil {
			err = p.Auditor.Record(actx, AuditEvent{Kind: KindDecision, Input: gin, Decision: dec})
		}
	case dec.Action == Confirm && !eg.mayAsk(call):
		dec = dec.refused(dec.Reason + fmt.Sprintf(" (needs a human's confirmation, and this call already asked about %d destinations: allow them in the policy)", maxAsk))
		if p.Auditor != nil {
			err = p.Auditor.Record(actx, AuditEvent{Kind: KindDecision, Input: gin, Decision: dec})
		}
	default:
		if dec.Action == Confirm {
			// One question at a time: a program that opens many
			// connections at once does not flood the human.
			st.askMu.Lock()
			defer st.askMu.Unlock()
			eg.mu.Lock()
			v, hit := st.cache[key]
			eg.mu.Unlock()
			if hit {
				return v // answered while this one waited
			}
		}
		rec := &answerRecorder{inner: p.Confirmer}
		if p.Confirmer != nil {
			p.Confirmer = rec
		}
		var pending *mcp.CallToolResult
		dec, pending, err = p.settle(actx, req, gin, dec)
		var ref *refusal
		switch {
		case pending != nil:
			// Not reached while asksByResult sends such clients above;
			// refused all the same, and recorded.
			dec = dec.refused(dec.Reason + " (needs a human's confirmation, and this client answers one only by calling again, which cannot hold a connection open: allow the destination in the policy)")
			err = p.record(actx, AuditEvent{Kind: KindDecision, Input: gin, Decision: dec})
		case errors.As(err, &ref) && ref.hint != "":
			// --confirm-mode=agent: the token is the agent's alone. The
			// refusal that the call's result shows carries it; the
			// decision, the verdict and the network record do not.
			eg.mu.Lock()
			if st.hints == nil {
				st.hints = map[string]string{}
			}
			if len(st.hints) < 256 {
				st.hints[d.String()] = ref.hint
			}
			eg.mu.Unlock()
			err = nil
		case policyAction == Confirm:
			cacheable = rec.answered
		}
	}
	if err != nil && dec.Action == Allow {
		dec = dec.refused("the audit log could not record the decision: " + err.Error())
		cacheable = false
	}
	v = sandbox.Verdict{Allow: dec.Action == Allow, Rule: dec.Rule, Reason: eg.g.stages.redact(dec.Reason)}
	if cacheable {
		eg.mu.Lock()
		if len(st.cache) < 4096 {
			st.cache[key] = v
		}
		eg.mu.Unlock()
	}
	return v
}

// mayAsk counts a question to the human during call, up to maxAsk.
func (eg *egressGate) mayAsk(call *egressCall) bool {
	eg.mu.Lock()
	defer eg.mu.Unlock()
	if call.asked >= maxAsk {
		return false
	}
	call.asked++
	return true
}

// asksByResult reports whether the client is asked only through a call's
// result (input requests), as Confirm does for it.
func asksByResult(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil || req.ProtocolVersion() < "2026-07-28" {
		return false
	}
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil
}

// askResult is the result that asks the human about the destinations the
// call in ctx refused for want of an answer, or nil when there are none.
// The sealed state binds the session and the call's exact input, as a
// confirmation's does; the retry that carries the answer is taken by
// answer.
func (eg *egressGate) askResult(ctx context.Context, call GateInput) *mcp.CallToolResult {
	c, _ := ctx.Value(egressCallKey{}).(*egressCall)
	if eg == nil || c == nil || eg.g.confirmer == nil {
		return nil
	}
	eg.mu.Lock()
	qs := c.ask
	c.ask, c.asksTaken = nil, true
	eg.mu.Unlock()
	if len(qs) == 0 {
		return nil
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil
	}
	n := hex.EncodeToString(nonce)
	exp := time.Now().Add(eg.g.confirmer.ttl)
	state, err := eg.g.confirmer.seal(confirmState{Session: sessionRef(call), Hash: "egress:" + inputHash(call), Rule: egressRule, Nonce: n, Expires: exp.Unix()})
	if err != nil {
		return nil
	}
	for _, q := range qs {
		if err := eg.g.stages.record(ctx, AuditEvent{Kind: KindConfirmAsked, Input: q.in, Decision: q.dec}); err != nil {
			return nil // unrecorded, so not asked: the refusals stand
		}
	}
	eg.mu.Lock()
	now := time.Now()
	for k, a := range eg.asks {
		if now.After(a.expires) {
			delete(eg.asks, k)
		}
	}
	eg.asks[n] = egressAsk{questions: qs, expires: exp}
	eg.mu.Unlock()
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{egressInput: egressQuestionParams(qs, eg.g.stages.redact)},
		RequestState:  state,
	}
}

// The input request and the rule a call's egress questions go by.
const (
	egressInput = "egress"
	egressRule  = "egress.ask"
)

// egressQuestionParams asks about the destinations a call refused.
func egressQuestionParams(qs []egressQuestion, red func(string) string) *mcp.ElicitParams {
	show := func(s string) string { return escapeText(red(s)) }
	p := connectQuestion(qs[0].in, qs[0].dec, show)
	if len(qs) > 1 {
		var b strings.Builder
		b.WriteString(p.Message)
		b.WriteString("\nand, with the same answer:\n")
		for _, q := range qs[1:] {
			fmt.Fprintf(&b, "  %s port %d (program %s; %s)\n", show(q.in.Connect.Host), q.in.Connect.Port, show(q.in.Connect.Program), show(q.dec.Rule))
		}
		p.Message = b.String()
	}
	p.Message += "\nThe command was refused these connections; if you allow them, the agent's call runs again.\n"
	return p
}

// answer takes a retry that carries the human's answer to a call's egress
// questions: the answer is recorded (audited, and cached for the launch
// es, the session's, or, for a start or exec, the new launch's), the
// state is removed from the request so that the gate does not read it,
// and declined reports that the call must not run again. A request state
// that is not an egress answer is left alone.
func (eg *egressGate) answer(ctx context.Context, req *mcp.CallToolRequest, call GateInput) (answers []egressVerdict, declined error, err error) {
	if eg == nil || req == nil || req.Params == nil || req.Params.RequestState == "" || eg.g.confirmer == nil {
		return nil, nil, nil
	}
	st, oerr := eg.g.confirmer.open(req.Params.RequestState)
	if oerr != nil || st.Rule != egressRule || !strings.HasPrefix(st.Hash, "egress:") {
		return nil, nil, nil // a confirmation's, for the gate
	}
	exp := time.Unix(st.Expires, 0)
	switch {
	case time.Now().After(exp):
		return nil, nil, errors.New("the human's answer about the connections came too late; send the call again")
	case st.Hash != "egress:"+inputHash(call) || st.Session != sessionRef(call):
		return nil, nil, errors.New("the call changed after the human was asked about its connections")
	case !eg.g.confirmer.redeem(st.Nonce, exp):
		return nil, nil, errors.New("the human's answer about the connections was already used")
	}
	eg.mu.Lock()
	ask, ok := eg.asks[st.Nonce]
	delete(eg.asks, st.Nonce)
	eg.mu.Unlock()
	if !ok {
		return nil, nil, errors.New("the gateway no longer holds the question this answer is to; send the call again")
	}
	resp, _ := req.Params.InputResponses[egressInput].(*mcp.ElicitResult)
	c := approved(resp)
	yes := c.Answer == Approved
	how := "approved by the human"
	if !yes {
		how = c.Detail
	}
	for _, q := range ask.questions {
		if err := eg.g.stages.record(ctx, AuditEvent{Kind: KindConfirmAnswered, Input: q.in, Decision: q.dec, Approved: yes, Outcome: how, Via: "input-request"}); err != nil {
			return nil, nil, fmt.Errorf("%w: the audit log could not record the human's answer (%v); nothing was run", ErrRefused, err)
		}
		v := sandbox.Verdict{Allow: yes, Rule: q.dec.Rule, Reason: eg.g.stages.redact(q.dec.Reason)}
		if yes {
			v.Reason += " (confirmed by the human)"
		} else {
			v.Reason += " (" + how + ")"
		}
		answers = append(answers, egressVerdict{key: q.key, verdict: v})
	}
	req.Params.RequestState, req.Params.InputResponses = "", nil
	if !yes {
		var dests []string
		for _, q := range ask.questions {
			dests = append(dests, fmt.Sprintf("%s:%d", q.in.Connect.Host, q.in.Connect.Port))
		}
		declined = fmt.Errorf("%w: the human did not allow the connection to %s (%s); it stays refused for this session, and the call was not run again", ErrRefused, strings.Join(dests, ", "), how)
	}
	return answers, declined, nil
}

// egressAnswer takes the human's answer about a session's connections
// from a retried call (see answer) and records it for the session; a
// refusal is the call's error.
func (g *gateway) egressAnswer(ctx context.Context, req *mcp.CallToolRequest, call GateInput, s *session.Session) error {
	answers, declined, err := g.egress.answer(ctx, req, call)
	if err != nil {
		return err
	}
	g.egress.apply(s.ID(), nil, answers)
	return declined
}

// egressVerdict is a human's answer about one destination.
type egressVerdict struct {
	key     egressKey
	verdict sandbox.Verdict
}

// apply records answers for a launch (by its session id, or es itself).
func (eg *egressGate) apply(sessionID string, es *sandbox.EgressSession, answers []egressVerdict) {
	if eg == nil || len(answers) == 0 {
		return
	}
	eg.mu.Lock()
	defer eg.mu.Unlock()
	if es == nil {
		es = eg.bySession[sessionID]
	}
	st := eg.states[es]
	if st == nil {
		return
	}
	for _, a := range answers {
		st.cache[a.key] = a.verdict
	}
}

// answerRecorder notes whether the human answered (approved or declined),
// as opposed to not being reachable.
type answerRecorder struct {
	inner    Confirmer
	answered bool
}

func (a *answerRecorder) Confirm(ctx context.Context, req *mcp.CallToolRequest, in GateInput, d Decision) Confirmation {
	c := a.inner.Confirm(ctx, req, in, d)
	// approved() says "the human …" when the human declined: an answer.
	a.answered = c.Answer == Approved || c.Answer == Declined && strings.HasPrefix(c.Detail, "the human")
	return c
}

// report is the proxy's report: a network record, and a refusal for the
// call in flight (or the next one).
func (eg *egressGate) report(es *sandbox.EgressSession, c sandbox.Connection) {
	st, call, client := eg.current(es)
	if st == nil {
		return
	}
	ctx := context.Background()
	if call != nil {
		ctx = context.WithoutCancel(call.ctx) // the call's correlation id
	}
	c.Reason = eg.g.stages.redact(c.Reason)
	c.Err = eg.g.stages.redact(c.Err)
	in := GateInput{Action: ActionConnect, Program: c.Program, Client: client, Session: &GateRef{ID: c.Session}}
	if err := eg.g.stages.record(ctx, AuditEvent{Kind: KindNetwork, Input: in, Network: &c}); err != nil {
		eg.auditBad.Store(true)
		eg.g.log.Error("audit: recording a connection", "session", c.Session, "destination", c.Destination.String(), "err", err)
	} else {
		eg.auditBad.Store(false)
	}
	if !c.Refused {
		return
	}
	r := Refusal{Access: "connect", Destination: c.Destination.String(), Program: c.Program, Profile: c.Profile, Rule: c.Rule, Reason: c.Reason}
	if c.Address != "" && c.Address != c.Host {
		r.Address = c.Address
	}
	if eg.notify != nil {
		eg.notify(r)
	}
	eg.mu.Lock()
	defer eg.mu.Unlock()
	if h, ok := st.hints[r.Destination]; ok {
		r.hint = h
		delete(st.hints, r.Destination)
	}
	call = st.liveLocked(call)
	if call != nil {
		if len(call.refused) < maxRefusals {
			call.refused = append(call.refused, r)
		} else {
			call.dropped++
		}
		return
	}
	if len(st.pending) < maxRefusals {
		st.pending = append(st.pending, r)
	} else {
		st.dropped++
	}
}

// refusedText is the line a result's text fallback gets for each refusal.
func refusedText(rs []Refusal, dropped int) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("[sandbox refused: " + r.String() + "]" + r.hint + "\n")
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "[sandbox refused %d more; the audit log has them all]\n", dropped)
	}
	return b.String()
}

// readEgressHosts reads --egress-hosts: hosts(5) lines, an address and
// the names the proxy resolves to it before DNS.
func readEgressHosts(path string) (map[string][]netip.Addr, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--egress-hosts: %w", err)
	}
	defer f.Close()
	out := map[string][]netip.Addr{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || len(f) < 2 {
			return nil, fmt.Errorf("--egress-hosts %s:%d: want an address and names", path, n)
		}
		for _, name := range f[1:] {
			name = strings.TrimSuffix(strings.ToLower(name), ".")
			out[name] = append(out[name], a)
		}
	}
	return out, sc.Err()
}
