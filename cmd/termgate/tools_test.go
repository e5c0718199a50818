package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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

// hintRows is a cut hint as a session's gives: the rows of the cut lines.
func hintRows(a, b int) (string, *readCall) {
	c := logCall("s-x", int64(a), int64(b))
	return "read them with " + c.String(), c
}

func TestCapOutput(t *testing.T) {
	short := "a\nb"
	if got, cut, _ := capOutput(short, 200, hintRows); got != short || cut {
		t.Fatalf("short text changed: %q %v", got, cut)
	}
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "%s%d line\n", strings.Repeat("é", i%7), i)
	}
	long := b.String()
	got, cut, call := capOutput(long, 1000, hintRows)
	if !cut || len([]rune(got)) > 1000 {
		t.Fatalf("capped to %d runes (cut=%v), want ≤ 1000", len([]rune(got)), cut)
	}
	head, rest, _ := strings.Cut(got, "[...")
	if !strings.HasPrefix(long, head) {
		t.Fatal("head is not the text's head")
	}
	tail := rest[strings.Index(rest, "...]\n")+5:]
	if !strings.HasSuffix(long, tail) || !strings.Contains(got, `"session_id":"s-x","mode":"log"`) {
		t.Fatalf("tail is not the text's tail: %q", tail)
	}
	// The call names exactly the lines between head and tail.
	lines := strings.Split(strings.TrimSuffix(long, "\n"), "\n")
	shownHead := strings.Count(head, "\n")
	shownTail := strings.Count(tail, "\n") + 1
	if call == nil || call.Offset != int64(shownHead) || call.Offset+call.Lines != int64(len(lines)+1-shownTail) {
		t.Fatalf("call %+v for %d head and %d tail lines of %d", call, shownHead, shownTail, len(lines)+1)
	}
}

// Every cap from 1 up is honoured: never more characters than asked for,
// the marker included, and never a panic (max_output 250 on seq 1 1000 used
// to panic after the command had run).
func TestCapOutputEveryCap(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	text := strings.TrimSuffix(b.String(), "\n")
	for max := 1; max <= 400; max++ {
		got, cut, _ := capOutput(text, max, hintRows)
		if n := utf8.RuneCountInString(got); !cut || n > max {
			t.Fatalf("max %d: %d characters, cut %v", max, n, cut)
		}
	}
}

// FuzzCapOutput: capOutput never panics, never returns more than the cap,
// returns short text unchanged, and keeps a head and a tail of the text.
func FuzzCapOutput(f *testing.F) {
	f.Add("1\n2\n3\n", 2)
	f.Add(strings.Repeat("line\n", 300), 250)
	f.Add(strings.Repeat("日本語", 400), 30)
	f.Add("\xff\xfe\n\x00", 1)
	f.Fuzz(func(t *testing.T, text string, max int) {
		max = max%5000 + 1
		if max < 1 {
			max += 5000
		}
		got, cut, call := capOutput(text, max, hintRows)
		if n := utf8.RuneCountInString(got); n > max {
			t.Fatalf("max %d: %d characters", max, n)
		}
		if !cut {
			if got != text {
				t.Fatalf("uncut text changed")
			}
			return
		}
		if utf8.RuneCountInString(text) <= max {
			t.Fatalf("text within the cap was cut")
		}
		if call != nil && (call.Offset < 0 || call.Lines < 1 || call.Offset+call.Lines > int64(strings.Count(text, "\n")+2)) {
			t.Fatalf("call %+v for %d lines", call, strings.Count(text, "\n")+1)
		}
		if head, _, ok := strings.Cut(got, "[... "); ok && !strings.HasPrefix(text, strings.TrimSuffix(head, "\n")) {
			t.Fatalf("head %q is not the text's", head)
		}
		if i := strings.Index(got, " ...]\n"); i >= 0 && !strings.HasSuffix(text, got[i+6:]) {
			t.Fatalf("tail %q is not the text's", got[i+6:])
		}
	})
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
