package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// panicky is a Decider that panics on a text holding its marker, and
// otherwise asks the real engine.
type panicky struct {
	Decider
	marker string
}

func (p panicky) Decide(ctx context.Context, in GateInput) (Decision, error) {
	if strings.Contains(in.Text, p.marker) {
		panic("injected panic in the policy decision: " + in.Text)
	}
	return p.Decider.Decide(ctx, in)
}

// TestPanicsAreRecovered injects panics on a request's path: in a tool
// handler, in a resource handler, and in the policy decision (at the gate,
// and at Enter from inside a session's send). Each becomes an isError
// result or a JSON-RPC internal error with an incident id, a tool_error
// audit record, and a stack in the server log, never in the answer; the
// server keeps serving, and the session in use keeps working.
func TestPanicsAreRecovered(t *testing.T) {
	var armed sync.Map // where → true: panic there once
	m := startMem(t, memOptions{tweak: func(g *gateway) {
		g.testOnlyPanic = func(where string) {
			if _, ok := armed.LoadAndDelete(where); ok {
				panic("injected panic at " + where)
			}
		}
		g.stages.Decider = panicky{Decider: g.stages.Decider, marker: "PANIC-IN-POLICY"}
	}})
	id, dir := m.start(nil)
	noStack := func(what, text string) {
		t.Helper()
		if strings.Contains(text, "goroutine ") || strings.Contains(text, ".go:") || strings.Contains(text, "injected panic") {
			t.Fatalf("%s: the answer holds the stack or the panic's value: %q", what, text)
		}
		if !strings.Contains(text, "internal error") || !strings.Contains(text, "incident ") {
			t.Fatalf("%s: %q does not say it was an internal error with an incident id", what, text)
		}
	}

	// A tool handler.
	armed.Store("tool session_list", true)
	res := m.call("session_list", nil)
	if !res.IsError {
		t.Fatalf("session_list with a panic: %s", resultText(res))
	}
	noStack("tool", resultText(res))

	// A resource handler: a JSON-RPC internal error.
	uri := "termgate://sessions/" + id + "/screen"
	armed.Store("resource "+uri, true)
	_, err := m.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInternalError {
		t.Fatalf("resource read with a panic: err = %v, want a JSON-RPC internal error", err)
	}
	noStack("resource", we.Message)

	// The policy decision at the gate: refused, with the decision.
	res = m.call("session_send", map[string]any{"session_id": id, "text": "echo PANIC-IN-POLICY"})
	if !res.IsError || !strings.Contains(resultText(res), "policy.error") || !strings.Contains(resultText(res), "nothing was sent") {
		t.Fatalf("send with a panicking decision: %s", resultText(res))
	}
	if d, _ := structured(t, res)["decision"].(map[string]any); d["action"] != "deny" || d["rule"] != "policy.error" {
		t.Fatalf("decision: %v", structured(t, res)["decision"])
	}

	// The judge at Enter, called from inside the session's send: the line
	// typed key by key is refused and cleared, and the session still works.
	canary := filepath.Join(dir, "canary")
	keys := []string{}
	for _, c := range "touch " + canary + " # PANIC-IN-POLICY" {
		keys = append(keys, strings.ReplaceAll(string(c), " ", "space"))
	}
	res = m.call("session_keys", map[string]any{"session_id": id, "keys": append(keys, "enter")})
	if !res.IsError || !strings.Contains(resultText(res), "policy.error") {
		t.Fatalf("keys with a panicking judge: %s", resultText(res))
	}
	wantOutput(t, m.ok("session_send", map[string]any{"session_id": id, "text": "echo still-serving"}), "still-serving")
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("the line refused at Enter ran")
	}
	if out := m.ok("session_list", nil); len(out["sessions"].([]any)) != 1 {
		t.Fatalf("session_list after the panics: %v", out)
	}

	// Each panic is in the audit log and in the server log with its stack.
	panics := 0
	for _, r := range records(m.auditRecords(), "event.action", "tool-error") {
		if msg, _ := field(r, "error.message").(string); strings.Contains(msg, "internal error (panic)") && strings.Contains(msg, "incident ") {
			panics++
		}
	}
	if panics != 4 {
		t.Fatalf("%d tool_error records of a panic, want 4 (tool, resource, gate, Enter)", panics)
	}
	log := m.log.String()
	if n := strings.Count(log, "recovered from a panic"); n != 4 {
		t.Fatalf("%d panics in the server log, want 4:\n%s", n, log)
	}
	if !strings.Contains(log, "testPanicPoint") || !strings.Contains(log, "panicky.Decide") {
		t.Fatalf("the server log lacks the stacks:\n%s", log)
	}
}

