package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// egressLog records what the judge was asked and what was reported.
type egressLog struct {
	mu     sync.Mutex
	asked  []Destination
	conns  []Connection
	ended  chan struct{}
	verdic func(Destination) Verdict
}

func (l *egressLog) judge(_ context.Context, _ *EgressSession, d Destination) Verdict {
	l.mu.Lock()
	l.asked = append(l.asked, d)
	l.mu.Unlock()
	return l.verdic(d)
}

func (l *egressLog) report(_ *EgressSession, c Connection) {
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	l.ended <- struct{}{}
}

// next waits for the next reported connection.
func (l *egressLog) next(t *testing.T) Connection {
	t.Helper()
	select {
	case <-l.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("no connection was reported")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[len(l.conns)-1]
}

func (l *egressLog) questions() []Destination {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Destination(nil), l.asked...)
}

// allowNames allows the names given (and what they resolve to), and
// refuses everything else.
func allowNames(names ...string) func(Destination) Verdict {
	return func(d Destination) Verdict {
		for _, n := range names {
			if d.Host == n && d.AddressClass != "link_local" {
				return Verdict{Allow: true, Rule: "test.allow"}
			}
		}
		return Verdict{Rule: "test.refuse", Reason: d.Host + " is not allowed"}
	}
}

// testProxy serves one session's proxy on the test's own loopback, as the
// gateway serves the listener a launcher made.
func testProxy(t *testing.T, verdict func(Destination) Verdict) (string, *egressLog) {
	t.Helper()
	return testProxyWith(t, verdict, nil)
}

// testProxyWith is testProxy with a panic hook (EgressOptions.Panicked).
func testProxyWith(t *testing.T, verdict func(Destination) Verdict, panicked func(*EgressSession, any)) (string, *egressLog) {
	t.Helper()
	log := &egressLog{ended: make(chan struct{}, 64), verdic: verdict}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	e, err := NewEgress(EgressOptions{Judge: log.judge, Report: log.report, Helper: "/nonexistent", Panicked: panicked,
		Hosts: map[string][]netip.Addr{"allowed.test": lo, "denied.test": lo, "rebind.test": {netip.MustParseAddr("169.254.169.254")}}})
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewSession()
	s.name, s.profile, s.netns = "s-test", "default", true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.serve([]net.Listener{ln}, []string{"proxy"})
	t.Cleanup(e.Close)
	return ln.Addr().String(), log
}

func proxyClient(proxy string) *http.Client {
	u := &url.URL{Scheme: "http", Host: proxy}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true,
	}}
}

func TestEgressHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Host, r.Header.Get("Proxy-Authorization"))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	proxy, log := testProxy(t, allowNames("allowed.test", "rebind.test"))
	c := proxyClient(proxy)

	t.Run("plain http to an allowed host", func(t *testing.T) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://allowed.test:%d/x", port), nil)
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("hello allowed.test:%d ", port); string(body) != want {
			t.Fatalf("body = %q, want %q (the judged host, and no proxy credentials)", body, want)
		}
		got := log.next(t)
		if got.Refused || got.Host != "allowed.test" || got.Port != port || got.Via != "http" || got.Address != "127.0.0.1" || got.AddressClass != "loopback" {
			t.Fatalf("reported %+v", got)
		}
		if got.Sent == 0 || got.Received < int64(len(body)) {
			t.Fatalf("bytes sent %d, received %d", got.Sent, got.Received)
		}
	})
	t.Run("a name that is not public is judged again with its address", func(t *testing.T) {
		q := log.questions()
		last2 := q[len(q)-2:]
		if last2[0].Address != "" || last2[1].Address != "127.0.0.1" || last2[1].AddressClass != "loopback" {
			t.Fatalf("questions %+v: want the name, then its loopback address", last2)
		}
	})
	t.Run("a refused host gets 403 and says why", func(t *testing.T) {
		resp, err := c.Get(fmt.Sprintf("http://denied.test:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("X-Termgate-Refused") != "test.refuse" || !strings.Contains(string(body), "refused a connection to denied.test") {
			t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, body)
		}
		if got := log.next(t); !got.Refused || got.Rule != "test.refuse" || got.Host != "denied.test" {
			t.Fatalf("reported %+v", got)
		}
	})
	t.Run("a name that resolves to the metadata address is refused", func(t *testing.T) {
		resp, err := c.Get("http://rebind.test/latest/meta-data/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := log.next(t)
		if resp.StatusCode != 403 || !got.Refused || got.Address != "169.254.169.254" || got.AddressClass != "link_local" {
			t.Fatalf("%d, reported %#v", resp.StatusCode, got)
		}
	})
	t.Run("not a proxy request", func(t *testing.T) {
		conn, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, "GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != 400 {
			t.Fatalf("%v %v", resp, err)
		}
		log.next(t)
	})
}

func TestEgressConnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls ok") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	proxy, log := testProxy(t, allowNames("allowed.test"))
	c := proxyClient(proxy)
	resp, err := c.Get(fmt.Sprintf("https://allowed.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "tls ok" {
		t.Fatalf("body %q", body)
	}
	got := log.next(t)
	if got.Via != "connect" || got.Refused || got.Sent == 0 || got.Received == 0 {
		t.Fatalf("reported %+v", got)
	}
	if _, err := c.Get(fmt.Sprintf("https://denied.test:%d/", port)); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("a refused CONNECT: %v", err)
	}
	if got := log.next(t); !got.Refused || got.Via != "connect" {
		t.Fatalf("reported %+v", got)
	}
}

// socks5 runs a SOCKS5 CONNECT (or another command) and returns the
// reply code and the connection.
func socks5(t *testing.T, proxy string, cmd byte, addr []byte, port int) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	c.Write([]byte{5, 1, 0})
	var auth [2]byte
	if _, err := io.ReadFull(c, auth[:]); err != nil || auth != [2]byte{5, 0} {
		t.Fatalf("greeting: %v %v", auth, err)
	}
	req := append([]byte{5, cmd, 0}, addr...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return rep[1], c
}

func TestEgressSocks5(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	proxy, log := testProxy(t, allowNames("allowed.test"))
	name := func(s string) []byte { return append([]byte{3, byte(len(s))}, s...) }

	code, c := socks5(t, proxy, 1, name("allowed.test"), port)
	if code != 0 {
		t.Fatalf("CONNECT allowed.test: reply %d", code)
	}
	c.Write([]byte("ping"))
	var b [4]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || string(b[:]) != "ping" {
		t.Fatalf("echo: %q %v", b, err)
	}
	c.Close()
	if got := log.next(t); got.Via != "socks5" || got.Host != "allowed.test" || got.Sent != 4 || got.Received != 4 {
		t.Fatalf("reported %+v", got)
	}

	code, c = socks5(t, proxy, 1, name("denied.test"), port)
	c.Close()
	if got := log.next(t); code != 2 || !got.Refused {
		t.Fatalf("CONNECT denied.test: reply %d, reported %+v", code, got)
	}
	code, c = socks5(t, proxy, 3, []byte{1, 127, 0, 0, 1}, 53)
	c.Close()
	if got := log.next(t); code != 7 || !got.Refused || got.Rule != "sandbox.egress_socks_command" {
		t.Fatalf("UDP ASSOCIATE: reply %d, reported %+v", code, got)
	}
	// An address: judged once, as an address, with its class.
	code, c = socks5(t, proxy, 1, []byte{1, 169, 254, 169, 254}, 80)
	c.Close()
	got := log.next(t)
	if code != 2 || got.Host != "169.254.169.254" || got.Address != "169.254.169.254" || got.AddressClass != "link_local" {
		t.Fatalf("CONNECT 169.254.169.254: reply %d, reported %+v", code, got)
	}
}

