package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireIsolation skips a test on a machine where the launcher cannot
// make namespaces or Landlock cannot confine.
func requireIsolation(t *testing.T) {
	t.Helper()
	if Probe().LandlockABI < MinABI {
		t.Skip("this kernel cannot confine")
	}
	if !canIsolate() {
		t.Skip("the launcher can make namespaces only as root")
	}
}

// proxySpec is testSpec with network proxy and /dev/shm writable, and
// python3 readable.
func proxySpec(t *testing.T, l layout, e *Egress, script string) (Spec, *EgressSession) {
	t.Helper()
	p := Profile{Name: "t", Network: "proxy",
		Read:    []string{"/usr", "/lib", "/lib64", "/bin", "/etc"},
		Write:   []string{"{cwd}", "/dev/shm"},
		Devices: []string{"/dev/null"}}
	id, _, err := Identify(l.project)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Resolve(Vars{Cwd: l.project, CwdID: id, Home: l.home}, l.protected())
	if err != nil {
		t.Fatal(err)
	}
	s.Argv, s.Dir, s.Env = []string{"/bin/sh", "-c", script}, l.project, []string{"PATH=/usr/bin:/bin"}
	es := e.NewSession()
	t.Cleanup(es.Close)
	s.Egress = es
	return s, es
}

