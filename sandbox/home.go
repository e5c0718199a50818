package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Reads by deny-list.
//
// Landlock grants; it never denies. So "read the home directory except
// its secrets" is made of grants: a read entry DIR/* ({home}/*) is every
// entry of DIR, each granted on its own, less what a DenyList names; a
// directory that holds a denied entry is not granted whole but entered,
// and its entries are granted one by one, the same way. The list is made
// when a session starts: an entry created later in DIR (or in a directory
// that was entered) is not readable until the next session; one created
// inside a granted directory is.
//
// A symbolic link among the entries is never granted as itself: Landlock
// judges the file a path resolves to. A link whose target lies in DIR is
// skipped (its target is judged as the entry it is), and so is one that
// leads to DIR or above it; a link that leads outside DIR grants its
// target, when neither its name nor its target is denied. A link on the
// way to a denied path (~/.ssh → ~/dotfiles/ssh) is followed when the
// list is made: the denial then covers the target's real path too. A
// link that holds something denied is never entered: ~/.ssh as a link
// grants nothing of it, its public keys and known_hosts included.

// MaxListed bounds the grants one DIR/* entry makes; entries past it are
// not granted (an unreadable entry, never a wider grant).
const MaxListed = 2048

// DefaultReadDeny is data.termgate.read_deny when a bundle names none:
// the usual homes of credentials and private keys. "!" marks an
// exception, which re-admits what a denial at the same depth or above
// took (the public half of a key pair, known_hosts).
func DefaultReadDeny() []string {
	return []string{
		"{home}/.ssh/*", "!{home}/.ssh/*.pub", "!{home}/.ssh/known_hosts", "!{home}/.ssh/known_hosts.old", "!{home}/.ssh/config",
		"{home}/.aws", "{home}/.azure", "{home}/.config/gcloud", "{home}/.kube", "{home}/.docker/config.json",
		"{home}/.netrc", "{home}/.pgpass", "{home}/.my.cnf", "{home}/.gnupg", "{home}/.password-store",
		"{home}/.local/share/keyrings", "{home}/.mozilla", "{home}/.config/google-chrome", "{home}/.config/chromium",
		"{home}/.config/gh/hosts.yml", "{home}/.npmrc", "{home}/.pypirc", "{home}/.git-credentials", "{home}/.vault-token",
		// What shells and REPLs kept of what was typed (passwords too), and
		// more homes of tokens and keys.
		"{home}/.*_history", "{home}/.*history", "{home}/.local/share/fish/fish_history",
		"{home}/.cargo/credentials", "{home}/.cargo/credentials.toml", "{home}/.gem/credentials",
		"{home}/.m2/settings.xml", "{home}/.m2/settings-security.xml", "{home}/.gradle/gradle.properties",
		"{home}/.terraform.d/credentials.tfrc.json", "{home}/.config/containers/auth.json", "{home}/.config/rclone",
		"{home}/.s3cfg", "{home}/.boto", "{home}/.oci", "{home}/.config/doctl", "{home}/.config/op",
		"{home}/.config/git/credentials", "{home}/.config/glab-cli", "{home}/.config/hub",
		"{home}/.config/BraveSoftware", "{home}/.config/microsoft-edge", "{home}/.thunderbird", "{home}/.pki",
	}
}

type verdict int

const (
	clean   verdict = iota // granted whole
	partial                // holds something denied (or kept): entered, never granted whole
	denied                 // never granted
)

// denyPattern is one entry of a read_deny list: an absolute path whose
// components are globs (path.Match), or a literal path.
type denyPattern struct {
	comps   []string
	literal bool
	keep    bool // "!": an exception
}

