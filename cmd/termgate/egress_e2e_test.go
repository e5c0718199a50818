package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termgate/termgate/policies"
	"github.com/termgate/termgate/sandbox"
)

// egressWorld is what a test of the egress proxy reaches: servers on the
// test's own loopback under names the proxy resolves from
// --egress-hosts, and a bundle that allows some of them.
type egressWorld struct {
	hosts, bundle             string
	web, tls, git, pypi, sshd int // ports
}

// requireProxySessions skips where sessions cannot get a network of their
// own (the gateway must be root, the kernel must confine).
func requireProxySessions(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || sandbox.Probe().LandlockABI < sandbox.MinABI {
		t.Skip("proxy sessions in a network namespace need a root gateway and Landlock")
	}
}

func newEgressWorld(t *testing.T) *egressWorld {
	t.Helper()
	w := &egressWorld{}
	hello := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "hello from the test server\n") })
	web := httptest.NewServer(hello)
	t.Cleanup(web.Close)
	tlsWeb := httptest.NewTLSServer(hello)
	t.Cleanup(tlsWeb.Close)

	// git's smart HTTP: git-http-backend over TLS, serving a repository
	// with one commit.
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Skip("needs git-http-backend")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, filepath.Join(root, "repo.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git := httptest.NewTLSServer(&cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(git.Close)

	// A package index with one wheel.
	wheel := testWheel(t)
	sum := sha256.Sum256(wheel)
	pypi := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/tgpkg/":
			fmt.Fprintf(rw, `<html><body><a href="/files/tgpkg-1.0-py3-none-any.whl#sha256=%s">tgpkg-1.0-py3-none-any.whl</a></body></html>`, hex.EncodeToString(sum[:]))
		case "/files/tgpkg-1.0-py3-none-any.whl":
			rw.Write(wheel)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(pypi.Close)

	// An ssh server's first words.
	sshd, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sshd.Close() })
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
	port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
	w.web, w.tls, w.git, w.pypi, w.sshd = port(web.Listener), port(tlsWeb.Listener), port(git.Listener), port(pypi.Listener), port(sshd)

	w.hosts = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(w.hosts, []byte("# the test's servers\n127.0.0.1 allowed.test denied.test git.test pypi.test ask.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.bundle = bundleCopy(t, func(s string) string {
		allow := fmt.Sprintf(`"allow": ["allowed.test:%d", "allowed.test:%d", "allowed.test:%d", "git.test:%d", "pypi.test:%d", `, w.web, w.tls, w.sshd, w.git, w.pypi)
		s = strings.Replace(s, `"allow": [`, allow, 1)
		return strings.Replace(s, `"internal_hosts": []`, `"internal_hosts": ["*.test"]`, 1)
	})
	return w
}

// testWheel is a wheel of one empty module.
func testWheel(t *testing.T) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, body := range map[string]string{
		"tgpkg/__init__.py":                 "",
		"tgpkg-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: tgpkg\nVersion: 1.0\n",
		"tgpkg-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: termgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"tgpkg-1.0.dist-info/top_level.txt": "tgpkg\n",
		"tgpkg-1.0.dist-info/RECORD":        "",
	} {
		f, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, body)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (w *egressWorld) flags(t *testing.T, audit string) []string {
	return []string{"--egress-hosts", w.hosts, "--policy-dir", w.bundle, "--audit-log", audit, "--audit-key", filepath.Join(filepath.Dir(audit), "audit.key")}
}

