package sandbox

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// netlinkMessage frames one audit record as the kernel sends it.
func netlinkMessage(typ uint16, text string) []byte {
	b := make([]byte, 16+len(text))
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	copy(b[16:], text)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

const (
	recAccess = `audit(1729738800.268:30): domain=195ba459b blockers=fs.write_file path="/home/u/notes.txt" dev="vda2" ino=351`
	recDomain = `audit(1729738800.268:30): domain=195ba459b status=allocated mode=enforcing pid=286 uid=0 exe="/usr/bin/termgate" comm="termgate"`
	recHex    = `audit(1729738800.300:31): domain=195ba459b blockers=fs.make_reg path=2F746D702F6120622F dev="vda2" ino=12`
	recNet    = `audit(1729738800.400:32): domain=195ba459b blockers=net.connect_tcp daddr=10.0.0.1 dest=443`
	recFree   = `audit(1729738800.500:33): domain=195ba459b status=deallocated denials=3`
)

// TestParseLandlockRecords: the records of the kernel's documentation,
// a path written in hex (it holds a space), a network denial.
func TestParseLandlockRecords(t *testing.T) {
	msgs := parseNetlinkMessages(slices.Concat(netlinkMessage(1423, recAccess), netlinkMessage(1424, recDomain),
		netlinkMessage(1423, recHex), netlinkMessage(1423, recNet), netlinkMessage(1424, recFree)))
	if len(msgs) != 5 {
		t.Fatalf("%d messages", len(msgs))
	}
	var evs []landlockEvent
	for _, m := range msgs {
		ev, ok := parseLandlock(m.Type, m.Data)
		if !ok {
			t.Fatalf("%q did not parse", m.Data)
		}
		evs = append(evs, ev)
	}
	if d := evs[0].Denial; d == nil || d.Domain != 0x195ba459b || d.Path != "/home/u/notes.txt" || d.Access() != "write" {
		t.Errorf("access: %+v", evs[0])
	}
	if !evs[1].Allocated || evs[1].Pid != 286 || evs[1].Domain != 0x195ba459b {
		t.Errorf("domain: %+v", evs[1])
	}
	if d := evs[2].Denial; d == nil || d.Path != "/tmp/a b/" {
		t.Errorf("hex path: %+v", evs[2].Denial)
	}
	if d := evs[3].Denial; d == nil || d.Port != 443 || d.Access() != "connect" {
		t.Errorf("net: %+v", evs[3].Denial)
	}
	if !evs[4].Deallocated {
		t.Errorf("free: %+v", evs[4])
	}
	if _, ok := parseLandlock(1300, []byte(recAccess)); ok {
		t.Error("a record of another type was read as Landlock's")
	}
}

// TestLandlockAuditMatchesItsLaunch: a denial goes to the watcher of the
// pid that made its domain, also when the watch begins after the denial
// was read; another domain's denial goes nowhere.
func TestLandlockAuditMatchesItsLaunch(t *testing.T) {
	a := &LandlockAudit{domains: map[uint64]int{}, watchers: map[int]func(LandlockDenial){}, syncs: map[uint64]chan struct{}{}}
	var got []string
	a.handle(auditMessage{1423, []byte(recAccess)})
	a.handle(auditMessage{1424, []byte(recDomain)})
	other := strings.NewReplacer("195ba459b", "77", "pid=286", "pid=999")
	a.handle(auditMessage{1423, []byte(other.Replace(recAccess))})
	a.handle(auditMessage{1424, []byte(other.Replace(recDomain))})
	cancel := a.Watch(286, func(d LandlockDenial) { got = append(got, d.Path) })
	a.handle(auditMessage{1423, []byte(recHex)})
	if !slices.Equal(got, []string{"/home/u/notes.txt", "/tmp/a b/"}) {
		t.Errorf("delivered %q", got)
	}
	cancel()
	a.handle(auditMessage{1423, []byte(recAccess)})
	if len(got) != 2 {
		t.Errorf("delivered after cancel: %q", got)
	}
}

func FuzzParseAuditMessages(f *testing.F) {
	f.Add(slices.Concat(netlinkMessage(1423, recAccess), netlinkMessage(1424, recDomain)))
	f.Add(netlinkMessage(1423, recHex))
	f.Add(netlinkMessage(1423, recNet))
	f.Add(netlinkMessage(1424, recFree))
	f.Add(netlinkMessage(1121, `audit(1.2:3): pid=1 uid=0 msg='termgate-sync=ab-1'`))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		a := &LandlockAudit{nonce: "ab", domains: map[uint64]int{}, watchers: map[int]func(LandlockDenial){},
			syncs: map[uint64]chan struct{}{1: make(chan struct{})}}
		a.Watch(286, func(d LandlockDenial) { _ = d.Access() })
		for _, m := range parseNetlinkMessages(b) {
			if len(m.Data) > len(b) {
				t.Fatalf("a message longer than its datagram")
			}
			parseAuditRecord(m.Data)
			a.handle(m)
		}
		if len(a.pending) > maxPending || len(a.domains) > maxDomains {
			t.Fatalf("unbounded: %d pending, %d domains", len(a.pending), len(a.domains))
		}
	})
}

