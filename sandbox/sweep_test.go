package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// deadOwner returns the tag of a gateway process that has exited.
func deadOwner(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tag := ownerOf(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !ownerGone(tag) {
		t.Fatalf("%s is not gone after its process exited", tag)
	}
	return tag
}

func TestOwnerTags(t *testing.T) {
	me := Owner()
	if _, _, ok := parseOwner(me); !ok || ownerGone(me) {
		t.Fatalf("Owner() = %q: parsed %v, gone %v", me, ok, ownerGone(me))
	}
	for _, bad := range []string{"", "g", "g1", "g1.", "g.1", "gx.1", "g01.5", "g1.05", "1.5", "g-1.5"} {
		if _, _, ok := parseOwner(bad); ok {
			t.Errorf("parseOwner(%q) accepted it", bad)
		}
		if ownerGone(bad) {
			t.Errorf("ownerGone(%q) = true for a tag not made by Owner", bad)
		}
	}
	// A pid the kernel gave to another process does not pass for the tag.
	pid, start, _ := parseOwner(me)
	if !ownerGone("g" + strconv.Itoa(pid) + "." + strconv.FormatUint(start+1, 10)) {
		t.Error("a tag with this pid and another start time is not gone")
	}
}

// A sweep removes the private directories of dead gateways, and only
// those: a live gateway's, an untagged one and another kind's stay.
func TestSweepRemovesOnlyDeadGatewaysDirectories(t *testing.T) {
	dead := deadOwner(t)
	mk := func(pattern string) string {
		d, err := os.MkdirTemp("", pattern)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := []string{mk("termgate-session-" + dead + "-"), mk("termgate-exec-" + dead + "-"), mk("termgate-run-" + dead + "-")}
	kept := []string{mk(TempPattern("session")), mk("termgate-session-"), mk("termgate-other-" + dead + "-")}
	// A link named like a dead gateway's directory is not followed.
	target := mk("termgate-sweep-target-")
	link := filepath.Join(os.TempDir(), "termgate-session-"+dead+"-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(link) })
	sw, err := sweep(onlyOwner(dead))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	for _, d := range gone {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the sweep", d)
		}
	}
	for _, d := range append(kept, target, link) {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(target, "f")); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
	if len(sw.Dirs) < len(gone) {
		t.Errorf("Swept.Dirs = %v, want at least %d", sw.Dirs, len(gone))
	}
}

// A sweep kills what still runs in a dead gateway's cgroup (a process
// that left its session) and removes the cgroup.
func TestSweepKillsWhatADeadGatewayLeftRunning(t *testing.T) {
	if os.Geteuid() != 0 || len(cgroupRoots()) == 0 {
		t.Skip("needs root and a pids cgroup hierarchy")
	}
	dead := deadOwner(t)
	var dirs []string
	for _, root := range cgroupRoots() {
		d := filepath.Join(root, "termgate", dead, "s-SWEEPTEST")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Remove(d)
			os.Remove(filepath.Dir(d))
		}
	})
	left := exec.Command("sleep", "1000")
	left.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- left.Wait() }()
	t.Cleanup(func() { _ = left.Process.Kill() })
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(left.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := sweep(onlyOwner(dead))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process left in the dead gateway's cgroup still runs after the sweep")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the sweep", d)
		}
		if _, err := os.Stat(filepath.Dir(d)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the sweep", filepath.Dir(d))
		}
	}
	if sw.Processes < 1 || len(sw.Cgroups) < len(dirs) {
		t.Errorf("Swept = %+v", sw)
	}
}

// onlyOwner is a sweep's test of goneness narrowed to one owner the test
// made: tests running beside this one (another package's gateways) keep
// what their own dead gateways left.
func onlyOwner(tag string) func(string) bool {
	return func(t string) bool { return t == tag && ownerGone(t) }
}
