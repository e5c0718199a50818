package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Egress is the gateway's egress proxy. A session whose profile says
// network "proxy" reaches the network only through it: the launcher puts
// the session in a network namespace of its own in which only loopback is
// up, and binds the proxy's listening socket (127.0.0.1:3128) in it; the
// gateway serves that socket from its own namespace, so the proxy is the
// only way out, UDP included.
//
// One port speaks HTTP (CONNECT, and plain http:// requests in absolute
// form) and SOCKS5 (CONNECT with names or addresses; no BIND, no UDP
// ASSOCIATE); ssh goes through it with a ProxyCommand that runs termgate's
// own CONNECT client (ConnectMain), bound over /etc/ssh/ssh_config in the
// session's mount namespace. Direct destinations of the profile (a
// database on loopback or a named host) get a listener of their own
// inside the namespace, forwarded to their one destination.
//
// Every new destination is the judge's decision: host (as the program
// asked for it), port, program (the executable that holds the socket),
// session. The judge is the gateway's (policy, human confirmation, audit,
// a cache); the sandbox imports no policy. Names are resolved by the proxy
// only, after the decision, and the proxy dials exactly the addresses it
// resolved: an address that is not public (loopback, private, link-local,
// shared, unspecified, multicast, reserved, and the IPv4 inside NAT64,
// 6to4 and mapped addresses) is judged again with Address and
// AddressClass set, so a name that resolves to the metadata endpoint or to
// the host's own services is caught whatever the name. An address literal
// (in any spelling inet_aton accepts: 0xa9fea9fe, 2852039166, 0251.0376.0251.0376,
// [::ffff:169.254.169.254]) is judged once, with its address and class.
//
// Every connection is reported when it ends (or is refused): destination,
// verdict, bytes each way, duration.
//
// Known limits: a CONNECT tunnel carries TLS the proxy does not open, so
// a client may present another name in its TLS handshake to a server that
// hosts both (domain fronting); plain http requests are sent with the
// judged host as their Host.
type Egress struct {
	judge    func(context.Context, *EgressSession, Destination) Verdict
	report   func(*EgressSession, Connection)
	panicked func(*EgressSession, any)
	hosts    map[string][]netip.Addr
	resolver *net.Resolver
	dial     time.Duration
	helper   string

	mu       sync.Mutex
	sessions map[*EgressSession]struct{}
}

// EgressOptions configure an Egress.
type EgressOptions struct {
	// Judge decides each new destination of a session; it may block (a
	// human is asked), and its context ends when the session's proxy is
	// closed. Required.
	Judge func(ctx context.Context, s *EgressSession, d Destination) Verdict
	// Report is told of every connection when it ends or is refused.
	Report func(s *EgressSession, c Connection)
	// Hosts are names the proxy resolves itself, before DNS (the
	// operator's --egress-hosts; names are lower case, without a final
	// dot).
	Hosts map[string][]netip.Addr
	// DialTimeout bounds a connection to a destination (default 15s).
	DialTimeout time.Duration
	// Helper is the executable ssh's ProxyCommand runs (default: this
	// one).
	Helper string
	// Panicked is told of a panic that ended one connection's service,
	// for the server's log: it runs while the panic is recovered, so
	// runtime/debug.Stack there holds the panic's frames. The connection
	// is reset and reported with an error, and the proxy goes on serving.
	Panicked func(s *EgressSession, v any)
}

// Destination is one new destination of a session, as the judge sees it.
type Destination struct {
	Session string `json:"session"` // the launch's name: the session id
	Profile string `json:"profile"`
	// Host is what the program asked for: a DNS name (lower case, no
	// final dot) or an address literal as the program spelled it.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Program is the base name of the executable that holds the socket
	// (for termgate's ssh ProxyCommand, its parent's: ssh); "" when it
	// could not be told. Pid is that process.
	Program string `json:"program"`
	Pid     int    `json:"pid,omitempty"`
	Via     string `json:"via"` // connect, http, socks5, direct
	// Address is set for an address literal, and for the second judgement
	// of a name whose address is not public; AddressClass says what it
	// is: public, loopback, private, link_local, shared, unspecified,
	// multicast or reserved.
	Address      string `json:"address,omitempty"`
	AddressClass string `json:"address_class,omitempty"`
	// Resolved: Address is what the name Host resolved to (the second
	// judgement; the name itself was allowed).
	Resolved bool `json:"resolved,omitempty"`
}

