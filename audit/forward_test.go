package audit

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rfc5424 splits a message: PRI VERSION TIMESTAMP HOSTNAME APP-NAME PROCID
// MSGID STRUCTURED-DATA MSG, with at most six fractional digits.
var rfc5424 = regexp.MustCompile(`^<(\d{1,3})>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)) (\S{1,255}) (\S{1,48}) (\S{1,128}) (\S{1,32}) (-|\[.*?\]) (.*)$`)

func TestTimestampHasFixedPrecision(t *testing.T) {
	p := writeLog(t, Options{Path: filepath.Join(t.TempDir(), "a.jsonl"), Key: testKey}, 30)
	re := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	for _, l := range lines(t, p) {
		r, err := parse([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := r.Get("@timestamp")
		if s, _ := ts.(string); !re.MatchString(s) {
			t.Fatalf("@timestamp %q is not RFC 3339 with six fractional digits", ts)
		}
	}
}

func TestLongRecordsFit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := Open(Options{Path: p, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("echo <tag> & ünïcode ", 3000) // escapes and multi-byte runes
	args := make([]string, 500)
	for i := range args {
		args[i] = "arg-" + strconv.Itoa(i)
	}
	r := event("terminal-input")
	r.Set("process.command_line", long).Set("process.args", args).
		Set("termgate.policy.input", map[string]any{"text": long, "shell": map[string]any{"commands": []any{map[string]any{"name": "echo", "args": []any{long}}}}})
	if err := l.Write(r, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, p)
	if len(ls[0])+1 > DefaultMaxRecord {
		t.Fatalf("the record takes %d bytes, over %d", len(ls[0])+1, DefaultMaxRecord)
	}
	got, err := parse([]byte(ls[0]))
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := got.Get("process.command_line")
	sum := sha256.Sum256([]byte(long))
	want := TruncationMarker(len(long), hex.EncodeToString(sum[:]))
	if s := cl.(string); !strings.HasSuffix(s, want) || !strings.HasPrefix(long, strings.TrimSuffix(s, want)) || len(s) < 64 {
		t.Fatalf("command line cut wrong: %q", s)
	}
	cut, _ := got.Get("termgate.truncated")
	if b, _ := json.Marshal(cut); !strings.Contains(string(b), `"process.command_line"`) || !strings.Contains(string(b), `"termgate.policy.input.text"`) {
		t.Fatalf("termgate.truncated = %s", b)
	}
	if rep, err := Verify(testKey, p); err != nil || !rep.OK() {
		t.Fatalf("a cut record does not verify: %v %+v", err, rep)
	}
	// A record that fits is written as it is.
	short := writeLog(t, Options{Path: filepath.Join(t.TempDir(), "b.jsonl"), Key: testKey}, 1)
	if strings.Contains(lines(t, short)[0], "truncated") {
		t.Fatal("a short record was cut")
	}
}

// collector is a syslog receiver over TCP or TLS (octet counting) that
// can go away and come back on the same port.
type collector struct {
	t    *testing.T
	tls  *tls.Config
	addr string
	mu   sync.Mutex
	msgs []string
	ln   net.Listener
	wg   sync.WaitGroup
	more chan struct{}
}

func newCollector(t *testing.T, tlsCfg *tls.Config) *collector {
	c := &collector{t: t, tls: tlsCfg, more: make(chan struct{}, 1)}
	c.start("127.0.0.1:0")
	t.Cleanup(c.stop)
	return c
}

func (c *collector) start(addr string) {
	var ln net.Listener
	var err error
	for range 50 { // the port the collector had may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	if c.tls != nil {
		ln = tls.NewListener(ln, c.tls)
	}
	c.mu.Lock()
	c.ln, c.addr = ln, ln.Addr().String()
	c.mu.Unlock()
	conns := map[net.Conn]bool{}
	var cmu sync.Mutex
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				cmu.Lock()
				for k := range conns {
					k.Close()
				}
				cmu.Unlock()
				return
			}
			cmu.Lock()
			conns[conn] = true
			cmu.Unlock()
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					var n int
					if _, err := fmtSscan(br, &n); err != nil {
						return
					}
					msg := make([]byte, n)
					if _, err := ioReadFull(br, msg); err != nil {
						return
					}
					c.mu.Lock()
					c.msgs = append(c.msgs, string(msg))
					c.mu.Unlock()
					select {
					case c.more <- struct{}{}:
					default:
					}
				}
			}()
		}
	}()
}

func (c *collector) stop() {
	c.mu.Lock()
	ln := c.ln
	c.mu.Unlock()
	ln.Close()
	c.wg.Wait()
}

// sequences waits until messages hold every sequence in 1..n.
func (c *collector) waitFor(n int) map[int64]int {
	deadline := time.After(20 * time.Second)
	for {
		seen := map[int64]int{}
		c.mu.Lock()
		for _, m := range c.msgs {
			sm := rfc5424.FindStringSubmatch(m)
			if sm == nil {
				c.t.Fatalf("not RFC 5424: %q", m)
			}
			r, err := parse([]byte(sm[8]))
			if err != nil {
				c.t.Fatalf("MSG is not one JSON record: %v", err)
			}
			seen[seqOf(r)]++
		}
		c.mu.Unlock()
		if len(seen) >= n {
			return seen
		}
		select {
		case <-c.more:
		case <-deadline:
			c.t.Fatalf("%d of %d records arrived", len(seen), n)
		}
	}
}

