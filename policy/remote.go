package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/download"
	opakeys "github.com/open-policy-agent/opa/v1/keys"
	"github.com/open-policy-agent/opa/v1/logging"
	"github.com/open-policy-agent/opa/v1/plugins"
	bundleplugin "github.com/open-policy-agent/opa/v1/plugins/bundle"
	"github.com/open-policy-agent/opa/v1/plugins/rest"
	"github.com/open-policy-agent/opa/v1/util"
)

// Remote is a bundle server, configured as an OPA agent is: a config file
// with OPA's services, bundles and keys sections (YAML or JSON), holding
// exactly one bundle. OPA's own packages do the work: plugins/rest makes
// the client (bearer token or token file, client certificate, a CA for
// the server), download polls with If-None-Match and long polling, and
// bundle reads and verifies what comes back.
//
// Where termgate departs from an OPA agent, on purpose:
//
//   - keys configured and no signing block: OPA then takes unsigned
//     bundles; termgate requires a signature that verifies under those keys;
//   - the last good bundle is always kept on disk (CacheDir), whatever the
//     bundle's persist setting, and is verified again when it is loaded;
//   - file:// resources and delta bundles are refused (--policy-dir reads
//     a local bundle; a gateway needs every rule and list at once).
type Remote struct {
	name      string // the bundle's name: its key under bundles
	url       string // the service URL and the resource, for logs and audit
	client    rest.Client
	resource  string
	dl        download.Config
	verify    *bundle.VerificationConfig
	sizeLimit int64
	cacheDir  string // this bundle's cache directory
}

// remoteConfig is the part of an OPA configuration file termgate reads.
type remoteConfig struct {
	Services map[string]json.RawMessage `json:"services"`
	Bundles  json.RawMessage            `json:"bundles"`
	Keys     json.RawMessage            `json:"keys"`
}

// ParseRemote reads an OPA configuration (services, bundles, keys) with
// exactly one bundle. cacheDir keeps the last good bundle (created 0700).
func ParseRemote(config []byte, cacheDir string) (*Remote, error) {
	var c remoteConfig
	if err := util.Unmarshal(config, &c); err != nil {
		return nil, fmt.Errorf("bundle configuration: %w", err)
	}
	if len(c.Services) == 0 {
		return nil, errors.New("bundle configuration: no services (a map of service name to {url, credentials, tls})")
	}
	var kc map[string]*opakeys.Config
	if len(c.Keys) > 0 {
		var err error
		if kc, err = opakeys.ParseKeysConfig(c.Keys); err != nil {
			return nil, fmt.Errorf("bundle configuration: keys: %w", err)
		}
	}
	names := make([]string, 0, len(c.Services))
	for n := range c.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	periodic := plugins.TriggerPeriodic
	pc, err := bundleplugin.NewConfigBuilder().WithBytes(c.Bundles).WithServices(names).
		WithKeyConfigs(kc).WithTriggerMode(&periodic).Parse()
	if err != nil {
		return nil, fmt.Errorf("bundle configuration: bundles: %w", err)
	}
	if pc == nil || len(pc.Bundles) != 1 {
		return nil, errors.New("bundle configuration: bundles must hold exactly one bundle")
	}
	var name string
	var src *bundleplugin.Source
	for name, src = range pc.Bundles {
	}
	if strings.HasPrefix(src.Resource, "file://") {
		return nil, fmt.Errorf("bundle %q: a file:// resource; use --policy-dir for a local bundle", name)
	}
	if src.Signing != nil && !src.Signing.SignatureRequired() {
		// OPA takes unsigned bundles when keys are configured without a
		// signing block; a gateway with keys wants every bundle signed.
		src.Signing = bundle.NewVerificationConfig(src.Signing.PublicKeys, src.Signing.KeyID, src.Signing.Scope, src.Signing.Exclude)
	}
	client, err := rest.New(c.Services[src.Service], kc, rest.Name(src.Service), rest.Logger(logging.NewNoOpLogger()))
	if err != nil {
		return nil, fmt.Errorf("bundle configuration: service %q: %w", src.Service, err)
	}
	base, err := url.Parse(client.Config().URL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("bundle configuration: service %q: url %q is not an http(s) URL", src.Service, client.Config().URL)
	}
	base.User = nil // never log credentials written into the URL
	r := &Remote{
		name: name, client: client, resource: src.Resource, dl: src.Config, verify: src.Signing,
		sizeLimit: src.SizeLimitBytes,
		url:       strings.TrimRight(base.String(), "/") + "/" + strings.TrimLeft(src.Resource, "/"),
	}
	if cacheDir != "" {
		r.cacheDir = filepath.Join(cacheDir, safeName(name))
	}
	return r, nil
}

