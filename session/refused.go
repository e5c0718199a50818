package session

import (
	"path/filepath"
	"strings"
)

// What a confined session's sandbox refused on files, as far as the
// gateway can tell. Landlock reports its denials only to the kernel's
// audit subsystem (off unless the operator turns it on for the whole
// machine), so the gateway reads the program's own error message (a
// line that says permission was refused, and the absolute paths it
// names, as the start log is read) and checks each path against what the
// session's profile grants: a path no grant covers was refused by the
// sandbox whatever its mode bits say; one covered by a read grant only
// could not be written. A path the session may write is left out: that
// refusal is the file system's, not the sandbox's. The words are the
// program's and can be forged by it; the check against the grants is the
// gateway's.

// FileRefusal is a path a program's error names that the session's
// sandbox does not grant.
type FileRefusal struct {
	Path   string
	Access string // "file": nothing grants it, to read or write; "write": granted read-only
}

// maxFileRefusals bounds what one output yields.
const maxFileRefusals = 8

// grants are what a confined session's sandbox lets it reach.
type grants struct {
	read, write []string // real paths; write grants read too
	home        string   // for ~ in messages
}

// FileRefusals returns the paths the permission errors in output name
// that the session's sandbox does not grant (see above); nil for an
// unconfined session.
func (s *Session) FileRefusals(output string) []FileRefusal {
	g := s.grants
	if g == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []FileRefusal
	for _, line := range strings.Split(output, "\n") {
		if !permissionRE.MatchString(line) {
			continue
		}
		for _, m := range pathRE.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if rest, ok := strings.CutPrefix(p, "~/"); ok {
				if g.home == "" {
					continue
				}
				p = filepath.Join(g.home, rest)
			}
			p = filepath.Clean(p)
			if seen[p] || p == "/" {
				continue
			}
			seen[p] = true
			access := "file"
			switch {
			case covered(p, g.write):
				continue
			case covered(p, g.read):
				access = "write"
			}
			out = append(out, FileRefusal{Path: p, Access: access})
			if len(out) == maxFileRefusals {
				return out
			}
		}
	}
	return out
}

// covered reports whether a grant is p or a directory above it.
func covered(p string, list []string) bool {
	for _, g := range list {
		if p == g || strings.HasPrefix(p, strings.TrimSuffix(g, "/")+"/") {
			return true
		}
	}
	return false
}
