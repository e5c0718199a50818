package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/session"
)

// TestChaos drives the real binary as a hostile, busy agent would, for a
// bounded time: 50 sessions, random tool calls from many workers at once
// (overlapping calls on one session, bad arguments, 2 MB inputs, kill -9
// of session processes, calls cancelled mid-way, sessions closed and
// started again). Afterwards the server answers, its goroutines and open
// files are back to where they were, its memory stayed bounded, no
// recovered panic is in its log, and then a client that disconnects
// mid-call leaves no process behind, the audit log verifies, and a fresh
// server serves.
func TestChaos(t *testing.T) {
	const (
		nSessions = 50
		workers   = 12
		budget    = 15 * time.Second // of random calls
	)
	overlap, why := overlappingCallsSafe(t)
	if !overlap {
		t.Logf("overlapping calls on one session are left out of this run: %s", why)
	}
	work := t.TempDir()
	state := t.TempDir() // the gateway's own files: no session may start where they are
	auditLog, auditKey := filepath.Join(state, "audit.jsonl"), filepath.Join(state, "audit.key")
	s, stdin := startServerPiped(t, "--max-sessions", "80", "--audit-log", auditLog, "--audit-key", auditKey, "--close-grace", "300ms")
	c := &chaos{t: t, s: s, mk: marker(), overlap: overlap}

	// The baseline: a session started and closed first, so that what is
	// started once (the idle reaper, the audit syncer) is counted in it.
	warm := c.mustStart(work)
	c.must("session_close", map[string]any{"session_id": warm})
	base := c.runtime()

	c.slots = make([]string, nSessions)
	c.dirs = make([]string, nSessions)
	var wg sync.WaitGroup
	for i := range nSessions {
		c.dirs[i] = filepath.Join(work, fmt.Sprintf("s%02d", i))
		if err := os.Mkdir(c.dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sem := make(chan struct{}, 8)
	for i := range nSessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, err := c.startIn(c.dirs[i])
			if err != nil {
				c.errorf("starting session %d: %v", i, err)
				return
			}
			c.setSlot(i, id)
		}()
	}
	wg.Wait()
	if c.failed.Load() {
		t.FailNow()
	}
	// Background processes that must not outlive their sessions.
	for i := 0; i < nSessions; i += 10 {
		c.call(context.Background(), "session_send", map[string]any{"session_id": c.slot(i), "text": "sleep " + c.mk + " &"})
	}

	deadline := time.Now().Add(budget)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for time.Now().Before(deadline) && !c.failed.Load() {
				c.step(r, w, workers)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls: %d results, %d isError, %d cancelled by the client", c.calls.Load(), c.results.Load(), c.isErrors.Load(), c.cancels.Load())
	if c.failed.Load() {
		t.FailNow()
	}

	// The server answers, and a session works.
	id := c.mustStart(work)
	r := c.must("session_send", map[string]any{"session_id": id, "text": "echo after-chaos"})
	if str(r, "output") != "after-chaos" {
		t.Fatalf("after the chaos: %v", r)
	}
	for i := range nSessions {
		// A session killed earlier may be gone from the list already.
		res := c.call(context.Background(), "session_close", map[string]any{"session_id": c.slot(i)})
		if res == nil || res.IsError && !strings.Contains(resultText(res), "no such session") {
			t.Fatalf("closing session %s: %v", c.slot(i), res)
		}
	}
	c.must("session_close", map[string]any{"session_id": id})
	eventually(t, 30*time.Second, "no session's process is left", func() bool { return len(processesWith("sleep "+c.mk)) == 0 })

	// Back to the baseline: goroutines and open files. Sessions closed in
	// a list are kept (exited, readable) up to a bound, so their records
	// may stay, but nothing that runs or holds a file.
	var now runtimeInfo
	ok := waitFor(30*time.Second, func() bool {
		now = c.runtime()
		return now.Goroutines <= base.Goroutines+2 && now.FDs <= base.FDs+2
	})
	if !ok {
		list := c.call(context.Background(), "session_list", map[string]any{})
		t.Fatalf("after the chaos: %d goroutines (baseline %d), %d open files (baseline %d); sessions:\n%s\ngoroutines:\n%s",
			now.Goroutines, base.Goroutines, now.FDs, base.FDs, resultText(list), now.Stacks)
	}
	hwm := vmHWM(t, s.pid())
	limit := int64(300 << 20)
	if os.Getenv("TERMGATE_TEST_RACE") != "" {
		limit = 1 << 30 // the race detector's shadow memory
	}
	t.Logf("goroutines %d (baseline %d), fds %d (baseline %d), peak RSS %d MiB", now.Goroutines, base.Goroutines, now.FDs, base.FDs, hwm>>20)
	if hwm > limit {
		t.Fatalf("the server's peak RSS was %d MiB, over %d MiB", hwm>>20, limit>>20)
	}
	if log := s.logText(); strings.Contains(log, "recovered from a panic") {
		t.Fatalf("the server recovered from panics (each a bug):\n%s", panicsIn(log))
	}

	// A client that disconnects mid-call: the server ends, and with it
	// every session's processes; the audit log verifies.
	id = c.mustStart(work)
	mk := marker()
	inFlight := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_send", Arguments: map[string]any{"session_id": id, "text": "sleep " + mk, "timeout_ms": 120000}})
		inFlight <- err
	}()
	eventually(t, 30*time.Second, "the last call's command runs", func() bool { return len(processesWith("sleep "+mk)) == 1 })
	stdin.Close() // the client is gone, mid-call
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not end after its client left:\n%s", tail(s.logText(), 3000))
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(s.logText(), "client disconnected; closing sessions") {
		t.Fatalf("the server exited with %d after its client left:\n%s", code, tail(s.logText(), 3000))
	}
	if err := <-inFlight; err == nil {
		t.Fatal("the call in flight when the client left got an answer")
	}
	if pids := processesWith("sleep " + mk); len(pids) > 0 {
		t.Fatalf("processes left after the client disconnected: %v", pids)
	}
	if out, code := verify(t, auditKey, auditLog); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s", code, out)
	}

	// A fresh server serves.
	s2 := startServer(t)
	wantOutput(t, s2.send(s2.start(nil), "echo fresh"), "fresh")
}