// URLOptions configure a bundle server given by its bundle's URL alone.
type URLOptions struct {
	TokenFile  string // a bearer token, read again for every request
	ClientCert string // client certificate and key files (PEM)
	ClientKey  string
	CACert     string                     // a CA file to verify the server with, instead of the system's
	Verify     *bundle.VerificationConfig // as Source.Verify
}

// RemoteURL is a bundle at a URL (https://host/bundles/termgate.tar.gz):
// the configuration ParseRemote would read for one service and one bundle
// polled with OPA's default delays (60 to 120 s) and long polling where
// the server offers it.
func RemoteURL(bundleURL string, o URLOptions, cacheDir string) (*Remote, error) {
	u, err := url.Parse(bundleURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("--policy-url %q: want http(s)://host/path/to/bundle.tar.gz", bundleURL)
	}
	if u.User != nil {
		return nil, errors.New("--policy-url: credentials in the URL would be logged; use a token file or a client certificate")
	}
	if o.TokenFile != "" && u.Scheme != "https" {
		return nil, errors.New("--policy-url: a bearer token is only sent over https")
	}
	svc := map[string]any{"url": u.Scheme + "://" + u.Host}
	creds := map[string]any{}
	if o.TokenFile != "" {
		creds["bearer"] = map[string]any{"token_path": o.TokenFile}
	}
	if o.ClientCert != "" || o.ClientKey != "" {
		if o.ClientCert == "" || o.ClientKey == "" {
			return nil, errors.New("--policy-client-cert and --policy-client-key go together")
		}
		if o.TokenFile != "" {
			return nil, errors.New("--policy-url: a bearer token or a client certificate, not both (as in OPA)")
		}
		creds["client_tls"] = map[string]any{"cert": o.ClientCert, "private_key": o.ClientKey}
	}
	if len(creds) > 0 {
		svc["credentials"] = creds
	}
	if o.CACert != "" {
		svc["tls"] = map[string]any{"ca_cert": o.CACert}
	}
	resource := u.Path
	if u.RawQuery != "" {
		resource += "?" + u.RawQuery
	}
	b := map[string]any{"service": "policy", "resource": strings.TrimLeft(resource, "/"),
		"polling": map[string]any{"min_delay_seconds": 60, "max_delay_seconds": 120, "long_polling_timeout_seconds": 60}}
	raw, err := json.Marshal(map[string]any{"services": map[string]any{"policy": svc}, "bundles": map[string]any{"termgate": b}})
	if err != nil {
		return nil, err
	}
	r, err := ParseRemote(raw, cacheDir)
	if err != nil {
		return nil, err
	}
	r.verify = o.Verify
	return r, nil
}

// Verification is the configuration of one verification key, as OPA's
// `--verification-key`, `--verification-key-id`, `--signing-alg` and
// `--scope` give it: keyFile holds a PEM public key (RS*, PS*, ES*) or an
// HMAC secret (HS*). A signature's key id is not consulted: keyID names
// the one key every bundle must verify under.
func Verification(keyFile, keyID, alg, scope string) (*bundle.VerificationConfig, error) {
	if keyID == "" {
		keyID = "default"
	}
	if alg == "" {
		alg = "RS256"
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("verification key: %w", err)
	}
	raw, err := json.Marshal(map[string]any{keyID: map[string]any{"key": string(b), "algorithm": alg, "scope": scope}})
	if err != nil {
		return nil, err
	}
	kc, err := opakeys.ParseKeysConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("verification key %s: %w", keyFile, err)
	}
	return bundle.NewVerificationConfig(kc, keyID, scope, nil), nil
}

func (r *Remote) String() string { return r.url }

// safeName keeps a bundle name usable as one directory name.
func safeName(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "bundle"
	}
	return b.String()
}

// remoteState is the engine's side of a bundle server.
type remoteState struct {
	mu      sync.Mutex // serialises applying downloads
	etag    string     // of the bundle in force
	lastErr string     // the last failure reported by Watch
}

func (r *Remote) downloader(cfg download.Config, f func(context.Context, download.Update) error) *download.Downloader {
	d := download.New(cfg, r.client, r.resource).WithCallback(f).WithBundlePersistence(true).
		WithBundleVerificationConfig(r.verify).WithBundleName(r.name)
	if r.sizeLimit > 0 {
		d = d.WithSizeLimitBytes(r.sizeLimit)
	}
	return d
}

// startRemote puts the cached bundle in force, or the server's.
func (e *Engine) startRemote(ctx context.Context) error {
	r := e.src.Remote
	e.remote = &remoteState{}
	b, etag, cerr := r.loadCache(ctx)
	if cerr == nil {
		cerr = e.src.check(b)
	}
	if cerr == nil {
		b.Cached = true
		e.current, e.remote.etag = b, etag
		return nil
	}
	if _, err := e.poll(ctx); err != nil {
		return fmt.Errorf("policy bundle: %w; no cached bundle to fall back on (%v)", err, cerr)
	}
	if e.Bundle() == nil {
		return fmt.Errorf("policy bundle %s: the server sent no bundle; no cached bundle to fall back on (%v)", r, cerr)
	}
	return nil
}

