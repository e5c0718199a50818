package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A gateway killed before it could close its sessions leaves a process
// that left its session running, and the session's private directory; the
// next gateway to start removes both, says so in its log and in the
// audit record of its start, and leaves a live gateway's sessions alone.
func TestStartSweepsWhatADeadGatewayLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sessions' cgroups need root")
	}
	state := t.TempDir()
	auditLog, auditKey := filepath.Join(state, "audit.jsonl"), filepath.Join(state, "audit.key")
	live := startServer(t)
	liveID := live.start(map[string]any{"cwd": t.TempDir()})

	doomed := startServer(t)
	mk := marker()
	id := doomed.start(map[string]any{"cwd": t.TempDir()})
	doomed.send(id, "setsid sleep "+mk+" >/dev/null 2>&1 < /dev/null &")
	// Counted once it is sleep itself, leading its own session: before
	// that, "setsid sleep MK" (or its child waiting on the exec
	// checkpoint) matches too, and a gateway killed then takes the exec
	// with it, leaving nothing to sweep.
	eventually(t, time.Minute, "the escaped process runs", func() bool { return len(escaped(mk)) == 1 })
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "termgate-session-g"+strconv.Itoa(doomed.pid())+".*"))
	if len(dirs) == 0 {
		t.Fatal("the doomed gateway's session has no tagged private directory")
	}
	if err := syscall.Kill(doomed.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The client's transport reaps the process; here it is enough that it
	// is gone (or a zombie), so no second Wait races with the transport's.
	eventually(t, time.Minute, "the doomed gateway dies", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(doomed.pid()) + "/stat")
		if err != nil {
			return true
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
	// The kill took the session's leader (PDEATHSIG), not what left it.
	if len(escaped(mk)) != 1 {
		skipIfSweptByAnother(t, live.pid(), doomed.pid())
		t.Fatal("the escaped process did not outlive its gateway: nothing to sweep")
	}

	next := startServer(t, "--audit-log", auditLog, "--audit-key", auditKey)
	if n := processesWith("sleep " + mk); len(n) != 0 {
		t.Fatalf("the process a dead gateway left still runs after the next start: %v", n)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the next start", d)
		}
	}
	if !strings.Contains(next.logText(), "removed what dead gateways left behind") {
		skipIfSweptByAnother(t, live.pid(), next.pid())
		t.Errorf("the log does not say what was removed:\n%s", next.logText())
	}
	var swept bool
	for _, r := range readRecords(t, auditLog) {
		if n, ok := field(r, "termgate.sweep.processes").(json.Number); ok && n.String() != "0" {
			swept = true
		}
	}
	if !swept {
		t.Error("the start's audit record does not say what was swept")
	}
	// The live gateway's session is untouched.
	wantOutput(t, live.send(liveID, "echo still-here"), "still-here")
}

// escaped returns the processes running exactly "sleep MK" that lead
// their own session: what "setsid sleep MK" leaves once its exec is done.
func escaped(mk string) []int {
	var pids []int
	for _, pid := range processesWith("sleep " + mk) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || string(b) != "sleep\x00"+mk+"\x00" {
			continue
		}
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Field 6, the session id, counted after the command's ')'.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// skipIfSweptByAnother skips the test when a gateway other than the
// test's own (own) runs on this machine: any gateway that starts sweeps
// what a dead one left, so another test run's could have swept first.
// In CI no other gateway runs, and the test never skips there.
func skipIfSweptByAnother(t *testing.T, own ...int) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || slices.Contains(own, pid) {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && filepath.Base(exe) == "termgate" {
			t.Skipf("another gateway (pid %d) runs on this machine and may have swept first", pid)
		}
	}
}
