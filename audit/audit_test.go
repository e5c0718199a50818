package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func event(action string) Record {
	r := Record{}
	return r.Set("event.kind", "event").Set("event.category", []string{"process"}).
		Set("event.type", []string{"info"}).Set("event.action", action).Set("event.outcome", "success")
}

// writeLog writes n records and closes the log.
func writeLog(t *testing.T, o Options, n int) string {
	t.Helper()
	l, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Write(event("test-"+string(rune('a'+i%26))), i%5 == 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return o.Path
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t *testing.T, path string, ls []string) {
	t.Helper()
	s := strings.Join(ls, "")
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChainVerifies(t *testing.T) {
	path := writeLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Key: testKey}, 20)
	rep, err := Verify(testKey, path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Records != 21 || !rep.CleanStop || rep.Truncated != "" {
		t.Fatalf("report: %+v", rep)
	}
	// Every line is in canonical form: what encoding/json makes of it.
	for _, l := range lines(t, path) {
		r, err := parse([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if string(b) != strings.TrimSuffix(l, "\n") {
			t.Fatalf("not canonical:\n%s\n%s", l, b)
		}
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	// Another key does not verify it.
	rep, _ = Verify([]byte("another key, just as long as it"), path)
	if rep.OK() {
		t.Fatal("verified with the wrong key")
	}
}

// TestTamperingIsDetected: each kind of tampering is found and named.
func TestTamperingIsDetected(t *testing.T) {
	base := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, Options{Path: base, Key: testKey}, 10)
	orig := lines(t, base)
	cases := []struct {
		name   string
		change func([]string) []string
		want   string
	}{
		{"edited", func(l []string) []string {
			l[3] = strings.Replace(l[3], "test-d", "test-X", 1)
			return l
		}, "was edited"},
		{"deleted", func(l []string) []string { return append(l[:4:4], l[5:]...) }, "record 5 was deleted"},
		{"deleted several", func(l []string) []string { return append(l[:2:2], l[6:]...) }, "records 3-6 were deleted"},
		{"inserted", func(l []string) []string {
			forged := strings.Replace(l[4], "test-e", "test-Z", 1)
			return append(l[:5:5], append([]string{forged}, l[5:]...)...)
		}, "record inserted"},
		{"reordered", func(l []string) []string {
			l[3], l[4] = l[4], l[3]
			return l
		}, "out of order"},
		{"re-sealed without the key", func(l []string) []string {
			var r map[string]any
			json.Unmarshal([]byte(l[2]), &r)
			r["event"].(map[string]any)["action"] = "forged"
			b, _ := json.Marshal(r)
			l[2] = string(b) + "\n"
			return l
		}, "was edited"},
		{"garbage line", func(l []string) []string {
			l[6] = "not json\n"
			return l
		}, "not a record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "audit.jsonl")
			writeLines(t, p, c.change(append([]string(nil), orig...)))
			rep, err := Verify(testKey, p)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatalf("not detected: %+v", rep)
			}
			if !strings.Contains(strings.Join(rep.Problems, "\n"), c.want) {
				t.Fatalf("problems %q, want one saying %q", rep.Problems, c.want)
			}
		})
	}
}

// TestTruncatedTailIsACrash: a last line cut short verifies, with a note.
func TestTruncatedTailIsACrash(t *testing.T) {
	p := writeLog(t, Options{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Key: testKey}, 8)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, b[:len(b)-25], 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(testKey, p)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Truncated == "" || rep.CleanStop {
		t.Fatalf("report: %+v", rep)
	}
	// Opening it again sets the torn file aside and goes on with the chain.
	l, err := Open(Options{Path: p, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	l.Write(event("after-crash"), true)
	l.Close()
	files, _ := filepath.Glob(p + "*")
	rep, err = Verify(testKey, files...)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || !rep.CleanStop {
		t.Fatalf("after reopening: %+v", rep)
	}
}

// TestRotationKeepsTheChain: files rotated by size verify as one chain,
// in whatever order they are named.
func TestRotationKeepsTheChain(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, Options{Path: p, Key: testKey, MaxSize: 2000}, 60)
	writeLog(t, Options{Path: p, Key: testKey, MaxSize: 2000}, 10) // a second run goes on
	files, _ := filepath.Glob(p + "*")
	if len(files) < 4 {
		t.Fatalf("files %v", files)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(files)))
	rep, err := Verify(testKey, files...)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.FirstSeq != 1 {
		t.Fatalf("report %+v", rep)
	}
	// Without the middle file, the gap is found.
	rep, _ = Verify(testKey, append(files[:1:1], files[2:]...)...)
	if rep.OK() {
		t.Fatal("a missing file went unnoticed")
	}
}

func TestKeyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "audit.key")
	k, err := LoadKey(p, true)
	if err != nil || len(k) != 32 {
		t.Fatalf("%v %d", err, len(k))
	}
	k2, err := LoadKey(p, false)
	if err != nil || !bytes.Equal(k, k2) {
		t.Fatal("the key did not read back")
	}
	os.Chmod(p, 0o644)
	if _, err := LoadKey(p, false); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key others can read was accepted: %v", err)
	}
}

// TestSyslogForwards: every line reaches a syslog listener over UDP, TCP
// and a unix datagram socket, as RFC 5424 with the JSON as the message.
func TestSyslogForwards(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "log.sock")
	ux, err := net.ListenPacket("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	got := make(chan string, 16)
	readPackets := func(c net.PacketConn) {
		buf := make([]byte, 64<<10)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}
	go readPackets(udp)
	go readPackets(ux)
	go func() {
		c, err := tcp.Accept()
		if err != nil {
			return
		}
		br := bufio.NewReader(c)
		for {
			var n int
			if _, err := fmtSscan(br, &n); err != nil {
				return
			}
			msg := make([]byte, n)
			if _, err := ioReadFull(br, msg); err != nil {
				return
			}
			got <- string(msg)
		}
	}()
	for _, target := range []string{"udp://" + udp.LocalAddr().String(), "tcp://" + tcp.Addr().String(), "unix://" + sock} {
		fw, err := NewSyslog(SyslogOptions{Target: target, BufferDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "audit.jsonl")
		writeLog(t, Options{Path: p, Key: testKey, Forward: fw}, 1)
		for range 2 { // the record and the closing checkpoint
			select {
			case m := <-got:
				if !strings.HasPrefix(m, "<86>1 ") || !strings.Contains(m, " termgate ") || !strings.Contains(m, `"chain":{"hash":"`) {
					t.Fatalf("%s: message %q", target, m)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: nothing arrived", target)
			}
		}
		if fw.Dropped() != 0 {
			t.Fatalf("%s: dropped %d", target, fw.Dropped())
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Key: testKey, SyncEvery: time.Hour, Checkpoint: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		r := event("terminal-input").Set("process.command_line", "git status --short").Set("termgate.session.id", "s-ABCDEFGHIJ")
		t0 := time.Now()
		if err := l.Write(r, false); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "median-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

func fmtSscan(br *bufio.Reader, n *int) (int, error) {
	s, err := br.ReadString(' ')
	if err != nil {
		return 0, err
	}
	return fmt.Sscan(strings.TrimSpace(s), n)
}

func ioReadFull(br *bufio.Reader, b []byte) (int, error) { return io.ReadFull(br, b) }
