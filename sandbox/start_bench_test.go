package sandbox

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkLaunchStart: a confined launch of /bin/true, Start to exit,
// median of b.N launches (the launcher's start, its cgroups, Landlock
// and seccomp, the program's exec), with the refusals' listener as a
// session without the exec gate has it. Run it beside the same
// benchmark of another tree, alternating, to compare.
func BenchmarkLaunchStart(b *testing.B) {
	l := newLayout(b)
	var d []time.Duration
	for i := 0; i < b.N; i++ {
		s := testSpec(b, l)
		s.Argv = []string{"/bin/true"}
		cmd := exec.Command("/bin/false")
		t0 := time.Now()
		launch, err := Start(cmd, s, Options{Name: cgroupName(b), Refused: func(*SyscallRefusal) {}}, cmd.Start)
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
		launch.End()
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2])/float64(time.Millisecond), "median-ms")
	b.ReportMetric(0, "ns/op")
}