func (d Destination) String() string {
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Verdict is the judge's answer.
type Verdict struct {
	Allow  bool
	Rule   string
	Reason string
}

// Connection is one connection through the proxy, reported when it ends.
type Connection struct {
	Destination
	Verdict
	Start    time.Time
	Duration time.Duration
	// Sent are the bytes from the session to the destination, Received the
	// bytes back (the request and response of a plain http request
	// included, a tunnel's handshake not).
	Sent, Received int64
	// Refused: the judge did not allow it. Err: why it failed otherwise
	// (no such host, refused by the destination, a malformed request).
	Refused bool
	Err     string
}

// ProxyPort is the proxy's port inside a session's network namespace.
const ProxyPort = 3128

// The proxy's bounds: a request head, the time to send one, a
// destination's answer to a dial, and the connections of one session.
const (
	maxHead        = 64 << 10
	headWait       = 30 * time.Second
	defaultDial    = 15 * time.Second
	maxConnections = 512
)

// NewEgress makes the gateway's egress proxy.
func NewEgress(o EgressOptions) (*Egress, error) {
	if o.Judge == nil {
		return nil, errors.New("sandbox: the egress proxy needs a judge")
	}
	e := &Egress{judge: o.Judge, report: o.Report, panicked: o.Panicked, hosts: map[string][]netip.Addr{}, resolver: net.DefaultResolver,
		dial: o.DialTimeout, helper: o.Helper, sessions: map[*EgressSession]struct{}{}}
	if e.dial <= 0 {
		e.dial = defaultDial
	}
	for name, addrs := range o.Hosts {
		e.hosts[strings.TrimSuffix(strings.ToLower(name), ".")] = addrs
	}
	if e.helper == "" {
		self, err := executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: finding termgate's own executable: %w", err)
		}
		e.helper = self
	}
	return e, nil
}

// Close ends every session's proxy.
func (e *Egress) Close() {
	e.mu.Lock()
	all := make([]*EgressSession, 0, len(e.sessions))
	for s := range e.sessions {
		all = append(all, s)
	}
	e.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
}

// EgressSession is the proxy of one launch: set it as the spec's Egress
// before Attach, and Close it when the launch is over.
type EgressSession struct {
	e      *Egress
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}

	// Set by Attach and Started, before any connection is served.
	name, profile string
	netns         bool
	procs         []string          // the session's cgroup.procs files
	direct        map[string]Direct // listen address → destination
	hostLn        net.Listener      // without a namespace: the proxy's listener in the gateway's
	leader        int
	diag          *sockDiag // the session network's socket table

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup

	// testNoNamespace makes Attach take the path of a gateway that cannot
	// make namespaces.
	testNoNamespace bool
}

// NewSession makes the proxy of one launch.
func (e *Egress) NewSession() *EgressSession {
	ctx, cancel := context.WithCancel(context.Background())
	s := &EgressSession{e: e, ctx: ctx, cancel: cancel, sem: make(chan struct{}, maxConnections), conns: map[net.Conn]struct{}{}}
	e.mu.Lock()
	e.sessions[s] = struct{}{}
	e.mu.Unlock()
	return s
}

// Name is the launch's name (the session's id), once attached.
func (s *EgressSession) Name() string { return s.name }

// Profile is the launch's profile, once attached.
func (s *EgressSession) Profile() string { return s.profile }

// Close stops the session's listeners, ends its connections (a judgement
// in progress is cancelled) and waits for them. It is safe to call more
// than once.
func (s *EgressSession) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.closed = true
	s.cancel()
	for _, l := range s.listeners {
		l.Close()
	}
	if s.hostLn != nil {
		s.hostLn.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.diag.close()
	s.e.mu.Lock()
	delete(s.e.sessions, s)
	s.e.mu.Unlock()
}