// TestProxySessionInItsOwnNetwork: a proxy session reaches an allowed
// host through the proxy (judged, with the program that asked), is
// refused a host the judge refuses (and is told so), and has no other
// way out: TCP to the host's loopback, UDP, raw sockets and a direct
// connection to an address all fail.
func TestProxySessionInItsOwnNetwork(t *testing.T) {
	requireIsolation(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from outside") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// An ssh server's first words, on a port no profile lists.
	sshd, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sshd.Close()
	go func() {
		for {
			c, err := sshd.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "SSH-2.0-termgate-test-sshd\r\n")
			c.Close()
		}
	}()
	sshPort := sshd.Addr().(*net.TCPAddr).Port
	log := &egressLog{ended: make(chan struct{}, 64), verdic: allowNames("allowed.test")}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	e, err := NewEgress(EgressOptions{Judge: log.judge, Report: log.report, Hosts: map[string][]netip.Addr{"allowed.test": lo, "denied.test": lo}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	script := fmt.Sprintf(`
echo "proxy=$HTTPS_PROXY"
curl -sS --max-time 20 http://allowed.test:%[1]d/; echo
curl -sS --max-time 20 http://denied.test:%[1]d/
curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:%[1]d/ 2>&1 | head -c 120; echo
python3 - <<'EOF'
import socket
def attempt(name, f):
    try:
        f()
        print(name, "ESCAPED")
    except OSError as e:
        print(name, "blocked:", e.strerror)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("8.8.8.8", 53))
def tcp():
    socket.create_connection(("1.1.1.1", 443), timeout=5)
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
def unix():
    socket.socket(socket.AF_UNIX).connect("/run/systemd/private")
attempt("udp", udp); attempt("tcp", tcp); attempt("raw", raw); attempt("packet", packet); attempt("unix", unix)
a, b = socket.socketpair(); a.send(b"pair"); print("socketpair", b.recv(4).decode())
EOF
grep -c "^    ProxyCommand '.*__termgate-connect 127.0.0.1:3128 %%h %%p$" /etc/ssh/ssh_config
ssh -v -p %[2]d -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null git@allowed.test true 2>&1 | grep -o "remote software version [a-z-]*"
ssh -p %[2]d -o BatchMode=yes git@denied.test true 2>&1 | grep -o "termgate: the sandbox refused.*"
`, port, sshPort)
	l := newLayout(t)
	s, _ := proxySpec(t, l, e, script)
	out, err := launch(t, s, nil)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for _, want := range []string{
		"proxy=http://127.0.0.1:3128",
		"hello from outside",
		"termgate: the sandbox refused a connection to denied.test:" + fmt.Sprint(port) + " by curl: test.refuse",
		"Failed to connect to 127.0.0.1",
		"udp blocked: Network is unreachable",
		"tcp blocked: Network is unreachable",
		"raw blocked: Operation not permitted",
		"packet blocked: Operation not permitted",
		"unix blocked: Permission denied",
		"socketpair pair",
		"remote software version termgate-test-sshd",
		fmt.Sprintf("termgate: the sandbox refused a connection to denied.test:%d by ssh: test.refuse", sshPort),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("a way out of the session's network:\n%s", out)
	}
	if _, err := os.Stat("/etc/ssh/ssh_config"); err == nil && !strings.Contains(out, "\n1\n") {
		t.Errorf("ssh's configuration in the session has no ProxyCommand:\n%s", out)
	}
	var allowed, refused bool
	for _, q := range log.questions() {
		if want := map[bool]string{true: "ssh", false: "curl"}[q.Port == sshPort]; q.Program != want {
			t.Errorf("judged %#v: the program is %s", q, want)
		}
		allowed = allowed || q.Host == "allowed.test"
		refused = refused || q.Host == "denied.test"
	}
	if !allowed || !refused {
		t.Errorf("questions %+v", log.questions())
	}
}

// TestPrivateShm: each launch has its own /dev/shm, which neither the
// host nor another launch sees, and which goes with it.
func TestPrivateShm(t *testing.T) {
	requireIsolation(t)
	mark := fmt.Sprintf("tg-shm-%d", time.Now().UnixNano())
	l := newLayout(t)
	s := testSpec(t, l)
	s.Write = append(s.Write, "/dev/shm")
	s.Argv = []string{"/bin/sh", "-c", "echo one > /dev/shm/" + mark + " && exec sleep 60"}
	cmd := exec.Command("/bin/false")
	la, err := Start(cmd, s, Options{Name: cgroupName(t)}, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = la.End() })
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The first session's file, seen through its own mount namespace.
	inside := filepath.Join("/proc", fmt.Sprint(cmd.Process.Pid), "root", "dev", "shm", mark)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(inside); err == nil && string(b) == "one\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first session never wrote its /dev/shm")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat("/dev/shm/" + mark); err == nil {
		t.Fatal("the host sees the session's /dev/shm")
	}
	l2 := newLayout(t)
	s2 := testSpec(t, l2)
	s2.Write = append(s2.Write, "/dev/shm")
	s2.Argv = []string{"/bin/sh", "-c", "ls -A /dev/shm; echo two > /dev/shm/x && echo wrote; df -k /dev/shm | tail -1"}
	out, err := launch(t, s2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, mark) || !strings.Contains(out, "wrote") || !strings.Contains(out, fmt.Sprint(DefaultShm>>10)) {
		t.Fatalf("the second session's /dev/shm: %q", out)
	}
}

// TestSessionMemoryLimit: a session that allocates past its memory
// cgroup's limit is stopped there (killed, or refused the memory), while
// its RLIMIT_DATA alone would have let it.
func TestSessionMemoryLimit(t *testing.T) {
	requireIsolation(t)
	l := newLayout(t)
	s := testSpec(t, l)
	s.Limits.SessionMemory = 64 << 20
	s.Argv = []string{"/usr/bin/python3", "-c", "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('ALLOCATED')"}
	st, cg, err := s.Attach(cgroupName(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Kill(); _ = cg.Remove() })
	if st.MemoryLimit != 64<<20 || cg.MemoryDir() == "" {
		t.Fatalf("status %+v: no memory limit", st)
	}
	out, err := launchRaw(t, s)
	if strings.Contains(out, "ALLOCATED") || err == nil {
		t.Fatalf("a 256 MiB allocation under a 64 MiB limit: %q, %v", out, err)
	}
	if !strings.Contains(err.Error(), "killed") && !strings.Contains(out, "MemoryError") {
		t.Fatalf("want the hog killed or refused: %q, %v", out, err)
	}
}

