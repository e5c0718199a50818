package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestLeaderNamedByItsImageNow: the launch's own process is named by the
// image it runs now, even when nothing told the supervisor of its exec
// (the other judge may be asked about the new program's first child
// before the one that let the exec run has done anything after its
// answer).
func TestLeaderNamedByItsImageNow(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read x; exec /bin/sleep 60")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	procs := newProcCache()
	defer procs.close()
	pid := cmd.Process.Pid
	leaderName := func() string {
		chain, _, _ := parents(pid, pid, procs) // a request of the leader's own
		return chain[0]
	}
	if got := leaderName(); got != "sh" && got != "dash" && got != "bash" {
		t.Fatalf("the leader before its exec is named %q", got)
	}
	in.Write([]byte("go\n"))
	// Ready when the kernel shows the new image (no fixed wait).
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if p, _ := os.Readlink(exe); p == "/usr/bin/sleep" || p == "/bin/sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader never exec'd sleep")
		}
	}
	if got := leaderName(); got != "sleep" {
		t.Fatalf("the leader after its exec is named %q, want sleep", got)
	}
}