// proxyEnv are the variables that point a session's tools at the proxy.
func proxyEnv(port int, noProxy []string) [][2]string {
	http := "http://127.0.0.1:" + strconv.Itoa(port)
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(port)
	no := strings.Join(append([]string{"localhost", "127.0.0.1", "::1"}, noProxy...), ",")
	return [][2]string{
		{"HTTP_PROXY", http}, {"http_proxy", http}, {"HTTPS_PROXY", http}, {"https_proxy", http},
		{"ALL_PROXY", socks}, {"all_proxy", socks}, {"NO_PROXY", no}, {"no_proxy", no},
		{"npm_config_proxy", http}, {"npm_config_https_proxy", http}, {"npm_config_noproxy", no},
		{"PIP_PROXY", http}, {"CARGO_HTTP_PROXY", http}, {"YARN_HTTP_PROXY", http}, {"YARN_HTTPS_PROXY", http},
	}
}

// serve accepts on the session's listeners; kinds[i] is "proxy" or the
// listen address of a direct destination.
func (s *EgressSession) serve(lns []net.Listener, kinds []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, l := range lns {
			l.Close()
		}
		return
	}
	for i, l := range lns {
		s.listeners = append(s.listeners, l)
		var d *Direct
		if dd, ok := s.direct[kinds[i]]; ok {
			d = &dd
		}
		s.wg.Add(1)
		go s.accept(l, d)
	}
}

func (s *EgressSession) accept(l net.Listener, d *Direct) {
	defer s.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			c.Close() // over the bound: the client sees a reset
			continue
		}
		if !s.track(c) {
			<-s.sem
			c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			defer s.untrack(c)
			defer c.Close()
			defer s.recoverConn(c, time.Now())
			s.handle(c, d)
		}()
	}
}

// recoverConn is the safety net of one connection's service: a panic
// (a bug wherever it comes from: the proxy, the judge, the report) resets
// the connection, is told to Panicked and reported as the connection's
// error, and the proxy goes on serving the session's other connections.
// It is deferred, so it recovers.
func (s *EgressSession) recoverConn(c net.Conn, start time.Time) {
	v := recover()
	if v == nil {
		return
	}
	reset(c)
	// Neither hook may take the gateway down in turn.
	func() {
		defer func() { _ = recover() }()
		if s.e.panicked != nil {
			s.e.panicked(s, v)
		}
	}()
	func() {
		defer func() { _ = recover() }()
		s.reportConn(Connection{Destination: Destination{Session: s.name, Profile: s.profile}, Start: start,
			Err: "termgate: an internal error ended this connection (the server's log has it)"})
	}()
}

func (s *EgressSession) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *EgressSession) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// handle serves one accepted connection.
func (s *EgressSession) handle(c net.Conn, d *Direct) {
	start := time.Now()
	base := Destination{Session: s.name, Profile: s.profile}
	pid, program, member := s.owner(c)
	base.Pid, base.Program = pid, program
	if !s.netns && !member {
		// Without a namespace of its own, the listener is on the host's
		// loopback: only the session's own processes may use it.
		s.reportConn(Connection{Destination: base, Start: start, Refused: true,
			Verdict: Verdict{Rule: "sandbox.egress_foreign", Reason: "the connection did not come from the session"}})
		return
	}
	if d != nil {
		dst := base
		dst.Host, dst.Port, dst.Via = d.Host, d.Port, "direct"
		up, dst, v, err := s.open(dst)
		if err != nil || !v.Allow {
			s.finish(dst, v, start, 0, 0, err)
			reset(c)
			return
		}
		sent, recv := relay(c, c, up)
		s.finish(dst, v, start, sent, recv, nil)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(headWait))
	lr := &headLimit{r: c, n: maxHead}
	br := bufio.NewReaderSize(lr, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return // closed without a word
	}
	switch first[0] {
	case 5:
		s.socks5(c, br, lr, base, start)
	case 4:
		s.reportConn(Connection{Destination: base, Start: start, Err: "SOCKS4 is not offered (use SOCKS5 or HTTP CONNECT)"})
		_, _ = c.Write([]byte{0, 91, 0, 0, 0, 0, 0, 0})
	default:
		s.http(c, br, lr, base, start)
	}
}

