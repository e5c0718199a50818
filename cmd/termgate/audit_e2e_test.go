package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/termgate/termgate/policies"
)

// ecsSchema is ECS's field list (audit/testdata/ecs, a copy of the ECS
// release's fields.csv) and its allowed event values.
type ecsSchema struct {
	types   map[string]string
	allowed map[string][]string
}

func loadECS(t *testing.T) ecsSchema {
	t.Helper()
	dir := filepath.Join("..", "..", "audit", "testdata", "ecs")
	f, err := os.Open(filepath.Join(dir, "fields.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	s := ecsSchema{types: map[string]string{}}
	for _, r := range rows[1:] {
		s.types[r[3]] = r[4]
	}
	b, err := os.ReadFile(filepath.Join(dir, "event-allowed-values.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s.allowed); err != nil {
		t.Fatal(err)
	}
	return s
}

// flatten lists a record's leaves by dotted path.
func flatten(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, x, out)
		}
		return
	}
	out[prefix] = v
}

// check reports what in a record is not ECS: an unknown field outside
// termgate.*, a value of the wrong type, an event.* value not allowed.
func (s ecsSchema) check(rec map[string]any) []string {
	leaves := map[string]any{}
	flatten("", rec, leaves)
	var bad []string
	for path, v := range leaves {
		if strings.HasPrefix(path, "termgate.") {
			continue
		}
		typ, ok := s.types[path]
		if !ok {
			bad = append(bad, path+": not an ECS field")
			continue
		}
		vals := []any{v}
		if arr, ok := v.([]any); ok {
			vals = arr
		}
		for _, x := range vals {
			if !typeOK(typ, x) {
				bad = append(bad, fmt.Sprintf("%s: %v (%T) is not of ECS type %s", path, x, x, typ))
			}
			if allowed, ok := s.allowed[path]; ok {
				str, _ := x.(string)
				found := false
				for _, a := range allowed {
					found = found || a == str
				}
				if !found {
					bad = append(bad, fmt.Sprintf("%s: %q is not an allowed value", path, str))
				}
			}
		}
	}
	return bad
}

func typeOK(typ string, v any) bool {
	switch typ {
	case "keyword", "constant_keyword", "wildcard", "match_only_text", "text", "ip", "version":
		_, ok := v.(string)
		return ok
	case "long", "integer", "short", "byte", "unsigned_long":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "float", "double", "scaled_float", "half_float":
		_, ok := v.(json.Number)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "date":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}
	return false
}

func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var r map[string]any
		if err := d.Decode(&r); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		recs = append(recs, r)
	}
	return recs
}

