package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The in-memory harness serves the gateway that serve builds (assemble:
// the real policy engine, redactor, confirmation and audit log, in a
// temporary directory) to a go-sdk client over mcp.NewInMemoryTransports,
// through the same middleware and protocol transport as stdio. Sessions
// are real (this test binary is their sandbox launcher, see TestMain);
// only the process boundary and the line transport are left out, so the
// pipeline's rules are tested in milliseconds.

// TestInMemoryRoundTrip: a real session through the in-memory harness,
// with the policy deciding and the audit log recording.
func TestInMemoryRoundTrip(t *testing.T) {
	m := startMem(t, memOptions{})
	id, _ := m.start(nil)
	r := m.ok("session_send", map[string]any{"session_id": id, "text": "echo in-memory"})
	wantOutput(t, r, "in-memory")
	if d, _ := r["decision"].(map[string]any); d["action"] != "allow" {
		t.Fatalf("decision: %v", r["decision"])
	}
	if n := len(records(m.auditRecords(), "termgate.decision.action", "allow")); n < 2 {
		t.Fatalf("%d allow decisions in the audit log, want the start's and the send's", n)
	}
}

// memServer is a gateway served in this process, with a connected client.
type memServer struct {
	t     *testing.T
	gw    *gateway
	cs    *mcp.ClientSession
	log   *lockedWriter // the server's log
	audit string        // the audit log's path
	home  string        // the gateway's HOME: its state (audit key) lives here
}

// memOptions adjust an in-memory server.
type memOptions struct {
	flags  []string            // serve's flags
	client *mcp.ClientOptions  // the client's options (an elicitation handler, say)
	tweak  func(g *gateway)    // called before the server is built (test hooks)
	raw    bool                // connect no client: the test drives the transport itself (memServer.conn)
	conn   func(mcp.Transport) // with raw: receives the client's end
}

// startMem builds and serves a gateway in this process.
func startMem(t *testing.T, o memOptions) *memServer {
	t.Helper()
	home := t.TempDir()
	getenv := homeEnv(home)
	cfg, rest, err := parseConfig("termgate-test", o.flags, func(string) string { return "" }, io.Discard)
	if err != nil || len(rest) > 0 {
		t.Fatalf("flags %q: %v (left %q)", o.flags, err, rest)
	}
	if cfg.AuditLog == "" {
		cfg.AuditLog = filepath.Join(home, "audit.jsonl")
	}
	logw := &lockedWriter{b: &strings.Builder{}}
	logger := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	gw, auditor, _, err := assemble(ctx, cfg, logger, getenv)
	if err != nil {
		t.Fatalf("assembling the gateway: %v", err)
	}
	env := []string{"HOME=" + home}
	for _, kv := range gw.env {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	gw.env = env
	if o.tweak != nil {
		o.tweak(gw)
	}
	m := &memServer{t: t, gw: gw, log: logw, audit: cfg.AuditLog, home: home}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := gw.server().Connect(ctx, protocolTransport{Transport: st, log: logger, dropped: gw.droppedResult}, nil)
	if err != nil {
		t.Fatalf("serving: %v", err)
	}
	t.Cleanup(func() {
		if m.cs != nil {
			_ = m.cs.Close()
		}
		_ = ss.Close()
		_ = ss.Wait()
		if err := gw.shutdown(); err != nil {
			t.Errorf("closing sessions: %v", err)
		}
		if auditor != nil {
			if err := auditor.close(); err != nil {
				t.Errorf("closing the audit log: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logw.String())
		}
	})
	if o.raw {
		o.conn(ct)
		return m
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-test", Version: "1"}, o.client)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if m.cs, err = client.Connect(cctx, ct, nil); err != nil {
		t.Fatalf("connecting: %v", err)
	}
	return m
}

// homeEnv is the environment a gateway built in this process reads: this
// process's, with home as HOME and the XDG state and config directories
// unset, so that its state (the audit key) lives under home.
func homeEnv(home string) func(string) string {
	return func(k string) string {
		switch k {
		case "HOME":
			return home
		case "XDG_STATE_HOME", "XDG_CONFIG_HOME":
			return ""
		}
		return os.Getenv(k)
	}
}

// brief shows a call's arguments in a failure message, cut short.
func brief(args map[string]any) string {
	s := fmt.Sprint(args)
	if len(s) > 300 {
		s = s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// call calls a tool; a protocol error fails the test.
func (m *memServer) call(name string, args map[string]any) *mcp.CallToolResult {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("%s(%s): protocol error: %v", name, brief(args), err)
	}
	return res
}

// ok calls a tool that must succeed and returns its structured content.
func (m *memServer) ok(name string, args map[string]any) map[string]any {
	m.t.Helper()
	res := m.call(name, args)
	if res.IsError {
		m.t.Fatalf("%s(%s) failed: %s", name, brief(args), resultText(res))
	}
	return structured(m.t, res)
}

// fails calls a tool that must fail with an isError result mentioning
// want, and returns the result.
func (m *memServer) fails(name string, args map[string]any, want string) *mcp.CallToolResult {
	m.t.Helper()
	res := m.call(name, args)
	if !res.IsError {
		m.t.Fatalf("%s(%s) = success %q, want an error mentioning %q", name, brief(args), resultText(res), want)
	}
	if !strings.Contains(resultText(res), want) {
		m.t.Fatalf("%s(%s) error = %q, want it to mention %q", name, brief(args), resultText(res), want)
	}
	return res
}

// start starts a session in a fresh directory and returns its id and
// directory.
func (m *memServer) start(args map[string]any) (string, string) {
	m.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	dir, _ := args["cwd"].(string)
	if dir == "" {
		dir = m.t.TempDir()
		args["cwd"] = dir
	}
	out := m.ok("session_start", args)
	id := str(out, "session_id")
	if id == "" {
		m.t.Fatalf("session_start returned no session_id: %v", out)
	}
	return id, dir
}

// auditRecords reads the audit log's records.
func (m *memServer) auditRecords() []map[string]any {
	m.t.Helper()
	return readRecords(m.t, m.audit)
}

// records are the audit records whose field has the value.
func records(recs []map[string]any, path string, value any) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if field(r, path) == value {
			out = append(out, r)
		}
	}
	return out
}
