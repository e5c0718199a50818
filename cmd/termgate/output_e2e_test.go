package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a human reads, through the real binary: grapheme clusters, wrapped
// lines, long output and its paging, and the caps on results.

// clusters is text whose characters are more than one code point each.
const clusters = "cafe\u0301 नमस्ते สวัสดีที่นี่ 👩\u200d💻 ❤\ufe0f 🇫🇷 \u1100\u1161\u11a8"

func TestCombiningCharactersEndToEnd(t *testing.T) {
	rec := t.TempDir()
	s := startServer(t, "--record-dir", rec)
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	file := filepath.Join(dir, "clusters.txt")
	if err := os.WriteFile(file, []byte(clusters+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// cat prints the bytes as they are; the decomposed é stays decomposed.
	wantOutput(t, s.send(id, "cat "+file), clusters)
	// The screen and the scrollback hold the same clusters.
	if scr := str(s.ok("session_read", map[string]any{"session_id": id, "mode": "screen"}), "output"); !strings.Contains(scr, clusters) {
		t.Fatalf("screen lacks the clusters:\n%s", scr)
	}
	if sb := str(s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback"}), "output"); !strings.Contains(sb, clusters+"\n") {
		t.Fatalf("scrollback lacks the clusters:\n%s", sb)
	}
	// In a narrow terminal the clusters wrap whole and join again.
	narrow := s.start(map[string]any{"cwd": dir, "cols": 11})
	wantOutput(t, s.send(narrow, "cat "+file), clusters)
	// The transcript and the recording agree.
	ctx := context.Background()
	res, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/transcript"})
	if err != nil || !strings.Contains(res.Contents[0].Text, clusters) {
		t.Fatalf("transcript: %v", err)
	}
	res, err = s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/recording"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `cafe\u0301`) && !strings.Contains(res.Contents[0].Text, "cafe\u0301") {
		t.Fatalf("recording lacks the decomposed é: %v", err)
	}
	// exec prints them too.
	if out := s.ok("exec", map[string]any{"command": "cat " + file, "cwd": dir}); strings.TrimSpace(str(out, "output")) != clusters {
		t.Fatalf("exec: %q", str(out, "output"))
	}
}

// A space that falls in the last column of a row is text: 'connect to
// server' must not come back as 'connect toserver', at any width.
func TestSpacesAtTheWrapColumn(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	text := "ssh: connect to host example.org port 22: Connection refused\n" +
		"Permission denied, please try again.\n" +
		"a  b   c    d     e      f       g        h         i          j\n"
	file := filepath.Join(dir, "words.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(text, "\n")
	for _, cols := range []int{10, 11, 13, 17, 20, 23, 29, 37, 80} {
		id := s.start(map[string]any{"cwd": dir, "cols": cols, "argv": []string{"bash"}})
		for _, cmd := range []string{"cat words.txt", "python3 -c 'import sys; sys.stdout.write(open(\"words.txt\").read())'"} {
			if got := str(s.send(id, cmd), "output"); got != want {
				t.Errorf("%d columns, %s:\n got %q\nwant %q", cols, cmd, got, want)
			}
		}
		s.ok("session_close", map[string]any{"session_id": id})
	}
}

// seq 1 200000 is kept whole: the result shows its head and tail, says
// which session_read call returns the rest, and paging with that call and
// next_offset returns every line exactly once.
func TestBigOutputIsKeptAndPaged(t *testing.T) {
	s := startServer(t)
	id := s.start(map[string]any{"cwd": t.TempDir()})
	res := s.call("session_send", map[string]any{"session_id": id, "text": "seq 1 200000", "timeout_ms": 120000})
	r := structured(t, res)
	if res.IsError || str(r, "completion") != "command_finished" || r["truncated"] != true {
		t.Fatalf("seq: %v", r)
	}
	out := str(r, "output")
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "\n199999\n200000") {
		t.Fatalf("head or tail missing: %q … %q", out[:40], out[len(out)-40:])
	}
	if n := utf8.RuneCountInString(out); n > 16000 {
		t.Fatalf("%d characters, over --max-output", n)
	}
	rest, ok := r["rest"].(map[string]any)
	if !ok || rest["mode"] != "log" || !strings.Contains(resultText(res), "session_read {") {
		t.Fatalf("no way to the rest: %v\n%s", r["rest"], resultText(res))
	}
	// The marker's call, the structured rest and the text's are one call.
	call := fmt.Sprintf(`session_read {"session_id":%q,"mode":"log","offset":%d,"lines":%d}`, id, int64(rest["offset"].(float64)), int64(rest["lines"].(float64)))
	if !strings.Contains(out, call) {
		t.Fatalf("the marker does not give %s:\n%s", call, out[strings.Index(out, "[..."):][:300])
	}
	// Read what was cut, page by page, with the largest cap allowed.
	head := out[:strings.Index(out, "[...")]
	tail := out[strings.Index(out, "...]\n")+5:]
	var middle []string
	offset, end := int64(rest["offset"].(float64)), int64(rest["offset"].(float64)+rest["lines"].(float64))
	for offset < end {
		p := s.ok("session_read", map[string]any{"session_id": id, "mode": "log", "offset": offset, "lines": end - offset, "max_output": 200000})
		log := p["log"].(map[string]any)
		next := int64(log["next_offset"].(float64))
		if next <= offset || utf8.RuneCountInString(str(p, "output")) > 200000 {
			t.Fatalf("page at %d: next %d", offset, next)
		}
		middle = append(middle, str(p, "output"))
		offset = next
	}
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if got := head + strings.Join(middle, "\n") + "\n" + tail + "\n"; got != want.String() {
		t.Fatalf("head, pages and tail make %d bytes, want %d", len(got), want.Len())
	}
	// A negative offset reads the end; the text says where the page is.
	p := s.call("session_read", map[string]any{"session_id": id, "mode": "log", "offset": -3, "lines": 2})
	if got := str(structured(t, p), "output"); got != "199999\n200000" || !strings.Contains(resultText(p), "of ") {
		t.Fatalf("the end: %q\n%s", got, resultText(p))
	}
	s.fails("session_read", map[string]any{"session_id": id, "mode": "new", "offset": 3}, "offset applies to mode log only")
}

// The output log holds what the screen showed: redacted.
func TestOutputLogIsRedacted(t *testing.T) {
	s := startServer(t)
	id := s.start(map[string]any{"cwd": t.TempDir()})
	token := fakeToken()
	r := s.send(id, "echo "+token[:10]+"''"+token[10:]+"; seq 1 30000", "timeout_ms", 120000)
	if strings.Contains(str(r, "output"), token) {
		t.Fatal("a secret in a result")
	}
	for offset := int64(0); ; {
		p := s.ok("session_read", map[string]any{"session_id": id, "mode": "log", "offset": offset, "max_output": 200000})
		if strings.Contains(str(p, "output"), token) {
			t.Fatal("a secret in the output log")
		}
		if offset == 0 && !strings.Contains(str(p, "output"), "[REDACTED:") {
			t.Fatalf("the secret's line is not in the log: %.300q", str(p, "output"))
		}
		log := p["log"].(map[string]any)
		next := int64(log["next_offset"].(float64))
		if next >= int64(log["total_lines"].(float64)) || next == offset {
			break
		}
		offset = next
	}
}

// max_output is honoured for every cap from 1 to the ceiling, after the
// command ran and before anything runs when it is out of range.
func TestMaxOutputBounds(t *testing.T) {
	s := startServer(t, "--max-output-ceiling", "50000")
	for _, max := range []int{1, 2, 7, 40, 199, 250, 300, 301, 1000} {
		r := s.ok("exec", map[string]any{"command": "seq 1 1000", "max_output": max})
		if n := utf8.RuneCountInString(str(r, "output")); n > max || r["truncated"] != true {
			t.Fatalf("max_output %d: %d characters, truncated %v", max, n, r["truncated"])
		}
	}
	r := s.ok("exec", map[string]any{"command": "seq 1 9000", "max_output": 50000})
	if r["truncated"] != false || !strings.HasSuffix(strings.TrimSpace(str(r, "output")), "\n9000") {
		t.Fatalf("max_output 50000 on 43 kB: truncated %v", r["truncated"])
	}
	dir := t.TempDir()
	s.fails("exec", map[string]any{"command": "touch " + filepath.Join(dir, "ran"), "max_output": 50001}, "--max-output-ceiling")
	id := s.start(map[string]any{"cwd": dir})
	s.fails("session_send", map[string]any{"session_id": id, "text": "touch ran", "max_output": 50001}, "--max-output-ceiling")
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("a call over the ceiling ran")
	}
	for _, max := range []int{1, 100, 250} {
		r := s.send(id, "seq 1 1000", "max_output", max)
		if n := utf8.RuneCountInString(str(r, "output")); n > max || r["rest"] == nil {
			t.Fatalf("session_send max_output %d: %d characters, rest %v", max, n, r["rest"])
		}
	}
}

// session_read without timeout_ms returns what is there at once, and a
// screen or scrollback read's text does not end in an empty "complete ()".
func TestSessionReadAtOnce(t *testing.T) {
	s := startServer(t)
	id := s.start(map[string]any{"cwd": t.TempDir()})
	r := s.send(id, "echo started; sleep 30; echo finished", "timeout_ms", 500)
	if r["complete"] != false {
		t.Fatalf("send: %v", r)
	}
	read := s.ok("session_read", map[string]any{"session_id": id})
	if read["complete"] != false || strings.Contains(str(read, "output"), "finished") {
		t.Fatalf("session_read waited for the command: %v", read)
	}
	for _, mode := range []string{"screen", "scrollback", "log"} {
		res := s.call("session_read", map[string]any{"session_id": id, "mode": mode})
		if text := resultText(res); res.IsError || strings.Contains(text, "()") {
			t.Fatalf("%s read: %s", mode, text)
		}
	}
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"ctrl+c"}})
}
