package audit

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rsyslogd runs the real collector, rsyslog, on a loopback port with a
// configuration of its own, writing each message it parsed as
// TIMESTAMP<tab>HOSTNAME<tab>APP-NAME<tab>MSGID<tab>MSG.
type rsyslogd struct {
	t         *testing.T
	dir, conf string
	out       string
	port      string
	bin       string
	global    string
	module    string
	cmd       *exec.Cmd
}

func startRsyslog(t *testing.T, tlsFiles []string) *rsyslogd {
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		t.Skip("rsyslogd is not installed (Debian package rsyslog; scripts/dev deps installs it): the test against a real collector is skipped")
	}
	if tlsFiles != nil {
		if m, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_ossl.so"); len(m) == 0 {
			t.Skip("rsyslog's TLS driver is not installed (Debian package rsyslog-openssl; scripts/dev deps installs it): the TLS test against rsyslog is skipped")
		}
	}
	dir := t.TempDir()
	r := &rsyslogd{t: t, dir: dir, bin: bin, conf: filepath.Join(dir, "rsyslog.conf"), out: filepath.Join(dir, "out.log")}
	global := fmt.Sprintf(`workDirectory=%q`, dir)
	module := `module(load="imtcp")`
	if tlsFiles != nil {
		global += fmt.Sprintf(` defaultNetstreamDriverCAFile=%q defaultNetstreamDriverCertFile=%q defaultNetstreamDriverKeyFile=%q`, tlsFiles[0], tlsFiles[0], tlsFiles[1])
		module = `module(load="imtcp" streamDriver.name="ossl" streamDriver.mode="1" streamDriver.authMode="anon")`
	}
	r.global, r.module = global, module
	r.start("0")
	t.Cleanup(r.stop)
	return r
}

// start writes the configuration for a port (0: any) and starts rsyslogd.
func (r *rsyslogd) start(port string) {
	global, module := r.global, r.module
	conf := fmt.Sprintf(`global(%s)
%s
input(type="imtcp" port=%q address="127.0.0.1" listenPortFileName=%q)
template(name="fields" type="list") {
  property(name="timereported" dateFormat="rfc3339")
  constant(value="\t")
  property(name="hostname")
  constant(value="\t")
  property(name="app-name")
  constant(value="\t")
  property(name="msgid")
  constant(value="\t")
  property(name="msg")
  constant(value="\n")
}
action(type="omfile" file=%q template="fields")
`, global, module, port, filepath.Join(r.dir, "port"), r.out)
	if err := os.WriteFile(r.conf, []byte(conf), 0o600); err != nil {
		r.t.Fatal(err)
	}
	os.Remove(filepath.Join(r.dir, "port"))
	r.cmd = exec.Command(r.bin, "-n", "-iNONE", "-f", r.conf)
	logf, err := os.OpenFile(filepath.Join(r.dir, "rsyslogd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer logf.Close()
	r.cmd.Stderr, r.cmd.Stdout = logf, logf
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	// Ready when it has written the port it listens on (it does so for
	// port 0), or, on a port given, when the port takes a connection.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(r.dir, "port")); port == "0" && err == nil && len(strings.TrimSpace(string(b))) > 0 {
			r.port = strings.TrimSpace(string(b))
			return
		}
		if port != "0" {
			if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
				c.Close()
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatal("rsyslogd did not start listening")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends this rsyslogd (SIGTERM: it writes out what it holds).
func (r *rsyslogd) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	r.cmd.Wait()
	r.cmd = nil
}

// records waits until rsyslog has written every sequence 1..n, and
// returns its lines by sequence.
func (r *rsyslogd) records(n int) map[int64][]string {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[int64][]string{}
		if f, err := os.Open(r.out); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				fields := strings.SplitN(sc.Text(), "\t", 5)
				if len(fields) != 5 {
					r.t.Fatalf("rsyslog wrote %q", sc.Text())
				}
				rec, err := parse([]byte(strings.TrimSpace(fields[4])))
				if err != nil {
					r.t.Fatalf("rsyslog did not get one whole JSON record (%v): %.200q", err, fields[4])
				}
				got[seqOf(rec)] = fields
			}
			f.Close()
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("rsyslog has %d of %d records", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRsyslogReceivesEveryRecord(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[useTLS], func(t *testing.T) {
			var files []string
			o := SyslogOptions{BufferDir: t.TempDir()}
			if useTLS {
				dir := t.TempDir()
				_, cert := testCert(t, dir)
				files = []string{cert, filepath.Join(dir, "collector.key")}
				o.CAFile = cert
			}
			rs := startRsyslog(t, files)
			o.Target = map[bool]string{false: "tcp://", true: "tls://"}[useTLS] + "127.0.0.1:" + rs.port
			fw, err := NewSyslog(o)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := Open(Options{Path: path, Key: testKey, Forward: fw})
			if err != nil {
				t.Fatal(err)
			}
			write := func(n int) {
				for i := range n {
					r := event("terminal-input")
					if i == 3 {
						// Far over rsyslog's 8 KiB default: cut to fit.
						r.Set("process.command_line", strings.Repeat("x", 50000))
					}
					if err := l.Write(r, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(100)
			rs.records(100)
			// The collector goes away and comes back on the same port.
			rs.stop()
			write(50)
			rs.start(rs.port)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got := rs.records(151) // and the closing checkpoint
			for _, line := range lines(t, path) {
				rec, _ := parse([]byte(line))
				f := got[seqOf(rec)]
				if f == nil {
					t.Fatalf("record %d did not arrive", seqOf(rec))
				}
				// The timestamp rsyslog parsed is the record's @timestamp.
				ts, _ := rec.Get("@timestamp")
				want, _ := time.Parse(time.RFC3339Nano, ts.(string))
				have, err := time.Parse(time.RFC3339Nano, f[0])
				if err != nil || !have.Equal(want) {
					t.Fatalf("record %d: rsyslog's timestamp %q, @timestamp %q", seqOf(rec), f[0], ts)
				}
				if f[2] != "termgate" || f[3] != "audit" || f[1] == "" {
					t.Fatalf("record %d: header fields %q", seqOf(rec), f[:4])
				}
				if strings.TrimSpace(f[4]) != strings.TrimSpace(line) {
					t.Fatalf("record %d: rsyslog's MSG is not the line written:\n%.300q\n%.300q", seqOf(rec), f[4], line)
				}
			}
			if st := fw.Stats(); st.Dropped != 0 {
				t.Fatalf("dropped: %+v", st)
			}
		})
	}
}
