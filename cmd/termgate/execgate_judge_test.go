package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
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
	aud, err := newAuditor(cfg, red, engine, logger, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { aud.close() })
	g := newGateway(cfg, logger, Stages{Decider: engineDecider{engine}, Redactor: red, Auditor: aud})
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
