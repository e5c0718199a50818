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

// Cgroup is a session's own pids cgroup: the one bound on processes that
// holds for root too (RLIMIT_NPROC does not bind uid 0). cgroup v2 is used
// where its pids controller is enabled, else the v1 pids hierarchy.
type Cgroup struct {
	dir   string
	procs string
}

// cgroupRoots are where a pids controller may be mounted.
func cgroupRoots() []string {
	return []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}
}

// NewCgroup creates termgate/<name> with pids.max = max.
func NewCgroup(name string, max int) (*Cgroup, error) {
	var errs []error
	for _, root := range cgroupRoots() {
		if _, err := os.Stat(filepath.Join(root, "pids.max")); err != nil && !isV1PidsRoot(root) {
			continue
		}
		parent := filepath.Join(root, "termgate")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if root == "/sys/fs/cgroup" {
			// cgroup v2: the parent must hand the pids controller down.
			_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+pids"), 0)
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0)
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
			os.Remove(dir)
			errs = append(errs, err)
			continue
		}
		return &Cgroup{dir: dir, procs: filepath.Join(dir, "cgroup.procs")}, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no pids cgroup controller is mounted")
	}
	return nil, fmt.Errorf("creating a pids cgroup: %w", errors.Join(errs...))
}

func isV1PidsRoot(root string) bool {
	_, err := os.Stat(filepath.Join(root, "pids.current"))
	return err == nil || filepath.Base(root) == "pids"
}

// Procs is the file the launcher writes its pid to.
func (c *Cgroup) Procs() string { return c.procs }

// Remove deletes the cgroup once it is empty (waiting up to a second).
func (c *Cgroup) Remove() error {
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Kill sends SIGKILL to every process in the cgroup.
func (c *Cgroup) Kill() {
	for range 5 {
		b, err := os.ReadFile(c.procs)
		if err != nil || len(b) == 0 {
			return
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
