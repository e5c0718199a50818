package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type mcpReadParams = mcp.ReadResourceParams

// wantTools is DESIGN's tool table: every tool, and whether it is read-only.
var wantTools = map[string]bool{
	"session_start": false, "session_send": false, "session_keys": false, "session_read": true,
	"session_resize": false, "session_list": true, "session_info": true, "session_close": false, "exec": false,
}

func listTools(t *testing.T) []*mcp.Tool {
	s := startServer(t)
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

func TestToolTableAnnotations(t *testing.T) {
	tools := listTools(t)
	if len(tools) != len(wantTools) {
		t.Fatalf("%d tools, want %d", len(tools), len(wantTools))
	}
	for _, tool := range tools {
		readOnly, ok := wantTools[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || a.Title == "" {
			t.Errorf("%s: annotations not set explicitly: %+v", tool.Name, a)
			continue
		}
		if a.ReadOnlyHint != readOnly {
			t.Errorf("%s: readOnlyHint = %v, want %v", tool.Name, a.ReadOnlyHint, readOnly)
		}
		if readOnly && *a.DestructiveHint {
			t.Errorf("%s: read-only and destructive", tool.Name)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
}

// TestToolSnapshots compares each tool's schema with its golden file.
// UPDATE_TOOLSNAPS=1 go test ./cmd/termgate -run TestToolSnapshots rewrites them.
func TestToolSnapshots(t *testing.T) {
	for _, tool := range listTools(t) {
		got, err := json.MarshalIndent(tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "toolsnaps", tool.Name+".json")
		if os.Getenv("UPDATE_TOOLSNAPS") != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no snapshot (%v); run with UPDATE_TOOLSNAPS=1 and review the diff", tool.Name, err)
			continue
		}
		if string(want) != string(got) {
			t.Errorf("%s: schema changed from %s; if intended, run with UPDATE_TOOLSNAPS=1 and review the diff.\ngot:\n%s", tool.Name, path, got)
		}
	}
}

func TestCapOutput(t *testing.T) {
	short := "a\nb"
	if got, cut := capOutput(short, 200, "s-x"); got != short || cut {
		t.Fatalf("short text changed: %q %v", got, cut)
	}
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strings.Repeat("é", i%7) + "line\n")
	}
	long := b.String()
	got, cut := capOutput(long, 1000, "s-x")
	if !cut || len([]rune(got)) > 1000 {
		t.Fatalf("capped to %d runes (cut=%v), want ≤ 1000", len([]rune(got)), cut)
	}
	if !strings.HasPrefix(long, strings.SplitN(got, "[...", 2)[0]) {
		t.Fatal("head is not the text's head")
	}
	tail := got[strings.Index(got, "...]\n")+5:]
	if !strings.HasSuffix(long, tail) || !strings.Contains(got, `"session_id":"s-x"`) {
		t.Fatalf("tail is not the text's tail: %q", tail)
	}
}

func TestConfigEnvTwins(t *testing.T) {
	env := map[string]string{"TERMGATE_MAX_SESSIONS": "7", "TERMGATE_IDLE_TIMEOUT": "5m", "TERMGATE_MAX_OUTPUT": "900"}
	c, _, err := parseConfig("t", []string{"--max-output", "800"}, func(k string) string { return env[k] }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSessions != 7 || c.IdleTimeout.String() != "5m0s" || c.MaxOutput != 800 {
		t.Fatalf("config = %+v: want env twins applied and the flag winning", c)
	}
	if _, _, err := parseConfig("t", []string{"--max-sessions", "0"}, func(string) string { return "" }, os.Stderr); err == nil {
		t.Fatal("--max-sessions 0 accepted")
	}
	if _, _, err := parseConfig("t", nil, func(k string) string {
		if k == "TERMGATE_QUIET" {
			return "soon"
		}
		return ""
	}, os.Stderr); err == nil || !strings.Contains(err.Error(), "TERMGATE_QUIET") {
		t.Fatalf("bad env twin: err = %v", err)
	}
}
