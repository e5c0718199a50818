package main

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// Benchmarks run the real binary over stdio with the go-sdk client, so a
// figure is a whole round trip: JSON-RPC in, the gate, the PTY write, the
// program's answer, completion detection, rendering, JSON-RPC out.
//
//	go test ./cmd/termgate -run '^$' -bench . -benchtime 200x

func reportLatency(b *testing.B, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(d[len(d)/2]), "median-ms")
	b.ReportMetric(ms(d[len(d)*99/100]), "p99-ms")
	b.ReportMetric(0, "ns/op") // the per-op mean hides the tail; medians are the figure
}

func benchRoundTrip(b *testing.B, start map[string]any, text, want string) {
	s := startServer(b)
	id := s.start(start)
	for range 5 { // warm up: first prompts, page cache
		s.send(id, text)
	}
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		r := s.send(id, text)
		d = append(d, time.Since(t0))
		if str(r, "output") != want {
			b.Fatalf("output %q, want %q", str(r, "output"), want)
		}
	}
	b.StopTimer()
	reportLatency(b, d)
}

func BenchmarkEchoRoundTrip(b *testing.B) {
	benchRoundTrip(b, nil, "echo hi", "hi")
}

func BenchmarkPythonRoundTrip(b *testing.B) {
	benchRoundTrip(b, map[string]any{"argv": []string{"python3", "-q"}}, "1+1", "2")
}

// BenchmarkIdleSessionMemory reports what an idle session costs the server:
// its RSS growth over 50 idle bash sessions, per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 50
	for range b.N {
		s := startServer(b, "--max-sessions", "64")
		warm := s.start(nil)
		s.send(warm, "echo warm")
		s.ok("session_close", map[string]any{"session_id": warm})
		before := rss(b, s.pid())
		for range n {
			id := s.start(nil)
			s.send(id, "echo ready")
		}
		time.Sleep(200 * time.Millisecond)
		after := rss(b, s.pid())
		b.ReportMetric(float64(after-before)/n/1024, "KiB/session")
		s.close()
	}
}

// Benchmark100Sessions opens 100 sessions and drives all of them at once:
// every one must answer, and the slowest answer is reported.
func Benchmark100Sessions(b *testing.B) {
	const n = 100
	for range b.N {
		s := startServer(b, "--max-sessions", "128")
		ids := make([]string, n)
		for i := range ids {
			ids[i] = s.start(nil)
		}
		var mu sync.Mutex
		var d []time.Duration
		var wg sync.WaitGroup
		errs := 0
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := fmt.Sprintf("n%d", i)
				t0 := time.Now()
				res := s.call("session_send", map[string]any{"session_id": id, "text": "echo " + want})
				el := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				d = append(d, el)
				if res.IsError || str(structured(b, res), "output") != want {
					errs++
				}
			}()
		}
		wg.Wait()
		if errs > 0 {
			b.Fatalf("%d of %d sessions answered wrongly", errs, n)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2])/1e6, "median-ms")
		b.ReportMetric(float64(d[len(d)-1])/1e6, "max-ms")
		b.ReportMetric(float64(n), "sessions")
		s.close()
	}
}

// rss returns a process's resident set size in bytes.
func rss(tb testing.TB, pid int) int64 { return procStatusKB(tb, pid, "VmRSS") << 10 }
