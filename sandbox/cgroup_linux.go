package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cgroup is a session's own cgroup: the one bound on processes that holds
// for root too (RLIMIT_NPROC does not bind uid 0), and the handle that
// ends every process of the session, wherever it went (setsid, a double
// fork), when the session closes.
//
// cgroup v2 is used where its pids controller is enabled (Kill then
// writes cgroup.kill, or freezes with cgroup.freeze); else the v1 pids
// hierarchy, with a cgroup of the same name in the v1 freezer hierarchy
// when it is mounted. LimitMemory adds the memory controller: the same
// directory on v2, a cgroup of the same name in the v1 memory hierarchy.
type Cgroup struct {
	dirs    []string // every directory made, one per hierarchy
	pids    string   // the directory that counts the processes
	freezer string   // a v1 freezer cgroup, or ""
	memory  string   // the directory whose memory is bounded, or ""
	v2      bool     // pids is a cgroup v2 directory
}

// The limits of closing: how long Kill waits for the cgroup to freeze and
// to empty, and Remove for the kernel to let the directories go.
const (
	freezeWait = time.Second
	emptyWait  = 5 * time.Second
	removeWait = 2 * time.Second
)

// cgroupFS is where the cgroup hierarchies are mounted.
const cgroupFS = "/sys/fs/cgroup"

// v2Pids reports whether cgroup v2 is mounted at cgroupFS with the pids
// controller.
func v2Pids() bool {
	b, err := os.ReadFile(filepath.Join(cgroupFS, "cgroup.controllers"))
	return err == nil && contains(strings.Fields(string(b)), "pids")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// v1Root returns the mount point of a v1 controller, or "".
func v1Root(controller string) string {
	root := filepath.Join(cgroupFS, controller)
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
		return ""
	}
	return root
}

// cgroupRoots are the hierarchies that may hold termgate/<name> cgroups
// (pids, freezer and memory on v1, the unified one on v2): where a sweep of what
// a dead gateway left looks, and what it must remove in each.
func cgroupRoots() []string {
	var out []string
	if v2Pids() {
		out = append(out, cgroupFS)
	}
	for _, c := range []string{"pids", "freezer", "memory"} {
		if r := v1Root(c); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// NewCgroup creates termgate/<owner>/<name> with pids.max = max (and its
// twin in the v1 freezer hierarchy), owner being this process's tag.
func NewCgroup(name string, max int) (*Cgroup, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("%q is not a cgroup name", name)
	}
	c := &Cgroup{}
	// termgate/<owner>/<name>: a gateway that dies before it could close
	// its sessions leaves them to the next one's Sweep.
	owner := Owner()
	mk := func(root string) (string, error) {
		parent := filepath.Join(root, "termgate", owner)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", err
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		c.dirs = append(c.dirs, dir)
		return dir, nil
	}
	switch {
	case v2Pids():
		// The parents must hand the pids controller down.
		_ = os.WriteFile(filepath.Join(cgroupFS, "cgroup.subtree_control"), []byte("+pids"), 0)
		if err := os.MkdirAll(filepath.Join(cgroupFS, "termgate"), 0o755); err != nil {
			return nil, fmt.Errorf("creating a pids cgroup: %w", err)
		}
		_ = os.WriteFile(filepath.Join(cgroupFS, "termgate", "cgroup.subtree_control"), []byte("+pids"), 0)
		if err := os.MkdirAll(filepath.Join(cgroupFS, "termgate", owner), 0o755); err != nil {
			return nil, fmt.Errorf("creating a pids cgroup: %w", err)
		}
		_ = os.WriteFile(filepath.Join(cgroupFS, "termgate", owner, "cgroup.subtree_control"), []byte("+pids"), 0)
		dir, err := mk(cgroupFS)
		if err != nil {
			return nil, fmt.Errorf("creating a pids cgroup: %w", err)
		}
		c.pids, c.v2 = dir, true
	case v1Root("pids") != "":
		dir, err := mk(v1Root("pids"))
		if err != nil {
			return nil, fmt.Errorf("creating a pids cgroup: %w", err)
		}
		c.pids = dir
		if root := v1Root("freezer"); root != "" {
			if dir, err := mk(root); err == nil {
				c.freezer = dir
			}
		}
	default:
		return nil, errors.New("no pids cgroup controller is mounted")
	}
	if err := os.WriteFile(filepath.Join(c.pids, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = c.Remove()
		return nil, fmt.Errorf("setting pids.max: %w", err)
	}
	return c, nil
}

// LimitMemory bounds the memory of the cgroup's processes together to
// limit bytes (page cache and tmpfs pages they write included; swap too
// where the kernel accounts it): memory.max (and memory.swap.max) on
// cgroup v2, memory.limit_in_bytes (and memory.memsw.limit_in_bytes) in
// a cgroup of the same name in the v1 memory hierarchy. Past the limit
// the kernel reclaims, then its OOM killer ends a process of this cgroup
// only. Call it before the launcher joins (ProcsFiles then names it).
func (c *Cgroup) LimitMemory(limit int64) error {
	if limit <= 0 {
		return fmt.Errorf("a memory limit of %d bytes", limit)
	}
	v := []byte(strconv.FormatInt(limit, 10))
	if c.v2 {
		if b, err := os.ReadFile(filepath.Join(cgroupFS, "cgroup.controllers")); err != nil || !contains(strings.Fields(string(b)), "memory") {
			return errors.New("cgroup v2 has no memory controller")
		}
		_ = os.WriteFile(filepath.Join(cgroupFS, "cgroup.subtree_control"), []byte("+memory"), 0)
		_ = os.WriteFile(filepath.Join(cgroupFS, "termgate", "cgroup.subtree_control"), []byte("+memory"), 0)
		if err := os.WriteFile(filepath.Join(c.pids, "memory.max"), v, 0); err != nil {
			return fmt.Errorf("setting memory.max: %w", err)
		}
		_ = os.WriteFile(filepath.Join(c.pids, "memory.swap.max"), []byte("0"), 0)
		c.memory = c.pids
		return nil
	}
	root := v1Root("memory")
	if root == "" {
		return errors.New("no memory cgroup controller is mounted")
	}
	parent := filepath.Join(root, "termgate")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating a memory cgroup: %w", err)
	}
	dir := filepath.Join(parent, filepath.Base(c.pids))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating a memory cgroup: %w", err)
	}
	c.dirs = append(c.dirs, dir)
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), v, 0); err != nil {
		return fmt.Errorf("setting memory.limit_in_bytes: %w", err)
	}
	// Memory and swap together no more than memory alone: a session does
	// not get past its limit by swapping. (Absent without swap accounting.)
	if p := filepath.Join(dir, "memory.memsw.limit_in_bytes"); exists(p) {
		if err := os.WriteFile(p, v, 0); err != nil {
			return fmt.Errorf("setting memory.memsw.limit_in_bytes: %w", err)
		}
	}
	c.memory = dir
	return nil
}