// TestDirectDestinations: a profile's direct destinations are reached by
// plain TCP inside the session's network, on loopback or by a name the
// session's hosts file gives, each connection judged (via direct) and
// forwarded to its one destination; a refused one is reset.
func TestDirectDestinations(t *testing.T) {
	requireIsolation(t)
	echo := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { io.Copy(c, c); c.Close() }()
			}
		}()
		return ln.Addr().(*net.TCPAddr).Port
	}
	local, named, refused := echo(), echo(), echo()
	log := &egressLog{ended: make(chan struct{}, 64), verdic: func(d Destination) Verdict {
		if d.Via == "direct" && d.Port != refused {
			return Verdict{Allow: true, Rule: "test.direct"}
		}
		return Verdict{Rule: "test.refuse", Reason: "not this one"}
	}}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	e, err := NewEgress(EgressOptions{Judge: log.judge, Report: log.report, Hosts: map[string][]netip.Addr{"db.test": lo, "other.test": lo}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	script := fmt.Sprintf(`python3 -c '
import socket
for host, port in [("127.0.0.1", %d), ("db.test", %d), ("other.test", %d)]:
    try:
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(b"ping"); print(host, s.recv(4).decode() or "closed")
    except OSError as e:
        print(host, "blocked:", e.strerror)
'
grep db.test /etc/hosts`, local, named, refused)
	l := newLayout(t)
	s, _ := proxySpec(t, l, e, script)
	s.Direct = []Direct{{Host: "127.0.0.1", Port: local}, {Host: "db.test", Port: named}, {Host: "other.test", Port: refused}}
	out, err := launch(t, s, nil)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for _, want := range []string{"127.0.0.1 ping", "db.test ping", "127.0.1.2\tdb.test"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "other.test ping") {
		t.Errorf("a refused direct destination was reached:\n%s", out)
	}
	qs := log.questions()
	for _, q := range qs {
		if q.Via != "direct" || !strings.HasPrefix(q.Program, "python3") {
			t.Errorf("judged %#v", q)
		}
	}
	if len(qs) < 3 {
		t.Errorf("judged %d connections, want 3", len(qs))
	}
}

// TestProxySessionWithoutANamespace: where the gateway cannot give a
// session its own network, the proxy listens on the host's loopback,
// the session reaches allowed hosts through it, and Landlock and seccomp
// refuse TCP to any other port and UDP; the status says what is weaker.
func TestProxySessionWithoutANamespace(t *testing.T) {
	requireIsolation(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from outside") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	log := &egressLog{ended: make(chan struct{}, 64), verdic: allowNames("allowed.test")}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	e, err := NewEgress(EgressOptions{Judge: log.judge, Report: log.report, Hosts: map[string][]netip.Addr{"allowed.test": lo}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	script := fmt.Sprintf(`
curl -sS --max-time 20 http://allowed.test:%[1]d/; echo
python3 -c '
import socket
for name, f in [("tcp", lambda: socket.create_connection(("127.0.0.1", %[1]d), timeout=5)),
                ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))]:
    try:
        f(); print(name, "ESCAPED")
    except OSError as e:
        print(name, "blocked:", e.strerror)
'`, port)
	l := newLayout(t)
	s, es := proxySpec(t, l, e, script)
	es.testNoNamespace = true
	st, cg, err := s.Attach(cgroupName(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cg.Kill(); _ = cg.Remove() })
	if !strings.Contains(strings.Join(st.NotEnforced, "; "), "no namespace of its own") || ownNetwork(s) || len(s.Ports) != 1 {
		t.Fatalf("status %+v, ports %v", st, s.Ports)
	}
	out, err := launchRaw(t, s)
	if err != nil {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	for _, want := range []string{"hello from outside", "tcp blocked: Permission denied", "udp blocked: Permission denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("a way around the proxy:\n%s", out)
	}
	if q := log.questions(); len(q) == 0 || q[0].Program != "curl" {
		t.Errorf("questions %+v", q)
	}
}