// headLimit bounds what a request head may take; lifted for the body.
type headLimit struct {
	r io.Reader
	n int64
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("the request head is over 64 KiB")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func (l *headLimit) lift() { l.n = 1 << 62 }

// http serves a CONNECT or an absolute-form http request.
func (s *EgressSession) http(c net.Conn, br *bufio.Reader, lr *headLimit, base Destination, start time.Time) {
	req, err := http.ReadRequest(br)
	if err != nil {
		s.reportConn(Connection{Destination: base, Start: start, Err: "a malformed proxy request"})
		httpError(c, 400, "", "termgate: a malformed proxy request")
		return
	}
	lr.lift()
	_ = c.SetReadDeadline(time.Time{})
	dst := base
	if req.Method == http.MethodConnect {
		host, port, err := splitHostPort(req.RequestURI, 0)
		if err != nil {
			s.reportConn(Connection{Destination: base, Start: start, Err: "CONNECT to " + clip(req.RequestURI) + ": " + err.Error()})
			httpError(c, 400, "", "termgate: "+err.Error())
			return
		}
		dst.Host, dst.Port, dst.Via = host, port, "connect"
		up, dst, v, err := s.open(dst)
		if err != nil || !v.Allow {
			s.finish(dst, v, start, 0, 0, err)
			refuseHTTP(c, dst, v, err)
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			up.Close()
			s.finish(dst, v, start, 0, 0, err)
			return
		}
		sent, recv := relay(c, br, up)
		s.finish(dst, v, start, sent, recv, nil)
		return
	}
	if req.URL == nil || !req.URL.IsAbs() || req.URL.Scheme != "http" {
		s.reportConn(Connection{Destination: base, Start: start, Err: "not a proxy request: " + clip(req.RequestURI)})
		httpError(c, 400, "", "termgate: this is the sandbox's egress proxy: send CONNECT host:port, or an absolute http:// URL")
		return
	}
	host, port, err := splitHostPort(req.URL.Host, 80)
	if err != nil {
		s.reportConn(Connection{Destination: base, Start: start, Err: "http to " + clip(req.URL.Host) + ": " + err.Error()})
		httpError(c, 400, "", "termgate: "+err.Error())
		return
	}
	dst.Host, dst.Port, dst.Via = host, port, "http"
	up, dst, v, err := s.open(dst)
	if err != nil || !v.Allow {
		s.finish(dst, v, start, 0, 0, err)
		refuseHTTP(c, dst, v, err)
		return
	}
	defer up.Close()
	// One request per connection, sent to the judged host: the hop's
	// headers go, the Host is the URL's, and the destination closes
	// after its answer (so the next request, maybe to another host, comes
	// on a new connection and is judged on its own).
	for _, h := range req.Header.Values("Connection") {
		for _, name := range strings.Split(h, ",") {
			req.Header.Del(strings.TrimSpace(name))
		}
	}
	for _, h := range []string{"Connection", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		req.Header.Del(h)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none, rather than Go's
	}
	req.Host = req.URL.Host
	req.Close = true
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The client waits for this before its body; the proxy sends the
		// body on whole.
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			s.finish(dst, v, start, 0, 0, err)
			return
		}
	}
	cw := &countWriter{w: up}
	if err := req.Write(cw); err != nil {
		s.finish(dst, v, start, cw.n, 0, err)
		httpError(c, 502, "", "termgate: sending the request to "+dst.String()+": "+err.Error())
		return
	}
	recv, _ := io.Copy(c, up)
	s.finish(dst, v, start, cw.n, recv, nil)
}