// TestAddressSpellings: every spelling of an address a resolver takes is
// read as that address, and classified by what it reaches.
func TestAddressSpellings(t *testing.T) {
	cases := []struct{ in, addr, class string }{
		{"169.254.169.254", "169.254.169.254", "link_local"},
		{"169.254.169.254.", "169.254.169.254", "link_local"},
		{"0xa9fea9fe", "169.254.169.254", "link_local"},
		{"0XA9FEA9FE", "169.254.169.254", "link_local"},
		{"2852039166", "169.254.169.254", "link_local"},
		{"0251.0376.0251.0376", "169.254.169.254", "link_local"},
		{"169.254.43518", "169.254.169.254", "link_local"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", "link_local"},
		{"::ffff:169.254.169.254", "169.254.169.254", "link_local"},
		{"::ffff:a9fe:a9fe", "169.254.169.254", "link_local"},
		{"64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe", "link_local"},
		{"2002:a9fe:a9fe::1", "2002:a9fe:a9fe::1", "link_local"},
		{"fd00:ec2::254", "fd00:ec2::254", "private"},
		{"100.100.100.200", "100.100.100.200", "shared"},
		{"127.1", "127.0.0.1", "loopback"},
		{"0177.0.0.1", "127.0.0.1", "loopback"},
		{"2130706433", "127.0.0.1", "loopback"},
		{"::1", "::1", "loopback"},
		{"0", "0.0.0.0", "unspecified"},
		{"0.0.0.0", "0.0.0.0", "unspecified"},
		{"::", "::", "unspecified"},
		{"10.1.2.3", "10.1.2.3", "private"},
		{"192.168.0.1", "192.168.0.1", "private"},
		{"fe80::1%eth0", "fe80::1", "link_local"},
		{"224.0.0.1", "224.0.0.1", "multicast"},
		{"255.255.255.255", "255.255.255.255", "multicast"},
		{"192.0.2.1", "192.0.2.1", "reserved"},
		{"8.8.8.8", "8.8.8.8", "public"},
		{"2606:4700::1111", "2606:4700::1111", "public"},
	}
	for _, c := range cases {
		a, ok := parseAddr(c.in)
		if !ok || a.String() != c.addr || AddressClass(a) != c.class {
			t.Errorf("parseAddr(%q) = %v, %v, class %s; want %s, %s", c.in, a, ok, AddressClass(a), c.addr, c.class)
		}
	}
	for _, name := range []string{"example.com", "1.2.3.4.5", "0x", "256.1.1.1", "1.2.3.256", "08", "1..2", "a.0xa9fea9fe", "169.254.169.254.example.com"} {
		if a, ok := parseAddr(name); ok {
			t.Errorf("parseAddr(%q) = %v: want a name", name, a)
		}
	}
}

// FuzzEgressRequest: whatever a program sends the proxy, the gateway
// neither panics nor hangs, and the judge only ever sees a valid host
// and port.
func FuzzEgressRequest(f *testing.F) {
	for _, seed := range []string{
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://[::1]:80/ HTTP/1.1\r\n\r\n",
		"CONNECT 0xa9fea9fe:80 HTTP/1.1\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x0callowed.test\x01\xbb",
		"\x05\x01\x00\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x35",
		"\x05\x02\x01\x02",
		"\x04\x01\x00\x50\x7f\x00\x00\x01\x00",
		"CONNECT a b c\r\n\r\n",
		"GET / HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", 100) + "\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := NewEgress(EgressOptions{Helper: "/nonexistent", DialTimeout: 50 * time.Millisecond, Judge: func(_ context.Context, _ *EgressSession, d Destination) Verdict {
			if _, err := normalizeHost(d.Host); err != nil || d.Port < 1 || d.Port > 65535 {
				t.Errorf("the judge was asked about %+v", d)
			}
			return Verdict{Rule: "fuzz.refuse"}
		}})
		if err != nil {
			t.Fatal(err)
		}
		s := e.NewSession()
		s.netns = true
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.handle(server, nil)
			server.Close()
		}()
		client.SetDeadline(time.Now().Add(5 * time.Second))
		go io.Copy(io.Discard, client)
		go func() { client.Write(in); client.Close() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the proxy hung on %q", in)
		}
		e.Close()
	})
}

