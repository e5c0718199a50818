package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/session"
)

// The protocol rules the SDK leaves to the server, kept in one place:
//
//   - Nothing a request does takes the server down. A receiving middleware
//     around every method turns a panic into an isError result (tools/call)
//     or a JSON-RPC internal error (any other method), with a tool_error
//     audit record; the stack goes to the server log, never to the agent.
//     guard does the same around each tool handler, with the call's own
//     context, and the policy decision fails closed on a panic (a deny), so
//     that a line judged at Enter is cleared, not left typed. This is a
//     safety net: a panic is still a bug, and the log says where.
//   - A request the client cancelled (notifications/cancelled) gets no
//     response, as the protocol asks; what it started keeps running (a
//     command's output stays for session_read).
//   - An error response never carries code 0: the SDK answers some failures
//     (params it cannot unmarshal, a call before initialization, an output
//     it cannot validate) with a plain error, which it encodes as code 0.
//   - logging/setLevel with a level the protocol does not define is invalid
//     params (-32602), not silently kept.
//   - A call that carries a progress token gets notifications/progress while
//     it runs (at most every progressEvery): seconds elapsed, bytes of
//     output so far, and the last lines the terminal shows, redacted.

// protocolTransport wraps the transport the server runs on.
type protocolTransport struct {
	mcp.Transport
	log *slog.Logger
	// dropped, when set, is told about a result that was not sent because
	// the client cancelled its call (a session it started is then closed:
	// the agent never learned its id).
	dropped func(tool string, result json.RawMessage)
}

// Connect implements [mcp.Transport].
func (t protocolTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &protocolConn{Connection: c, log: t.log, dropped: t.dropped, calls: map[jsonrpc.ID]*inCall{}}, nil
}

// protocolConn tracks the calls it read until they are answered: a call the
// client cancels is not answered, and no answer carries error code 0.
type protocolConn struct {
	mcp.Connection
	log     *slog.Logger
	dropped func(tool string, result json.RawMessage)

	mu    sync.Mutex
	calls map[jsonrpc.ID]*inCall // read and not yet answered; bounded by the calls in flight
}

type inCall struct {
	method    string
	tool      string // tools/call: the tool's name
	cancelled bool
}

const methodCancelled = "notifications/cancelled"

// Read implements [mcp.Connection].
func (c *protocolConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, err
	}
	switch {
	case req.IsCall():
		c.mu.Lock()
		if _, dup := c.calls[req.ID]; !dup {
			call := &inCall{method: req.Method}
			if req.Method == "tools/call" {
				var p struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(req.Params, &p) == nil {
					call.tool = p.Name
				}
			}
			c.calls[req.ID] = call
		}
		c.mu.Unlock()
	case req.Method == methodCancelled:
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			break
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
			c.mu.Lock()
			if call := c.calls[id]; call != nil {
				call.cancelled = true
			}
			c.mu.Unlock()
		}
	}
	return msg, err
}

// Write implements [mcp.Connection].
func (c *protocolConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	c.mu.Lock()
	call := c.calls[resp.ID]
	delete(c.calls, resp.ID)
	c.mu.Unlock()
	method := ""
	if call != nil {
		method = call.method
		if call.cancelled {
			if c.log != nil {
				c.log.Info("the client cancelled a call: no response sent", "id", resp.ID.Raw(), "method", method)
			}
			if c.dropped != nil && call.tool != "" && resp.Error == nil {
				c.dropped(call.tool, resp.Result)
			}
			return nil
		}
	}
	if resp.Error != nil {
		msg = withErrorCode(resp, method)
	}
	return c.Connection.Write(ctx, msg)
}

// withErrorCode gives an error response without a JSON-RPC code the one
// that fits it.
func withErrorCode(resp *jsonrpc.Response, method string) *jsonrpc.Response {
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) && we.Code != 0 {
		return resp
	}
	text := resp.Error.Error()
	code := int64(jsonrpc.CodeInternalError)
	switch {
	case method != "" && strings.HasPrefix(text, "handling '"+method+"'"):
		code = jsonrpc.CodeInvalidParams // the SDK could not unmarshal the params
	case strings.Contains(text, "invalid during session initialization"):
		code = jsonrpc.CodeInvalidRequest
	}
	out := *resp
	e := &jsonrpc.Error{Code: code, Message: text}
	if we != nil {
		e.Data = we.Data
	}
	out.Error = e
	return &out
}

// loggingLevels are the levels logging/setLevel may set.
var loggingLevels = map[mcp.LoggingLevel]bool{
	"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true,
}

// middleware is the receiving middleware around every method.
func (g *gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = g.recoveredMethod(ctx, method, req, r)
			}
		}()
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && !loggingLevels[p.Level] {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: %q is not a logging level (debug, info, notice, warning, error, critical, alert, emergency)", p.Level)}
			}
		}
		return next(ctx, method, req)
	}
}