// matches reports whether the pattern's first len(pc) components match
// pc (pc no longer than the pattern).
func (p denyPattern) matches(pc []string) bool {
	for i, c := range pc {
		if p.literal || !strings.ContainsAny(p.comps[i], `*?[\`) {
			if p.comps[i] != c {
				return false
			}
			continue
		}
		if ok, _ := path.Match(p.comps[i], c); !ok {
			return false
		}
	}
	return true
}

// DenyList is what reads by deny-list leave out: a bundle's read_deny
// with {home} put in, and the gateway's own files.
type DenyList struct {
	pats []denyPattern
}

// NewDenyList reads patterns (absolute once {home} is put in; each
// component a glob, as path.Match reads it; "!" before one makes it an
// exception) and literal paths (the gateway's own files, denied as
// written). A pattern that names {home} when there is no home is left
// out. The part of a pattern before its first wildcard is resolved: when
// a link is on its way, the pattern is denied at the link's target too.
func NewDenyList(patterns []string, home string, literal []string) (DenyList, error) {
	var d DenyList
	if home != "" {
		if r, err := RealPath(home); err == nil {
			home = r
		}
	}
	add := func(p denyPattern) {
		d.pats = append(d.pats, p)
		// The literal head: up to the first component with a wildcard.
		n := len(p.comps)
		if !p.literal {
			n = slices.IndexFunc(p.comps, func(c string) bool { return strings.ContainsAny(c, `*?[\`) })
			if n < 0 {
				n = len(p.comps)
			}
		}
		if n == 0 {
			return
		}
		head := "/" + strings.Join(p.comps[:n], "/")
		real, err := RealPath(head)
		if err != nil || real == head {
			return
		}
		t := p
		t.comps = append(splitPath(real), p.comps[n:]...)
		d.pats = append(d.pats, t)
	}
	for _, raw := range patterns {
		keep := strings.HasPrefix(raw, "!")
		e := strings.TrimPrefix(raw, "!")
		if strings.Contains(e, "{home}") {
			if home == "" {
				continue
			}
			e = strings.ReplaceAll(e, "{home}", home)
		}
		if !strings.HasPrefix(e, "/") || strings.Contains(e, "{") {
			return DenyList{}, fmt.Errorf("read_deny: %q is not an absolute path (with {home})", raw)
		}
		for _, c := range strings.Split(e, "/") {
			if c == "." || c == ".." {
				return DenyList{}, fmt.Errorf("read_deny: %q holds %q", raw, c)
			}
		}
		comps := splitPath(e)
		for _, c := range comps {
			if _, err := path.Match(c, ""); err != nil {
				return DenyList{}, fmt.Errorf("read_deny: %q: %w", raw, err)
			}
		}
		if len(comps) == 0 {
			return DenyList{}, fmt.Errorf("read_deny: %q denies the whole file system", raw)
		}
		add(denyPattern{comps: comps, keep: keep})
	}
	for _, p := range literal {
		if p == "" {
			continue
		}
		real, err := resolveExisting(p)
		if err != nil {
			return DenyList{}, fmt.Errorf("read_deny: the gateway's own %s: %w", p, err)
		}
		if comps := splitPath(real); len(comps) > 0 {
			add(denyPattern{comps: comps, literal: true})
		}
	}
	return d, nil
}

// splitPath returns the components of a clean absolute path.
func splitPath(p string) []string {
	p = strings.Trim(filepath.Clean(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// classify says whether a real path may be granted whole, must be
// entered, or is denied. Of the patterns that match the path or a
// directory above it, the deepest decides (an exception over a denial at
// the same depth); a denied path that an exception reaches below is
// entered, and so is one that a denial reaches below.
func (d DenyList) classify(p string) verdict {
	pc := splitPath(p)
	best, bestKeep := -1, false
	keepBelow, denyBelow := false, false
	for _, pat := range d.pats {
		n := len(pat.comps)
		if n <= len(pc) {
			if pat.matches(pc[:n]) && (n > best || n == best && pat.keep) {
				best, bestKeep = n, pat.keep
			}
			continue
		}
		if pat.matches(pc) {
			if pat.keep {
				keepBelow = true
			} else {
				denyBelow = true
			}
		}
	}
	switch here := best >= 0 && !bestKeep; {
	case here && keepBelow:
		return partial
	case here:
		return denied
	case denyBelow:
		return partial
	}
	return clean
}

// Denies reports whether a real path is denied, holds something denied,
// or lies inside something denied: whether granting it whole would reach
// what the list keeps from sessions.
func (d DenyList) Denies(p string) bool { return d.classify(p) != clean }

// Empty reports whether the list denies nothing.
func (d DenyList) Empty() bool { return len(d.pats) == 0 }

// expandDir lists what a DIR/* entry grants: the real paths of root's
// entries less the denied ones, entering directories that hold a denied
// entry, at most max of them (and how many more there were).
func (d DenyList) expandDir(root string, max int) (out []string, more int) {
	add := func(p string) {
		if len(out) >= max {
			more++
			return
		}
		out = append(out, p)
	}
	var walk func(string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable: nothing of it is granted
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			v := d.classify(p)
			if e.Type()&fs.ModeSymlink != 0 {
				if v != clean {
					continue
				}
				t, err := RealPath(p)
				if err != nil || within(t, root) || within(root, t) || d.classify(t) != clean {
					continue
				}
				add(t)
				continue
			}
			switch {
			case v == denied:
			case v == partial && e.IsDir():
				walk(p)
			default:
				add(p)
			}
		}
	}
	walk(root)
	return out, more
}

// ErrReadDenied is wrapped by a refusal of a working directory that is,
// holds, or lies inside what the read_deny list keeps from sessions.
var ErrReadDenied = errors.New("it is, holds or lies inside what the bundle's read_deny keeps from sessions")
