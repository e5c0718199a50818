package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/termgate/termgate/sandbox"
)

// TestBundleListsMatchTheirDefaults: the shipped bundle's read_deny and
// remote_terminals are the lists the gateway falls back on when a bundle
// names none, so that a bundle without them loses nothing.
func TestBundleListsMatchTheirDefaults(t *testing.T) {
	b := embeddedEngine(t).Bundle()
	deny, err := readDenyList(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deny, sandbox.DefaultReadDeny()) {
		t.Errorf("data.termgate.read_deny differs from sandbox.DefaultReadDeny:\n%q\n%q", deny, sandbox.DefaultReadDeny())
	}
	if got := remoteTerminals(b); !slices.Equal(got, defaultRemoteTerminals()) {
		t.Errorf("data.termgate.remote_terminals = %q, want %q", got, defaultRemoteTerminals())
	}
	if _, err := sandbox.NewDenyList(deny, "/home/u", nil); err != nil {
		t.Errorf("the shipped read_deny does not parse: %v", err)
	}
}

// TestToolPlaceholders: {gomodcache} follows GOMODCACHE, then GOPATH's
// first entry, then the home; a value go would read as a list is not one.
func TestToolPlaceholders(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GOMODCACHE": "/m", "GOPATH": "/g", "HOME": "/h"}, "/m"},
		{map[string]string{"GOPATH": "/g:/g2", "HOME": "/h"}, "/g/pkg/mod"},
		{map[string]string{"HOME": "/h"}, "/h/go/pkg/mod"},
		{map[string]string{"GOMODCACHE": "/a,b"}, ""},
		{map[string]string{"GOMODCACHE": "rel"}, ""},
	} {
		if got := toolPlaceholders(env(c.env))["gomodcache"]; got != c.want {
			t.Errorf("%v: gomodcache %q, want %q", c.env, got, c.want)
		}
	}
}

// TestSessionCacheAndScratchDirs: both live under the user's XDG
// directories (or the home's defaults), made private.
func TestSessionCacheAndScratchDirs(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	c, err := sessionCacheDir(getenv, -1)
	if err != nil || c != filepath.Join(home, ".cache", "termgate", "sessions") {
		t.Fatalf("sessionCacheDir = %q, %v", c, err)
	}
	d, err := scratchDir(getenv)
	if err != nil || d != filepath.Join(home, ".local", "share", "termgate-scratch") {
		t.Fatalf("scratchDir = %q, %v", d, err)
	}
	for _, p := range []string{c, d} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	env["XDG_CACHE_HOME"] = filepath.Join(home, "xc")
	if c, _ := sessionCacheDir(getenv, -1); c != filepath.Join(home, "xc", "termgate", "sessions") {
		t.Fatalf("with XDG_CACHE_HOME: %q", c)
	}
	delete(env, "HOME")
	delete(env, "XDG_CACHE_HOME")
	if c, err := sessionCacheDir(getenv, -1); c != "" || err != nil {
		t.Fatalf("no home: %q %v", c, err)
	}
	if _, err := scratchDir(getenv); err == nil {
		t.Fatal("scratchDir without a home")
	}
}

// TestGoProxy: {goproxy} is what go itself would use: the variable, then
// the user's go env file, then the installation's go.env; "direct" when
// none says.
func TestGoProxy(t *testing.T) {
	root, empty, home := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.env"), []byte("# defaults\nGOPROXY=https://mirror.example,direct\nGOSUMDB=off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "go", "env"), []byte("GOPROXY=https://team.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"GOPROXY": "off", "GOROOT": root, "HOME": home}, "off"},
		{map[string]string{"GOROOT": root, "HOME": home}, "https://team.example"},
		{map[string]string{"GOROOT": root, "HOME": empty}, "https://mirror.example,direct"},
		{map[string]string{"GOROOT": root, "GOENV": "off", "HOME": home}, "https://mirror.example,direct"},
		{map[string]string{"GOROOT": empty, "HOME": empty}, "direct"},
	} {
		if got := goProxy(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %q, want %q", c.env, got, c.want)
		}
	}
}