// recoveredMethod answers a method whose handling panicked.
func (g *gateway) recoveredMethod(ctx context.Context, method string, req mcp.Request, r any) (mcp.Result, error) {
	where := method
	if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
		where += " " + ct.Params.Name
	}
	msg := g.panicked(ctx, where, r, GateInput{})
	if method == "tools/call" {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// panicked logs a recovered panic with its stack, records a tool_error,
// and returns what the client is told: that it happened, and an incident
// id to find it in the log, but not the stack or the panic's value.
func (g *gateway) panicked(ctx context.Context, where string, r any, in GateInput) string {
	id := incidentID()
	value := g.stages.redact(fmt.Sprint(r))
	g.log.Error("recovered from a panic; the server keeps serving", "incident", id, "in", where, "panic", value, "stack", string(debug.Stack()))
	ev := AuditEvent{Kind: KindToolError, Input: in, Err: fmt.Sprintf("internal error (panic) in %s, incident %s: %s", where, id, value)}
	if err := g.stages.record(ctx, ev); err != nil {
		g.log.Error("audit: recording a recovered panic", "incident", id, "err", err)
	}
	return fmt.Sprintf("internal error in %s (incident %s, in the server log); the server keeps serving. "+
		"If this was an input, whether it reached the terminal is unknown: session_read shows the session as it is", where, id)
}

func incidentID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testPanicPoint panics where a test asked it to (testOnlyPanic); it does
// nothing otherwise.
func (g *gateway) testPanicPoint(where string) {
	if g.testOnlyPanic != nil {
		g.testOnlyPanic(where)
	}
}

// ---- progress ----

// progressEvery is how often a long call reports its progress, at most.
const progressEvery = 500 * time.Millisecond

// progressHeartbeat is how often a call with no new output still reports.
const progressHeartbeat = 5 * time.Second

// progress sends notifications/progress for one call while it runs.
type progress struct {
	g     *gateway
	ss    *mcp.ServerSession
	token any
	start time.Time

	mu      sync.Mutex
	s       *session.Session
	bytes0  int64
	stopped bool

	stopc chan struct{}
	done  chan struct{}
}

type progressKey struct{}

// startProgress starts reporting the call's progress when the client asked
// for it with a progress token; it returns nil otherwise.
func (g *gateway) startProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	p := &progress{g: g, ss: req.Session, token: token, start: time.Now(), stopc: make(chan struct{}), done: make(chan struct{})}
	go p.run(ctx)
	return p
}

func progressOf(ctx context.Context) *progress {
	p, _ := ctx.Value(progressKey{}).(*progress)
	return p
}

// watch names the session whose output the call's progress reports.
func (p *progress) watch(s *session.Session) {
	if p == nil || s == nil {
		return
	}
	st := s.Status()
	p.mu.Lock()
	p.s, p.bytes0 = s, st.BytesOut
	p.mu.Unlock()
}

// stop ends the reports before the call's result goes out; no report
// follows the result.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.stopc)
	}
	p.mu.Unlock()
	<-p.done
}

func (p *progress) run(ctx context.Context) {
	defer close(p.done)
	defer func() {
		if r := recover(); r != nil {
			p.g.panicked(ctx, "progress report", r, GateInput{})
		}
	}()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	lastBytes := int64(-1)
	var lastSent time.Time
	for {
		select {
		case <-p.stopc:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, tail := p.snapshot()
		if n == lastBytes && time.Since(lastSent) < progressHeartbeat {
			continue
		}
		elapsed := time.Since(p.start)
		msg := fmt.Sprintf("running for %.1f s", elapsed.Seconds())
		if n >= 0 {
			msg += fmt.Sprintf("; %d bytes of output so far", n)
		}
		if tail != "" {
			msg += "; the terminal shows:\n" + tail
		}
		err := p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: p.token,
			Progress:      float64(elapsed.Milliseconds()) / 1000, // grows with every report
			Message:       msg,
		})
		if err != nil {
			return // the client is gone, or the call ended
		}
		lastBytes, lastSent = n, time.Now()
	}
}

// snapshot is the output so far of the watched session (-1 when there is
// none) and the last lines its terminal shows, redacted.
func (p *progress) snapshot() (int64, string) {
	p.mu.Lock()
	s, b0 := p.s, p.bytes0
	p.mu.Unlock()
	if s == nil {
		return -1, ""
	}
	n := s.Status().BytesOut - b0
	tail := strings.TrimRight(s.Scrollback(progressLines), " \n")
	tail = p.g.redactIn(s, tail)
	if len(tail) > progressChars {
		i := len(tail) - progressChars
		for i < len(tail) && !utf8.RuneStart(tail[i]) {
			i++
		}
		tail = "…" + tail[i:]
	}
	return n, tail
}

const (
	progressLines = 5
	progressChars = 1000
)
