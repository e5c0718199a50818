package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The exec gate's cost, side by side: two servers, one with the gate
// (enforce, the default) and one with --exec-gate=off, both confined and
// audited, driven in alternation (the order swapped each round) so that
// a noisy spell of a shared machine falls on both. Figures are medians.
// gateway-cpu is the CPU time the gate's server spent on a round less
// the other's (their children aside): the machine's load moves it far
// less than the wall time.
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
// each side's durations, and the CPU time each server spent on them.
func (p gatePair) run(b *testing.B, line string, check func(map[string]any)) (on, off, cpuOn, cpuOff []time.Duration) {
	send := func(s *server, id string) (time.Duration, time.Duration) {
		c0 := serverCPU(b, s)
		t0 := time.Now()
		r := s.send(id, line, "timeout_ms", 600000)
		d := time.Since(t0)
		c := serverCPU(b, s) - c0
		check(r)
		return d, c
	}
	for range 2 { // warm up: page cache, the program index, the first decisions
		send(p.on, p.idOn)
		send(p.off, p.idOff)
	}
	b.ResetTimer()
	for i := range b.N {
		for _, gate := range []bool{i%2 == 0, i%2 != 0} {
			if gate {
				d, c := send(p.on, p.idOn)
				on, cpuOn = append(on, d), append(cpuOn, c)
			} else {
				d, c := send(p.off, p.idOff)
				off, cpuOff = append(off, d), append(cpuOff, c)
			}
		}
	}
	b.StopTimer()
	return on, off, cpuOn, cpuOff
}

// serverCPU is the CPU time a server's process has used (all its
// threads; not its children's), from /proc/PID/stat, in clock ticks of
// 10 ms: a round of a benchmark takes hundreds of them.
func serverCPU(b *testing.B, s *server) time.Duration {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(buf[bytes.LastIndexByte(buf, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("server stat: %q", buf)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("server stat: %q", buf)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
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
			on, off, cpuOn, cpuOff := p.run(b, c.loop, func(r map[string]any) {
				if str(r, "output") != "ok" {
					b.Fatalf("output %q", str(r, "output"))
				}
			})
			mOn, mOff := median(on), median(off)
			b.ReportMetric(float64(mOn)/float64(time.Millisecond), "gate-ms")
			b.ReportMetric(float64(mOff)/float64(time.Millisecond), "off-ms")
			b.ReportMetric(float64(mOn-mOff)/n/float64(time.Microsecond), "added-µs/exec")
			b.ReportMetric(float64(pairedMedian(on, off))/n/float64(time.Microsecond), "paired-µs/exec")
			b.ReportMetric(float64(median(cpuOn)-median(cpuOff))/n/float64(time.Microsecond), "gateway-cpu-µs/exec")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkExecGateMake: make -j2 of a small C project (32 files, a few
// hundred execs a build); the gate's build time as a share of off's
// (target: within 10 %).
func BenchmarkExecGateMake(b *testing.B) {
	p := newGatePair(b, func(dir string) { writeCProject(b, filepath.Join(dir, "c"), 32) })
	on, off, cpuOn, cpuOff := p.run(b, "make -s -C c clean && make -s -C c -j2 && ./c/app", func(r map[string]any) {
		if str(r, "output") != "sum 528" {
			b.Fatalf("output %q", str(r, "output"))
		}
	})
	mOn, mOff := median(on), median(off)
	b.ReportMetric(float64(mOn)/float64(time.Millisecond), "gate-ms")
	b.ReportMetric(float64(mOff)/float64(time.Millisecond), "off-ms")
	b.ReportMetric(100*(float64(mOn)/float64(mOff)-1), "added-%")
	b.ReportMetric(100*float64(pairedMedian(on, off))/float64(mOff), "paired-%")
	b.ReportMetric(float64(median(cpuOn)-median(cpuOff))/float64(time.Millisecond), "gateway-cpu-ms/build")
	b.ReportMetric(0, "ns/op")
}
