package main

import (
	"context"
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

// wireTap records what a client writes and reads on the wire.
type wireTap struct {
	mu    sync.Mutex
	calls map[jsonrpc.ID]string // request id → its params, as written
	got   []jsonrpc.ID          // ids of the responses read
}

func (w *wireTap) wrap(t mcp.Transport) mcp.Transport { return tapTransport{t, w} }

type tapTransport struct {
	mcp.Transport
	w *wireTap
}

func (t tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return tapConn{c, t.w}, nil
}

type tapConn struct {
	mcp.Connection
	w *wireTap
}

func (c tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok {
		c.w.mu.Lock()
		c.w.got = append(c.w.got, r.ID)
		c.w.mu.Unlock()
	}
	return msg, err
}

func (c tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		c.w.mu.Lock()
		if c.w.calls == nil {
			c.w.calls = map[jsonrpc.ID]string{}
		}
		c.w.calls[r.ID] = string(r.Params)
		c.w.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// callWith returns the id of the call whose params hold s.
func (w *wireTap) callWith(s string) (jsonrpc.ID, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, p := range w.calls {
		if strings.Contains(p, s) {
			return id, true
		}
	}
	return jsonrpc.ID{}, false
}

func (w *wireTap) answered(id jsonrpc.ID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.got {
		if g == id {
			return true
		}
	}
	return false
}

// TestCancelledCallGetsNoResponse cancels a session_send while its
// command runs: the server sends no response to the cancelled call (per
// the protocol), the command keeps running, its output is not in the next
// call's result, and session_read shows it.
func TestCancelledCallGetsNoResponse(t *testing.T) {
	tap := &wireTap{}
	s := startServerVia(t, nil, tap.wrap)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	mk := marker()
	line := "touch running; while [ ! -e go-on ]; do sleep 0.05; done; echo late-" + mk
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_send", Arguments: map[string]any{"session_id": id, "text": line, "timeout_ms": 120000}})
		errc <- err
	}()
	eventually(t, time.Minute, "the command runs", func() bool {
		_, err := os.Stat(filepath.Join(dir, "running"))
		return err == nil
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	callID, ok := tap.callWith("late-" + mk)
	if !ok {
		t.Fatal("the call is not on the wire")
	}
	eventually(t, time.Minute, "the server ends the cancelled call", func() bool {
		return tap.answered(callID) || strings.Contains(s.logText(), "the client cancelled a call: no response sent")
	})
	if tap.answered(callID) {
		t.Fatalf("the cancelled call %v got a response", callID.Raw())
	}
	// The command still runs: let it finish, and read what it printed.
	if err := os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.ok("session_read", map[string]any{"session_id": id, "timeout_ms": 60000})
	if !strings.Contains(str(r, "output"), "late-"+mk) || str(r, "completion") != "command_finished" {
		t.Fatalf("session_read after the cancelled call: %v", r)
	}
	wantOutput(t, s.send(id, "echo next-call"), "next-call")
	if tap.answered(callID) {
		t.Fatalf("the cancelled call %v got a response", callID.Raw())
	}
}

// A session_start the client cancels leaves no session running: the agent
// never learned its id, so nothing else would use or close it.
func TestCancelledStartClosesItsSession(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_start", Arguments: map[string]any{
			"cwd": dir, "command": "touch started; while [ ! -e go-on ]; do sleep 0.05; done; exec bash", "timeout_ms": 120000,
		}})
		errc <- err
	}()
	eventually(t, time.Minute, "the session's program runs", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	eventually(t, time.Minute, "no session is left alive", func() bool {
		r := s.ok("session_list", map[string]any{})
		list, _ := r["sessions"].([]any)
		for _, x := range list {
			if m, _ := x.(map[string]any); m["alive"] == true {
				return false
			}
		}
		return true
	})
}
