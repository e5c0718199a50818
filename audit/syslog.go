package audit

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Syslog forwards lines as RFC 5424 messages (facility authpriv, severity
// info, APP-NAME termgate, MSGID audit, the record's JSON as MSG) over a
// unix socket (datagram, or stream), UDP, or TCP with octet-counting
// framing (RFC 6587). Sending never blocks the log: lines queue, and are
// dropped (and counted) when the queue is full or the peer is gone.
type Syslog struct {
	network, addr string
	host          string
	queue         chan []byte
	dropped       atomic.Int64
	done          chan struct{}
	closeOnce     sync.Once
}

// NewSyslog takes udp://host:port, tcp://host:port or unix:///path.
func NewSyslog(target string) (*Syslog, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("syslog target %q: %w", target, err)
	}
	s := &Syslog{queue: make(chan []byte, 4096), done: make(chan struct{})}
	switch u.Scheme {
	case "udp", "tcp":
		if u.Host == "" {
			return nil, fmt.Errorf("syslog target %q: no host:port", target)
		}
		s.network, s.addr = u.Scheme, u.Host
	case "unix":
		if u.Path == "" {
			return nil, fmt.Errorf("syslog target %q: no socket path", target)
		}
		s.network, s.addr = "unix", u.Path
	default:
		return nil, fmt.Errorf("syslog target %q: want udp://, tcp:// or unix://", target)
	}
	s.host, _ = os.Hostname()
	if s.host == "" {
		s.host = "-"
	}
	go s.run()
	return s, nil
}

// Send queues a line.
func (s *Syslog) Send(line []byte) {
	msg := fmt.Appendf(nil, "<%d>1 %s %s termgate %d audit - %s", 10*8+6,
		time.Now().UTC().Format(time.RFC3339Nano), s.host, os.Getpid(), line)
	select {
	case s.queue <- msg:
	default:
		s.dropped.Add(1)
	}
}

// Dropped counts the lines that could not be sent.
func (s *Syslog) Dropped() int64 { return s.dropped.Load() }

// Close sends what is queued (for at most two seconds) and stops.
func (s *Syslog) Close() error {
	s.closeOnce.Do(func() { close(s.queue) })
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
	}
	return nil
}

func (s *Syslog) dial() (net.Conn, bool) {
	if s.network == "unix" {
		if c, err := net.DialTimeout("unixgram", s.addr, time.Second); err == nil {
			return c, false
		}
		c, err := net.DialTimeout("unix", s.addr, time.Second)
		if err != nil {
			return nil, false
		}
		return c, true
	}
	c, err := net.DialTimeout(s.network, s.addr, time.Second)
	if err != nil {
		return nil, false
	}
	return c, s.network == "tcp"
}

func (s *Syslog) run() {
	defer close(s.done)
	var conn net.Conn
	var stream bool
	for msg := range s.queue {
		if conn == nil {
			if conn, stream = s.dial(); conn == nil {
				s.dropped.Add(1)
				continue
			}
		}
		out := msg
		if stream {
			out = append([]byte(strconv.Itoa(len(msg))+" "), msg...)
		}
		_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := conn.Write(out); err != nil {
			s.dropped.Add(1)
			conn.Close()
			conn = nil
		}
	}
	if conn != nil {
		conn.Close()
	}
}
