package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/termgate/termgate/sandbox"
	"golang.org/x/sys/unix"
)

// The start log of a confined bash or zsh session: what the user's rc
// files wrote to standard error while the session started (the generated
// rc sends it there: see userRC in shellinit.go). Once the first prompt
// is up, the gateway asks for it (Startup), and it is sorted in two:
//
//   - A line the sandbox caused becomes a startup warning: it says that
//     permission was refused (EACCES, EPERM, EROFS in their words:
//     "Permission denied", "Operation not permitted", "Read-only file
//     system", "isn't writable"), and every path it names lies outside
//     what the session may write (its working directory, its private
//     directory, the profile's other write grants), or it names none.
//     These go to session_info and the server log, never to the agent's
//     first output.
//   - Every other line (a syntax error in ~/.bashrc, a command not found,
//     a permission error on a file of the project) is a real error the
//     user would want seen: it is shown at the top of the start's output.
//
// The log is read once, at most maxStartLog bytes of it; warnings are
// deduplicated and at most maxStartupWarnings are kept, the rest counted.

const (
	startLogName       = "startup.log"
	maxStartLog        = 64 << 10
	maxStartupWarnings = 20
	maxStartupLine     = 300
)

// startupLog is where a session's rc files wrote their standard error,
// and what reading it found.
type startupLog struct {
	path     string   // "" when nothing was captured (an unconfined session)
	writable []string // what the session may write: a permission error there is real
	home     string   // for ~ in messages

	once     sync.Once
	shown    []string
	warnings []string
}

// newStartupLog prepares the start log of a session whose private
// directory is dir: only a confined session's rc files write there.
func newStartupLog(dir string, sb *sandbox.Spec, home string) *startupLog {
	l := &startupLog{home: home}
	if sb == nil || sb.Unconfined {
		return l
	}
	l.path = filepath.Join(dir, startLogName)
	l.writable = append([]string{dir}, sb.Write...)
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		l.writable = append(l.writable, real)
	}
	return l
}

// Startup returns what the user's rc files wrote to standard error while
// the session started, sorted: the lines to show (real errors) and the
// startup warnings (what the sandbox caused). It reads the start log the
// first time it is called (call it once the first prompt is up); later
// calls return the same. Nothing is redacted here: the caller redacts.
func (s *Session) Startup() (shown, warnings []string) {
	l := s.startup
	if l == nil || l.path == "" {
		return nil, nil
	}
	l.once.Do(func() {
		b, err := readStartLog(l.path)
		if err != nil {
			return
		}
		l.shown, l.warnings = sortStartLog(string(b), l.writable, l.home)
	})
	return l.shown, l.warnings
}

// readStartLog reads at most maxStartLog bytes of the start log. The
// session may write in the directory that holds it, so the gateway opens
// it as no more than what the session could make there: never through a
// link (to a file the session may not read), never blocking (a FIFO),
// and only a regular file.
func readStartLog(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("the start log is not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, maxStartLog))
}

var (
	// permissionRE finds a refusal in an error message, as programs
	// word EACCES, EPERM and EROFS, and as version managers say it.
	permissionRE = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|(?:is ?n[o']t|not) writ(?:e)?able|\be(?:acces|perm|rofs)\b`)
	// pathRE finds the paths a message names: absolute or from ~,
	// standing alone or quoted.
	pathRE = regexp.MustCompile("(?:^|[\\s'\"`(=:\\[‘“])((?:~/|/)[^\\s'\"`:;,)\\]’”]*)")
	// escapeRE matches terminal escape sequences (CSI, OSC, and the
	// two-byte ones).
	escapeRE = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|\x1b[@-Z\\\\-_]")
)

// sortStartLog sorts a start log's lines into those to show and the
// sandbox's warnings (see the top of this file).
func sortStartLog(text string, writable []string, home string) (shown, warnings []string) {
	seen := map[string]bool{}
	more := 0
	for _, line := range strings.Split(text, "\n") {
		line = plainLine(line)
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !sandboxCaused(line, writable, home) {
			shown = append(shown, line)
			continue
		}
		if seen[line] {
			continue
		}
		seen[line] = true
		if len(warnings) >= maxStartupWarnings {
			more++
			continue
		}
		warnings = append(warnings, line)
	}
	if more > 0 {
		warnings = append(warnings, "… and "+strconv.Itoa(more)+" more")
	}
	return shown, warnings
}

// sandboxCaused reports whether an error line is one the sandbox caused:
// a refusal that names no path, or only paths outside what the session
// may write.
func sandboxCaused(line string, writable []string, home string) bool {
	if !permissionRE.MatchString(line) {
		return false
	}
	for _, m := range pathRE.FindAllStringSubmatch(line, -1) {
		p := m[1]
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				continue
			}
			p = filepath.Join(home, rest)
		}
		p = filepath.Clean(p)
		for _, w := range writable {
			if p == w || strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
				return false // a file the session may write: a real error
			}
		}
	}
	return true
}

// plainLine is a line as a human reads it: escape sequences and control
// characters gone, at most maxStartupLine characters.
func plainLine(s string) string {
	s = escapeRE.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxStartupLine {
		s = string(r[:maxStartupLine]) + "…"
	}
	return s
}