func field(r map[string]any, path string) any {
	var v any = r
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func verify(t *testing.T, key string, files ...string) (string, int) {
	t.Helper()
	return runBinary(t, "", append([]string{"audit", "verify", "--audit-key", key}, files...)...)
}

// TestAuditLogOfARealSession drives every kind of event through the real
// binary and checks the log: it verifies, every field is ECS (or under
// termgate.), every event.* value is allowed, the events are all there,
// no secret is in it, and the recording replays in asciinema.
func TestAuditLogOfARealSession(t *testing.T) {
	if _, err := exec.LookPath("asciinema"); err != nil {
		t.Fatal("asciinema is not installed (scripts/dev deps installs it)")
	}
	state := t.TempDir()
	logPath := filepath.Join(state, "audit.jsonl")
	keyPath := filepath.Join(state, "audit.key")
	recDir := filepath.Join(state, "rec")
	bundle := t.TempDir()
	if err := os.CopyFS(bundle, policies.FS); err != nil {
		t.Fatal(err)
	}
	token := fakeToken()
	held := fakeWord("held-")
	t.Setenv("TG_TEST_HELD", held)
	var asked atomic.Int32
	s := startServerWith(t, confirmClient(&mcp.ElicitResult{Action: "decline"}, 0, &asked, nil),
		"--audit-log", logPath, "--audit-key", keyPath, "--record-dir", recDir,
		"--policy-dir", bundle, "--policy-reload", "50ms", "--secret", "db=env:TG_TEST_HELD")
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	wantOutput(t, s.send(id, "echo hello"), "hello")
	s.send(id, "echo "+token)
	s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf /"}, "fs.rm_protected")
	s.fails("session_send", map[string]any{"session_id": id, "text": "git reset --hard"}, "git.destructive") // asks, declined
	s.ok("session_keys", map[string]any{"session_id": id, "keys": []string{"e", "c", "h", "o", "space", "k", "enter"}})
	s.ok("exec", map[string]any{"command": "echo from-exec"})
	s.fails("session_send", map[string]any{"session_id": "s-NOSUCHSESS", "text": "x"}, "no such session")
	s.ok("session_resize", map[string]any{"session_id": id, "rows": 30, "cols": 100})
	pw := s.start(map[string]any{"argv": []string{"python3", "-c", `import getpass; p = getpass.getpass("Password: "); print("got", len(p))`}, "cwd": dir})
	s.ok("session_read", map[string]any{"session_id": pw, "timeout_ms": 10000, "wait_for": "Password:"})
	// getpass turns echo off before it prints its prompt; the read says so.
	eventually(t, time.Minute, "the password prompt hides input", func() bool {
		off, _ := s.ok("session_read", map[string]any{"session_id": pw})["echo_off"].(bool)
		return off
	})
	s.ok("session_send", map[string]any{"session_id": pw, "secret_ref": "db"})
	// A policy reload.
	now := time.Now().Add(time.Second)
	os.Chtimes(filepath.Join(bundle, "data.json"), now, now)
	time.Sleep(400 * time.Millisecond)
	// The recording, while the session is live, as a resource.
	rr, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/recording"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rr.Contents[0].Text, `{"command":`) || strings.Contains(rr.Contents[0].Text, token) {
		t.Fatalf("recording resource: %.200q", rr.Contents[0].Text)
	}
	transcript := str(s.ok("session_read", map[string]any{"session_id": id, "mode": "scrollback"}), "output")
	s.ok("session_close", map[string]any{"session_id": id})
	s.close() // waits for the server to exit

	out, code := verify(t, keyPath, logPath)
	if code != 0 || !strings.Contains(out, "OK:") || !strings.Contains(out, "ends with the gateway's closing checkpoint") {
		t.Fatalf("audit verify: exit %d: %s", code, out)
	}
	if fi, _ := os.Stat(logPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %o", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(logPath)
	for _, sec := range []string{token, held} {
		if strings.Contains(string(raw), sec) {
			t.Fatal("a secret is in the audit log")
		}
	}
	schema := loadECS(t)
	actions := map[string]int{}
	for _, r := range readRecords(t, logPath) {
		if bad := schema.check(r); len(bad) > 0 {
			sort.Strings(bad)
			t.Fatalf("not ECS: %v\nin %v", bad, r)
		}
		a, _ := field(r, "event.action").(string)
		actions[a]++
		if a == "terminal-input" && field(r, "termgate.input.secret") == true {
			// A secret is recorded as a keyed hash that correlates and
			// reveals nothing.
			if cl, _ := field(r, "process.command_line").(string); !regexp.MustCompile(`^\[REDACTED:secret:[0-9a-f]{4}\]$`).MatchString(cl) {
				t.Fatalf("secret input recorded as %v", cl)
			}
		}
	}
	for _, want := range []string{"gateway-start", "policy-load", "policy-reload", "session-start-request", "session-start",
		"terminal-input", "terminal-keys", "terminal-output", "exec-command", "confirmation-requested",
		"confirmation-answered", "tool-error", "session-end", "gateway-stop", "audit-checkpoint"} {
		if actions[want] == 0 {
			t.Errorf("no %s event; events: %v", want, actions)
		}
	}
	if asked.Load() == 0 {
		t.Error("the human was never asked")
	}

	// The recording replays in the real asciinema; its output is what
	// the session showed.
	cast := filepath.Join(recDir, id+".cast")
	if fi, err := os.Stat(cast); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("recording: %v %v", err, fi)
	}
	played := asciinemaCat(t, cast)
	if strings.Contains(string(played), token) || !strings.Contains(string(played), "[REDACTED:github-pat:") {
		t.Fatal("the recording is not redacted")
	}
	var fromFile strings.Builder
	castLines := strings.Split(strings.TrimSpace(mustRead(t, cast)), "\n")
	for _, l := range castLines[1:] {
		var ev []any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("event %q: %v", l, err)
		}
		if ev[1] == "o" {
			fromFile.WriteString(ev[2].(string))
		}
	}
	if string(played) != fromFile.String() {
		t.Fatalf("asciinema cat differs from the recording's output events")
	}
	plain := stripANSI(string(played))
	for _, line := range strings.Split(transcript, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.Contains(plain, line) {
			t.Fatalf("transcript line %q is not in the replay", line)
		}
	}
	if !strings.Contains(mustRead(t, cast), `"r","30x100"`) && !strings.Contains(mustRead(t, cast), `"r","100x30"`) {
		t.Fatal("the resize is not in the recording")
	}
}