// poll asks the server once. It returns the bundle in force: the new one,
// or the same one when the server has nothing newer.
func (e *Engine) poll(ctx context.Context) (*Bundle, error) {
	results := make(chan error, 1)
	cfg := e.src.Remote.dl
	manual := plugins.TriggerManual
	cfg.Trigger = &manual
	d := e.src.Remote.downloader(cfg, func(ctx context.Context, u download.Update) error {
		_, err := e.apply(ctx, u)
		results <- err
		return err
	})
	e.remote.mu.Lock()
	d.SetCache(e.remote.etag)
	e.remote.mu.Unlock()
	// Trigger returns early when ctx ends; the download it started ends
	// with ctx too, and its result goes to the buffered channel unread.
	if err := d.Trigger(ctx); err != nil {
		select {
		case aerr := <-results:
			if aerr != nil {
				return nil, aerr
			}
		default:
		}
		return nil, err
	}
	return e.Bundle(), nil
}

// watchRemote polls with OPA's downloader until ctx ends.
func (e *Engine) watchRemote(ctx context.Context, report func(*Bundle, error)) {
	cfg := e.src.Remote.dl
	periodic := plugins.TriggerPeriodic
	cfg.Trigger = &periodic
	d := e.src.Remote.downloader(cfg, func(ctx context.Context, u download.Update) error {
		b, err := e.apply(ctx, u)
		e.remote.mu.Lock()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		repeat := err != nil && msg == e.remote.lastErr
		e.remote.lastErr = msg
		e.remote.mu.Unlock()
		if report != nil && !repeat && (b != nil || err != nil) {
			report(b, err)
		}
		return err
	})
	e.remote.mu.Lock()
	d.SetCache(e.remote.etag)
	e.remote.mu.Unlock()
	d.Start(ctx)
	<-ctx.Done()
	d.Stop(context.Background())
}

// apply takes one download: a new bundle is compiled, put in force and
// cached; a failure or a bundle that does not load leaves the bundle in
// force as it is. It returns the new bundle, or nil.
func (e *Engine) apply(ctx context.Context, u download.Update) (*Bundle, error) {
	r := e.src.Remote
	if u.Error != nil {
		return nil, fmt.Errorf("bundle from %s: %w", r, u.Error)
	}
	if u.Bundle == nil {
		return nil, nil // not modified
	}
	var raw []byte
	if u.Raw != nil {
		var err error
		if raw, err = io.ReadAll(u.Raw); err != nil {
			return nil, fmt.Errorf("bundle from %s: %w", r, err)
		}
	}
	f, err := fromOPA(*u.Bundle, r.verify != nil, "sha256:"+sha256Hex(raw))
	if err != nil {
		return nil, fmt.Errorf("bundle from %s: %w", r, err)
	}
	b, err := compile(ctx, f, r.String())
	if err != nil {
		return nil, err
	}
	if err := e.src.check(b); err != nil {
		return nil, err
	}
	e.remote.mu.Lock()
	defer e.remote.mu.Unlock()
	e.mu.Lock()
	e.current = b
	e.mu.Unlock()
	e.remote.etag = u.ETag
	if err := r.saveCache(raw, u.ETag); err != nil {
		// The bundle is good and in force; only a restart offline loses it.
		return b, fmt.Errorf("bundle %s is in force, but caching it failed: %w", b.Revision, err)
	}
	return b, nil
}

// loadCache loads the cached bundle (verified again) and its ETag.
func (r *Remote) loadCache(ctx context.Context) (*Bundle, string, error) {
	if r.cacheDir == "" {
		return nil, "", errors.New("no cache directory")
	}
	raw, err := os.ReadFile(filepath.Join(r.cacheDir, "bundle.tar.gz"))
	if err != nil {
		return nil, "", err
	}
	etag, _ := os.ReadFile(filepath.Join(r.cacheDir, "etag"))
	f, err := readTarball(raw, r.verify)
	if err != nil {
		return nil, "", fmt.Errorf("cached bundle: %w", err)
	}
	b, err := compile(ctx, f, r.String())
	if err != nil {
		return nil, "", fmt.Errorf("cached bundle: %w", err)
	}
	return b, strings.TrimSpace(string(etag)), nil
}

// saveCache keeps a bundle that loaded, and its ETag, replacing the last.
func (r *Remote) saveCache(raw []byte, etag string) error {
	if r.cacheDir == "" {
		return nil
	}
	if err := os.MkdirAll(r.cacheDir, 0o700); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(r.cacheDir, "bundle.tar.gz"), raw); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.cacheDir, "etag"), []byte(etag+"\n"))
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(b)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