// refusals is a result's sandbox_refused.
func refusals(m map[string]any) []map[string]any {
	var out []map[string]any
	l, _ := m["sandbox_refused"].([]any)
	for _, x := range l {
		if r, ok := x.(map[string]any); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestEgressThroughTheProxy: a bash session of the default profile
// reaches allowed hosts through the proxy with curl (http and https),
// git over https, pip and ssh on a port of its own; a host the policy
// does not allow is refused with a clear error, named in the call's
// result and recorded; a program that ignores the proxy cannot connect
// anywhere; every connection is an ECS network record.
func TestEgressThroughTheProxy(t *testing.T) {
	requireProxySessions(t)
	w := newEgressWorld(t)
	state := t.TempDir()
	auditLog := filepath.Join(state, "audit.jsonl")
	s := startServer(t, w.flags(t, auditLog)...)
	start := s.ok("session_start", map[string]any{})
	id := str(start, "session_id")
	if sb := str(start, "sandbox"); !strings.Contains(sb, "network proxy: a network namespace of its own") || !strings.Contains(sb, "private /dev/shm") {
		t.Fatalf("sandbox = %q", sb)
	}
	run := func(t *testing.T, line string) map[string]any {
		t.Helper()
		r := s.send(id, line, "timeout_ms", 60000)
		if !r["complete"].(bool) {
			t.Fatalf("%s did not complete: %v", line, r)
		}
		return r
	}
	wantOK := func(t *testing.T, line, want string) map[string]any {
		t.Helper()
		r := run(t, line)
		if out := str(r, "output"); !strings.Contains(out, want) || exitCode(t, r) != 0 {
			t.Fatalf("%s: exit %d, output %q, want %q", line, exitCode(t, r), out, want)
		}
		if rs := refusals(r); len(rs) > 0 {
			t.Fatalf("%s: refused %v", line, rs)
		}
		return r
	}
	t.Run("curl over http", func(t *testing.T) {
		wantOK(t, fmt.Sprintf("curl -sS http://allowed.test:%d/hello", w.web), "hello from the test server")
	})
	t.Run("curl over https", func(t *testing.T) {
		wantOK(t, fmt.Sprintf("curl -sSk https://allowed.test:%d/hello", w.tls), "hello from the test server")
	})
	t.Run("git over https", func(t *testing.T) {
		wantOK(t, fmt.Sprintf("git -c http.sslVerify=false ls-remote https://git.test:%d/repo.git", w.git), "refs/heads/main")
	})
	t.Run("pip", func(t *testing.T) {
		wantOK(t, fmt.Sprintf("/usr/bin/python3 -m pip download -q --disable-pip-version-check --no-cache-dir --no-deps --index-url http://pypi.test:%d/simple/ --trusted-host pypi.test -d dl tgpkg && ls dl", w.pypi), "tgpkg-1.0-py3-none-any.whl")
	})
	t.Run("ssh on a port of its own", func(t *testing.T) {
		wantOK(t, fmt.Sprintf("ssh -v -p %d -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null git@allowed.test true 2>&1 | grep -o 'remote software version [a-z-]*'", w.sshd), "remote software version termgate-test-sshd")
	})
	t.Run("a host the policy does not allow", func(t *testing.T) {
		r := run(t, fmt.Sprintf("curl -sS http://denied.test:%d/hello", w.web))
		out := str(r, "output")
		if !strings.Contains(out, "termgate: the sandbox refused a connection to denied.test") || !strings.Contains(out, "net.connect_unlisted") {
			t.Fatalf("output %q: want the refusal said", out)
		}
		rs := refusals(r)
		if len(rs) != 1 || rs[0]["destination"] != fmt.Sprintf("denied.test:%d", w.web) || rs[0]["rule"] != "net.connect_unlisted" ||
			rs[0]["program"] != "curl" || rs[0]["profile"] != "default" || rs[0]["access"] != "connect" {
			t.Fatalf("sandbox_refused = %v", r["sandbox_refused"])
		}
	})
	t.Run("the metadata endpoint, spelled as a number", func(t *testing.T) {
		// Typed, the line's policy reads the address and refuses it.
		line := "curl -sS -m 10 -x \"$HTTP_PROXY\" http://2852039166/latest/meta-data/"
		s.fails("session_send", map[string]any{"session_id": id, "text": line}, "net.cloud_metadata")
		// The line's own rules refuse this address wherever it is written
		// (net.cloud_metadata); a config file hides it from them, so the
		// proxy is what must refuse it.
		if err := os.WriteFile(filepath.Join(s.cmd.Dir, "meta.curlrc"), []byte("url = \"http://2852039166/latest/meta-data/\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, "curl -sS -m 10 -x \"$HTTP_PROXY\" -K meta.curlrc")
		rs := refusals(r)
		if len(rs) != 1 || rs[0]["rule"] != "net.connect_metadata" {
			t.Fatalf("output %q, sandbox_refused = %v", str(r, "output"), r["sandbox_refused"])
		}
	})
	t.Run("a program that ignores the proxy", func(t *testing.T) {
		// A script in the session's directory: connections that do not
		// ask the proxy.
		if err := os.WriteFile(filepath.Join(s.cmd.Dir, "direct.py"), []byte(`import socket
for name, f in [("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53))),
                ("tcp", lambda: socket.create_connection(("140.82.112.3", 443), timeout=5)),
                ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))]:
    try:
        f(); print(name, "ESCAPED")
    except OSError as e:
        print(name, "blocked:", e.strerror)
`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, fmt.Sprintf(`curl -sS -m 5 --noproxy '*' http://127.0.0.1:%d/hello; echo "curl=$?"; /usr/bin/python3 direct.py`, w.web))
		out := str(r, "output")
		for _, want := range []string{"curl=7", "udp blocked: Network is unreachable", "tcp blocked: Network is unreachable", "raw blocked: Operation not permitted"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "ESCAPED") || strings.Contains(out, "hello from") {
			t.Fatalf("a way out:\n%s", out)
		}
	})
	t.Run("exec", func(t *testing.T) {
		r := s.ok("exec", map[string]any{"command": fmt.Sprintf("curl -sS http://allowed.test:%d/hello && curl -sS http://denied.test:%d/", w.web, w.web)})
		if !strings.Contains(str(r, "output"), "hello from the test server") {
			t.Fatalf("exec output %q", str(r, "output"))
		}
		if rs := refusals(r); len(rs) != 1 || rs[0]["rule"] != "net.connect_unlisted" {
			t.Fatalf("exec sandbox_refused = %v", r["sandbox_refused"])
		}
	})

	s.ok("session_close", map[string]any{"session_id": id})
	s.close()
	ecs := loadECS(t)
	var allowed, refused, decision bool
	for _, r := range readRecords(t, auditLog) {
		if bad := ecs.check(r); len(bad) > 0 {
			t.Errorf("record %v is not ECS: %v", field(r, "event.action"), bad)
		}
		switch field(r, "event.action") {
		case "network-connect":
			decision = decision || field(r, "destination.domain") == "denied.test" && field(r, "rule.id") == "net.connect_unlisted"
		case "egress-connection":
			if field(r, "termgate.session.id") == id && field(r, "destination.domain") == "allowed.test" && fmt.Sprint(field(r, "destination.port")) == fmt.Sprint(w.web) && field(r, "process.name") == "curl" {
				allowed = true
				for _, f := range []string{"source.bytes", "destination.bytes", "network.bytes", "event.duration"} {
					if n, _ := field(r, f).(interface{ Int64() (int64, error) }); n == nil {
						t.Errorf("%s missing in %v", f, r)
					} else if v, _ := n.Int64(); v <= 0 {
						t.Errorf("%s = %d", f, v)
					}
				}
				if field(r, "destination.ip") != "127.0.0.1" {
					t.Errorf("network record %v", r)
				}
			}
			if field(r, "destination.domain") == "denied.test" && field(r, "event.outcome") == "failure" {
				typ, _ := field(r, "event.type").([]any)
				refused = len(typ) == 2 && typ[1] == "denied" && field(r, "rule.id") == "net.connect_unlisted"
			}
		}
	}
	if !allowed || !refused || !decision {
		t.Fatalf("network records: allowed %v, refused %v, decision %v", allowed, refused, decision)
	}
}

// startServerProtocol is startServerWith, on a protocol version of the
// client's choosing.
func startServerProtocol(t testing.TB, opts *mcp.ClientOptions, version string, flags ...string) *server {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"serve"}, flags...)...)
	cmd.Dir = t.TempDir()
	var log strings.Builder
	cmd.Stderr = &lockedWriter{b: &log}
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GORACE=halt_on_error=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "termgate-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to termgate: %v", err)
	}
	s := &server{t: t, cmd: cmd, cs: cs, log: &log}
	t.Cleanup(func() { s.close() })
	return s
}

