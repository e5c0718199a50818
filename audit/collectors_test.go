package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests against real syslog collectors (rsyslog, syslog-ng) share
// this harness. Each collector runs on loopback with a configuration of
// its own and writes every message it parsed as one line of
// tab-separated fields: the header's TIMESTAMP, HOSTNAME, APP-NAME and
// MSGID first, the message (the JSON record) last, and in between
// whatever else the collector's configuration extracts.

// daemon is one collector process, its log, and the file it writes.
type daemon struct {
	t      *testing.T
	name   string // the program, for messages
	dir    string // its files
	out    string // the file it writes the messages to
	fields int    // how many fields a line of out has
	bin    string
	args   []string
	env    []string
	cmd    *exec.Cmd
	exited chan struct{}
}

func newDaemon(t *testing.T, name, bin string, fields int) *daemon {
	dir := t.TempDir()
	d := &daemon{t: t, name: name, dir: dir, out: filepath.Join(dir, "out.log"), fields: fields, bin: bin}
	t.Cleanup(d.stop)
	return d
}

// errExited is start's error when the process ended before it was ready.
var errExited = errors.New("exited before it was ready")

// start runs the collector and waits until ready says it listens. It
// returns errExited (with the process's log in the test's log) if the
// collector ended first.
func (d *daemon) start(ready func() bool) error {
	logf, err := os.OpenFile(d.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(d.bin, d.args...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case <-exited:
			d.cmd = nil
			return fmt.Errorf("%s (%s): %w", d.name, cmd.ProcessState, errExited)
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s did not start listening within 30 s; its log:\n%s", d.name, d.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (d *daemon) logPath() string { return filepath.Join(d.dir, d.name+".log") }

// log is what the collector said on stdout and stderr.
func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath())
	return string(b)
}

// stop ends the collector (SIGTERM: it writes out what it holds).
func (d *daemon) stop() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.exited
	d.cmd = nil
}

// records waits until the collector has written n records, each once,
// and returns their lines' fields by sequence.
func (d *daemon) records(n int) map[int64][]string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[int64][]string{}
		if b, err := os.ReadFile(d.out); err == nil {
			// Only whole lines: the collector may be writing the last one.
			b = b[:bytes.LastIndexByte(b, '\n')+1]
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				fields := strings.SplitN(sc.Text(), "\t", d.fields)
				if len(fields) != d.fields {
					d.t.Fatalf("%s wrote %q", d.name, sc.Text())
				}
				msg := fields[d.fields-1]
				rec, err := parse([]byte(strings.TrimSpace(msg)))
				if err != nil {
					d.t.Fatalf("%s did not get one whole JSON record (%v): %.200q", d.name, err, msg)
				}
				if got[seqOf(rec)] != nil {
					d.t.Fatalf("%s wrote record %d twice", d.name, seqOf(rec))
				}
				got[seqOf(rec)] = fields
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s has %d of %d records; its log:\n%s", d.name, len(got), n, d.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// receiver is a collector under test, listening on loopback.
type receiver interface {
	// target is the --audit-syslog address of its TCP or TLS listener.
	target(useTLS bool) string
	stop()
	// restart starts it again on the same port(s).
	restart()
	records(n int) map[int64][]string
}

// testReceivesEveryRecord sends records through the syslog sink to a
// real collector, over TCP and over TLS, with the collector going away
// and coming back on the same port, and checks that every record arrived
// once, whole, and parsed: the collector's timestamp is the record's
// @timestamp to the microsecond, HOSTNAME, APP-NAME and MSGID are the
// gateway's, the message is the line written (a record cut to fit
// included), and check approves the fields in between.
func testReceivesEveryRecord(t *testing.T, start func(t *testing.T, useTLS bool, cert, key string) receiver, check func(rec Record, f []string) error) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[useTLS], func(t *testing.T) {
			dir := t.TempDir()
			_, cert := testCert(t, dir)
			o := SyslogOptions{BufferDir: t.TempDir()}
			if useTLS {
				o.CAFile = cert
			}
			rc := start(t, useTLS, cert, filepath.Join(dir, "collector.key"))
			o.Target = rc.target(useTLS)
			fw, err := NewSyslog(o)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := Open(Options{Path: path, Key: testKey, Forward: fw})
			if err != nil {
				t.Fatal(err)
			}
			// Far over rsyslog's 8 KiB default: cut to fit.
			long := strings.Repeat("x", 50000)
			sum := sha256.Sum256([]byte(long))
			marker := TruncationMarker(len(long), hex.EncodeToString(sum[:]))
			write := func(n int) {
				for i := range n {
					r := event(fmt.Sprintf("test-%d", i%7))
					if i == 3 {
						r.Set("process.command_line", long)
					}
					if err := l.Write(r, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(100)
			rc.records(100)
			// The collector goes away and comes back on the same port.
			rc.stop()
			write(50)
			rc.restart()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Close sends for at most two seconds; what it could not send
			// (on a loaded machine, a reconnect still backing off or a TLS
			// handshake under way) stays in the buffer and goes with the
			// next start, as after the gateway restarts.
			next, err := NewSyslog(o)
			if err != nil {
				t.Fatal(err)
			}
			got := rc.records(151) // and the closing checkpoint
			if err := next.Close(); err != nil {
				t.Fatal(err)
			}
			host, cut := hostName(), 0
			for _, line := range lines(t, path) {
				rec, _ := parse([]byte(line))
				seq := seqOf(rec)
				f := got[seq]
				if f == nil {
					t.Fatalf("record %d did not arrive", seq)
				}
				ts, _ := rec.Get("@timestamp")
				want, _ := time.Parse(time.RFC3339Nano, ts.(string))
				have, err := time.Parse(time.RFC3339Nano, f[0])
				if err != nil || !have.Equal(want) {
					t.Fatalf("record %d: the collector's timestamp %q, @timestamp %q", seq, f[0], ts)
				}
				if f[1] != host || f[2] != "termgate" || f[3] != "audit" {
					t.Fatalf("record %d: header fields %q, want HOSTNAME %q", seq, f[:4], host)
				}
				msg := f[len(f)-1]
				if strings.TrimSpace(msg) != strings.TrimSpace(line) {
					t.Fatalf("record %d: the collector's message is not the line written:\n%.300q\n%.300q", seq, msg, line)
				}
				if cl, _ := rec.Get("process.command_line"); cl != nil {
					cut++
					if s, _ := cl.(string); !strings.HasSuffix(s, marker) || len(msg) > DefaultMaxRecord {
						t.Fatalf("record %d: the long record arrived as %d bytes, its command line %.100q…", seq, len(msg), s)
					}
				}
				if err := check(rec, f); err != nil {
					t.Fatalf("record %d: %v", seq, err)
				}
			}
			if cut != 2 {
				t.Fatalf("%d long records arrived, want 2", cut)
			}
			if st, st2 := fw.Stats(), next.Stats(); st.Dropped != 0 || st2.Dropped != 0 {
				t.Fatalf("dropped: %+v, then %+v", st, st2)
			}
		})
	}
}