// TestRefusalsCarryTheirDecision: every refused input is an isError
// result whose structured content holds the decision, and whose text says
// what kind of refusal it was, once.
func TestRefusalsCarryTheirDecision(t *testing.T) {
	m := startMem(t, memOptions{})
	id, dir := m.start(nil)
	decision := func(what string, res *mcp.CallToolResult, rule string) map[string]any {
		t.Helper()
		out := structured(t, res)
		d, _ := out["decision"].(map[string]any)
		if d["action"] != "deny" || d["rule"] != rule || d["reason"] == "" || d["severity"] == "" {
			t.Fatalf("%s: decision %v, want a deny by %s with reason and severity", what, out["decision"], rule)
		}
		if strings.Contains(resultText(res), "refused: refused:") {
			t.Fatalf("%s: %q", what, resultText(res))
		}
		return out
	}
	res := m.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf /"}, "refused: denied by fs.rm_protected")
	out := decision("send", res, "fs.rm_protected")
	if str(out, "session_id") != id || out["alive"] != true || str(out, "program") != "bash" {
		t.Fatalf("send: the refusal does not describe the session: %v", out)
	}

	res = m.fails("exec", map[string]any{"command": "rm -rf / --no-preserve-root"}, "denied by")
	if out := decision("exec", res, "fs.rm_no_preserve_root"); exitCode(t, out) != -1 {
		t.Fatalf("exec: a refused command's exit code is %v, want -1", out["exit_code"])
	}

	res = m.fails("session_start", map[string]any{"command": "rm -rf / --no-preserve-root; exec bash"}, "denied by fs.rm_no_preserve_root")
	if out := decision("start", res, "fs.rm_no_preserve_root"); len(out["stages"].(map[string]any)) == 0 {
		t.Fatalf("start: %v", out)
	}

	// At Enter, typed key by key: one "refused:", the decision, and the
	// line cleared.
	canary := filepath.Join(dir, "x")
	keys := []string{}
	for _, c := range "rm -rf /" {
		keys = append(keys, string(c))
	}
	res = m.fails("session_keys", map[string]any{"session_id": id, "keys": append(keys, "enter")}, "refused: the line at Enter, \"rm -rf /\", was denied by fs.rm_protected")
	decision("keys", res, "fs.rm_protected")
	wantOutput(t, m.ok("session_send", map[string]any{"session_id": id, "text": "echo after > " + canary + "; cat " + canary}), "after")
}

// TestRefusedConfirmationSaysSo: a confirmation the human declines, or
// that cannot be asked, reads "not confirmed", not "denied by".
func TestRefusedConfirmationSaysSo(t *testing.T) {
	target := filepath.Join(t.TempDir(), "f")
	os.WriteFile(target, []byte("x"), 0o644)
	cmd := "chmod 777 " + target
	for _, c := range []struct {
		name   string
		client *mcp.ClientOptions
		want   string
	}{
		{"declined", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}, `not confirmed: the human chose "decline". Rule perm.world_writable asks a human before this runs`},
		{"not approved", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
		}}, "not confirmed: the human did not approve."},
		{"cannot ask", nil, "not confirmed: the client cannot ask a human (no elicitation support)."},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := startMem(t, memOptions{client: c.client})
			id, _ := m.start(nil)
			res := m.fails("session_send", map[string]any{"session_id": id, "text": cmd}, c.want)
			text := resultText(res)
			if strings.Contains(text, "denied by") || !strings.HasSuffix(text, "nothing was sent") {
				t.Fatalf("%q", text)
			}
			if d, _ := structured(t, res)["decision"].(map[string]any); d["rule"] != "perm.world_writable" || d["action"] != "deny" {
				t.Fatalf("decision: %v", d)
			}
			if modeOf(t, target) != 0o644 {
				t.Fatal("ran without a confirmation")
			}
		})
	}
}

func TestKeysTypeASpace(t *testing.T) {
	m := startMem(t, memOptions{})
	id, _ := m.start(nil)
	r := m.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"e", "c", "h", "o", " ", "a", " ", "b", "enter"}})
	wantOutput(t, r, "a b")
	m.fails("session_keys", map[string]any{"session_id": id, "keys": []string{"\x03"}}, "unknown key")
}