// TestEgressAsksTheHuman: a destination the policy wants confirmed is
// asked of the human through the call in flight, once per session: an
// approval lets it through, a refusal keeps it out, and neither is asked
// again. A client before protocol 2026-07-28 is asked by an elicitation
// while the connection waits; a newer one through the call's result, and
// its retry runs the command again (a declined one is not run again).
func TestEgressAsksTheHuman(t *testing.T) {
	requireProxySessions(t)
	w := newEgressWorld(t)
	approve := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	decline := &mcp.ElicitResult{Action: "decline"}
	refusal := "termgate: the sandbox refused a connection to ask.test"
	for _, c := range []struct {
		name, protocol string
		answer         *mcp.ElicitResult
		first, again   string // the output of the first send (or its error) and the next one
	}{
		{"approved during the call", "2025-11-25", approve, "hello from the test server", "hello from the test server"},
		{"declined during the call", "2025-11-25", decline, refusal, refusal},
		{"approved through the result", "", approve, "hello from the test server", "hello from the test server"},
		{"declined through the result", "", decline, "the human did not allow the connection to ask.test", refusal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked atomic.Int32
			msgs := make(chan string, 8)
			s := startServerProtocol(t, confirmClient(c.answer, 0, &asked, msgs), c.protocol, w.flags(t, filepath.Join(t.TempDir(), "audit.jsonl"))...)
			id := s.start(nil)
			line := fmt.Sprintf("curl -sS http://ask.test:%d/hello", w.web)
			res := s.call("session_send", map[string]any{"session_id": id, "text": line, "timeout_ms": 60000})
			if got := resultText(res); !strings.Contains(got, c.first) {
				t.Fatalf("first try: %q, want %q", got, c.first)
			}
			r := s.send(id, line, "timeout_ms", 60000)
			if out := str(r, "output"); !strings.Contains(out, c.again) {
				t.Fatalf("again: output %q, want %q", out, c.again)
			}
			if n := asked.Load(); n != 1 {
				t.Fatalf("asked %d times, want once per session", n)
			}
			msg := <-msgs
			for _, want := range []string{fmt.Sprintf("ask.test port %d", w.web), "program: curl", "net.connect_unlisted", "session: " + id} {
				if !strings.Contains(msg, want) {
					t.Errorf("the human was asked %q: it lacks %q", msg, want)
				}
			}
		})
	}
	t.Run("--confirm-mode=agent", func(t *testing.T) {
		// A client that cannot ask a human: the agent gets a token for
		// the confirm tool in the call's result, and only there.
		logPath := filepath.Join(t.TempDir(), "audit.jsonl")
		s := startServer(t, append(w.flags(t, logPath), "--confirm-mode", "agent")...)
		id := s.start(nil)
		line := fmt.Sprintf("curl -sS http://ask.test:%d/hello", w.web)
		res := s.call("session_send", map[string]any{"session_id": id, "text": line, "timeout_ms": 60000})
		m := regexp.MustCompile(`call the confirm tool with token "([^"]+)"`).FindStringSubmatch(resultText(res))
		if m == nil {
			t.Fatalf("no token in the result: %s", resultText(res))
		}
		s.ok("confirm", map[string]any{"token": m[1], "justification": "the test server answers on this port"})
		if out := str(s.send(id, line, "timeout_ms", 60000), "output"); !strings.Contains(out, "hello from the test server") {
			t.Fatalf("after the token was redeemed: %q", out)
		}
		s.close()
		raw, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), m[1]) {
			t.Fatal("the token is in the audit log")
		}
	})
	t.Run("exec, approved through the result", func(t *testing.T) {
		var asked atomic.Int32
		s := startServerProtocol(t, confirmClient(approve, 0, &asked, nil), "", w.flags(t, filepath.Join(t.TempDir(), "audit.jsonl"))...)
		r := s.ok("exec", map[string]any{"command": fmt.Sprintf("curl -sS http://ask.test:%d/hello", w.web)})
		if !strings.Contains(str(r, "output"), "hello from the test server") || asked.Load() != 1 || len(refusals(r)) != 0 {
			t.Fatalf("exec: asked %d, result %v", asked.Load(), r)
		}
	})
}

