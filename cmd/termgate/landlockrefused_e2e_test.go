package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termgate/termgate/sandbox"
)

// auditOn keeps the kernel's auditing on for the test (sandbox.HoldAuditOn:
// on if it was off, back off after the machine's last such test); it skips where the gateway could not read the
// records (not root, no kernel audit, Landlock before ABI 7).
func auditOn(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the gateway cannot read the kernel's audit records")
	}
	if abi := sandbox.Probe().LandlockABI; abi < 7 {
		t.Skipf("Landlock ABI %d logs no denial after exec", abi)
	}
	if _, err := sandbox.AuditEnabled(); err != nil {
		t.Skipf("no kernel audit here: %v", err)
	}
	release, err := sandbox.HoldAuditOn()
	if err != nil {
		t.Skipf("cannot turn auditing on: %v", err)
	}
	t.Cleanup(func() {
		if err := release(); err != nil {
			t.Errorf("turning auditing back off: %v", err)
		}
	})
}

// TestLandlockRefusalsFromTheKernel: with auditing on, a session under
// default that writes a file of the home (which it may read, not write)
// gets a result naming the file with source landlock, listed once (the
// inference from the program's error would name it too), and the call's
// outcome record carries it. Only this session's denials are matched:
// other gateways' sessions on the machine are denied in other domains.
func TestLandlockRefusalsFromTheKernel(t *testing.T) {
	auditOn(t)
	g := startGateServer(t, nil)
	notes := filepath.Join(g.home, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := g.start(map[string]any{"cwd": g.project})
	r := g.send(id, "echo more >> ~/notes.txt", "timeout_ms", 60000)
	if !strings.Contains(str(r, "output"), "Permission denied") {
		t.Fatalf("output %q", str(r, "output"))
	}
	var mine []map[string]any
	for _, x := range refusals(r) {
		if str(x, "path") == notes {
			mine = append(mine, x)
		}
	}
	if len(mine) != 1 || str(mine[0], "source") != "landlock" || str(mine[0], "access") != "write" ||
		str(mine[0], "profile") != "default" || !strings.Contains(str(mine[0], "reason"), "fs.write_file") {
		t.Fatalf("sandbox_refused = %v", r["sandbox_refused"])
	}
	found := false
	for _, rec := range readRecords(t, g.auditLog) {
		if l, ok := field(rec, "termgate.sandbox.refused").([]any); ok {
			for _, x := range l {
				found = found || strings.HasPrefix(x.(string), "write "+notes+" [landlock], profile default: sandbox.file")
			}
		}
	}
	if !found {
		t.Error("the call's outcome record does not name the write")
	}
}