// socks5 serves a SOCKS5 CONNECT.
func (s *EgressSession) socks5(c net.Conn, br *bufio.Reader, lr *headLimit, base Destination, start time.Time) {
	fail := func(code byte, why string) {
		s.reportConn(Connection{Destination: base, Start: start, Err: why})
		_, _ = c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
	}
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == 0
	}
	if !noAuth {
		s.reportConn(Connection{Destination: base, Start: start, Err: "SOCKS5 without the no-authentication method"})
		_, _ = c.Write([]byte{5, 0xff})
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	if req[0] != 5 {
		fail(1, "a malformed SOCKS5 request")
		return
	}
	var host string
	switch req[3] {
	case 1:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom4(a).String()
	case 4:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom16(a).String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return
		}
		host = string(name)
	default:
		fail(8, "a SOCKS5 address type that does not exist")
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != 1 {
		what := map[byte]string{2: "BIND", 3: "UDP ASSOCIATE"}[req[1]]
		if what == "" {
			what = "command " + strconv.Itoa(int(req[1]))
		}
		dst := base
		dst.Host, dst.Port, dst.Via = host, port, "socks5"
		s.reportConn(Connection{Destination: dst, Start: start, Refused: true,
			Verdict: Verdict{Rule: "sandbox.egress_socks_command", Reason: "SOCKS5 " + what + " is not offered: the proxy carries TCP connections only"}})
		_, _ = c.Write([]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	lr.lift()
	_ = c.SetReadDeadline(time.Time{})
	dst := base
	h, err := normalizeHost(host)
	if err != nil || port == 0 {
		fail(1, "SOCKS5 CONNECT to "+clip(host)+": not a host and port")
		return
	}
	dst.Host, dst.Port, dst.Via = h, port, "socks5"
	up, dst, v, err := s.open(dst)
	if err != nil || !v.Allow {
		s.finish(dst, v, start, 0, 0, err)
		code := byte(2) // connection not allowed by ruleset
		if err != nil {
			code = dialCode(err)
		}
		_, _ = c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		up.Close()
		s.finish(dst, v, start, 0, 0, err)
		return
	}
	sent, recv := relay(c, br, up)
	s.finish(dst, v, start, sent, recv, nil)
}

// errDial wraps a failure to reach an allowed destination.
type errDial struct{ err error }

func (e *errDial) Error() string { return e.err.Error() }
func (e *errDial) Unwrap() error { return e.err }

// dialCode is the SOCKS5 reply for a failed dial.
func dialCode(err error) byte {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return 4 // host unreachable
	case strings.Contains(err.Error(), "connection refused"):
		return 5
	case strings.Contains(err.Error(), "network is unreachable"):
		return 3
	}
	return 1
}

// open judges dst, resolves its name (the proxy's only), judges each
// address that is not public again, and dials the first allowed one. It
// returns the destination as last judged, the verdict, and an error when
// an allowed destination could not be reached (or was malformed).
func (s *EgressSession) open(dst Destination) (net.Conn, Destination, Verdict, error) {
	host, err := normalizeHost(dst.Host)
	if err != nil || dst.Port < 1 || dst.Port > 65535 {
		if err == nil {
			err = fmt.Errorf("port %d", dst.Port)
		}
		return nil, dst, Verdict{}, fmt.Errorf("not a destination: %w", err)
	}
	dst.Host = host
	literal, isAddr := parseAddr(host)
	if isAddr {
		dst.Address, dst.AddressClass = literal.String(), AddressClass(literal)
	}
	v := s.e.judge(s.ctx, s, dst)
	if !v.Allow {
		return nil, dst, v, nil
	}
	addrs := []netip.Addr{literal}
	if !isAddr {
		if addrs, err = s.e.resolve(s.ctx, host); err != nil {
			return nil, dst, v, &errDial{err}
		}
	}
	var lastErr error
	last, lastV := dst, v
	for _, a := range addrs {
		a = a.Unmap()
		d2 := dst
		d2.Address, d2.AddressClass, d2.Resolved = a.String(), AddressClass(a), !isAddr
		v2 := v
		if !isAddr && d2.AddressClass != "public" {
			if v2 = s.e.judge(s.ctx, s, d2); !v2.Allow {
				last, lastV = d2, v2
				continue
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.e.dial)
		var d net.Dialer
		up, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(dst.Port)).String())
		cancel()
		if err == nil {
			return up, d2, v2, nil
		}
		last, lastV, lastErr = d2, v2, &errDial{err}
	}
	if lastErr == nil && !lastV.Allow {
		return nil, last, lastV, nil
	}
	if lastErr == nil {
		lastErr = &errDial{fmt.Errorf("%s has no address", host)}
	}
	return nil, last, lastV, lastErr
}

