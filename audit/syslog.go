package audit

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Syslog forwards lines as RFC 5424 messages (facility authpriv, severity
// info, APP-NAME termgate, MSGID audit, TIMESTAMP with microseconds, the
// record's JSON as MSG) over UDP, TCP with octet-counting framing (RFC
// 6587), TLS with octet-counting framing (RFC 5425), or a unix socket
// (datagram, or stream).
//
// Sending never blocks the log. Every message goes first to a bounded
// buffer on disk (SyslogOptions.BufferDir, at most BufferSize bytes), and
// one goroutine sends from it: a collector that is down, or a network
// that is cut, loses nothing the buffer can hold. The sender reconnects
// with exponential backoff (100 ms doubling to 30 s, with jitter), and
// before each batch on a stream checks that the collector has not closed
// the connection, so that nothing is written into a socket the collector
// has already left. What the buffer cannot hold is dropped and counted
// (Stats), and the buffer outlives the process: what was not sent before
// a stop is sent after the next start.
//
// What remains: a collector that dies after it has read a message but
// before it has stored it loses that message; syslog over TCP and TLS has
// no acknowledgement (RELP would). The audit file is the record; the
// forwarded copy is the evidence elsewhere.
type Syslog struct {
	network, addr string
	tls           *tls.Config
	host          string
	pid           int
	spool         *spool

	sent, dropped atomic.Int64
	mu            sync.Mutex // guards lastErr, connected
	lastErr       string
	connected     bool

	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
}

// SyslogOptions configure a Syslog.
type SyslogOptions struct {
	// Target: udp://host:port, tcp://host:port, tls://host:port or
	// unix:///path.
	Target string
	// BufferDir holds messages not yet sent (created 0700); BufferSize
	// bounds it in bytes (default 64 MiB).
	BufferDir  string
	BufferSize int64
	// For tls://: CAFile verifies the collector (default: the system's
	// roots); CertFile and KeyFile are the gateway's client certificate,
	// for collectors that ask for one. ServerName overrides the name the
	// collector's certificate must carry (default: the target's host).
	CAFile, CertFile, KeyFile, ServerName string
}

// ForwardStats is what a forwarder has done so far.
type ForwardStats struct {
	Target    string `json:"target"`
	Sent      int64  `json:"sent"`
	Dropped   int64  `json:"dropped"` // the buffer was full
	Pending   int64  `json:"pending"` // in the buffer, not yet sent
	Buffered  int64  `json:"buffered_bytes"`
	Connected bool   `json:"connected"`
	LastError string `json:"last_error,omitempty"`
}

// NewSyslog starts forwarding.
func NewSyslog(o SyslogOptions) (*Syslog, error) {
	u, err := url.Parse(o.Target)
	if err != nil {
		return nil, fmt.Errorf("syslog target %q: %w", o.Target, err)
	}
	s := &Syslog{stop: make(chan struct{}), done: make(chan struct{}), pid: os.Getpid()}
	switch u.Scheme {
	case "udp", "tcp", "tls":
		if u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("syslog target %q: no host:port", o.Target)
		}
		s.network, s.addr = u.Scheme, u.Host
	case "unix":
		if u.Path == "" {
			return nil, fmt.Errorf("syslog target %q: no socket path", o.Target)
		}
		s.network, s.addr = "unix", u.Path
	default:
		return nil, fmt.Errorf("syslog target %q: want udp://, tcp://, tls:// or unix://", o.Target)
	}
	if s.network == "tls" {
		if s.tls, err = tlsConfig(o, u.Hostname()); err != nil {
			return nil, err
		}
	} else if o.CAFile != "" || o.CertFile != "" {
		return nil, fmt.Errorf("syslog target %q: certificates are for tls:// targets", o.Target)
	}
	s.host = hostName()
	if o.BufferDir == "" {
		return nil, errors.New("syslog: no buffer directory")
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 64 << 20
	}
	if s.spool, err = openSpool(o.BufferDir, o.BufferSize); err != nil {
		return nil, err
	}
	go s.run()
	return s, nil
}

