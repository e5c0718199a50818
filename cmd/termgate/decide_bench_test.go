package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/termgate/termgate/policy"
	"golang.org/x/sys/unix"
)

// BenchmarkGatewayDecideCorpus measures a policy decision as the server
// makes it: the decision benchmark's corpus (policy/testdata/corpus and
// the code corpus, the inputs policy's BenchmarkDecideCorpus decides)
// decided by the engine of a gateway that serve's assembly built (the
// redactor, the engine, the audit log: the server's heap, with no session
// open), each decision on a new goroutine as the go-sdk runs a request's
// handler, with the gateway's paths and home in the input as its decider
// gives them. It reports the median and p99 of each decision's wall time
// and of its CPU time on its thread (the goroutine locks itself to one),
// and the collections the run made per thousand decisions (gc-per-1k):
// the garbage collector sets the tail, and how often it runs depends on
// the heap it paces against, which here is the server's.
func BenchmarkGatewayDecideCorpus(b *testing.B) {
	home := b.TempDir()
	getenv := homeEnv(home)
	cfg, rest, err := parseConfig("termgate-bench", nil, func(string) string { return "" }, io.Discard)
	if err != nil || len(rest) > 0 {
		b.Fatalf("config: %v (left %q)", err, rest)
	}
	cfg.AuditLog = filepath.Join(home, "audit.jsonl")
	gw, auditor, _, err := assemble(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), getenv)
	if err != nil {
		b.Fatalf("assembling the gateway: %v", err)
	}
	b.Cleanup(func() {
		if err := gw.shutdown(); err != nil {
			b.Error(err)
		}
		if auditor != nil {
			if err := auditor.close(); err != nil {
				b.Error(err)
			}
		}
	})
	decider, ok := gw.stages.Decider.(engineDecider)
	if !ok {
		b.Fatalf("the gateway's decider is %T", gw.stages.Decider)
	}
	inputs := decisionCorpus(b)
	for i := range inputs {
		if inputs[i].Gateway == nil {
			inputs[i].Gateway = &decider.gateway
		}
	}
	ctx := context.Background()
	type took struct{ wall, cpu time.Duration }
	decide := func(in policy.Input) took {
		done := make(chan took)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			t0, c0 := time.Now(), threadCPU()
			if _, err := gw.policy.Decide(ctx, in); err != nil {
				b.Error(err)
			}
			done <- took{time.Since(t0), threadCPU() - c0}
		}()
		return <-done
	}
	for _, in := range inputs {
		decide(in)
	}
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gcs)
	gc0 := gcs[0].Value.Uint64()
	wall, cpu := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t := decide(inputs[i%len(inputs)])
		wall, cpu = append(wall, t.wall), append(cpu, t.cpu)
	}
	b.StopTimer()
	metrics.Read(gcs)
	b.ReportMetric(float64(gcs[0].Value.Uint64()-gc0)*1000/float64(b.N), "gc-per-1k")
	for _, m := range []struct {
		ds   []time.Duration
		name string
	}{{wall, ""}, {cpu, "cpu-"}} {
		slices.Sort(m.ds)
		b.ReportMetric(float64(m.ds[len(m.ds)/2].Microseconds()), m.name+"median-µs")
		b.ReportMetric(float64(m.ds[len(m.ds)*99/100].Microseconds()), m.name+"p99-µs")
	}
}

// decisionCorpus reads the decision benchmark's inputs: every document of
// policy/testdata/corpus/*.jsonl, then of policy/testdata/code.jsonl.
func decisionCorpus(tb testing.TB) []policy.Input {
	tb.Helper()
	paths, err := filepath.Glob("../../policy/testdata/corpus/*.jsonl")
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no corpus: %v", err)
	}
	var inputs []policy.Input
	for _, p := range append(paths, "../../policy/testdata/code.jsonl") {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			var in policy.Input
			if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
				tb.Fatalf("%s:%d: %v", p, n, err)
			}
			inputs = append(inputs, in)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
	}
	return inputs
}

// threadCPU is the CPU time the calling thread has used (the clock is
// always there on Linux: an error leaves the time 0).
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
