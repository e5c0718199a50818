package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkExecGateKernel: what holding each exec in the kernel costs, the
// judge aside (it allows at once): a confined shell runs /bin/true 500
// times, with the gate and without, alternating. gateway-cpu-µs/exec is
// the CPU time this process (the gateway's side: the supervisor) spent
// per exec with the gate, less without it: unlike the wall time, a busy
// machine does not move it much. "flat": the launch's shell runs each
// exec's parent; "nested": a shell below it does (the ancestry has one
// more process to read, as a build's make or compiler driver is).
//
//	go test ./sandbox -run '^$' -bench ExecGateKernel -benchtime 5x
func BenchmarkExecGateKernel(b *testing.B) {
	for _, c := range []struct{ name, script string }{
		{"flat", "for i in $(seq 500); do /bin/true; done"},
		{"nested", "/bin/bash -c 'for i in $(seq 500); do /bin/true; done'; exit $?"},
	} {
		b.Run(c.name, func(b *testing.B) { benchExecGateKernel(b, c.script) })
	}
}

func benchExecGateKernel(b *testing.B, script string) {
	if err := NotifySupport(); err != nil {
		b.Skip(err)
	}
	l := newLayout(b)
	idx := NewProgramIndex(SystemProgramDirs())
	// The process's CPU time, and its threads' voluntary context
	// switches (each a thread that slept: a wait in the kernel, a
	// hand-off between goroutines on two threads), which the machine's
	// load hardly moves.
	cpu := func() (time.Duration, time.Duration) {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Nvcsw)
	}
	var cpuOn, cpuOff, swOn, swOff []time.Duration
	run := func(gate bool) time.Duration {
		s := testSpec(b, l)
		s.Argv, s.Env = []string{"/bin/bash", "-c", script}, []string{"PATH=/usr/bin:/bin"}
		cmd := exec.Command("/bin/false")
		o := Options{Name: cgroupName(b), Programs: idx}
		if gate {
			o.Judge = func(context.Context, *ExecRequest) ExecVerdict { return ExecVerdict{Allow: true} }
		}
		c0, sw0 := cpu()
		t0 := time.Now()
		launch, err := Start(cmd, s, o, cmd.Start)
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		launch.End()
		c1, sw1 := cpu()
		if gate {
			cpuOn, swOn = append(cpuOn, c1-c0), append(swOn, sw1-sw0)
		} else {
			cpuOff, swOff = append(cpuOff, c1-c0), append(swOff, sw1-sw0)
		}
		return d
	}
	var on, off []time.Duration
	for i := 0; i < b.N; i++ {
		on = append(on, run(true))
		off = append(off, run(false))
	}
	med := func(d []time.Duration) time.Duration {
		for i := range d {
			for j := i + 1; j < len(d); j++ {
				if d[j] < d[i] {
					d[i], d[j] = d[j], d[i]
				}
			}
		}
		return d[len(d)/2]
	}
	mOn, mOff := med(on), med(off)
	b.ReportMetric(float64(mOn-mOff)/500/float64(time.Microsecond), "added-µs/exec")
	b.ReportMetric(float64(mOff)/500/float64(time.Microsecond), "off-µs/exec")
	b.ReportMetric(float64(med(cpuOn)-med(cpuOff))/500/float64(time.Microsecond), "gateway-cpu-µs/exec")
	b.ReportMetric(float64(med(swOn)-med(swOff))/500, "gateway-vcsw/exec")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRefusedCall: what a refused call costs when a program loops
// on it (perl asks for an AF_VSOCK socket 20,000 times), three ways
// side by side, alternating: the filter answers alone (nothing named),
// every call named in full (no budget: what each call cost before the
// budget), and the launch's budget (named in full at first, then
// counted). µs/call is the wall time per call, median of the rounds;
// gateway-cpu-µs/call this process's CPU time per call (the
// supervisor's side).
func BenchmarkRefusedCall(b *testing.B) {
	if err := NotifySupport(); err != nil {
		b.Skip(err)
	}
	if _, err := exec.LookPath("perl"); err != nil {
		b.Skip("no perl")
	}
	const n = 20000
	l := newLayout(b)
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	kinds := []string{"filter", "unbudgeted", "budget"}
	wall := map[string][]time.Duration{}
	used := map[string][]time.Duration{}
	run := func(kind string) {
		s := testSpec(b, l)
		s.Argv = []string{"/usr/bin/perl", "-e", refusalLoop, fmt.Sprint(n)}
		cmd := exec.Command("/bin/false")
		var out strings.Builder
		cmd.Stdout = &out
		var told atomic.Int64
		o := Options{Name: cgroupName(b)}
		if kind != "filter" {
			o.Refused = func(*SyscallRefusal) { told.Add(1) }
		}
		if kind == "unbudgeted" {
			o.refusalBurst = -1
		}
		t0, c0 := time.Now(), cpu()
		launch, err := Start(cmd, s, o, cmd.Start)
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		d, c := time.Since(t0), cpu()-c0
		launch.End()
		if strings.TrimSpace(out.String()) != fmt.Sprintf("refused %d", n) || (kind != "filter" && told.Load() != n) {
			b.Fatalf("%s: %q, told %d", kind, out.String(), told.Load())
		}
		wall[kind] = append(wall[kind], d)
		used[kind] = append(used[kind], c)
	}
	for i := 0; i < b.N; i++ {
		for _, k := range kinds {
			run(k)
		}
	}
	med := func(d []time.Duration) float64 {
		d = append([]time.Duration(nil), d...)
		slices.Sort(d)
		return float64(d[len(d)/2]) / n / float64(time.Microsecond)
	}
	for _, k := range kinds {
		b.ReportMetric(med(wall[k]), k+"-µs/call")
		b.ReportMetric(med(used[k]), k+"-gateway-cpu-µs/call")
	}
	b.ReportMetric(0, "ns/op")
}