// startServerPiped runs the binary with a client on its stdin and stdout
// pipes, and returns the stdin pipe: closing it is a client that is gone
// without a word, whatever calls it had in flight.
func startServerPiped(t *testing.T, flags ...string) (*server, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"serve"}, flags...)...)
	cmd.Dir = t.TempDir()
	var log strings.Builder
	logw := &lockedWriter{b: &log}
	cmd.Stderr = logw
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GORACE=halt_on_error=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-chaos", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connecting to termgate: %v", err)
	}
	s := &server{t: t, cmd: cmd, cs: cs, log: &log, logw: logw}
	t.Cleanup(func() {
		stdin.Close()
		if s.cmd.ProcessState == nil {
			done := make(chan struct{})
			go func() { _ = s.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				_ = s.cmd.Process.Kill()
				<-done
			}
		}
		_ = cs.Close()
	})
	return s, stdin
}

// chaos is one run's state.
type chaos struct {
	t       *testing.T
	s       *server
	mk      string // the marker of the run's background processes
	overlap bool   // overlapping calls on one session are safe to make

	mu    sync.Mutex
	slots []string // session ids, by slot
	dirs  []string

	calls, results, isErrors, cancels atomic.Int64
	failed                            atomic.Bool
}

func (c *chaos) errorf(format string, args ...any) {
	c.t.Helper()
	c.failed.Store(true)
	c.t.Errorf(format, args...)
}

func (c *chaos) slot(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[i]
}

// swapSlot puts id in slot i if it still holds old.
func (c *chaos) swapSlot(i int, old, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots[i] != old {
		return false
	}
	c.slots[i] = id
	return true
}

func (c *chaos) setSlot(i int, id string) {
	c.mu.Lock()
	c.slots[i] = id
	c.mu.Unlock()
}

// call makes one call; a protocol error fails the run: the server must
// answer everything.
func (c *chaos) call(ctx context.Context, name string, args map[string]any) *mcp.CallToolResult {
	return c.callOr(ctx, name, args, false)
}

// callOr makes one call; with cancelling, the caller's ctx ends the call
// on purpose.
func (c *chaos) callOr(ctx context.Context, name string, args map[string]any, cancelling bool) *mcp.CallToolResult {
	c.calls.Add(1)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := c.s.cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	switch {
	case err != nil && cancelling && ctx.Err() != nil:
		c.cancels.Add(1)
		return nil
	case err != nil && cctx.Err() != nil:
		c.errorf("%s(%s) hung: no answer in two minutes", name, brief(args))
		return nil
	case err != nil:
		c.errorf("%s(%s): protocol error: %v", name, brief(args), err)
		return nil
	}
	c.results.Add(1)
	if res.IsError {
		c.isErrors.Add(1)
		if t := resultText(res); strings.Contains(t, "internal error") {
			c.errorf("%s(%s): %s", name, brief(args), t)
		}
		return res
	}
	if res.StructuredContent == nil {
		c.errorf("%s(%s): a result without structured content: %s", name, brief(args), resultText(res))
	}
	return res
}