func tlsConfig(o SyslogOptions, host string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if o.ServerName != "" {
		c.ServerName = o.ServerName
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("syslog CA: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("syslog CA %s: no certificate in it", o.CAFile)
		}
	}
	if o.CertFile != "" || o.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("syslog client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// hostName is the HOSTNAME field: printable US-ASCII, at most 255.
func hostName() string {
	h, _ := os.Hostname()
	b := []byte(h)
	for i, c := range b {
		if c < 33 || c > 126 {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "-"
	}
	return string(b[:min(len(b), 255)])
}

// TimeFormat is RFC 3339 with exactly six fractional digits, UTC: the
// precision RFC 5424 allows and every collector parses, and the one
// @timestamp has.
const TimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// Message is the RFC 5424 message for a line written at t.
func (s *Syslog) Message(t time.Time, line []byte) []byte {
	return fmt.Appendf(nil, "<%d>1 %s %s termgate %d audit - %s", 10*8+6, t.UTC().Format(TimeFormat), s.host, s.pid, line)
}

// Send puts a line in the buffer; a full buffer drops it, counted. The
// message's TIMESTAMP is the record's @timestamp (the first key of a
// record's JSON), or now.
func (s *Syslog) Send(line []byte) {
	at := time.Now()
	const key = `{"@timestamp":"`
	if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 {
			if t, err := time.Parse(time.RFC3339Nano, string(rest[:i])); err == nil {
				at = t
			}
		}
	}
	if err := s.spool.push(s.Message(at, line)); err != nil {
		s.dropped.Add(1)
		s.setErr(err)
	}
}

// Dropped counts the lines the buffer could not hold.
func (s *Syslog) Dropped() int64 { return s.dropped.Load() }

// Stats says what the forwarder has done.
func (s *Syslog) Stats() ForwardStats {
	pending, bytes := s.spool.stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	return ForwardStats{Target: s.network + "://" + s.addr, Sent: s.sent.Load(), Dropped: s.dropped.Load(),
		Pending: pending, Buffered: bytes, Connected: s.connected, LastError: s.lastErr}
}

func (s *Syslog) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// Close sends what it can for at most two seconds, and stops; what was
// not sent stays in the buffer for the next start.
func (s *Syslog) Close() error {
	s.closing.Do(func() {
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if p, _ := s.spool.stats(); p == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(s.stop)
	})
	<-s.done
	return s.spool.close()
}

func (s *Syslog) dial() (net.Conn, bool, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	switch s.network {
	case "unix":
		if c, err := d.Dial("unixgram", s.addr); err == nil {
			return c, false, nil
		}
		c, err := d.Dial("unix", s.addr)
		return c, true, err
	case "tls":
		c, err := tls.DialWithDialer(&d, "tcp", s.addr, s.tls)
		if err != nil {
			return nil, true, err
		}
		return c, true, nil
	}
	c, err := d.Dial(s.network, s.addr)
	return c, s.network == "tcp", err
}

// run sends from the buffer until stopped.
func (s *Syslog) run() {
	defer close(s.done)
	var conn net.Conn
	var stream bool
	retries := 0
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	disconnect := func(err error) {
		if conn != nil {
			conn.Close()
			conn = nil
		}
		s.mu.Lock()
		s.connected = false
		if err != nil {
			s.lastErr = err.Error()
		}
		s.mu.Unlock()
	}
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		batch, err := s.spool.peek(256)
		if err != nil {
			s.setErr(err)
		}
		if len(batch) == 0 {
			select {
			case <-s.stop:
				return
			case <-s.spool.ready:
				continue
			}
		}
		if conn != nil && stream && peerClosed(conn) {
			disconnect(errors.New("the collector closed the connection"))
		}
		if conn == nil {
			if retries > 0 && !s.sleep(backoff(retries)) {
				return
			}
			var derr error
			if conn, stream, derr = s.dial(); derr != nil {
				conn = nil
				retries++
				disconnect(derr)
				continue
			}
			s.mu.Lock()
			s.connected = true
			s.mu.Unlock()
		}
		n, bytes, werr := s.write(conn, stream, batch)
		if n > 0 {
			s.sent.Add(int64(n))
			if err := s.spool.advance(n, bytes); err != nil {
				s.setErr(err)
			}
		}
		if werr != nil {
			retries++
			disconnect(werr)
			continue
		}
		retries = 0
	}
}

// write sends a batch; it returns how many went, and their bytes in the
// buffer (newlines included).
func (s *Syslog) write(conn net.Conn, stream bool, batch [][]byte) (int, int64, error) {
	if !stream {
		var total int64
		for i, m := range batch {
			_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write(m); err != nil {
				return i, total, err
			}
			total += int64(len(m) + 1)
		}
		return len(batch), total, nil
	}
	// One write for the batch, octet-counted. A batch that fails partway
	// is sent again whole: a collector may see a message twice, never
	// miss one the buffer held.
	var buf []byte
	var total int64
	for _, m := range batch {
		buf = strconv.AppendInt(buf, int64(len(m)), 10)
		buf = append(buf, ' ')
		buf = append(buf, m...)
		total += int64(len(m) + 1)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(buf); err != nil {
		return 0, 0, err
	}
	return len(batch), total, nil
}

func (s *Syslog) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

// backoff is 100 ms doubling to 30 s, ±20 %.
func backoff(retries int) time.Duration {
	d := 100 * time.Millisecond << min(retries-1, 9)
	d = min(d, 30*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// peerClosed tells whether the collector has closed a stream connection:
// it never sends anything, so end of stream (or an error) waiting to be
// read means it is gone. It does not block.
func peerClosed(c net.Conn) bool {
	raw := c
	tc, isTLS := c.(*tls.Conn)
	if isTLS {
		raw = tc.NetConn()
	}
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed, pending := false, false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
		case err != nil || n == 0:
			closed = true
		default:
			pending = true
		}
		return true
	})
	if closed || !pending || !isTLS {
		return closed
	}
	// TLS: records the collector sent (session tickets, or its
	// close_notify) are read through the TLS layer.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var b [256]byte
	_, err = c.Read(b[:])
	_ = c.SetReadDeadline(time.Time{})
	var ne net.Error
	return err != nil && (errors.Is(err, io.EOF) || !errors.As(err, &ne) || !ne.Timeout())
}
