package redact

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// reportCPU starts the timer and returns what reports, when the benchmark
// is done, the MB/s of the CPU time its goroutine's thread spent: on a
// machine shared with others, wall time says more of them than of us.
func reportCPU(b *testing.B, size int) func() {
	runtime.LockOSThread()
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	t0 := cpu()
	return func() {
		b.StopTimer()
		if d := cpu() - t0; d > 0 {
			b.ReportMetric(float64(size)*float64(b.N)/1e6/d.Seconds(), "cpu-MB/s")
		}
		runtime.UnlockOSThread()
	}
}

// BenchmarkRedactStreamHeld: what the secrets an engine holds cost every
// stream: none, one, and as many as it takes (256, the default bound; the
// registry of one-off secrets was unbounded, and 5,000 of them made every
// session's output 8.5 times slower). 16 KiB writes, as a session reads.
func BenchmarkRedactStreamHeld(b *testing.B) {
	text := []byte(benchText())
	for _, n := range []int{0, 1, 256} {
		b.Run(fmt.Sprintf("held=%d", n), func(b *testing.B) {
			e := testEngine(b)
			r := rand.New(rand.NewPCG(uint64(n), 3))
			for range n {
				if err := e.AddSecret(rnd(r, alnum, 24)); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(text)))
			defer reportCPU(b, len(text))()
			for range b.N {
				s := e.NewStream(time.Hour, func([]byte) {})
				for i := 0; i < len(text); i += 16 << 10 {
					s.Write(text[i:min(i+16<<10, len(text))])
				}
				s.Close()
			}
		})
	}
}

// BenchmarkKeystrokeEcho: the echo of typed text, one byte a write, as a
// terminal echoes keys: how long a write takes before its byte goes out
// (median and 99th percentile), with the session's context of prompts
// and output before it. Every byte goes out on its own write
// (TestOrdinaryTextFlows).
func BenchmarkKeystrokeEcho(b *testing.B) {
	e := testEngine(b)
	lines := []string{
		"dev@box:~/src/termgate$ git log --oneline -5 | cat",
		"dev@box:~/src/termgate$ go test -count=1 -run TestStream ./redact",
		"dev@box:~/src/termgate$ export GOFLAGS=-mod=mod && make build",
		"mysql> SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL 1 DAY;",
	}
	history := cleanText(4, 64<<10)
	var d []time.Duration
	b.ResetTimer()
	for i := range b.N {
		s := e.NewStream(time.Hour, func([]byte) {})
		s.Write([]byte(history))
		line := lines[i%len(lines)]
		for j := range len(line) {
			t0 := time.Now()
			s.Write([]byte(line[j : j+1]))
			d = append(d, time.Since(t0))
		}
		s.Close()
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "median-ns/key")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "p99-ns/key")
	b.ReportMetric(0, "ns/op")
}
