package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// What a gateway leaves behind when it is killed (SIGKILL, a crash, the
// machine's OOM killer) before it could close its sessions: their private
// directories under the temporary directory, and their cgroups, with any
// process that left its session (setsid, a double fork) still in them. A
// starting gateway sweeps what dead gateways left, and only that: every
// such directory and cgroup is named after the gateway process that made
// it (Owner), and is removed only when that process is gone.
//
// The tag is the gateway's pid and its start time (in clock ticks since
// boot, from /proc), so a pid the kernel has since given to another
// process does not pass for the dead gateway.

// Owner returns this process's tag, as it names what it makes:
// "g<pid>.<start time>".
func Owner() string {
	return ownerOf(os.Getpid())
}

func ownerOf(pid int) string {
	return fmt.Sprintf("g%d.%d", pid, startTime(pid))
}

// startTime is field 22 of /proc/PID/stat, or 0 when it cannot be read.
func startTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// parseOwner reads a tag; ok is false for anything not made by Owner.
func parseOwner(tag string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(tag, "g")
	if !found {
		return 0, 0, false
	}
	p, s, found := strings.Cut(rest, ".")
	if !found {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != p {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(start, 10) != s {
		return 0, 0, false
	}
	return pid, start, true
}

// ownerGone reports whether the tagged process is dead: no process has
// its pid, or the one that has it started at another time.
func ownerGone(tag string) bool {
	pid, start, ok := parseOwner(tag)
	if !ok {
		return false
	}
	now := startTime(pid)
	return now == 0 || now != start
}

// TempPrefixes name the private directories sessions, exec and sandbox
// run make under the temporary directory: <prefix><owner>-<random>.
var tempPrefixes = []string{"termgate-session-", "termgate-exec-", "termgate-run-"}

// TempPattern is the os.MkdirTemp pattern for a private directory of the
// given kind ("session", "exec", "run"), tagged with this process.
func TempPattern(kind string) string {
	return "termgate-" + kind + "-" + Owner() + "-"
}

// Swept says what a sweep removed.
type Swept struct {
	Dirs      []string // private directories
	Cgroups   []string // cgroup directories
	Processes int      // processes killed in them
}

// Sweep removes what dead gateways left: private directories under the
// temporary directory and cgroups under termgate/ in every hierarchy,
// each tagged with a gateway process that is gone, killing whatever still
// runs in those cgroups. Everything else is left alone: a live gateway's
// (other gateways may run beside this one), and anything not tagged.
func Sweep() (Swept, error) { return sweep(ownerGone) }

// sweep is Sweep for the owners gone says are gone (tests narrow it to
// the owners they made, so that they never sweep what another test's dead
// gateway left for its own check).
func sweep(gone func(tag string) bool) (Swept, error) {
	var sw Swept
	var errs []error
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		errs = append(errs, err)
	}
	uid := os.Getuid()
	for _, e := range entries {
		tag, ok := taggedTemp(e.Name())
		if !ok || !e.IsDir() || !gone(tag) {
			continue
		}
		p := filepath.Join(tmp, e.Name())
		// Only a real directory of this user's: never through a link,
		// never another user's.
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		sw.Dirs = append(sw.Dirs, p)
	}
	// Cgroups: termgate/<owner>/<name> in each hierarchy. A dead owner's
	// sessions are gathered across hierarchies by name, so that each is
	// frozen and killed as one.
	dead := map[string]*Cgroup{} // owner/name → its directories
	var order []string
	for _, root := range cgroupRoots() {
		owners, err := os.ReadDir(filepath.Join(root, "termgate"))
		if err != nil {
			continue
		}
		for _, o := range owners {
			if !o.IsDir() || !gone(o.Name()) {
				continue
			}
			names, err := os.ReadDir(filepath.Join(root, "termgate", o.Name()))
			if err != nil {
				continue
			}
			for _, n := range names {
				if !n.IsDir() {
					continue
				}
				key := o.Name() + "/" + n.Name()
				c := dead[key]
				if c == nil {
					c = &Cgroup{}
					dead[key] = c
					order = append(order, key)
				}
				dir := filepath.Join(root, "termgate", o.Name(), n.Name())
				c.dirs = append(c.dirs, dir)
				switch {
				case root == cgroupFS:
					c.pids, c.v2 = dir, true
				case filepath.Base(root) == "freezer":
					c.freezer = dir
				case filepath.Base(root) == "pids":
					c.pids = dir
				}
			}
		}
	}
	for _, key := range order {
		c := dead[key]
		if c.pids == "" {
			// A hierarchy without the process count: its members are
			// read from the first directory.
			c.pids = c.dirs[0]
		}
		sw.Processes += len(c.members())
		if err := c.Kill(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.Remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		sw.Cgroups = append(sw.Cgroups, c.dirs...)
	}
	// The dead owners' own directories, now empty.
	for _, root := range cgroupRoots() {
		owners, _ := os.ReadDir(filepath.Join(root, "termgate"))
		for _, o := range owners {
			if o.IsDir() && gone(o.Name()) {
				_ = os.Remove(filepath.Join(root, "termgate", o.Name()))
			}
		}
	}
	return sw, errors.Join(errs...)
}

// taggedTemp returns the owner tag of a private directory's name.
func taggedTemp(name string) (string, bool) {
	for _, p := range tempPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			tag, _, ok := strings.Cut(rest, "-")
			if _, _, valid := parseOwner(tag); ok && valid {
				return tag, true
			}
		}
	}
	return "", false
}

// ReleaseOwner removes this process's own termgate/<owner> cgroup
// directories, when empty: a gateway calls it as it shuts down.
func ReleaseOwner() {
	tag := Owner()
	for _, root := range cgroupRoots() {
		_ = os.Remove(filepath.Join(root, "termgate", tag))
	}
}