// resolve looks a name up: the operator's hosts first, then DNS.
func (e *Egress) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := e.hosts[host]; ok && len(a) > 0 {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.dial)
	defer cancel()
	addrs, err := e.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	// IPv4 first: most hosts a session reaches serve it, and a host's
	// IPv6 route is more often missing.
	v4 := addrs[:0:0]
	var v6 []netip.Addr
	for _, a := range addrs {
		if a.Unmap().Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	return append(v4, v6...), nil
}

// finish reports a connection that ended, was refused or failed.
func (s *EgressSession) finish(dst Destination, v Verdict, start time.Time, sent, recv int64, err error) {
	c := Connection{Destination: dst, Verdict: v, Start: start, Duration: time.Since(start), Sent: sent, Received: recv}
	switch {
	case err != nil:
		c.Err = err.Error()
	case !v.Allow:
		c.Refused = true
	}
	s.reportConn(c)
}

func (s *EgressSession) reportConn(c Connection) {
	if c.Duration == 0 {
		c.Duration = time.Since(c.Start)
	}
	if s.e.report != nil {
		s.e.report(s, c)
	}
}

// refuseHTTP answers a CONNECT or request the judge refused (403) or that
// could not reach its destination (502).
func refuseHTTP(c net.Conn, dst Destination, v Verdict, err error) {
	if err != nil {
		code := 502
		var de *errDial
		if !errors.As(err, &de) {
			code = 400
		}
		httpError(c, code, "", fmt.Sprintf("termgate: %s could not be reached: %v", dst, err))
		return
	}
	httpError(c, 403, v.Rule, RefusalText(dst, v))
}

// RefusalText says what the sandbox refused and why, in one line.
func RefusalText(dst Destination, v Verdict) string {
	s := fmt.Sprintf("termgate: the sandbox refused a connection to %s", dst)
	if dst.Address != "" && dst.Address != dst.Host {
		s += " (" + dst.Address + ")"
	}
	if dst.Program != "" {
		s += " by " + dst.Program
	}
	if v.Rule != "" {
		s += ": " + v.Rule
	}
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	return oneLine(s)
}

func httpError(c net.Conn, code int, rule, body string) {
	body = oneLine(body) + "\n"
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n", code, http.StatusText(code), len(body))
	if rule != "" {
		h += "X-Termgate-Refused: " + oneLine(rule) + "\r\n"
	}
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, h+"\r\n"+body)
}

// oneLine keeps text on one line of printable characters.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func clip(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(oneLine(s), "?")
}

