package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// swarm is nine chains of processes that never stand still: each forks a
// child that leaves its session with setsid and goes on, and exits, so
// that by the time a sweep has listed a pid and sends it SIGKILL, it is
// gone and its child is not on the list. The pids cgroup bounds it. It is
// C: the chain must move faster than a sweep can list it.
const swarm = `#include <unistd.h>
int main(void) {
	for (int i = 0; i < 8; i++)
		if (fork() == 0)
			break;
	for (;;) {
		pid_t p = fork();
		if (p == 0) { setsid(); continue; }
		if (p > 0) _exit(0);
	}
}
`

// buildSwarm compiles swarm, or skips the test without a C compiler.
func buildSwarm(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("needs gcc to build the swarm")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "swarm.c")
	if err := os.WriteFile(src, []byte(swarm), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "swarm")
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("building the swarm: %v\n%s", err, out)
	}
	return bin
}

// TestCgroupKillEndsASwarm: a swarm that keeps forking and calling setsid
// is gone after one Kill, and its cgroup can be removed.
func TestCgroupKillEndsASwarm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups")
	}
	bin := buildSwarm(t)
	cg, err := NewCgroup(cgroupName(t), 48)
	if err != nil {
		t.Skipf("no pids cgroup: %v", err)
	}
	t.Cleanup(func() { _ = cg.Kill(); _ = cg.Remove() })
	// Every directory it made is where a sweep would look.
	for _, d := range cg.dirs {
		found := false
		for _, r := range cgroupRoots() {
			found = found || filepath.Dir(d) == filepath.Join(r, "termgate", Owner())
		}
		if !found {
			t.Fatalf("%s is outside cgroupRoots() %v", d, cgroupRoots())
		}
	}
	if !cg.CanFreeze() {
		t.Log("no freezer: Kill sweeps")
	}
	args := []string{"-c", `for f in "$@"; do echo $$ > "$f" || exit 1; done; exec "$SWARM"`, "sh"}
	cmd := exec.Command("sh", append(args, cg.ProcsFiles()...)...)
	cmd.Env = append(os.Environ(), "SWARM="+bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(cg.members()) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the swarm did not grow: %d members", len(cg.members()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if n := len(cg.members()); n != 0 {
		t.Fatalf("%d processes survived Kill", n)
	}
	if err := cg.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	<-done
}