// TestSockDiagFindsTheSocket: the exact lookup in the kernel's socket
// table finds the client end of a connection, as /proc does.
func TestSockDiagFindsTheSocket(t *testing.T) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		t.Skipf("no sock_diag: %v", err)
	}
	d := newSockDiag(fd)
	defer d.close()
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		f, _ := c.(*net.TCPConn).File()
		want, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
		local, remote := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
		got := d.inode(local, remote)
		if "socket:["+got+"]" != want {
			t.Errorf("%s: sock_diag says %q, /proc says %q", network, got, want)
		}
		if proc := socketInode("self", local, remote); proc != got {
			t.Errorf("%s: /proc/self/net says %q, sock_diag %q", network, proc, got)
		}
		if none := d.inode(local, netip.AddrPortFrom(remote.Addr(), 1)); none != "" {
			t.Errorf("%s: a socket that does not exist has inode %q", network, none)
		}
		f.Close()
		c.Close()
		ln.Close()
	}
}

// FuzzAddress: whatever host a program names, the proxy reads it as an
// address that classifies and prints back as itself, or as a lower-case
// name without a final dot, or refuses it; never both, never a panic.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{"169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376", "[::ffff:169.254.169.254]",
		"64:ff9b::a9fe:a9fe", "fe80::1%eth0", "Example.COM.", "a..b", "1.2.3.4.5", "0x", "", "[", "::", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		n, err := normalizeHost(h)
		a, isAddr := parseAddr(n)
		if err != nil {
			return
		}
		if isAddr {
			class := AddressClass(a)
			if class == "" {
				t.Fatalf("%q: no class", h)
			}
			if b, ok := parseAddr(a.String()); !ok || b != a {
				t.Fatalf("%q: %v does not read back (%v, %v)", h, a, b, ok)
			}
			return
		}
		if n != strings.ToLower(n) || strings.HasSuffix(n, ".") || n == "" || len(n) > 253 {
			t.Fatalf("%q: name %q", h, n)
		}
	})
}

// TestEgressSurvivesAPanic: a panic while one connection is served (here
// in the judge) resets that connection, is told to Panicked and reported
// as the connection's error, and the proxy goes on serving.
func TestEgressSurvivesAPanic(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "still serving")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	panics := make(chan string, 4)
	proxy, log := testProxyWith(t, func(d Destination) Verdict {
		if d.Host == "denied.test" {
			panic("a bug in the judge")
		}
		return allowNames("allowed.test")(d)
	}, func(_ *EgressSession, v any) {
		panics <- fmt.Sprint(v, " ", strings.Contains(string(debug.Stack()), "TestEgressSurvivesAPanic"))
	})
	c := proxyClient(proxy)
	if _, err := c.Get(fmt.Sprintf("http://denied.test:%d/", port)); err == nil {
		t.Fatal("the connection whose judge panicked was answered")
	}
	select {
	case p := <-panics:
		if p != "a bug in the judge true" {
			t.Fatalf("Panicked was told %q, want the value and the stack of the panic", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Panicked was never told")
	}
	if got := log.next(t); !strings.Contains(got.Err, "internal error") || got.Session != "s-test" {
		t.Fatalf("the connection was reported as %+v", got)
	}
	resp, err := c.Get(fmt.Sprintf("http://allowed.test:%d/", port))
	if err != nil {
		t.Fatalf("the proxy after a panic: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "still serving" {
		t.Fatalf("body %q", body)
	}
}
