package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHeadScanner(t *testing.T) {
	for _, c := range []struct {
		in, id, method string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9,"method":"x"}}`, `7`, "tools/call"},
		{`{"params":{"a":[1,{"id":3}]},"method":"ping","id":"abc"}`, `"abc"`, "ping"},
		{`{"id":1,"id":2}`, `2`, ""},
		{`{"id":1,"id":{"x":1}}`, ``, ""},
		{`{"id":null,"method":"notifications/x"}`, ``, "notifications/x"},
		{`{"i\u0064":5, "method" : "m"}`, `5`, "m"},
		{`{"jsonrpc":"2.0","id":2,"method":`, `2`, ""},
		{`{"x":"\"id\":4","id":-1.5e3}`, `-1.5e3`, ""},
		{`[{"id":1}]`, ``, ""},
		{`"id"`, ``, ""},
		{`{"id":"` + strings.Repeat("a", maxHeadValue) + `"}`, ``, ""},
		{`{"method":true}`, ``, ""},
	} {
		var s headScanner
		s.feed([]byte(c.in))
		id, method := s.result()
		if string(id) != c.id || method != c.method {
			t.Errorf("%s: id %s method %q, want %s %q", c.in, id, method, c.id, c.method)
		}
	}
}

// slowReader hands out its data n bytes at a time.
type slowReader struct {
	b []byte
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.b))
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}

// FuzzLineReader: the JSON-RPC line reader returns every line of at most
// its limit whole and never holds more; a longer line is reported by its
// exact size, with the id and method the head scanner finds in it whatever
// the chunking, and they are the top-level members encoding/json sees.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"id":"x","method":"tools/call","params":{"arguments":{"text":"`+strings.Repeat("y", 100)+`"}}}`+"\n"), uint16(64), uint8(3))
	f.Add([]byte("{\"params\":{\"id\":2},\"id\":3}\n\n{bad json\n[1,2]\n{\"id\":1,\"id\":{}}"), uint16(8), uint8(1))
	f.Add([]byte(`{"id":"\"}","method":"a\\"}`+"\r\n"), uint16(10), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, chunk uint8) {
		max := int(limit%512) + 1
		lr := newLineReader(&slowReader{b: data, n: int(chunk%23) + 1}, max, 16)
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for i, want := range lines {
			line, over, err := lr.next()
			last := i == len(lines)-1
			if err != nil && !(last && errors.Is(err, io.EOF) && !bytes.HasSuffix(want, []byte("\n"))) {
				t.Fatalf("line %d: error %v", i, err)
			}
			if len(want) <= max {
				if over != nil || !bytes.Equal(line, want) {
					t.Fatalf("line %d: got %q (over %+v), want %q", i, line, over, want)
				}
				continue
			}
			if over == nil || line != nil {
				t.Fatalf("line %d of %d bytes over the limit %d: got a line of %d bytes", i, len(want), max, len(line))
			}
			if over.size != int64(len(want)) {
				t.Fatalf("line %d: size %d, want %d", i, over.size, len(want))
			}
			var whole headScanner
			whole.feed(want)
			id, method := whole.result()
			if !bytes.Equal(id, over.id) || method != over.method {
				t.Fatalf("line %d: chunked scan found %s %q, whole %s %q", i, over.id, over.method, id, method)
			}
		}
		if line, over, err := lr.next(); len(line) != 0 || over != nil || !errors.Is(err, io.EOF) {
			t.Fatalf("after the last line: %q %+v %v", line, over, err)
		}
		// On valid JSON, the scanner agrees with encoding/json.
		for _, l := range lines {
			l = bytes.TrimSpace(l)
			var m map[string]json.RawMessage
			if !json.Valid(l) || json.Unmarshal(l, &m) != nil {
				continue
			}
			var s headScanner
			s.feed(l)
			id, method := s.result()
			wantID := m["id"]
			if len(wantID) > maxHeadValue || !validID(wantID) {
				wantID = nil
			}
			var wantMethod string
			if raw := m["method"]; len(raw) <= maxHeadValue {
				_ = json.Unmarshal(raw, &wantMethod)
			}
			if !bytes.Equal(id, wantID) || method != wantMethod {
				t.Fatalf("%q: scanner found %s %q, encoding/json %s %q", l, id, method, wantID, wantMethod)
			}
		}
	})
}

// TestOversizedMessages writes messages over the 16 MiB limit to the real
// binary: a call gets an error with its id (found after the big params),
// a notification gets nothing, and the server keeps serving.
func TestOversizedMessages(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("server stopped answering: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a non-JSON line %q", lines.Text())
		}
		return m
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	huge := strings.Repeat("z", 17<<20)
	send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"exec","arguments":{"command":"echo ` + huge + `"}},"id":"big-1"}`)
	m := next()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "big-1" || e["code"] != float64(jsonrpc.CodeInvalidParams) || !strings.Contains(fmt.Sprint(e["message"]), "--max-input") {
		t.Fatalf("17 MiB call: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + huge + `"}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{` + `"x":"` + huge + `"}}`)
	m = next() // the notification got nothing: this is the list's answer
	if e, _ := m["error"].(map[string]any); m["id"] != float64(2) || e["code"] != float64(jsonrpc.CodeInvalidRequest) {
		t.Fatalf("17 MiB request: %v", m)
	}
	// A message just under the limit is read whole, and answered.
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec","arguments":{"command":"echo ` + huge[:15<<20] + `"}}}`)
	m = next()
	if r, _ := m["result"].(map[string]any); m["id"] != float64(3) || r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "--max-input") {
		t.Fatalf("15 MiB call: %.500v", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if m := next(); m["id"] != float64(4) || m["result"] == nil {
		t.Fatalf("tools/list after the big messages: %.300v", m)
	}
}

// TestBigMessagesKeepTheConnection: a go-sdk client sending a 300 KiB
// and a 17 MiB input keeps its connection and its sessions; the first is
// an isError result naming --max-input, the second a JSON-RPC error.
func TestBigMessagesKeepTheConnection(t *testing.T) {
	s := startServer(t)
	id := s.start(nil)
	s.fails("session_send", map[string]any{"session_id": id, "text": strings.Repeat("x", 300<<10)}, "--max-input")
	s.fails("session_send", map[string]any{"session_id": id, "text": strings.Repeat("x", 2<<20)}, "--max-input")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_send", Arguments: map[string]any{"session_id": id, "text": strings.Repeat("x", 17<<20)}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "--max-input") {
		t.Fatalf("17 MiB input: %v", err)
	}
	wantOutput(t, s.send(id, "echo still-connected"), "still-connected")
}