// TestProgressNotifications: a call with a progress token gets progress
// reports while it runs, with the output so far (redacted), its size and
// the time elapsed, and none after its result.
func TestProgressNotifications(t *testing.T) {
	var (
		mu      sync.Mutex
		reports []*mcp.ProgressNotificationParams
	)
	token := fakeToken()
	seen := make(chan struct{}, 1)
	m := startMem(t, memOptions{client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			reports = append(reports, req.Params)
			mu.Unlock()
			if strings.Contains(req.Params.Message, "step-one") {
				select {
				case seen <- struct{}{}:
				default:
				}
			}
		},
	}})
	id, dir := m.start(nil)
	gate := filepath.Join(dir, "go-on")
	params := &mcp.CallToolParams{Name: "session_send", Arguments: map[string]any{
		"session_id": id, "timeout_ms": 120000,
		"text": "echo step-one " + token + "; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo step-two",
	}}
	params.SetProgressToken("tok-1")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := m.cs.CallTool(context.Background(), params)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-seen:
	case res := <-done:
		t.Fatalf("the call ended before any progress was reported: %v", res)
	case <-time.After(time.Minute):
		t.Fatal("no progress report shows the output so far")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.IsError {
		t.Fatalf("the call failed: %v", res)
	}
	wantOutput(t, structured(t, res), "step-one [REDACTED:github-pat:"+redactTag(t, structured(t, res))+"]\nstep-two")
	mu.Lock()
	n := len(reports)
	last := 0.0
	for _, p := range reports {
		if p.ProgressToken != "tok-1" || p.Progress <= last {
			t.Fatalf("report %+v: wrong token, or progress does not grow", p)
		}
		last = p.Progress
		if strings.Contains(p.Message, token) {
			t.Fatalf("a progress report leaks the secret: %q", p.Message)
		}
		if !strings.Contains(p.Message, "bytes of output so far") || !strings.Contains(p.Message, "running for") {
			t.Fatalf("report: %q", p.Message)
		}
	}
	mu.Unlock()
	// Nothing follows the result: another call, without a token, gets none.
	wantOutput(t, m.ok("session_send", map[string]any{"session_id": id, "text": "sleep 0.7; echo quiet"}), "quiet")
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != n {
		t.Fatalf("%d progress reports after the result, or for a call without a token", len(reports)-n)
	}
}

// redactTag is the 4-hex tag of the one placeholder in a result's output.
func redactTag(t *testing.T, out map[string]any) string {
	t.Helper()
	o := str(out, "output")
	i := strings.Index(o, "[REDACTED:github-pat:")
	if i < 0 {
		t.Fatalf("no placeholder in %q", o)
	}
	rest := o[i+len("[REDACTED:github-pat:"):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		t.Fatalf("no placeholder in %q", o)
	}
	return rest[:j]
}

func TestSetLevel(t *testing.T) {
	m := startMem(t, memOptions{})
	ctx := context.Background()
	err := m.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "verbose"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("setLevel verbose: %v, want invalid params", err)
	}
	if err := m.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatalf("setLevel warning: %v", err)
	}
}

// TestErrorCodesAreNeverZero sends requests the SDK answers with a plain
// error (encoded as code 0 on its own) and others; every error response
// has the code that fits it.
func TestErrorCodesAreNeverZero(t *testing.T) {
	var conn mcp.Connection
	startMem(t, memOptions{raw: true, conn: func(tr mcp.Transport) {
		var err error
		if conn, err = tr.Connect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}})
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	next := int64(0)
	ask := func(method, params string) *jsonrpc.Response {
		t.Helper()
		next++
		id, _ := jsonrpc.MakeID(float64(next))
		req := &jsonrpc.Request{ID: id, Method: method}
		if params != "" {
			req.Params = json.RawMessage(params)
		}
		if err := conn.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
				return r
			}
		}
	}
	code := func(r *jsonrpc.Response) int64 {
		var we *jsonrpc.Error
		if !errors.As(r.Error, &we) {
			return 0
		}
		return we.Code
	}
	for _, c := range []struct {
		method, params string
		want           int64
	}{
		{"tools/list", `{}`, jsonrpc.CodeInvalidRequest}, // before initialize
		{"initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`, 0},
		{"tools/call", `{"name":42}`, jsonrpc.CodeInvalidParams},
		{"resources/read", `{"uri":["x"]}`, jsonrpc.CodeInvalidParams},
		{"tools/call", `{"name":"no_such_tool","arguments":{}}`, jsonrpc.CodeInvalidParams},
		{"resources/read", `{"uri":"termgate://sessions/s-NOPE/screen"}`, mcp.CodeResourceNotFound},
		{"no/such/method", `{}`, jsonrpc.CodeMethodNotFound},
		{"logging/setLevel", `{"level":"loud"}`, jsonrpc.CodeInvalidParams},
	} {
		r := ask(c.method, c.params)
		if c.want == 0 {
			if r.Error != nil {
				t.Fatalf("%s: %v", c.method, r.Error)
			}
			continue
		}
		if r.Error == nil || code(r) != c.want {
			t.Errorf("%s %s: error %v (code %d), want code %d", c.method, c.params, r.Error, code(r), c.want)
		}
	}
}

// TestOversizedToolInput: a tool call over --max-input is an isError
// result that names the limit, and nothing is sent.
func TestOversizedToolInput(t *testing.T) {
	m := startMem(t, memOptions{flags: []string{"--max-input", "1024"}})
	id, dir := m.start(nil)
	big := strings.Repeat("x", 300<<10)
	m.fails("session_send", map[string]any{"session_id": id, "text": "echo " + big}, "--max-input")
	m.fails("session_send", map[string]any{"session_id": id, "text": "echo " + big[:2000]}, "over the limit of 1024 (--max-input)")
	m.fails("exec", map[string]any{"command": "echo " + big}, "--max-input")
	m.fails("session_start", map[string]any{"cwd": dir, "env": map[string]string{"BIG": big}}, "--max-input")
	hist := str(m.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback"}), "output")
	if strings.Contains(hist, "xxxx") {
		t.Fatal("an input over the limit reached the terminal")
	}
}