// reset closes c with a reset, so that the client sees the refusal at once.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// relay copies both ways between the client (read through r, which may
// hold bytes already buffered) and up, half-closing each side when the
// other is done, and returns the bytes sent up and received back.
func relay(client net.Conn, r io.Reader, up net.Conn) (sent, recv int64) {
	done := make(chan int64, 1)
	go func() {
		// What the head's reader holds goes first; then the connections
		// themselves, so that the kernel splices TCP to TCP.
		var n int64
		if br, ok := r.(*bufio.Reader); ok {
			if k := br.Buffered(); k > 0 {
				b, _ := br.Peek(k)
				w, _ := up.Write(b)
				n += int64(w)
			}
			r = client
		}
		m, _ := io.Copy(up, r)
		closeWrite(up)
		done <- n + m
	}()
	recv, _ = io.Copy(client, up)
	closeWrite(client)
	// The destination is done: the client has a moment to finish, then
	// both go (a client that never closes must not hold the goroutine).
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case sent = <-done:
	case <-timer.C:
		client.Close()
		up.Close()
		sent = <-done
	}
	client.Close()
	up.Close()
	return sent, recv
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// splitHostPort splits host:port (a bracketed IPv6 literal, a name or an
// IPv4 address); def is the port when none is given (0: one is required).
func splitHostPort(hp string, def int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		if def == 0 || strings.Count(hp, ":") > 0 && !strings.HasPrefix(hp, "[") {
			return "", 0, fmt.Errorf("%q is not host:port", clip(hp))
		}
		host, ps = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), strconv.Itoa(def)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q is not a port", clip(ps))
	}
	h, err := normalizeHost(host)
	if err != nil {
		return "", 0, err
	}
	return h, port, nil
}

// normalizeHost checks a host as a program asked for it and returns it in
// the form the judge sees: an address literal as spelled (brackets and a
// final dot gone), or a DNS name in lower case without its final dot.
func normalizeHost(h string) (string, error) {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if _, ok := parseAddr(h); ok {
		return strings.TrimSuffix(strings.ToLower(h), "."), nil
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" || len(h) > 253 {
		return "", fmt.Errorf("%q is not a host name", clip(h))
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%q is not a host name", clip(h))
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%q is not a host name", clip(h))
			}
		}
	}
	return h, nil
}

// AddressLiteral reads host as the proxy does: an address literal in any
// spelling a resolver takes (see parseAddr), or not one (a name).
func AddressLiteral(host string) (netip.Addr, bool) { return parseAddr(host) }

// parseAddr reads an address literal in every spelling a program's
// resolver would take as one: IPv6 (a zone dropped; mapped, NAT64, 6to4
// and IPv4-compatible forms keep their IPv6 form here, AddressClass looks
// inside them), dotted IPv4, and inet_aton's forms (1 to 4 parts, each
// decimal, 0x hex or 0 octal: 0xa9fea9fe, 2852039166, 0251.0376.0251.0376,
// 169.254.43518), with or without a final dot.
func parseAddr(h string) (netip.Addr, bool) {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return netip.Addr{}, false
	}
	if strings.Contains(h, ":") {
		if i := strings.IndexByte(h, '%'); i >= 0 {
			h = h[:i]
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			return netip.Addr{}, false
		}
		if a.Is4In6() {
			return a.Unmap(), true
		}
		return a, true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case p == "":
			return netip.Addr{}, false
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	return netip.AddrFrom4(b), true
}

// AddressClass says what an address is: public, loopback, private,
// link_local, shared (100.64/10, carrier-grade NAT, where some clouds put
// their metadata), unspecified, multicast or reserved. The IPv4 address
// inside a mapped, NAT64 (64:ff9b::/96), 6to4 (2002::/16) or
// IPv4-compatible one is what is classified.
func AddressClass(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case netip.MustParsePrefix("64:ff9b::/96").Contains(a), netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
			return AddressClass(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case netip.MustParsePrefix("2002::/16").Contains(a):
			return AddressClass(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case netip.MustParsePrefix("::/96").Contains(a) && !a.IsUnspecified() && !a.IsLoopback():
			return AddressClass(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
	}
	switch {
	case !a.IsValid():
		return "reserved"
	case a.IsUnspecified(), a.Is4() && a.As4()[0] == 0:
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link_local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "multicast"
	case a.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(a):
		return "shared"
	}
	// Special-purpose ranges (RFC 6890 and its updates) that are neither
	// public nor one of the classes above: documentation, benchmarking,
	// IETF protocol assignments, Teredo, discard, site-local, 240/4.
	for _, p := range []string{"192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"240.0.0.0/4", "2001:db8::/32", "2001::/32", "100::/64", "fec0::/10"} {
		if netip.MustParsePrefix(p).Contains(a) {
			return "reserved"
		}
	}
	return "public"
}