// BenchmarkSessionStart is session_start of bash to its first prompt,
// side by side: the default profile (a mount namespace, a network
// namespace and the egress proxy's listener), and strict (a mount
// namespace, no network).
//
//	go test ./cmd/termgate -run '^$' -bench SessionStart -benchtime 100x
func BenchmarkSessionStart(b *testing.B) {
	for _, profile := range []string{"default", "strict"} {
		b.Run(profile, func(b *testing.B) {
			bundle := bundleCopyB(b, profile)
			s := startServer(b, "--policy-dir", bundle, "--max-sessions", "4096")
			d := make([]time.Duration, 0, b.N)
			for range b.N {
				t0 := time.Now()
				r := s.ok("session_start", map[string]any{})
				d = append(d, time.Since(t0))
				if str(r, "prompt") == "" || !strings.Contains(str(r, "sandbox"), "profile "+profile) {
					b.Fatalf("start: %v", r)
				}
				s.ok("session_close", map[string]any{"session_id": str(r, "session_id")})
			}
			reportLatency(b, d)
		})
	}
}

// bundleCopyB is the default bundle whose policy gives every session
// profile.
func bundleCopyB(b *testing.B, profile string) string {
	dir := b.TempDir()
	if err := os.CopyFS(dir, policies.FS); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "termgate.rego")
	src, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Replace(string(src), `default profile := "default"`, fmt.Sprintf(`default profile := %q`, profile), 1)
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// TestSessionsHaveTheirOwnShm: what one session puts in /dev/shm, another
// session and the host do not see, and it goes with its session.
func TestSessionsHaveTheirOwnShm(t *testing.T) {
	requireProxySessions(t)
	s := startServer(t)
	a, b := s.start(nil), s.start(nil)
	mark := "tg-shm-" + randomHex(t)
	wantOutput(t, s.send(a, "echo secret > /dev/shm/"+mark+" && cat /dev/shm/"+mark), "secret")
	if _, err := os.Stat("/dev/shm/" + mark); err == nil {
		t.Fatal("the host sees a session's /dev/shm")
	}
	wantOutput(t, s.send(b, "ls -A /dev/shm; echo end"), "end")
	s.ok("session_close", map[string]any{"session_id": a})
	c := s.start(nil)
	wantOutput(t, s.send(c, "ls -A /dev/shm; echo end"), "end")
}
