package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// homeLayout adds to a layout a home as a developer has it: private keys
// and their public halves, cloud credentials, a .config that holds a
// token among harmless files, notes, and links (to the private key, to
// ~/.aws, to a dotfiles directory that is ~/.ssh's real home, and one
// that leads out of the home).
func homeLayout(t *testing.T) (layout, string) {
	t.Helper()
	l := newLayout(t)
	dotfiles := filepath.Join(l.root, "dotfiles")
	files := map[string]string{
		"home/notes.txt":                "n",
		"home/.aws/credentials":         "k",
		"home/.config/gh/hosts.yml":     "t",
		"home/.config/gh/config.yml":    "c",
		"home/.config/git/ignore":       "i",
		"home/.gnupg/private-keys-v1.d": "k",
		"dotfiles/ssh/id_ed25519":       "k",
		"dotfiles/ssh/id_ed25519.pub":   "p",
		"dotfiles/ssh/known_hosts":      "h",
		"elsewhere/tool/bin/x":          "x",
	}
	for name, body := range files {
		p := filepath.Join(l.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"home/.ssh":    filepath.Join(dotfiles, "ssh"),
		"home/keylink": filepath.Join(dotfiles, "ssh", "id_ed25519"),
		"home/awslink": filepath.Join(l.home, ".aws"),
		"home/tool":    filepath.Join(l.root, "elsewhere", "tool"),
		"home/self":    l.home,
		"home/up":      l.root,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(l.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return l, dotfiles
}

// TestReadHomeByDenyList: {home}/* grants every entry of the home less
// what the deny list names, entering the directories that hold a denied
// entry; the private key is reached neither by its name, nor through
// ~/.ssh being a link (which is then not entered: nothing of it is
// granted), nor through a link to it; a link that leads out grants its
// target; one that leads back to the home or above it grants nothing.
func TestReadHomeByDenyList(t *testing.T) {
	l, dotfiles := homeLayout(t)
	p := Profile{Name: "t", Network: "none", Read: []string{"{home}/*"}, Write: []string{"{cwd}"}}
	s, err := p.Resolve(Vars{Cwd: l.project, Home: l.home}, l.protected())
	if err != nil {
		t.Fatal(err)
	}
	h := func(rel string) string { return filepath.Join(l.home, rel) }
	for _, want := range []string{h("notes.txt"), h("src"), h(".config/git/ignore"), h(".config/gh/config.yml"),
		filepath.Join(l.root, "elsewhere", "tool")} {
		if !slices.Contains(s.Read, want) {
			t.Errorf("read lacks %s: %v", want, s.Read)
		}
	}
	for _, g := range s.Read {
		for _, bad := range []string{h(".aws"), h(".gnupg"), h(".config/gh/hosts.yml"), filepath.Join(dotfiles, "ssh"), l.state, l.home, l.root} {
			if within(bad, g) {
				t.Errorf("read grant %s reaches %s", g, bad)
			}
		}
	}
	// A plain ~/.ssh directory: the exceptions are granted one by one.
	if err := os.Remove(h(".ssh")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(h(".ssh"), os.DirFS(filepath.Join(dotfiles, "ssh"))); err != nil {
		t.Fatal(err)
	}
	s, err = p.Resolve(Vars{Cwd: l.project, Home: l.home}, l.protected())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Read, h(".ssh/id_ed25519.pub")) || !slices.Contains(s.Read, h(".ssh/known_hosts")) || slices.Contains(s.Read, h(".ssh/id_ed25519")) || slices.Contains(s.Read, h(".ssh")) {
		t.Errorf("a plain ~/.ssh: read %v", s.Read)
	}
	// What a session may start in: never a directory that is, holds or
	// lies inside what the list denies.
	for _, cwd := range []string{h(".config"), h(".aws"), h(".ssh")} {
		_, err := p.Resolve(Vars{Cwd: cwd, Home: l.home}, l.protected())
		if !errors.Is(err, ErrReadDenied) {
			t.Errorf("Resolve with cwd %s = %v, want ErrReadDenied", cwd, err)
		}
	}
}

// TestDenyListPatterns: globs per component, exceptions at the same
// depth, a denial below a path makes it entered, a bad pattern is an
// error.
func TestDenyListPatterns(t *testing.T) {
	d, err := NewDenyList([]string{"{home}/.ssh/*", "!{home}/.ssh/*.pub", "{home}/.config/gcloud", "/srv/keys"}, "/h", []string{})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]verdict{
		"/h":                  partial,
		"/h/.ssh":             partial,
		"/h/.ssh/id_rsa":      denied,
		"/h/.ssh/id_rsa.pub":  clean,
		"/h/.ssh/sub/x":       denied,
		"/h/.config":          partial,
		"/h/.config/gcloud/a": denied,
		"/h/.config/git":      clean,
		"/srv":                partial,
		"/srv/keys":           denied,
		"/srvx":               clean,
		"/":                   partial,
	}
	for p, want := range cases {
		if got := d.classify(p); got != want {
			t.Errorf("classify(%s) = %d, want %d", p, got, want)
		}
	}
	for _, bad := range []string{"relative/x", "{home}/../etc", "{home}/[", "/", "{nope}/x"} {
		if _, err := NewDenyList([]string{bad}, "/h", nil); err == nil {
			t.Errorf("NewDenyList(%q) accepted", bad)
		}
	}
	// No home: patterns that name it are left out, not an error.
	d, err = NewDenyList([]string{"{home}/.aws"}, "", nil)
	if err != nil || !d.Empty() {
		t.Fatalf("no home: %v %v", d, err)
	}
}

// TestReadDirIsBounded: a home with more entries than MaxListed grants
// MaxListed of them, never a wider grant.
func TestReadDirIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(dir, strings.Repeat("f", i+1)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var d DenyList
	out, more := d.expandDir(dir, 10)
	if len(out) != 10 || more != 20 {
		t.Fatalf("expandDir = %d granted, %d more", len(out), more)
	}
}