// must makes a call that must succeed.
func (c *chaos) must(name string, args map[string]any) map[string]any {
	c.t.Helper()
	res := c.call(context.Background(), name, args)
	if res == nil {
		c.t.Fatalf("%s(%s): no answer", name, brief(args))
	}
	if res.IsError {
		c.t.Fatalf("%s(%s) failed: %s", name, brief(args), resultText(res))
	}
	return structured(c.t, res)
}

func (c *chaos) startIn(dir string) (string, error) {
	res := c.call(context.Background(), "session_start", map[string]any{"cwd": dir})
	if res == nil || res.IsError {
		if res != nil {
			return "", fmt.Errorf("session_start: %s", resultText(res))
		}
		return "", errors.New("session_start: no answer")
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.SessionID == "" {
		return "", fmt.Errorf("session_start returned %s", b)
	}
	return out.SessionID, nil
}

func (c *chaos) mustStart(dir string) string {
	c.t.Helper()
	id, err := c.startIn(dir)
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

// step makes one random call. Without overlap, worker w keeps to the
// sessions of its own slots.
func (c *chaos) step(r *rand.Rand, w, workers int) {
	i := r.IntN(len(c.slots))
	if !c.overlap {
		i = (i/workers)*workers + w
		if i >= len(c.slots) {
			i = w
		}
	}
	id := c.slot(i)
	bg := context.Background()
	switch n := r.IntN(100); {
	case n < 25:
		c.call(bg, "session_send", map[string]any{"session_id": id, "text": fmt.Sprintf("echo chaos-%d", r.IntN(1e6)), "timeout_ms": 5000})
	case n < 32:
		c.call(bg, "session_send", map[string]any{"session_id": id, "text": "sleep 0.4; echo slow", "timeout_ms": 200})
	case n < 42:
		keys := []string{"ctrl+c", "up", "down", "tab", " ", "a", "enter", "esc", "backspace", "left", "f1", "ctrl+l"}
		k := make([]string, 1+r.IntN(4))
		for j := range k {
			k[j] = keys[r.IntN(len(keys))]
		}
		c.call(bg, "session_keys", map[string]any{"session_id": id, "keys": k, "timeout_ms": 2000})
	case n < 52:
		mode := []string{"new", "screen", "scrollback"}[r.IntN(3)]
		args := map[string]any{"session_id": id, "mode": mode}
		if mode == "new" {
			args["timeout_ms"] = r.IntN(300)
		}
		c.call(bg, "session_read", args)
	case n < 57:
		c.call(bg, "session_info", map[string]any{"session_id": id})
	case n < 60:
		c.call(bg, "session_list", nil)
	case n < 68:
		bad := []map[string]any{
			{"session_id": "s-NOSUCHTHING", "text": "x"},
			{"session_id": id, "text": 42},
			{"session_id": id, "text": "x", "wait_for": "("},
			{"session_id": id, "text": "x", "timeout_ms": -5},
			{"session_id": id, "text": "\xff\xfe"},
			{"session_id": id, "secret_ref": "NO_SUCH_SECRET"},
			{},
		}
		c.call(bg, "session_send", bad[r.IntN(len(bad))])
		c.call(bg, "session_keys", map[string]any{"session_id": id, "keys": []string{"hyperspace*3"}})
		c.call(bg, "session_resize", map[string]any{"session_id": id, "rows": -1, "cols": 1 << 30})
	case n < 71:
		res := c.call(bg, "session_send", map[string]any{"session_id": id, "text": strings.Repeat("y", 2<<20)})
		if res != nil && !res.IsError {
			c.errorf("a 2 MB input was taken: %s", resultText(res))
		}
	case n < 74:
		res := c.call(bg, "session_info", map[string]any{"session_id": id})
		if res != nil && !res.IsError {
			var info struct {
				Pid   int  `json:"pid"`
				Alive bool `json:"alive"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if json.Unmarshal(b, &info) == nil && info.Alive && info.Pid > 1 {
				_ = syscall.Kill(info.Pid, syscall.SIGKILL)
			}
		}
	case n < 78:
		c.call(bg, "session_close", map[string]any{"session_id": id})
		if nid, err := c.startIn(c.dirs[i]); err == nil {
			if !c.swapSlot(i, id, nid) {
				// Another worker restarted this slot meanwhile: the session
				// just made is nobody's, so it goes.
				c.call(bg, "session_close", map[string]any{"session_id": nid})
			}
		} else {
			c.errorf("restarting session %d: %v", i, err)
		}
	case n < 82:
		c.call(bg, "exec", map[string]any{"command": fmt.Sprintf("echo exec-%d", r.IntN(1e6))})
	case n < 87:
		// Cancelled mid-call by the client. A cancelled send leaves its
		// command running, and its handler may still be ending when the
		// next call comes: that is an overlapping call on the session.
		ctx, cancel := context.WithTimeout(bg, time.Duration(50+r.IntN(300))*time.Millisecond)
		if c.overlap {
			c.callOr(ctx, "session_send", map[string]any{"session_id": id, "text": "sleep 0.5; echo cancelled", "timeout_ms": 5000}, true)
		} else {
			c.callOr(ctx, "exec", map[string]any{"command": "sleep 0.5; echo cancelled", "timeout_ms": 5000}, true)
		}
		cancel()
	case n < 90:
		c.call(bg, "session_resize", map[string]any{"session_id": id, "rows": 10 + r.IntN(50), "cols": 20 + r.IntN(200)})
	case n < 94:
		kind := []string{"transcript", "screen", "recording"}[r.IntN(3)]
		ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
		_, err := c.s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "termgate://sessions/" + id + "/" + kind})
		cancel()
		if err != nil && strings.Contains(err.Error(), "internal error") {
			c.errorf("reading %s of %s: %v", kind, id, err)
		}
	default:
		if !c.overlap {
			c.call(bg, "session_send", map[string]any{"session_id": id, "text": "echo alone", "timeout_ms": 3000})
			return
		}
		// Two calls at once on one session: each gets a result or a
		// clean isError, never a broken session.
		var wg sync.WaitGroup
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.call(bg, "session_send", map[string]any{"session_id": id, "text": fmt.Sprintf("echo twin-%d", k), "timeout_ms": 3000})
			}()
		}
		wg.Wait()
	}
}

// runtimeInfo is what the debug resource of the tests' build reports.
type runtimeInfo struct {
	Goroutines int    `json:"goroutines"`
	FDs        int    `json:"fds"`
	Stacks     string `json:"stacks"`
}

func (c *chaos) runtime() runtimeInfo {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "termgate://debug/runtime"})
	if err != nil {
		c.t.Fatalf("the debug resource (a build without -tags termgate_testhooks?): %v", err)
	}
	var ri runtimeInfo
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &ri); err != nil {
		c.t.Fatal(err)
	}
	// The open files as the kernel sees them, too.
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.s.pid())); err == nil && len(fds) > ri.FDs {
		ri.FDs = len(fds)
	}
	return ri
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// panicsIn returns the log lines of recovered panics.
func panicsIn(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "recovered from a panic") {
			b.WriteString(strings.ReplaceAll(l, `\n`, "\n"))
			b.WriteString("\n")
		}
	}
	return b.String()
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// overlappingCallsSafe reports whether the session layer takes two calls
// at once on one session safely (one waits, or is told the session is
// busy). Where it does not, a second call panics inside the session with
// its lock held, and that session never answers again: the chaos run then
// keeps each session to one worker. The probe's session, if it wedged, is
// left to end with this test process.
func overlappingCallsSafe(t *testing.T) (bool, string) {
	t.Helper()
	mgr := session.NewManager(session.DefaultLimits(), nil)
	s, err := mgr.Start(session.Spec{Argv: []string{"sh"}, Env: append(os.Environ(), "HOME="+t.TempDir(), "PS1=$ "), Dir: t.TempDir(), Rows: 24, Cols: 80, Mode: session.ModePTY})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.WaitStart(ctx, session.WaitOpts{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	panics := make(chan any, 3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panics <- r
				}
			}()
			_, _ = s.Send(ctx, "sleep 0.2; echo probe", true, session.WaitOpts{Timeout: 5 * time.Second})
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case r := <-panics:
		return false, fmt.Sprintf("the session layer panics on a second call at once (%v)", r)
	case <-done:
	case <-ctx.Done():
		return false, "the session layer hangs on a second call at once"
	}
	select {
	case r := <-panics:
		return false, fmt.Sprintf("the session layer panics on a second call at once (%v)", r)
	default:
	}
	if err := mgr.Shutdown(ctx); err != nil {
		t.Logf("closing the probe's session: %v", err)
	}
	return true, ""
}
