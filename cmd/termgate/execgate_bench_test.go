package main

import (
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// The exec gate's cost, side by side: two servers, one with the gate
// (enforce, the default) and one with --exec-gate=off, both confined and
// audited, driven in alternation (the order swapped each round) so that
// a noisy spell of a shared machine falls on both. Figures are medians.
//
//	go test ./cmd/termgate -run '^$' -bench ExecGate -benchtime 15x

// gatePair is a bash session on each server, each in a directory of its
// own made by setup.
type gatePair struct {
	on, off     *server
	idOn, idOff string
}

func newGatePair(b *testing.B, setup func(dir string)) gatePair {
	p := gatePair{on: startServer(b), off: startServer(b, "--exec-gate", "off")}
	dirOn, dirOff := b.TempDir(), b.TempDir()
	setup(dirOn)
	setup(dirOff)
	p.idOn = p.on.start(map[string]any{"cwd": dirOn})
	p.idOff = p.off.start(map[string]any{"cwd": dirOff})
	return p
}

// run sends line to both sessions b.N times, alternating, and returns
// each side's durations.
func (p gatePair) run(b *testing.B, line string, check func(map[string]any)) (on, off []time.Duration) {
	send := func(s *server, id string) time.Duration {
		t0 := time.Now()
		r := s.send(id, line, "timeout_ms", 600000)
		d := time.Since(t0)
		check(r)
		return d
	}
	for range 2 { // warm up: page cache, the program index, the first decisions
		send(p.on, p.idOn)
		send(p.off, p.idOff)
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			on = append(on, send(p.on, p.idOn))
			off = append(off, send(p.off, p.idOff))
		} else {
			off = append(off, send(p.off, p.idOff))
			on = append(on, send(p.on, p.idOn))
		}
	}
	b.StopTimer()
	return on, off
}

// pairedMedian is the median of the rounds' differences (on[i] -
// off[i], the two runs of one round side by side): a load that changes
// from round to round moves both runs of a round alike.
func pairedMedian(on, off []time.Duration) time.Duration {
	d := make([]time.Duration, len(on))
	for i := range on {
		d[i] = on[i] - off[i]
	}
	return median(d)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkExecGatePerExec: a confined bash runs /bin/true 1,000 times;
// the gate's added cost per exec is the difference of the medians over
// 1,000 (target: at most 100 µs), and paired-µs/exec the median of the
// rounds' own differences. "same" runs the same argv each time
// (the decision is made once and reused), "distinct" another argument
// each time (every exec is decided by the policy).
func BenchmarkExecGatePerExec(b *testing.B) {
	for _, c := range []struct{ name, loop string }{
		{"same", "for i in $(seq 1000); do /bin/true; done; echo ok"},
		{"distinct", "for i in $(seq 1000); do /bin/true $i; done; echo ok"},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := newGatePair(b, func(string) {})
			const n = 1000
			on, off := p.run(b, c.loop, func(r map[string]any) {
				if str(r, "output") != "ok" {
					b.Fatalf("output %q", str(r, "output"))
				}
			})
			mOn, mOff := median(on), median(off)
			b.ReportMetric(float64(mOn)/float64(time.Millisecond), "gate-ms")
			b.ReportMetric(float64(mOff)/float64(time.Millisecond), "off-ms")
			b.ReportMetric(float64(mOn-mOff)/n/float64(time.Microsecond), "added-µs/exec")
			b.ReportMetric(float64(pairedMedian(on, off))/n/float64(time.Microsecond), "paired-µs/exec")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkExecGateMake: make -j2 of a small C project (32 files, a few
// hundred execs a build); the gate's build time as a share of off's
// (target: within 10 %).
func BenchmarkExecGateMake(b *testing.B) {
	p := newGatePair(b, func(dir string) { writeCProject(b, filepath.Join(dir, "c"), 32) })
	on, off := p.run(b, "make -s -C c clean && make -s -C c -j2 && ./c/app", func(r map[string]any) {
		if str(r, "output") != "sum 528" {
			b.Fatalf("output %q", str(r, "output"))
		}
	})
	mOn, mOff := median(on), median(off)
	b.ReportMetric(float64(mOn)/float64(time.Millisecond), "gate-ms")
	b.ReportMetric(float64(mOff)/float64(time.Millisecond), "off-ms")
	b.ReportMetric(100*(float64(mOn)/float64(mOff)-1), "added-%")
	b.ReportMetric(100*float64(pairedMedian(on, off))/float64(mOff), "paired-%")
	b.ReportMetric(0, "ns/op")
}