func TestSyslogOutageLosesNothing(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[useTLS], func(t *testing.T) {
			var srvTLS *tls.Config
			var o SyslogOptions
			if useTLS {
				dir := t.TempDir()
				cert, certFile := testCert(t, dir)
				srvTLS = &tls.Config{Certificates: []tls.Certificate{cert}}
				o.CAFile = certFile
			}
			c := newCollector(t, srvTLS)
			o.Target = map[bool]string{false: "tcp://", true: "tls://"}[useTLS] + c.addr
			o.BufferDir = t.TempDir()
			fw, err := NewSyslog(o)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Open(Options{Path: filepath.Join(t.TempDir(), "a.jsonl"), Key: testKey, Forward: fw})
			if err != nil {
				t.Fatal(err)
			}
			write := func(n int) {
				for range n {
					if err := l.Write(event("x"), false); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(20)
			c.waitFor(20)
			// The collector goes away; records go on being written.
			c.stop()
			write(200)
			st := fw.Stats()
			if st.Pending == 0 && st.Sent < 220 {
				t.Fatalf("nothing held while the collector was away: %+v", st)
			}
			// It comes back on the same port: everything arrives.
			c.start(c.addr)
			write(10)
			seen := c.waitFor(230)
			for s := int64(1); s <= 230; s++ {
				if seen[s] == 0 {
					t.Fatalf("record %d was lost", s)
				}
			}
			if st := fw.Stats(); st.Dropped != 0 {
				t.Fatalf("dropped: %+v", st)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSyslogBufferOutlivesTheProcess(t *testing.T) {
	c := newCollector(t, nil)
	addr := c.addr
	c.stop()
	buf := t.TempDir()
	fw, err := NewSyslog(SyslogOptions{Target: "tcp://" + addr, BufferDir: buf})
	if err != nil {
		t.Fatal(err)
	}
	writeLog(t, Options{Path: filepath.Join(t.TempDir(), "a.jsonl"), Key: testKey, Forward: fw}, 50)
	if st := fw.Stats(); st.Pending != 51 || st.Sent != 0 {
		t.Fatalf("after a stop with the collector away: %+v", st)
	}
	c.start(addr)
	fw2, err := NewSyslog(SyslogOptions{Target: "tcp://" + addr, BufferDir: buf})
	if err != nil {
		t.Fatal(err)
	}
	defer fw2.Close()
	c.waitFor(51)
}

func TestSyslogFullBufferCountsDrops(t *testing.T) {
	c := newCollector(t, nil)
	addr := c.addr
	c.stop()
	fw, err := NewSyslog(SyslogOptions{Target: "tcp://" + addr, BufferDir: t.TempDir(), BufferSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for fw.Dropped() == 0 && n < 10000 {
		fw.Send([]byte(`{"x":"` + strings.Repeat("y", 500) + `"}`))
		n++
	}
	st := fw.Stats()
	if st.Dropped == 0 || st.Buffered > 64<<10 || st.Pending == 0 || !strings.Contains(st.LastError, "full") {
		t.Fatalf("a full buffer: %+v after %d sends", st, n)
	}
	fw.Close()
}

func TestSyslogMessageFormat(t *testing.T) {
	fw := &Syslog{host: hostName(), pid: 42}
	at := time.Date(2026, 11, 22, 22, 12, 59, 940126236, time.UTC)
	m := fw.Message(at, []byte(`{"a":1}`))
	sm := rfc5424.FindStringSubmatch(string(m))
	if sm == nil || sm[1] != "86" || sm[2] != "2026-11-22T22:12:59.940126Z" || sm[4] != "termgate" || sm[5] != "42" || sm[6] != "audit" || sm[8] != `{"a":1}` {
		t.Fatalf("message %q: %q", m, sm)
	}
}

func testCert(t *testing.T, dir string) (tls.Certificate, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "collector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	certFile := filepath.Join(dir, "collector.crt")
	os.WriteFile(certFile, certPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "collector.key"), keyPEM, 0o600)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert, certFile
}

// FuzzFit: whatever an agent typed, a record is cut to fit without a
// panic, stays valid JSON, and keeps its marker's promise.
func FuzzFit(f *testing.F) {
	f.Add("echo hi", 3, 10)
	f.Add(strings.Repeat("ü<>&\x00\"\\", 2000), 40, 900)
	f.Add(strings.Repeat("\xff\xfe", 5000), 1, 3000)
	f.Fuzz(func(t *testing.T, s string, n, rep int) {
		n, rep = n%200, rep%5000
		if n < 0 {
			n = -n
		}
		if rep < 0 {
			rep = -rep
		}
		long := strings.Repeat(s, rep)
		long = long[:min(len(long), 1<<20)]
		args := make([]any, n)
		for i := range args {
			args[i] = s
		}
		r := Record{}
		r.Set("process.command_line", long).Set("process.args", args).Set("termgate.policy.input", map[string]any{"text": long, "n": n})
		b, err := fit(r, 4096)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		if len(b) > 4096 && len(long) > 0 && n <= 8 {
			t.Fatalf("%d bytes after fit", len(b))
		}
	})
}