var ansiRE = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_=>])|\r`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAuditSurvivesKill9: a server killed with SIGKILL leaves a log that
// verifies and holds every security event it acknowledged.
func TestAuditSurvivesKill9(t *testing.T) {
	state := t.TempDir()
	logPath, keyPath := filepath.Join(state, "audit.jsonl"), filepath.Join(state, "audit.key")
	s := startServer(t, "--audit-log", logPath, "--audit-key", keyPath, "--audit-sync", "1h")
	id := s.start(nil)
	for i := range 20 {
		s.send(id, fmt.Sprintf("echo %d", i))
	}
	s.fails("session_send", map[string]any{"session_id": id, "text": "rm -rf /"}, "fs.rm_protected")
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.close() // the client sees the server gone and reaps it
	out, code := verify(t, keyPath, logPath)
	if code != 0 || !strings.Contains(out, "does NOT end with the gateway's closing checkpoint") {
		t.Fatalf("audit verify after kill -9: exit %d: %s", code, out)
	}
	denied := false
	for _, r := range readRecords(t, logPath) {
		denied = denied || field(r, "rule.id") == "fs.rm_protected"
	}
	if !denied {
		t.Fatal("the denial, a security event, was lost")
	}
}

// TestAuditWriteFailureRefusesInput: when the log cannot be written (here
// the file size limit), inputs are refused and nothing runs.
func TestAuditWriteFailureRefusesInput(t *testing.T) {
	state := t.TempDir()
	logPath := filepath.Join(state, "audit.jsonl")
	// Run the server under a 64 KiB file size limit: the log soon hits it.
	wrapper := filepath.Join(state, "limited")
	script := "#!/bin/sh\nulimit -f 64\nexec " + binPath + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	old := binPath
	binPath = wrapper
	s := startServer(t, "--audit-log", logPath, "--audit-key", filepath.Join(state, "k"))
	binPath = old
	dir := t.TempDir()
	id := s.start(map[string]any{"cwd": dir})
	refused := -1
	for i := range 2000 {
		res := s.call("session_send", map[string]any{"session_id": id, "text": fmt.Sprintf("touch m%d", i)})
		if res.IsError {
			if !strings.Contains(resultText(res), "audit log could not record") {
				t.Fatalf("refused for another reason: %s", resultText(res))
			}
			// The outcome of an input already recorded and run can fail
			// to be recorded too; the next input must then be refused.
			if strings.Contains(resultText(res), "nothing was sent") {
				refused = i
				break
			}
		}
	}
	if refused < 0 {
		t.Fatal("the audit log never failed")
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("m%d", refused))); err == nil {
		t.Fatal("the refused input ran")
	}
}

// BenchmarkAuditOverhead: echo round trips through two servers side by
// side, audit off and on (fsync of security events included), alternating
// so that both see the same machine.
func BenchmarkAuditOverhead(b *testing.B) {
	off := startServer(b, "--audit-log", "off")
	on := startServer(b, "--audit-log", filepath.Join(b.TempDir(), "audit.jsonl"), "--audit-key", filepath.Join(b.TempDir(), "k"))
	idOff, idOn := off.start(nil), on.start(nil)
	for range 5 {
		off.send(idOff, "echo hi")
		on.send(idOn, "echo hi")
	}
	dOff := make([]time.Duration, 0, b.N)
	dOn := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		off.send(idOff, "echo hi")
		dOff = append(dOff, time.Since(t0))
		t0 = time.Now()
		on.send(idOn, "echo hi")
		dOn = append(dOn, time.Since(t0))
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	mOff, mOn := med(dOff), med(dOn)
	b.ReportMetric(mOff, "off-median-ms")
	b.ReportMetric(mOn, "on-median-ms")
	b.ReportMetric(100*(mOn-mOff)/mOff, "overhead-%")
	b.ReportMetric(0, "ns/op")
}

// asciinemaCat runs `asciinema cat` in a terminal of its own (it opens
// /dev/tty), with output post-processing off so its bytes come through as
// it writes them.
func asciinemaCat(t *testing.T, cast string) []byte {
	t.Helper()
	ptm, tts, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	tio, err := unix.IoctlGetTermios(int(tts.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(tts.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("asciinema", "cat", cast)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tts, tts, tts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tts.Close()
	var out bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := ptm.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break // EIO once asciinema is gone
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("asciinema cat: %v: %s", err, out.Bytes())
	}
	return out.Bytes()
}