// auditOn keeps the kernel's auditing on for the test (sandbox.HoldAuditOn:
// on if it was off, back off after the machine's last such test); it skips where the kernel has no audit or the test
// may not change it.
func auditOn(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot read the kernel's audit records")
	}
	if _, err := AuditEnabled(); err != nil {
		t.Skipf("no kernel audit here: %v", err)
	}
	release, err := HoldAuditOn()
	if err != nil {
		t.Skipf("cannot turn auditing on: %v", err)
	}
	t.Cleanup(func() {
		if err := release(); err != nil {
			t.Errorf("turning auditing back off: %v", err)
		}
	})
}

// TestLandlockDenialsFromAudit: with auditing on, a confined program's
// write to a file the profile grants read-only is named by the kernel's
// own record, matched to this launch only (other gateways' sessions on
// the machine are denied at the same time, in other domains).
func TestLandlockDenialsFromAudit(t *testing.T) {
	abi, _ := Probe().LandlockABI, 0
	if abi < 7 {
		t.Skipf("Landlock ABI %d logs no denial after exec", abi)
	}
	auditOn(t)
	a, err := OpenLandlockAudit()
	if err != nil {
		t.Skipf("cannot read the audit log: %v", err)
	}
	defer a.Close()
	l := newLayout(t)
	target := filepath.Join(l.root, "ro", "notes.txt")
	s := testSpec(t, l)
	if err := os.WriteFile(target, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Argv = []string{"/bin/sh", "-c", "echo more >> " + target + "; exit 0"}
	var mu sync.Mutex
	var got []LandlockDenial
	cmd := exec.Command("/bin/false")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	var cancel func()
	launch, err := Start(cmd, s, Options{Name: cgroupName(t)}, func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		cancel = a.Watch(cmd.Process.Pid, func(d LandlockDenial) {
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	werr := cmd.Wait()
	launch.End()
	if werr != nil || !strings.Contains(out.String(), "Permission denied") {
		t.Fatalf("%v: %q", werr, out.String())
	}
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(got, func(d LandlockDenial) bool {
		return d.Path == target && slices.Contains(d.Blockers, "fs.write_file") && d.Access() == "write"
	}) {
		t.Fatalf("denials %+v, want a write of %s", got, target)
	}
}

// TestHoldAuditOn: auditing stays on while any holder is left.
func TestHoldAuditOn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	if _, err := AuditEnabled(); err != nil {
		t.Skipf("no kernel audit here: %v", err)
	}
	r1, err := HoldAuditOn()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := HoldAuditOn()
	if err != nil {
		t.Fatal(err)
	}
	if err := r1(); err != nil {
		t.Fatal(err)
	}
	if on, err := AuditEnabled(); err != nil || on == 0 {
		t.Fatalf("auditing off (%v) while a holder is left", err)
	}
	if err := r2(); err != nil {
		t.Fatal(err)
	}
}