// MemoryDir is the cgroup directory whose memory is bounded ("" when
// LimitMemory was not called or failed).
func (c *Cgroup) MemoryDir() string { return c.memory }

// DefaultShm is the size of a session's private /dev/shm when its profile
// names none (Docker's default).
const DefaultShm = 64 << 20

// DefaultSessionMemory is a session's memory limit when its profile
// names none: half of the machine's RAM (MemTotal), or 4 GiB when it
// cannot be read.
func DefaultSessionMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 4 << 30
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
				return kb << 10 / 2
			}
		}
	}
	return 4 << 30
}

// ProcsFiles are the cgroup.procs files the launcher writes its pid to.
func (c *Cgroup) ProcsFiles() []string {
	var out []string
	for _, d := range c.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// CanFreeze reports whether Kill can freeze the cgroup (or kill it whole)
// before it kills its members.
func (c *Cgroup) CanFreeze() bool {
	if c.v2 {
		return exists(filepath.Join(c.pids, "cgroup.kill")) || exists(filepath.Join(c.pids, "cgroup.freeze"))
	}
	return c.freezer != ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// members lists the processes of the cgroup.
func (c *Cgroup) members() []int {
	b, err := os.ReadFile(filepath.Join(c.pids, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// Kill ends every process of the cgroup and waits, up to a bound, until
// none is left. A swarm that keeps forking cannot outrun it: the cgroup
// is frozen first (v1 freezer, or cgroup.freeze), so its membership
// stands still while each member gets SIGKILL, then thawed so that they
// die; on cgroup v2 with cgroup.kill the kernel does all of it at once.
// Without a freezer it sweeps until the cgroup is empty. It reports an
// error when members are left at the bound.
func (c *Cgroup) Kill() error {
	deadline := time.Now().Add(emptyWait)
	for {
		if len(c.members()) == 0 {
			return nil
		}
		switch {
		case c.v2 && exists(filepath.Join(c.pids, "cgroup.kill")):
			_ = os.WriteFile(filepath.Join(c.pids, "cgroup.kill"), []byte("1"), 0)
		case c.v2 && exists(filepath.Join(c.pids, "cgroup.freeze")):
			c.freezeKillThaw(filepath.Join(c.pids, "cgroup.freeze"), "1", "0", func() bool {
				b, _ := os.ReadFile(filepath.Join(c.pids, "cgroup.events"))
				return strings.Contains(string(b), "frozen 1")
			})
		case c.freezer != "":
			state := filepath.Join(c.freezer, "freezer.state")
			c.freezeKillThaw(state, "FROZEN", "THAWED", func() bool {
				b, _ := os.ReadFile(state)
				return strings.TrimSpace(string(b)) == "FROZEN"
			})
		default:
			for _, pid := range c.members() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if c.waitEmpty(min(time.Until(deadline), 500*time.Millisecond)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes left after SIGKILL", c.pids, len(c.members()))
		}
	}
}

// freezeKillThaw freezes the cgroup (waiting until frozen, up to a
// bound), sends SIGKILL to every member, and thaws it: a frozen task
// cannot fork, so none is missed, and a killed one dies once thawed.
func (c *Cgroup) freezeKillThaw(file, freeze, thaw string, frozen func() bool) {
	if err := os.WriteFile(file, []byte(freeze), 0); err == nil {
		deadline := time.Now().Add(freezeWait)
		for !frozen() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	for _, pid := range c.members() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = os.WriteFile(file, []byte(thaw), 0)
}

// waitEmpty waits up to d for the cgroup to have no member.
func (c *Cgroup) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(c.members()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Remove deletes the cgroup's directories once they are empty (waiting up
// to a bound).
func (c *Cgroup) Remove() error {
	var errs []error
	deadline := time.Now().Add(removeWait)
	for _, d := range c.dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, err)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
