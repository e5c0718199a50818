package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termgate/termgate/policy"
	"github.com/termgate/termgate/sandbox"
)

// judgeGateway is a gateway with the default bundle, the redactor and an
// audit log in a temporary directory: what an exec's judge runs with.
func judgeGateway(tb testing.TB, mode string) (*gateway, *ecsAuditor) {
	tb.Helper()
	engine, err := policy.New(context.Background(), policySource(""))
	if err != nil {
		tb.Fatal(err)
	}
	red, err := newRedactor(engine.Bundle(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := defaultConfig()
	dir := tb.TempDir()
	cfg.AuditLog, cfg.AuditKey = filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "key")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	g0env := func(string) string { return "" }
	aud, err := newAuditor(cfg, red, engine, logger, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { aud.close() })
	g := newGateway(cfg, logger, Stages{Decider: engineDecider{e: engine, gateway: policyGateway(cfg, g0env)}, Redactor: red, Auditor: aud})
	g.redactor, g.policy, g.getenv = red, engine, func(string) string { return "/usr/bin:/bin" }
	g.gate = newExecGate(g, mode)
	tb.Cleanup(g.gate.stop)
	return g, aud
}

// BenchmarkExecJudge: the gateway's share of an exec, in process: the
// policy's decision and the record's way to the log (from the queue).
func BenchmarkExecJudge(b *testing.B) {
	b.Run("same", benchJudge)
	b.Run("distinct", benchJudge)
}

func benchJudge(b *testing.B) {
	g, _ := judgeGateway(b, "enforce")
	judge := g.gate.forSession().Judge("s-bench")
	r := &sandbox.ExecRequest{Pid: 4242, PPid: 4241, Syscall: "execve", Path: "/bin/true", Executable: "/usr/bin/true",
		Program: "true", IdentifiedBy: "path", Argv: []string{"/bin/true"}, Cwd: "/tmp/project", Parents: []string{"bash", "bash"}}
	ctx := context.Background()
	judge(ctx, r) // warm up
	b.ResetTimer()
	t0 := time.Now()
	held := make([]time.Duration, 0, b.N)
	for i := range b.N {
		if b.Name() == "BenchmarkExecJudge/distinct" {
			r.Argv = []string{"/bin/true", strconv.Itoa(i)} // no decision to reuse
		}
		t1 := time.Now()
		if v := judge(ctx, r); !v.Allow {
			b.Fatal("refused")
		}
		held = append(held, time.Since(t1))
	}
	g.gate.queue.close()
	b.ReportMetric(float64(time.Since(t0))/float64(b.N)/1e3, "µs/exec-with-record")
	b.ReportMetric(float64(median(held))/1e3, "µs-held")
	b.ReportMetric(0, "ns/op")
}

func execReq(argv ...string) *sandbox.ExecRequest {
	return &sandbox.ExecRequest{Pid: 4242, PPid: 4241, Syscall: "execve", Path: argv[0], Executable: "/usr/bin/" + filepath.Base(argv[0]),
		Program: filepath.Base(argv[0]), IdentifiedBy: "path", Argv: argv, Cwd: "/tmp/project", Parents: []string{"bash", "bash"}}
}

// TestExecJudge: the gateway's judge, in process: what it answers, what
// it records, and what the call in flight is told.
func TestExecJudge(t *testing.T) {
	g, aud := judgeGateway(t, "enforce")
	x := g.gate
	ctx := withCallInfo(context.Background(), callInfo{id: "c1", tool: "session_send"})
	ctx, end := x.begin(ctx, "s-1", nil)
	judge := x.forSession().Judge("s-1")
	bg := context.Background()

	if v := judge(bg, &sandbox.ExecRequest{Launcher: true, Argv: []string{"/usr/bin/bash", "--rcfile", "x"}, Program: "bash"}); !v.Allow {
		t.Fatal("the session's own program was refused")
	}
	if v := judge(bg, execReq("/bin/true")); !v.Allow || v.Ask != nil {
		t.Fatalf("true: %+v", v)
	}
	// Refused, twice (a shell tries the next PATH directory): told once.
	for range 2 {
		if v := judge(bg, execReq("rm", "-rf", "/")); v.Allow || v.Ask != nil {
			t.Fatalf("rm -rf /: %+v", v)
		}
	}
	// Confirm, with nobody to ask: refused, and the reason says why.
	judge(bg, execReq("rm", "-rf", "/tmp/elsewhere"))
	r := execReq("true")
	r.Unreadable = errors.New("more than 16384 arguments")
	if v := judge(bg, r); v.Allow {
		t.Fatal("an unreadable exec was let through")
	}
	refs := refusalsOf(ctx)
	if len(refs) != 3 || refs[0].Rule != "fs.rm_protected" || refs[1].Rule != "fs.rm_recursive_outside" ||
		!strings.Contains(refs[1].Reason, "needs a human's confirmation") || refs[2].Rule != "exec.unreadable" {
		t.Fatalf("refusals %+v", refs)
	}
	if !strings.Contains(refusalText(refs), "the rest of the command may have run") {
		t.Fatal(refusalText(refs))
	}
	end()
	judge(bg, execReq("rm", "-rf", "/"))
	if n := len(refusalsOf(ctx)); n != 3 {
		t.Fatalf("a refusal after the call ended was told to it: %d", n)
	}

	// The records: every exec, refusals as security events tied to the call.
	x.queue.close()
	var recs []map[string]any
	for _, r := range readRecords(t, aud.log.Path()) {
		if field(r, "event.action") == "process-exec" {
			recs = append(recs, r)
		}
	}
	if len(recs) != 7 {
		t.Fatalf("%d exec records, want 7", len(recs))
	}
	denied := 0
	for _, r := range recs {
		if types, _ := field(r, "event.type").([]any); slices.Contains(types, any("denied")) {
			denied++
			if field(r, "termgate.policy.input") == nil && field(r, "rule.id") != "exec.unreadable" { // the gateway's own refusal: no policy input
				t.Errorf("a refusal without its input: %v", r)
			}
		}
	}
	if denied != 5 || field(recs[2], "gen_ai.tool.call.id") != "c1" {
		t.Fatalf("%d denied; %v", denied, recs[2])
	}
}

// TestExecJudgeAuditMode: audit mode refuses nothing and records what it
// would refuse.
func TestExecJudgeAuditMode(t *testing.T) {
	g, aud := judgeGateway(t, "audit")
	judge := g.gate.forSession().Judge("s-1")
	if v := judge(context.Background(), execReq("rm", "-rf", "/")); !v.Allow {
		t.Fatal("audit mode refused")
	}
	g.gate.queue.close()
	var rec map[string]any
	for _, r := range readRecords(t, aud.log.Path()) {
		if field(r, "event.action") == "process-exec" {
			rec = r
		}
	}
	if field(rec, "termgate.exec.enforced") != false || field(rec, "termgate.decision.action") != "deny" || field(rec, "event.outcome") != "success" {
		t.Fatalf("%v", rec)
	}
}

// TestExecJudgeLine: the line an exec is judged with is the session's
// last input allowed (not keys), confirmed or not; and a failed record
// refuses every exec after it.
func TestExecJudgeLine(t *testing.T) {
	g, _ := judgeGateway(t, "enforce")
	x := g.gate
	x.mu.Lock()
	x.sessionLocked("s-1")
	x.mu.Unlock()
	ref := &GateRef{ID: "s-1"}
	x.judged(GateInput{Action: "input", Text: "rm -rf /tmp/b*", Session: ref}, Decision{Action: "allow", Reason: "x (confirmed by the human)"})
	x.judged(GateInput{Action: "keys", Text: "ctrl+c", Session: ref}, Decision{Action: "allow"})
	if st := x.state("s-1"); st.line != "rm -rf /tmp/b*" || !st.confirmed {
		t.Fatalf("state %+v", st)
	}
	judge := x.forSession().Judge("s-1")
	if v := judge(context.Background(), execReq("rm", "-rf", "/tmp/b1")); !v.Allow {
		t.Fatal("a program of the confirmed line was refused")
	}
	x.judged(GateInput{Action: "input", Text: "ls", Session: ref}, Decision{Action: "allow"})
	if v := judge(context.Background(), execReq("rm", "-rf", "/tmp/b1")); v.Allow {
		t.Fatal("the confirmation outlived its line")
	}
	x.queue.fail(errors.New("disk full"))
	if v := judge(context.Background(), execReq("/bin/true")); v.Allow {
		t.Fatal("an exec ran after the audit log failed")
	}
	x.closed("s-1")
	if _, ok := x.sessions["s-1"]; ok {
		t.Fatal("a closed session is remembered")
	}
}

// TestExecJudgeLinksAreNotCached: a decision that looked a link up (an
// operand with a trailing slash, or a link on the way to a deleted path)
// is made again on the next exec of the same argv, so pointing the link
// elsewhere in between is seen.
func TestExecJudgeLinksAreNotCached(t *testing.T) {
	g, _ := judgeGateway(t, "enforce")
	judge := g.gate.forSession().Judge("s-1")
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.MkdirAll(filepath.Join(dir, "sub", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// pointAt points link at target and judges rm -rf arg from dir.
	pointAt := func(target, arg string) sandbox.ExecVerdict {
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		r := execReq("rm", "-rf", arg)
		r.Cwd = dir
		return judge(context.Background(), r)
	}
	// link/ is the link's target; link/etc goes through it (and the
	// decision that looked either up is not kept).
	for _, arg := range []string{"link/", "link/etc"} {
		if v := pointAt(filepath.Join(dir, "sub"), arg); !v.Allow {
			t.Fatalf("rm -rf %s, the link pointed into the working directory, was refused: %+v", arg, v)
		}
		if v := pointAt("/", arg); v.Allow || v.Ask != nil {
			t.Fatalf("rm -rf %s with the link pointed at /: %+v", arg, v)
		}
	}
	// An argv without a trailing slash may still be one the engine looked
	// up; readsLinks alone keeps it.
	if !readsLinks(GateInput{}) || readsLinks(GateInput{Exec: &GateExec{Argv: []string{"rm", "-rf", "/tmp/a/b"}}}) ||
		!readsLinks(GateInput{Exec: &GateExec{Argv: []string{"sh", "-c", "rm -rf x/ && ls"}}}) {
		t.Fatal("readsLinks")
	}
}

// TestExecJudgePanicRefuses: a panic while an exec is judged refuses the
// exec, is recorded as a tool error with an incident, and the judge goes
// on judging the next one.
func TestExecJudgePanicRefuses(t *testing.T) {
	g, aud := judgeGateway(t, "enforce")
	armed := true
	g.testOnlyPanic = func(where string) {
		if where == "exec gate" && armed {
			armed = false
			panic("injected panic at " + where)
		}
	}
	judge := g.gate.forSession().Judge("s-1")
	if v := judge(context.Background(), execReq("/bin/true")); v.Allow || v.Ask != nil {
		t.Fatalf("an exec whose judge panicked: %+v, want refused", v)
	}
	if v := judge(context.Background(), execReq("/bin/true")); !v.Allow {
		t.Fatalf("the exec after the panic: %+v, want allowed", v)
	}
	g.gate.queue.close()
	n := 0
	for _, r := range readRecords(t, aud.log.Path()) {
		if field(r, "event.action") == "tool-error" {
			n++
			if msg, _ := field(r, "error.message").(string); !strings.Contains(msg, "exec gate") || !strings.Contains(msg, "incident") {
				t.Errorf("the tool error says %q", msg)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d tool-error records, want 1", n)
	}
}
