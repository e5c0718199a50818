// Command termgate-demo is a scripted MCP client: it starts the termgate
// binary over stdio, drives a real bash and a real python session through it
// as an agent would, and prints a readable transcript.
//
//	go run ./cmd/termgate-demo path/to/termgate
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: termgate-demo path/to/termgate")
		os.Exit(2)
	}
	bin, err := filepath.Abs(os.Args[1])
	if err == nil {
		err = demo(bin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "termgate-demo:", err)
		os.Exit(1)
	}
}

type step struct {
	tool string
	args map[string]any
	note string
}

func demo(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp("", "termgate-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	cmd := exec.Command(bin)
	cmd.Dir = work
	cmd.Stderr = nil // the server's log is not part of the transcript
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-demo", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	names := make([]string, len(tools.Tools))
	for i, t := range tools.Tools {
		names[i] = t.Name
	}
	fmt.Printf("termgate over stdio · tools: %s\n\n", strings.Join(names, ", "))

	bash, err := run(ctx, cs, step{"session_start", map[string]any{"name": "shell"}, "a bash session with shell integration"})
	if err != nil {
		return err
	}
	for _, s := range []step{
		{"session_send", map[string]any{"session_id": "shell", "text": "echo hello from $SHELL; uname -s"}, "the output comes back without echo or prompt"},
		{"session_send", map[string]any{"session_id": "shell", "text": "ls /no/such/dir"}, "the exit code of each command"},
		{"session_send", map[string]any{"session_id": "shell", "text": "cd /tmp && export GREETING=persisted"}, "cd and env persist between calls"},
		{"session_send", map[string]any{"session_id": "shell", "text": "pwd; echo $GREETING"}, ""},
		{"session_send", map[string]any{"session_id": "shell", "text": "printf 'building 10%%\\rbuilding 60%%\\rbuilding 100%%\\n'"}, "\\r progress bars resolve as a human sees them"},
		{"session_send", map[string]any{"session_id": "shell", "text": "sleep 30", "timeout_ms": 300}, "a slow command returns complete:false"},
		{"session_keys", map[string]any{"session_id": "shell", "keys": []string{"ctrl+c"}}, "ctrl+c interrupts it: exit 130"},
		{"session_send", map[string]any{"session_id": "shell", "text": "seq 1 100000", "max_output": 600}, "long output keeps head and tail"},
	} {
		if _, err := run(ctx, cs, s); err != nil {
			return err
		}
	}
	py, err := run(ctx, cs, step{"session_start", map[string]any{"argv": []string{"python3", "-q"}, "name": "py"}, "a python REPL: completion by its prompt"})
	if err != nil {
		return err
	}
	for _, s := range []step{
		{"session_send", map[string]any{"session_id": "py", "text": "1+1"}, ""},
		{"session_send", map[string]any{"session_id": "py", "text": "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n"}, "multi-line input"},
		{"session_send", map[string]any{"session_id": "py", "text": "[fib(i) for i in range(12)]"}, ""},
		{"session_list", map[string]any{}, ""},
		{"session_close", map[string]any{"session_id": py}, "close: EOF, SIGHUP, SIGTERM, SIGKILL to the whole tree"},
		{"session_close", map[string]any{"session_id": bash}, ""},
	} {
		if _, err := run(ctx, cs, s); err != nil {
			return err
		}
	}
	fmt.Println("done: every session closed, no process left behind.")
	return nil
}

// run calls one tool and prints what an agent would see; it returns the
// session id of a session_start.
func run(ctx context.Context, cs *mcp.ClientSession, s step) (string, error) {
	if s.note != "" {
		fmt.Printf("# %s\n", s.note)
	}
	var args strings.Builder
	enc := json.NewEncoder(&args)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s.args)
	fmt.Printf("▶ %s %s\n", s.tool, strings.TrimSpace(args.String()))
	t0 := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", s.tool, err)
	}
	elapsed := time.Since(t0)
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	for _, line := range strings.Split(strings.TrimRight(text.String(), "\n"), "\n") {
		fmt.Printf("  %s\n", line)
	}
	fmt.Printf("  (%s)\n\n", elapsed.Round(10*time.Microsecond))
	if res.IsError {
		return "", fmt.Errorf("%s failed: %s", s.tool, text.String())
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out.SessionID, nil
}
