package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// bundleServer is a bundle server on loopback, as a static file server
// with ETags serves one: the bundle's sha256 as its ETag, 304 for a
// matching If-None-Match.
type bundleServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	requests int
	notMod   int
	lastINM  string
	auth     func(*http.Request) bool
}

func newBundleServer(t *testing.T, tlsServer bool, configure func(*httptest.Server)) *bundleServer {
	bs := &bundleServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		bs.requests++
		bs.lastINM = r.Header.Get("If-None-Match")
		if bs.auth != nil && !bs.auth(r) {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/bundles/termgate.tar.gz" || bs.body == nil {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(bs.body)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if strings.Contains(r.Header.Get("If-None-Match"), etag) {
			bs.notMod++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(bs.body)
	})
	bs.Server = httptest.NewUnstartedServer(h)
	if configure != nil {
		configure(bs.Server)
	}
	if tlsServer {
		bs.StartTLS()
	} else {
		bs.Start()
	}
	t.Cleanup(bs.Close)
	return bs
}

func (bs *bundleServer) serve(b []byte) {
	bs.mu.Lock()
	bs.body = b
	bs.mu.Unlock()
}

func (bs *bundleServer) stats() (requests, notModified int, inm string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.requests, bs.notMod, bs.lastINM
}

// tarball writes an OPA bundle: its files, and a manifest with rev.
func tarball(t testing.TB, rev string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(name, body string) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	if rev != "" {
		add("/.manifest", `{"revision": "`+rev+`"}`)
	}
	for n, b := range files {
		add("/"+n, b)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func ruleBundle(t testing.TB, rev, rule string) []byte {
	return tarball(t, rev, map[string]string{"p.rego": "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"" + rule + "\"}\n"})
}

func ruleOf(t *testing.T, e *Engine) string {
	t.Helper()
	d, err := e.Decide(context.Background(), Input{Action: "input", Text: "ls", Program: "bash"})
	if err != nil {
		t.Fatal(err)
	}
	return d.Rule
}

func TestBundleServer(t *testing.T) {
	ctx := context.Background()
	srv := newBundleServer(t, false, nil)
	url := srv.URL + "/bundles/termgate.tar.gz"
	cache := t.TempDir()
	v1 := ruleBundle(t, "rev-1", "v1")
	srv.serve(v1)
	r, err := RemoteURL(url, URLOptions{}, cache)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, Source{Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	b1 := e.Bundle()
	sum := sha256.Sum256(v1)
	if b1.Revision != "rev-1" || b1.Cached || b1.Hash != "sha256:"+hex.EncodeToString(sum[:]) || b1.Source != url || ruleOf(t, e) != "v1" {
		t.Fatalf("first download: %+v", b1)
	}
	if d, _ := e.Decide(ctx, Input{Action: "input", Text: "ls", Program: "bash"}); d.Bundle != b1 {
		t.Fatal("a decision does not name the bundle that made it")
	}

	// Nothing new: the server answers 304 to the ETag in force.
	if b, err := e.Reload(ctx); err != nil || b != b1 {
		t.Fatalf("reload with nothing new: %v, %v", b, err)
	}
	if _, notMod, inm := srv.stats(); notMod != 1 || inm == "" {
		t.Fatalf("no 304: notModified=%d If-None-Match=%q", notMod, inm)
	}

	// Broken bundles are rejected, each for its reason; v1 stays.
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"does not compile", tarball(t, "rev-bad", map[string]string{"p.rego": "package termgate\n\ndecision := {{{"}), "rego_parse_error"},
		{"no decision", tarball(t, "rev-bad2", map[string]string{"p.rego": "package other\n\nx := 1\n"}), "defines no"},
		{"not a tarball", []byte("<html>proxy error</html>"), "gzip"},
		{"http.send", tarball(t, "rev-net", map[string]string{"p.rego": "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": r.body} if {\n\tr := http.send({\"method\": \"GET\", \"url\": \"http://127.0.0.1:1\"})\n}\n"}), "http.send"},
	} {
		srv.serve(c.body)
		_, err := e.Reload(ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: err = %v, want %q", c.name, err, c.want)
		}
		if e.Bundle() != b1 || ruleOf(t, e) != "v1" {
			t.Fatalf("%s: the last good bundle is not in force", c.name)
		}
	}
	srv.serve(nil) // 404
	if _, err := e.Reload(ctx); err == nil || !strings.Contains(err.Error(), "Not Found") {
		t.Fatalf("404: %v", err)
	}

	v2 := ruleBundle(t, "rev-2", "v2")
	srv.serve(v2)
	if b, err := e.Reload(ctx); err != nil || b.Revision != "rev-2" || ruleOf(t, e) != "v2" {
		t.Fatalf("v2: %v %v", b, err)
	}

	// The server goes away: a restart loads the cached v2, offline.
	srv.Close()
	e2, err := New(ctx, Source{Remote: r})
	if err != nil {
		t.Fatalf("offline restart: %v", err)
	}
	if b := e2.Bundle(); !b.Cached || b.Revision != "rev-2" || ruleOf(t, e2) != "v2" {
		t.Fatalf("offline restart: %+v", b)
	}
	if _, err := e2.Reload(ctx); err == nil {
		t.Fatal("a poll of a server that is gone succeeded")
	}
	if ruleOf(t, e2) != "v2" {
		t.Fatal("a failed poll changed the bundle in force")
	}
	// Without a cache, and without a server, there is no policy: no start.
	r2, _ := RemoteURL(url, URLOptions{}, t.TempDir())
	if _, err := New(ctx, Source{Remote: r2}); err == nil || !strings.Contains(err.Error(), "no cached bundle") {
		t.Fatalf("no server, no cache: %v", err)
	}
	// A cache someone edited does not load (the hash is part of a signed
	// bundle's check; here the rego no longer compiles) and the start
	// falls back to the server, which is gone: no start.
	os.WriteFile(filepath.Join(cache, "termgate", "bundle.tar.gz"), []byte("garbage"), 0o600)
	if _, err := New(ctx, Source{Remote: r}); err == nil {
		t.Fatal("a corrupt cache was loaded")
	}
}

// signingKey writes an RSA key pair as PEM files: private, public.
func signingKey(t testing.TB, dir string) (string, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, "private.pem")
	pub := filepath.Join(dir, "public.pem")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	return priv, pub
}

// opaBuild builds a signed bundle with the opa CLI, as an operator does.
func opaBuild(t testing.TB, rev, rule, key string) []byte {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.rego"), []byte("package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \""+rule+"\"}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "data.json"), []byte(`{"termgate": {"lists": {}}}`), 0o644)
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	cmd := exec.Command("go", "tool", "opa", "build", "-b", dir, "-o", out, "--revision", rev, "--signing-key", key, "--signing-alg", "RS256")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opa build: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tamper rewrites one file of a bundle, keeping everything else
// (.signatures.json included).
func tamper(t testing.TB, bundle []byte, name, body string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if path.Base(h.Name) == name {
			b, found = []byte(body), true
		}
		h.Size = int64(len(b))
		tw.WriteHeader(h)
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	if !found {
		t.Fatalf("no %s in the bundle", name)
	}
	return buf.Bytes()
}

func TestSignedBundles(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is needed to run opa build")
	}
	ctx := context.Background()
	dir := t.TempDir()
	priv, pub := signingKey(t, dir)
	_, otherPub := signingKey(t, t.TempDir())
	signed := opaBuild(t, "signed-1", "s1", priv)
	signed2 := opaBuild(t, "signed-2", "s2", priv)
	verify, err := Verification(pub, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	wrongKey, _ := Verification(otherPub, "", "", "")
	tampered := tamper(t, signed2, "p.rego", "package termgate\n\ndecision := {\"action\": \"allow\", \"rule\": \"evil\"}\n")
	tamperedData := tamper(t, signed2, "data.json", `{"termgate": {"lists": {"x": ["y"]}}}`)
	unsigned := ruleBundle(t, "unsigned", "u")

	t.Run("local", func(t *testing.T) {
		file := func(b []byte) string {
			p := filepath.Join(t.TempDir(), "bundle.tar.gz")
			os.WriteFile(p, b, 0o644)
			return p
		}
		e, err := New(ctx, Source{Dir: file(signed), Verify: verify})
		if err != nil {
			t.Fatalf("a bundle built with opa build --signing-key: %v", err)
		}
		if b := e.Bundle(); !b.Signed || b.Revision != "signed-1" || ruleOf(t, e) != "s1" {
			t.Fatalf("signed bundle: %+v", b)
		}
		for _, c := range []struct {
			name string
			src  Source
			want string
		}{
			{"tampered rego", Source{Dir: file(tampered), Verify: verify}, "digest mismatch"},
			{"tampered data", Source{Dir: file(tamperedData), Verify: verify}, "digest mismatch"},
			{"unsigned with a key", Source{Dir: file(unsigned), Verify: verify}, "missing .signatures.json"},
			{"another key", Source{Dir: file(signed), Verify: wrongKey}, "verification"},
			{"signed without a key", Source{Dir: file(signed)}, "no verification key"},
		} {
			if _, err := New(ctx, c.src); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
			}
		}
	})

	t.Run("server", func(t *testing.T) {
		srv := newBundleServer(t, false, nil)
		srv.serve(signed)
		r, err := RemoteURL(srv.URL+"/bundles/termgate.tar.gz", URLOptions{Verify: verify}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(ctx, Source{Remote: r})
		if err != nil {
			t.Fatal(err)
		}
		if !e.Bundle().Signed || ruleOf(t, e) != "s1" {
			t.Fatalf("%+v", e.Bundle())
		}
		for name, b := range map[string][]byte{"tampered": tampered, "tampered data": tamperedData, "unsigned": unsigned} {
			srv.serve(b)
			if _, err := e.Reload(ctx); err == nil {
				t.Fatalf("%s bundle accepted", name)
			}
			if ruleOf(t, e) != "s1" {
				t.Fatalf("%s: the last good bundle is not in force", name)
			}
		}
		srv.serve(signed2)
		if b, err := e.Reload(ctx); err != nil || b.Revision != "signed-2" {
			t.Fatalf("signed-2: %v %v", b, err)
		}
		// The cache is verified again when it is loaded.
		srv.Close()
		e2, err := New(ctx, Source{Remote: r})
		if err != nil || !e2.Bundle().Cached || ruleOf(t, e2) != "s2" {
			t.Fatalf("offline restart of a signed bundle: %v", err)
		}
		os.WriteFile(filepath.Join(r.cacheDir, "bundle.tar.gz"), tampered, 0o600)
		if _, err := New(ctx, Source{Remote: r}); err == nil {
			t.Fatal("a tampered cache was loaded")
		}
	})
}

// TestBundleServerConfig drives the OPA-shaped configuration: a TLS server
// that wants a bearer token read from a file and a client certificate,
// polled by the watcher with OPA's periodic downloader.
func TestBundleServerConfig(t *testing.T) {
	dir := t.TempDir()
	clientCert, clientKey, clientPool := selfSigned(t, dir, "client")
	token := "tok-" + hex.EncodeToString(sha256.New().Sum([]byte(t.Name())))[:16]
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	srv := newBundleServer(t, true, func(s *httptest.Server) {
		s.TLS = &tls.Config{ClientCAs: clientPool, ClientAuth: tls.VerifyClientCertIfGiven}
	})
	srv.auth = func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
	caFile := filepath.Join(dir, "server-ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	srv.serve(ruleBundle(t, "rev-1", "v1"))

	// OPA's client takes one credential method per service: each is tested.
	for _, c := range []struct{ name, creds string }{
		{"bearer token file", fmt.Sprintf("bearer: {token_path: %q}", tokenFile)},
		{"client certificate", fmt.Sprintf("client_tls: {cert: %q, private_key: %q}", clientCert, clientKey)},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.mu.Lock()
			if c.name == "bearer token file" {
				srv.auth = func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
			} else {
				srv.auth = func(r *http.Request) bool { return r.TLS != nil && len(r.TLS.PeerCertificates) > 0 }
			}
			srv.mu.Unlock()
			cfg := fmt.Sprintf(`
services:
  fleet:
    url: %s
    tls: {ca_cert: %q}
    credentials:
      %s
bundles:
  termgate:
    service: fleet
    resource: bundles/termgate.tar.gz
    polling: {min_delay_seconds: 1, max_delay_seconds: 1}
`, srv.URL, caFile, c.creds)
			r, err := ParseRemote([]byte(cfg), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv.serve(ruleBundle(t, "rev-1", "v1"))
			e, err := New(ctx, Source{Remote: r})
			if err != nil {
				t.Fatal(err)
			}
			if ruleOf(t, e) != "v1" {
				t.Fatal("v1 not in force")
			}
			reports := make(chan error, 16)
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.Watch(ctx, 0, func(_ *Bundle, err error) { reports <- err })
			}()
			srv.serve(tarball(t, "rev-bad", map[string]string{"p.rego": "package termgate\n\ndecision := {{{"}))
			if err := <-reports; err == nil {
				t.Fatal("the watcher accepted a broken bundle")
			}
			srv.serve(ruleBundle(t, "rev-2", "v2"))
			for err := range reports {
				if err == nil {
					break
				}
			}
			if ruleOf(t, e) != "v2" {
				t.Fatal("the watcher did not put v2 in force")
			}
			cancel()
			<-done
		})
	}
	// Without the token the server refuses, and the gateway does not start.
	os.WriteFile(tokenFile, []byte("wrong\n"), 0o600)
	srv.mu.Lock()
	srv.auth = func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
	srv.mu.Unlock()
	r, err := ParseRemote(fmt.Appendf(nil, `{"services": {"s": {"url": %q, "tls": {"ca_cert": %q}, "credentials": {"bearer": {"token_path": %q}}}}, "bundles": {"b": {"resource": "bundles/termgate.tar.gz"}}}`, srv.URL, caFile, tokenFile), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), Source{Remote: r}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestParseRemoteRefuses(t *testing.T) {
	for _, c := range []struct{ name, cfg, want string }{
		{"two bundles", `{"services": {"s": {"url": "https://x"}}, "bundles": {"a": {}, "b": {}}}`, "exactly one"},
		{"no services", `{"bundles": {"a": {}}}`, "no services"},
		{"file resource", `{"services": {"s": {"url": "https://x"}}, "bundles": {"a": {"resource": "file:///tmp/b.tar.gz"}}}`, "file://"},
		{"unknown service", `{"services": {"s": {"url": "https://x"}}, "bundles": {"a": {"service": "t"}}}`, "not found"},
		{"not http", `{"services": {"s": {"url": "ftp://x"}}, "bundles": {"a": {}}}`, "not an http"},
	} {
		if _, err := ParseRemote([]byte(c.cfg), ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Keys without a signing block: OPA would take unsigned bundles; we do not.
	r, err := ParseRemote([]byte(`{"services": {"s": {"url": "https://x"}}, "bundles": {"a": {}}, "keys": {"k": {"key": "secret", "algorithm": "HS256"}}}`), "")
	if err != nil || r.verify == nil || !r.verify.SignatureRequired() {
		t.Fatalf("keys without signing: %v %+v", err, r)
	}
	for _, u := range []string{"https://u:p@x/b.tar.gz", "https://x", "file:///b.tar.gz"} {
		if _, err := RemoteURL(u, URLOptions{}, ""); err == nil {
			t.Errorf("RemoteURL(%q) accepted", u)
		}
	}
	if _, err := RemoteURL("http://x/b.tar.gz", URLOptions{TokenFile: "/t"}, ""); err == nil {
		t.Error("a bearer token over plain http was accepted")
	}
}

// selfSigned makes a certificate and key (PEM files) and a pool holding it.
func selfSigned(t testing.TB, dir, name string) (string, string, *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	kb, _ := x509.MarshalECPrivateKey(k)
	cf, kf := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cf, kf, pool
}

// TestLongPolling: a server that offers long polling (OPA's bundle
// content type, and Prefer: wait=N honoured) delivers a new bundle as
// soon as it has one, long before the polling delay.
func TestLongPolling(t *testing.T) {
	var mu sync.Mutex
	body := ruleBundle(t, "rev-1", "v1")
	changed := make(chan struct{})
	var prefer string
	held := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ch := body, changed
		prefer = r.Header.Get("Prefer")
		mu.Unlock()
		etag := fmt.Sprintf(`"%x"`, sha256.Sum256(b))
		if r.Header.Get("If-None-Match") == etag && strings.Contains(r.Header.Get("Prefer"), "wait=") {
			mu.Lock()
			held = true
			mu.Unlock()
			select { // hold the request until there is something new
			case <-ch:
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Second):
				w.Header().Set("Content-Type", "application/vnd.openpolicyagent.bundles")
				w.WriteHeader(http.StatusNotModified)
				return
			}
			mu.Lock()
			b = body
			mu.Unlock()
			etag = fmt.Sprintf(`"%x"`, sha256.Sum256(b))
		}
		w.Header().Set("Content-Type", "application/vnd.openpolicyagent.bundles")
		w.Header().Set("ETag", etag)
		w.Write(b)
	}))
	defer srv.Close()
	cfg := fmt.Sprintf(`{"services": {"s": {"url": %q}}, "bundles": {"termgate": {"resource": "b.tar.gz",
		"polling": {"min_delay_seconds": 3600, "max_delay_seconds": 3600, "long_polling_timeout_seconds": 30}}}}`, srv.URL)
	r, err := ParseRemote([]byte(cfg), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := New(ctx, Source{Remote: r})
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan *Bundle, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Watch(ctx, 0, func(b *Bundle, err error) {
			if err == nil {
				reports <- b
			}
		})
	}()
	// Wait until the watcher's request is held, then publish v2: with an
	// hour between polls, only the held request can bring it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		p, h := prefer, held
		mu.Unlock()
		if h && strings.Contains(p, "wait=30") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no long-poll request (Prefer %q)", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	body = ruleBundle(t, "rev-2", "v2")
	close(changed)
	mu.Unlock()
	select {
	case b := <-reports:
		if b.Revision != "rev-2" || ruleOf(t, e) != "v2" {
			t.Fatalf("long poll brought %+v", b)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the held request did not bring v2")
	}
	cancel()
	<-done
}
